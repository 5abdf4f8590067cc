"""Wire tests for ``hermes_sdk.testing.HermesEmulator``.

They talk raw HTTP over loopback (``requests``, ``http.client`` and plain
sockets), never through the SDK client, and compare against the shapes in the
recorded Hermes 0.19.0 transcripts (``hermes-wire/``).
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from hermes_sdk.testing import HermesEmulator, Reply, RequestInfo

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
SECURITY = {
    "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
    "Strict-Transport-Security": "max-age=31536000; includeSubDomains",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "X-XSS-Protection": "0",
    "Referrer-Policy": "no-referrer",
}
CHAT = "/v1/chat/completions"
RESP = "/v1/responses"


@pytest.fixture(scope="module")
def _server() -> Iterator[HermesEmulator]:
    with HermesEmulator() as emulator:
        yield emulator


@pytest.fixture
def emu(_server: HermesEmulator) -> Iterator[HermesEmulator]:
    _server.reset()
    yield _server
    _server.reset()


@pytest.fixture
def make() -> Iterator[Any]:
    started: list[HermesEmulator] = []

    def factory(**options: Any) -> HermesEmulator:
        emulator = HermesEmulator(**options).start()
        started.append(emulator)
        return emulator

    yield factory
    for emulator in started:
        emulator.stop()


def post(emu: HermesEmulator, path: str, body: Any, **headers: str) -> requests.Response:
    hdrs = dict(AUTH)
    hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
    return requests.post(emu.base_url + path, json=body, headers=hdrs, timeout=30)


def chat(emu: HermesEmulator, text: str, **extra: Any) -> requests.Response:
    headers = extra.pop("headers", {})
    body = {"model": "hermes-agent", "messages": [{"role": "user", "content": text}]}
    body.update(extra)
    return post(emu, CHAT, body, **headers)


def sse_events(text: str) -> list[dict[str, Any]]:
    """Parse an SSE body into [{'event': ..., 'data': ...}] (comments dropped)."""
    events = []
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        event: dict[str, Any] = {}
        for line in block.split("\n"):
            if line.startswith(":"):
                event.setdefault("comment", line)
            elif line.startswith("event: "):
                event["event"] = line[len("event: ") :]
            elif line.startswith("data: "):
                raw = line[len("data: ") :]
                event["data"] = raw if raw == "[DONE]" else json.loads(raw)
        events.append(event)
    return events


def raw_exchange(emu: HermesEmulator, request: bytes, timeout: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", emu.port), timeout=timeout) as sock:
        sock.sendall(request)
        chunks = []
        while True:
            try:
                data = sock.recv(65536)
            except (ConnectionResetError, socket.timeout):
                break
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks)


def raw_post(path: str, body: bytes, extra: str = "") -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"Connection: close\r\n{extra}\r\n"
    )
    return head.encode() + body


def assert_json_headers(resp: requests.Response) -> None:
    assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
    for name, value in SECURITY.items():
        assert resp.headers[name] == value


# -- chat completions -------------------------------------------------------------
def test_chat_nonstream_matches_transcript_01(emu: HermesEmulator) -> None:
    resp = post(
        emu,
        CHAT,
        {
            "model": "hermes-agent",
            "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello there"}],
        },
    )
    assert resp.status_code == 200
    assert_json_headers(resp)
    assert resp.headers["X-Hermes-Session-Id"] == "api-28583305a84a8260"
    body = resp.json()
    assert re.fullmatch(r"chatcmpl-[0-9a-f]{29}", body["id"])
    assert list(body) == ["id", "object", "created", "model", "choices", "usage"]
    assert body["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "ECHO: hello there"}, "finish_reason": "stop"}
    ]
    assert body["usage"] == {"prompt_tokens": 256, "completion_tokens": 3, "total_tokens": 259}
    assert resp.content.startswith(b'{"id": "chatcmpl-')  # json.dumps default separators
    assert b'"object": "chat.completion", "created": ' in resp.content


def test_chat_stateless_history_keeps_derived_session(emu: HermesEmulator) -> None:
    seen: list[RequestInfo] = []
    emu.script(lambda info: seen.append(info) or "ECHO: " + info.prompt)
    resp = post(
        emu,
        CHAT,
        {
            "messages": [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hello there"},
                {"role": "assistant", "content": "ECHO: hello there"},
                {"role": "tool", "content": "dropped"},
                {"role": "user", "content": "second turn"},
            ]
        },
    )
    assert resp.headers["X-Hermes-Session-Id"] == "api-28583305a84a8260"
    assert resp.json()["choices"][0]["message"]["content"] == "ECHO: second turn"
    assert [m["role"] for m in seen[0].history] == ["user", "assistant"]
    assert seen[0].system_prompt == "You are terse."


def test_chat_stream_string_and_parts_and_model_echo(emu: HermesEmulator) -> None:
    resp = post(
        emu,
        CHAT,
        {
            "model": "my-client-model",
            "stream": "false",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "parts"}, {"type": "text", "text": "array"}]}
            ],
        },
    )
    body = resp.json()
    assert body["model"] == "my-client-model"
    assert body["choices"][0]["message"]["content"] == "ECHO: parts\narray"
    assert resp.headers["X-Hermes-Session-Id"] == "api-0c9a21ab438d8aa7"
    no_model = post(emu, CHAT, {"messages": [{"role": "user", "content": "x"}]}).json()
    assert no_model["model"] == "hermes-agent"
    for value in ("true", "1", "yes", "on", True):
        streamed = post(emu, CHAT, {"stream": value, "messages": [{"role": "user", "content": "x"}]})
        assert streamed.headers["Content-Type"] == "text/event-stream"


def test_chat_system_messages_joined(emu: HermesEmulator) -> None:
    seen: list[RequestInfo] = []
    emu.script(lambda info: seen.append(info) or "ok")
    post(
        emu,
        CHAT,
        {
            "messages": [
                {"role": "system", "content": "a"},
                {"role": "system", "content": "b"},
                {"role": "user", "content": "q"},
            ]
        },
    )
    assert seen[0].system_prompt == "a\nb"


def test_chat_session_header_loads_history_and_ignores_body(emu: HermesEmulator) -> None:
    seen: list[RequestInfo] = []
    emu.script(lambda info: seen.append(info) or "ECHO: " + info.prompt)
    sid = {"X-Hermes-Session-Id": "sdk-sess-001"}
    r1 = chat(emu, "my name is Ada", headers=sid)
    assert r1.headers["X-Hermes-Session-Id"] == "sdk-sess-001"
    chat(emu, "what is my name?", headers=sid)
    post(
        emu,
        CHAT,
        {
            "messages": [
                {"role": "user", "content": "IGNORED-OLD"},
                {"role": "assistant", "content": "IGNORED-OLD-REPLY"},
                {"role": "user", "content": "third"},
            ]
        },
        **sid,
    )
    assert [len(i.history) for i in seen] == [0, 2, 4]
    assert "IGNORED-OLD" not in json.dumps(seen[2].history)
    assert emu.session_messages("sdk-sess-001")[-1] == {"role": "assistant", "content": "ECHO: third"}
    unknown = chat(emu, "fresh", headers={"X-Hermes-Session-Id": "never-seen"})
    assert unknown.status_code == 200 and seen[-1].history == []


def test_chat_session_key_echo(emu: HermesEmulator) -> None:
    resp = chat(emu, "key test", headers={"X-Hermes-Session-Key": "agent:main:sdk:user-1"})
    assert resp.headers["X-Hermes-Session-Key"] == "agent:main:sdk:user-1"
    assert resp.headers["X-Hermes-Session-Id"] == "api-33378f5d96c17642"
    names = list(resp.headers)
    assert names.index("X-Hermes-Session-Key") < names.index("Content-Type")


@pytest.mark.parametrize(
    "sid,message",
    [
        ("../../etc", "Invalid session ID"),
        ("a/b", "Invalid session ID"),
        ("x" * 257, "Session ID too long"),
    ],
)
def test_chat_bad_session_header(emu: HermesEmulator, sid: str, message: str) -> None:
    resp = chat(emu, "x", headers={"X-Hermes-Session-Id": sid})
    assert resp.status_code == 400
    assert resp.json() == {"error": {"message": message, "type": "invalid_request_error"}}
    assert emu.executions == 0


def test_chat_bad_session_header_control_chars(emu: HermesEmulator) -> None:
    raw = raw_post(CHAT, b'{"messages":[{"role":"user","content":"x"}]}', "X-Hermes-Session-Id: a\x00b\r\n")
    assert b"Invalid session ID" in raw_exchange(emu, raw)


def test_chat_stream_matches_transcript_03(emu: HermesEmulator) -> None:
    raw = raw_exchange(
        emu,
        raw_post(
            CHAT,
            json.dumps(
                {
                    "model": "hermes-agent",
                    "stream": True,
                    "messages": [{"role": "user", "content": "stream me one two three four five six seven"}],
                }
            ).encode(),
        ),
    )
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head
    assert b"Content-Type: text/event-stream" in head
    assert b"Cache-Control: no-cache" in head and b"X-Accel-Buffering: no" in head
    assert b"X-Hermes-Session-Id: api-6e51f68e553ed8cd" in head
    assert b"Content-Security-Policy" not in head
    assert body.endswith(b"0\r\n\r\n")
    text = _dechunk(body).decode()
    assert "event:" not in text
    events = sse_events(text)
    assert events[-1]["data"] == "[DONE]"
    chunks = [e["data"] for e in events[:-1]]
    assert chunks[0]["choices"] == [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]
    contents = [c["choices"][0]["delta"]["content"] for c in chunks[1:-1]]
    assert contents == ["ECHO: stream me", " one two three", " four five six", " seven"]
    assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert chunks[-1]["usage"] == {"prompt_tokens": 260, "completion_tokens": 10, "total_tokens": 270}
    assert len({(c["id"], c["created"], c["model"], c["object"]) for c in chunks}) == 1


def _dechunk(body: bytes) -> bytes:
    out, rest = b"", body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out += rest[:size]
        rest = rest[size + 2 :]
    return out


def test_chat_stream_session_header_and_include_usage_ignored(emu: HermesEmulator) -> None:
    resp = post(
        emu,
        CHAT,
        {
            "stream": True,
            "stream_options": {"include_usage": True},
            "messages": [{"role": "user", "content": "streamed turn"}],
        },
        X_Hermes_Session_Id="sdk-sess-stream",
    )
    assert resp.headers["X-Hermes-Session-Id"] == "sdk-sess-stream"
    events = sse_events(resp.text)
    assert [e["data"] == "[DONE]" for e in events].count(True) == 1
    assert sum(1 for e in events if e["data"] != "[DONE]" and "usage" in e["data"]) == 1


# -- responses ----------------------------------------------------------------------
def test_responses_nonstream_and_get(emu: HermesEmulator) -> None:
    resp = post(
        emu,
        RESP,
        {"model": "hermes-agent", "input": "first responses turn", "instructions": "Be brief.", "store": True},
    )
    assert resp.status_code == 200
    assert_json_headers(resp)
    uuid.UUID(resp.headers["X-Hermes-Session-Id"], version=4)
    body = resp.json()
    assert re.fullmatch(r"resp_[0-9a-f]{28}", body["id"])
    assert list(body) == ["id", "object", "status", "created_at", "model", "output", "usage"]
    assert body["output"] == [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ECHO: first responses turn"}],
        }
    ]
    assert body["usage"] == {"input_tokens": 256, "output_tokens": 4, "total_tokens": 260}
    got = requests.get(f"{emu.base_url}{RESP}/{body['id']}", headers=AUTH, timeout=10)
    assert got.status_code == 200 and got.content == resp.content
    assert "X-Hermes-Session-Id" not in got.headers
    assert_json_headers(got)


def test_responses_array_input_history(emu: HermesEmulator) -> None:
    seen: list[RequestInfo] = []
    emu.script(lambda info: seen.append(info) or "ECHO: " + info.prompt)
    body = post(
        emu,
        RESP,
        {
            "input": [
                {"role": "user", "content": "earlier q"},
                {"role": "assistant", "content": "earlier a"},
                {"role": "user", "content": [{"type": "input_text", "text": "array input"}]},
            ]
        },
    ).json()
    assert body["output"][0]["content"][0]["text"] == "ECHO: array input"
    assert seen[0].history == [{"role": "user", "content": "earlier q"}, {"role": "assistant", "content": "earlier a"}]


def test_responses_previous_response_chain(emu: HermesEmulator) -> None:
    seen: list[RequestInfo] = []
    emu.script(lambda info: seen.append(info) or "ECHO: " + info.prompt)
    first = post(emu, RESP, {"input": "one", "instructions": "Be brief."})
    second = post(emu, RESP, {"input": "two", "previous_response_id": first.json()["id"]})
    third = post(emu, RESP, {"input": "three", "previous_response_id": second.json()["id"]})
    sids = {r.headers["X-Hermes-Session-Id"] for r in (first, second, third)}
    assert len(sids) == 1
    assert [len(i.history) for i in seen] == [0, 2, 4]
    assert [i.system_prompt for i in seen] == ["Be brief."] * 3  # carried forward
    missing = post(emu, RESP, {"input": "x", "previous_response_id": "resp_doesnotexist"})
    assert missing.status_code == 404
    assert missing.json() == {
        "error": {
            "message": "Previous response not found: resp_doesnotexist",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def test_responses_conversation_and_delete_head(emu: HermesEmulator) -> None:
    seen: list[RequestInfo] = []
    emu.script(lambda info: seen.append(info) or "ECHO: " + info.prompt)
    r1 = post(emu, RESP, {"input": "conv turn one", "conversation": "sdk-conv-1"})
    r2 = post(emu, RESP, {"input": "conv turn two", "conversation": "sdk-conv-1"})
    assert r1.headers["X-Hermes-Session-Id"] == r2.headers["X-Hermes-Session-Id"]
    assert emu.store.conversations() == {"sdk-conv-1": r2.json()["id"]}
    deleted = requests.delete(f"{emu.base_url}{RESP}/{r2.json()['id']}", headers=AUTH, timeout=10)
    assert deleted.json() == {"id": r2.json()["id"], "object": "response", "deleted": True}
    r3 = post(emu, RESP, {"input": "conv turn three", "conversation": "sdk-conv-1"})
    assert [len(i.history) for i in seen] == [0, 2, 0]
    assert r3.headers["X-Hermes-Session-Id"] != r1.headers["X-Hermes-Session-Id"]
    both = post(emu, RESP, {"input": "x", "conversation": "sdk-conv-1", "previous_response_id": r1.json()["id"]})
    assert both.status_code == 400
    assert both.json()["error"] == {
        "message": "Cannot use both 'conversation' and 'previous_response_id'",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }


def test_responses_conversation_history_wins(emu: HermesEmulator) -> None:
    seen: list[RequestInfo] = []
    emu.script(lambda info: seen.append(info) or "ok")
    first = post(emu, RESP, {"input": "a", "instructions": "sys"})
    resp = post(
        emu,
        RESP,
        {
            "input": "what did I say?",
            "previous_response_id": first.json()["id"],
            "conversation_history": [
                {"role": "user", "content": "I like tea"},
                {"role": "assistant", "content": "noted"},
            ],
        },
    )
    assert resp.headers["X-Hermes-Session-Id"] != first.headers["X-Hermes-Session-Id"]
    assert seen[1].history == [{"role": "user", "content": "I like tea"}, {"role": "assistant", "content": "noted"}]
    bad = post(emu, RESP, {"input": "x", "conversation_history": [{"role": "user"}]})
    assert bad.json()["error"]["message"] == ("conversation_history[0] must have 'role' and 'content' fields")
    bad2 = post(emu, RESP, {"input": "x", "conversation_history": "nope"})
    assert bad2.json() == {
        "error": {
            "message": "'conversation_history' must be an array of message objects",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
    }


def test_responses_truncation_auto_keeps_newest_100(emu: HermesEmulator) -> None:
    seen: list[RequestInfo] = []
    emu.script(lambda info: seen.append(info) or "ok")
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(150)]
    post(emu, RESP, {"input": "x", "conversation_history": history, "truncation": "auto"})
    post(emu, RESP, {"input": "x", "conversation_history": history})
    assert len(seen[0].history) == 100 and seen[0].history[0]["content"] == "m50"
    assert len(seen[1].history) == 150


def test_responses_store_false(emu: HermesEmulator) -> None:
    resp = post(emu, RESP, {"input": "do not store", "store": False}).json()
    assert resp["id"] not in emu.store
    got = requests.get(f"{emu.base_url}{RESP}/{resp['id']}", headers=AUTH, timeout=10)
    assert got.status_code == 404
    assert got.json()["error"]["message"] == f"Response not found: {resp['id']}"
    chained = post(emu, RESP, {"input": "x", "previous_response_id": resp["id"]})
    assert chained.status_code == 404


def test_delete_twice_and_get_after(emu: HermesEmulator) -> None:
    rid = post(emu, RESP, {"input": "delete me"}).json()["id"]
    url = f"{emu.base_url}{RESP}/{rid}"
    first = requests.delete(url, headers=AUTH, timeout=10)
    assert first.status_code == 200 and "X-Hermes-Session-Id" not in first.headers
    again = requests.delete(url, headers=AUTH, timeout=10)
    assert again.status_code == 404
    assert again.json() == {
        "error": {"message": f"Response not found: {rid}", "type": "invalid_request_error", "param": None, "code": None}
    }
    assert requests.get(url, headers=AUTH, timeout=10).status_code == 404


def test_lru_eviction_refresh_and_conversation_pointer(make: Any) -> None:
    emu = make(max_stored_responses=3)
    ids = [
        post(emu, RESP, {"input": f"r{i}", **({"conversation": "c"} if i == 0 else {})}).json()["id"] for i in range(3)
    ]
    assert emu.store.conversations() == {"c": ids[0]}
    requests.get(f"{emu.base_url}{RESP}/{ids[0]}", headers=AUTH, timeout=10)  # refresh
    newest = post(emu, RESP, {"input": "r3"}).json()["id"]
    assert ids[1] not in emu.store and ids[0] in emu.store
    assert emu.store.ids() == [ids[2], ids[0], newest]
    post(emu, RESP, {"input": "r4"})
    post(emu, RESP, {"input": "r5"})
    assert ids[0] not in emu.store
    assert emu.store.conversations() == {}  # cleared with the evicted head


def test_responses_stream_event_order(emu: HermesEmulator) -> None:
    resp = post(
        emu, RESP, {"model": "hermes-agent", "stream": True, "input": "stream a response please with several words"}
    )
    assert resp.headers["Transfer-Encoding"] == "chunked"
    uuid.UUID(resp.headers["X-Hermes-Session-Id"])
    events = sse_events(resp.text)
    types = [e["event"] for e in events]
    assert types[:2] == ["response.created", "response.output_item.added"]
    assert set(types[2:-3]) == {"response.output_text.delta"}
    assert types[-3:] == ["response.output_text.done", "response.output_item.done", "response.completed"]
    assert all(e["data"]["type"] == e["event"] for e in events)
    assert [e["data"]["sequence_number"] for e in events] == list(range(len(events)))
    created = events[0]["data"]["response"]
    assert created["status"] == "in_progress" and created["output"] == []
    item = events[1]["data"]["item"]
    assert re.fullmatch(r"msg_[0-9a-f]{24}", item["id"])
    assert item == {"id": item["id"], "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    text = "".join(e["data"]["delta"] for e in events if e["event"].endswith(".delta"))
    assert text == "ECHO: stream a response please with several words"
    assert events[-3]["data"]["text"] == text and events[-3]["data"]["logprobs"] == []
    final = events[-1]["data"]["response"]
    assert final["status"] == "completed"
    assert final["usage"] == {"input_tokens": 258, "output_tokens": 8, "total_tokens": 266}
    assert "[DONE]" not in resp.text
    got = requests.get(f"{emu.base_url}{RESP}/{final['id']}", headers=AUTH, timeout=10)
    assert got.json() == final


def test_responses_stream_batching_gives_single_delta(make: Any) -> None:
    emu = make(delta_batch_ms=50)
    events = sse_events(post(emu, RESP, {"input": "several words in one go", "stream": True}).text)
    deltas = [e for e in events if e["event"] == "response.output_text.delta"]
    assert [d["data"]["delta"] for d in deltas] == ["ECHO: several words in one go"]


def test_responses_stream_snapshot_and_incomplete(emu: HermesEmulator) -> None:
    emu.token_delay = 0.3
    resp = requests.post(
        emu.base_url + RESP,
        json={"input": "a b c d e f g h i j k l", "stream": True},
        headers=AUTH,
        stream=True,
        timeout=10,
    )
    lines = resp.iter_lines()
    first = next(line for line in lines if line.startswith(b"data: "))
    rid = json.loads(first[6:])["response"]["id"]
    assert emu.stored_response(rid)["status"] == "in_progress"
    resp.raw._fp.fp.raw._sock.shutdown(socket.SHUT_RDWR)  # the client vanishes mid-stream
    resp.close()
    deadline = time.time() + 30  # a guard against a hang, not a bound
    while time.time() < deadline and emu.stored_response(rid)["status"] == "in_progress":
        time.sleep(0.05)
    assert emu.stored_response(rid)["status"] == "incomplete"


# -- errors and ordering --------------------------------------------------------------
@pytest.mark.parametrize(
    "path,body,expected",
    [
        (
            CHAT,
            b"{not json",
            {
                "error": {
                    "message": "Invalid JSON in request body",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (RESP, b"{not json", {"error": {"message": "Invalid JSON in request body", "type": "invalid_request_error"}}),
        (
            CHAT,
            b'{"model":"hermes-agent"}',
            {"error": {"message": "Missing or invalid 'messages' field", "type": "invalid_request_error"}},
        ),
        (
            CHAT,
            b'{"messages":[{"role":"system","content":"s"}]}',
            {"error": {"message": "No user message found in messages", "type": "invalid_request_error"}},
        ),
        (
            RESP,
            b'{"model":"hermes-agent"}',
            {
                "error": {
                    "message": "Missing 'input' field",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (
            RESP,
            b'{"input":42}',
            {
                "error": {
                    "message": "'input' must be a string or array",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (
            RESP,
            b'{"input":"   "}',
            {
                "error": {
                    "message": "No user message found in input",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (
            CHAT,
            b'{"messages":[{"role":"user","content":[{"type":"input_file","file_id":"f1"}]}]}',
            {
                "error": {
                    "message": "Inline image inputs are supported, but uploaded files and document"
                    " inputs are not supported on this endpoint.",
                    "type": "invalid_request_error",
                    "param": "messages[0].content",
                    "code": "unsupported_content_type",
                }
            },
        ),
    ],
)
def test_400_bodies(emu: HermesEmulator, path: str, body: bytes, expected: Any) -> None:
    resp = requests.post(emu.base_url + path, data=body, headers=AUTH, timeout=10)
    assert resp.status_code == 400
    assert_json_headers(resp)
    assert resp.json() == expected
    assert resp.content == json.dumps(expected).encode()
    assert emu.executions == 0


def test_401_everywhere_and_health_without_auth(emu: HermesEmulator) -> None:
    expected = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}
    url = emu.base_url
    for resp in (
        requests.post(url + CHAT, json={"messages": []}, headers={"Authorization": "Bearer no"}),
        requests.post(url + RESP, json={"input": "x"}),
        requests.post(url + RESP, json={"input": "x"}, headers={"Authorization": f"bearer {KEY}"}),
        requests.get(url + RESP + "/resp_x"),
        requests.delete(url + RESP + "/resp_x"),
        requests.get(url + "/v1/models"),
    ):
        assert resp.status_code == 401 and resp.json() == expected
        assert_json_headers(resp)
    for path in ("/health", "/v1/health"):
        health = requests.get(url + path, timeout=10)
        assert health.content == b'{"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}'
        assert_json_headers(health)
    models = requests.get(url + "/v1/models", headers=AUTH, timeout=10).json()
    assert models["object"] == "list" and models["data"][0]["id"] == "hermes-agent"
    assert requests.get(url + "/p/anything/v1/models", headers=AUTH).status_code == 200


def test_origin_403_empty(emu: HermesEmulator) -> None:
    resp = chat(emu, "x", headers={"Origin": "http://evil.example"})
    assert resp.status_code == 403 and resp.content == b""
    assert "Content-Type" not in resp.headers and resp.headers["Content-Length"] == "0"
    assert "X-Frame-Options" not in resp.headers


def test_404_and_405_plain_text(emu: HermesEmulator) -> None:
    nope = requests.get(emu.base_url + "/v1/nope", headers=AUTH, timeout=10)
    assert nope.status_code == 404 and nope.content == b"404: Not Found"
    assert nope.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert "X-Frame-Options" not in nope.headers
    wrong = requests.get(emu.base_url + RESP, headers=AUTH, timeout=10)
    assert wrong.status_code == 405 and wrong.content == b"405: Method Not Allowed"
    assert wrong.headers["Allow"] == "POST"


def test_413_from_content_length_before_auth(emu: HermesEmulator) -> None:
    for auth in (KEY, "wrong"):
        head = (
            f"POST {RESP} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {auth}\r\n"
            "Content-Type: application/json\r\nContent-Length: 10000012\r\n\r\n"
        ).encode()
        raw = raw_exchange(emu, head, timeout=5)
        status, _, rest = raw.partition(b"\r\n")
        assert status == b"HTTP/1.1 413 Request Entity Too Large"
        headers, _, body = rest.partition(b"\r\n\r\n")
        assert body == (
            b'{"error": {"message": "Request body too large.", "type": '
            b'"invalid_request_error", "param": null, "code": "body_too_large"}}'
        )
        assert b"X-Frame-Options" not in headers


@pytest.mark.parametrize("path,shape", [(CHAT, ["message", "type", "param", "code"]), (RESP, ["message", "type"])])
def test_chunked_oversize_is_invalid_json(emu: HermesEmulator, path: str, shape: Any) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=30)
    piece = b"x" * (1 << 20)
    conn.request(
        "POST",
        path,
        body=iter([piece] * 10 + [b"x" * 20]),
        headers=dict(AUTH, **{"Content-Type": "application/json"}),
        encode_chunked=True,
    )
    resp = conn.getresponse()
    body = json.loads(resp.read())
    assert resp.status == 400 and list(body["error"]) == shape
    assert body["error"]["message"] == "Invalid JSON in request body"
    conn.close()


# -- idempotency ----------------------------------------------------------------------
def test_idempotency_chat(emu: HermesEmulator) -> None:
    key = {"Idempotency-Key": "idem-001"}
    first = chat(emu, "idempotent hello", headers=key).json()
    again = chat(emu, "idempotent hello", headers=key).json()
    assert emu.executions == 1
    assert again["id"] != first["id"] and again["choices"] == first["choices"]
    chat(emu, "different body", headers=key)
    assert emu.executions == 2
    chat(emu, "idempotent hello", headers=key)
    assert emu.executions == 3
    chat(emu, "idempotent hello", temperature=0.1, headers=key)
    assert emu.executions == 3  # temperature is not fingerprinted
    chat(emu, "idempotent hello", stream=True, headers=key)
    chat(emu, "idempotent hello", stream=True, headers=key)
    assert emu.executions == 5  # streams ignore the key


def test_idempotency_responses_new_id_stored_again(emu: HermesEmulator) -> None:
    key = {"Idempotency-Key": "idem-r1"}
    a = post(emu, RESP, {"input": "idem resp"}, **key)
    b = post(emu, RESP, {"input": "idem resp"}, **key)
    assert emu.executions == 1
    assert a.json()["id"] != b.json()["id"] and b.json()["id"] in emu.store
    assert a.json()["output"] == b.json()["output"]
    assert a.headers["X-Hermes-Session-Id"] != b.headers["X-Hermes-Session-Id"]


def test_idempotency_key_shared_across_endpoints(emu: HermesEmulator) -> None:
    key = {"Idempotency-Key": "shared"}
    chat(emu, "x", headers=key)
    post(emu, RESP, {"input": "x"}, **key)
    chat(emu, "x", headers=key)  # the responses call overwrote the slot
    assert emu.executions == 3


def test_idempotency_concurrent_share_one_run(emu: HermesEmulator) -> None:
    results: list[requests.Response] = []
    threads = [
        threading.Thread(target=lambda: results.append(chat(emu, "SLOW:0.5 same", headers={"Idempotency-Key": "k"})))
        for _ in range(3)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert emu.executions == 1 and len({r.json()["id"] for r in results}) == 3


# -- concurrency ----------------------------------------------------------------------
def test_concurrency_429(make: Any) -> None:
    emu = make(max_concurrent_runs=1)
    holder = threading.Thread(target=chat, args=(emu, "SLOW:1.5 hold the slot"))
    holder.start()
    deadline = time.time() + 30  # a guard against a hang, not a bound
    while emu.active_runs == 0 and time.time() < deadline:
        time.sleep(0.01)
    expected = {
        "error": {
            "message": "Too many concurrent runs (max 1)",
            "type": "rate_limit_error",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    for resp in (
        chat(emu, "B"),
        post(emu, RESP, {"input": "C", "stream": True}),
        requests.post(emu.base_url + CHAT, data=b"{bad", headers=AUTH),
    ):
        assert resp.status_code == 429 and resp.json() == expected
        assert resp.headers["Retry-After"] == "1"
        assert list(resp.headers)[0] == "Retry-After"
    holder.join()
    assert chat(emu, "D").status_code == 200
    assert emu.executions == 2


def test_a_run_from_before_a_reset_does_not_take_a_slot_after_it(make: Any) -> None:
    # CI under load: a turn's reply was out, its slot not yet given back, and the next test's
    # first request on the "fresh" emulator was answered 429.
    emu = make(max_concurrent_runs=1)
    entered, leave = threading.Event(), threading.Event()

    def held(info: RequestInfo) -> str:
        entered.set()
        leave.wait(30)
        return "held"

    emu.script(responder=held)
    holder = threading.Thread(target=chat, args=(emu, "hold the slot"))
    holder.start()
    try:
        assert entered.wait(30)
        emu.reset()
        assert emu.active_runs == 0
        assert chat(emu, "after the reset").status_code == 200
    finally:
        leave.set()
        holder.join()
    assert emu.active_runs == 0  # the old slot's release did not count against the new runs
    assert chat(emu, "again").status_code == 200


def test_concurrency_cap_zero_disables(make: Any) -> None:
    emu = make(max_concurrent_runs=0)
    results: list[int] = []
    threads = [threading.Thread(target=lambda: results.append(chat(emu, "SLOW:0.3 x").status_code)) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 12


# -- agent failures -------------------------------------------------------------------
def test_chat_fail500_soft_failure(emu: HermesEmulator) -> None:
    resp = chat(emu, "please FAIL500")
    assert resp.status_code == 200
    assert resp.headers["X-Hermes-Completed"] == "false"
    assert resp.headers["X-Hermes-Partial"] == "false"
    assert resp.headers["X-Hermes-Error"] == "HTTP 500: fake upstream exploded (FAIL500)"
    body = resp.json()
    assert body["choices"][0]["message"]["content"] == (
        "API call failed after 1 retries: HTTP 500: fake upstream exploded (FAIL500)"
    )
    assert body["choices"][0]["finish_reason"] == "error"
    assert body["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    assert body["hermes"] == {
        "completed": False,
        "partial": False,
        "failed": True,
        "error": "HTTP 500: fake upstream exploded (FAIL500)",
        "error_code": "agent_error",
    }
    assert list(body) == ["id", "object", "created", "model", "choices", "usage", "hermes"]


@pytest.mark.parametrize(
    "status,text",
    [(400, "HTTP 400: fake upstream bad request (FAIL400)"), (401, "HTTP 401: fake upstream unauthorized (FAIL401)")],
)
def test_chat_fail4xx(emu: HermesEmulator, status: int, text: str) -> None:
    body = chat(emu, f"please FAIL{status}").json()
    assert body["choices"][0]["message"]["content"] == text
    assert body["hermes"]["error"] == text


def test_chat_truncate_and_truncempty(emu: HermesEmulator) -> None:
    trunc = chat(emu, "please TRUNCATE")
    body = trunc.json()
    assert body["choices"][0] == {
        "index": 0,
        "message": {"role": "assistant", "content": "ECHO-PART" * 4},
        "finish_reason": "length",
    }
    assert body["hermes"]["error_code"] == "output_truncated" and body["hermes"]["partial"]
    assert trunc.headers["X-Hermes-Partial"] == "true"
    assert trunc.headers["X-Hermes-Error"] == ("Response remained truncated after 4 continuation attempts")
    empty = chat(emu, "please TRUNCEMPTY")
    assert empty.status_code == 502
    assert empty.content == (
        b'{"error": {"message": "Response remained truncated after 4 continuation attempts", '
        b'"type": "server_error", "param": null, "code": "agent_incomplete", "hermes": '
        b'{"completed": false, "partial": true, "failed": false}}}'
    )
    assert empty.headers["X-Hermes-Partial"] == "true"
    assert "X-Hermes-Error" not in empty.headers
    assert empty.headers["X-Hermes-Session-Id"].startswith("api-")


def test_truncate_in_earlier_user_message(emu: HermesEmulator) -> None:
    body = post(
        emu,
        CHAT,
        {
            "messages": [
                {"role": "user", "content": "TRUNCATE"},
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": "go"},
            ]
        },
    ).json()
    assert body["choices"][0]["finish_reason"] == "length"


def test_chat_stream_failures(emu: HermesEmulator) -> None:
    events = sse_events(chat(emu, "stream FAIL500", stream=True).text)
    assert len(events) == 3 and events[-1]["data"] == "[DONE]"
    final = events[1]["data"]
    assert final["choices"][0]["finish_reason"] == "error"
    assert final["error"] == {"message": "HTTP 500: fake upstream exploded (FAIL500)", "type": "agent_error"}
    assert final["hermes"]["failed"] is True
    trunc = sse_events(chat(emu, "stream TRUNCATE", stream=True).text)
    assert [e["data"]["choices"][0]["delta"].get("content") for e in trunc[1:5]] == ["ECHO-PART"] * 4
    assert trunc[5]["data"]["choices"][0]["finish_reason"] == "length"
    assert trunc[5]["data"]["hermes"]["error_code"] == "output_truncated"
    empty = sse_events(chat(emu, "stream TRUNCEMPTY", stream=True).text)
    assert len(empty) == 3 and empty[1]["data"]["choices"][0]["finish_reason"] == "length"


def test_responses_failures(emu: HermesEmulator) -> None:
    fail = post(emu, RESP, {"input": "resp FAIL500"}).json()
    assert fail["status"] == "completed"
    assert fail["output"][0]["content"][0]["text"] == (
        "API call failed after 1 retries: HTTP 500: fake upstream exploded (FAIL500)"
    )
    assert fail["usage"] == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    empty = post(emu, RESP, {"input": "resp TRUNCEMPTY"}).json()
    assert empty["status"] == "completed"
    assert empty["output"][0]["content"][0]["text"] == ("Response remained truncated after 4 continuation attempts")
    streamed = sse_events(post(emu, RESP, {"input": "resp stream FAIL500", "stream": True}).text)
    assert [e["event"] for e in streamed][-1] == "response.completed"
    assert streamed[2]["data"]["delta"].startswith("API call failed after 1 retries")
    failed = sse_events(post(emu, RESP, {"input": "resp stream TRUNCEMPTY", "stream": True}).text)
    assert [e["event"] for e in failed] == ["response.created", "response.failed"]
    envelope = failed[1]["data"]["response"]
    assert envelope["status"] == "failed"
    assert envelope["error"] == {
        "message": "Response remained truncated after 4 continuation attempts",
        "type": "server_error",
    }
    assert list(envelope) == ["id", "object", "status", "created_at", "model", "output", "error", "usage"]
    got = requests.get(f"{emu.base_url}{RESP}/{envelope['id']}", headers=AUTH, timeout=10)
    assert got.json() == envelope


# -- keepalive, framing, live delivery ---------------------------------------------------
def test_keepalive_comment(make: Any) -> None:
    emu = make(keepalive_seconds=0.2)
    text = chat(emu, "SLOW:0.7 keepalive please", stream=True).text
    assert ": keepalive\n\n" in text
    assert text.index(": keepalive") > text.index('"role": "assistant"')
    text2 = post(emu, RESP, {"input": "SLOW:0.7 x", "stream": True}).text
    assert ": keepalive\n\n" in text2


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_first_event_arrives_live(make: Any, framing: str) -> None:
    # The model holds the run until the test has the first event: it came before the rest existed.
    emu = make(framing=framing)
    release, waited_out = threading.Event(), []
    emu.script(lambda info: None if release.wait(60) else waited_out.append(True))
    conn = http.client.HTTPConnection("127.0.0.1", emu.port, timeout=10)
    conn.request(
        "POST",
        RESP,
        body=json.dumps({"input": "one two three four five six seven", "stream": True}),
        headers=dict(AUTH, **{"Content-Type": "application/json"}),
    )
    resp = conn.getresponse()
    if framing == "close":
        assert resp.getheader("Connection") == "close"
        assert resp.getheader("Transfer-Encoding") is None
        assert resp.getheader("Content-Length") is None
    else:
        assert resp.getheader("Transfer-Encoding") == "chunked"
    first = resp.readline()
    assert first.startswith(b"event: response.created") and not waited_out  # while the model was held
    release.set()
    rest = resp.read()
    assert b"response.completed" in rest
    conn.close()


def test_close_framing_chat(make: Any) -> None:
    emu = make(framing="close")
    raw = raw_exchange(emu, raw_post(CHAT, b'{"stream":true,"messages":[{"role":"user","content":"hi"}]}'))
    head, _, body = raw.partition(b"\r\n\r\n")
    assert b"Connection: close" in head and b"Transfer-Encoding" not in head
    assert body.endswith(b"data: [DONE]\n\n")


# -- controls --------------------------------------------------------------------------
def test_script_queue_and_responder(emu: HermesEmulator) -> None:
    emu.script("first", Reply(text="second", finish="length"))
    assert chat(emu, "a").json()["choices"][0]["message"]["content"] == "first"
    second = chat(emu, "b").json()
    assert second["choices"][0]["finish_reason"] == "length"
    assert chat(emu, "c").json()["choices"][0]["message"]["content"] == "ECHO: c"
    emu.script(lambda info: f"{info.endpoint}:{info.prompt}")
    assert post(emu, RESP, {"input": "d"}).json()["output"][0]["content"][0]["text"] == ("responses:d")
    emu.script(Reply(deltas=["a", "b", "c"]))
    events = sse_events(chat(emu, "x", stream=True).text)
    assert [e["data"]["choices"][0]["delta"].get("content") for e in events[1:4]] == ["a", "b", "c"]


def test_fail_next_and_force_truncation(emu: HermesEmulator) -> None:
    emu.fail_next(2, status=400)
    assert chat(emu, "x").json()["hermes"]["error"].startswith("HTTP 400")
    assert chat(emu, "x").json()["hermes"]["failed"] is True
    assert "hermes" not in chat(emu, "x").json()
    emu.force_truncation(empty=True)
    assert chat(emu, "x").status_code == 502
    emu.force_truncation(False)
    assert chat(emu, "x").status_code == 200
    assert emu.executions == 5


def test_requests_seen_connections_and_reset(emu: HermesEmulator) -> None:
    with requests.Session() as session:
        for _ in range(3):
            session.post(
                emu.base_url + CHAT, json={"messages": [{"role": "user", "content": "x"}]}, headers=AUTH, timeout=10
            )
    assert emu.connections == 1  # keep-alive reuse
    seen = emu.requests_seen
    assert [(r.method, r.path) for r in seen] == [("POST", CHAT)] * 3
    assert seen[0].body == {"messages": [{"role": "user", "content": "x"}]}
    assert seen[0].header("authorization") == f"Bearer {KEY}"
    emu.reset()
    assert emu.executions == 0 and emu.requests_seen == [] and emu.connections == 0


def test_drop_before_response(emu: HermesEmulator) -> None:
    emu.drop_connection("before_response")
    with pytest.raises(requests.ConnectionError):
        chat(emu, "x")
    assert emu.executions == 1  # the run happened; the client cannot know
    emu.drop_connection("before_response", after_execution=False)
    with pytest.raises(requests.ConnectionError):
        post(emu, RESP, {"input": "x"})
    assert emu.executions == 1
    assert chat(emu, "x").status_code == 200  # one-shot


def test_drop_mid_body(emu: HermesEmulator) -> None:
    emu.drop_connection("mid_body")
    try:
        reply = chat(emu, "x")
        body = reply.content
    except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError):
        return  # urllib3 2 enforces Content-Length: the cut body is an error
    assert len(body) < int(reply.headers["Content-Length"])  # urllib3 1.26 hands over what arrived


def test_drop_mid_stream(emu: HermesEmulator) -> None:
    emu.drop_connection("mid_stream", after_events=2)
    resp = requests.post(
        emu.base_url + RESP,
        json={"input": "one two three four five six", "stream": True},
        headers=AUTH,
        stream=True,
        timeout=10,
    )
    received = b""
    with pytest.raises(requests.exceptions.ChunkedEncodingError):
        for chunk in resp.iter_content(chunk_size=None):
            received += chunk
    assert received.count(b"event: ") == 2
    rid = json.loads(received.split(b"data: ", 1)[1].split(b"\n", 1)[0])["response"]["id"]
    deadline = time.time() + 30  # a guard against a hang, not a bound
    while time.time() < deadline and emu.stored_response(rid)["status"] != "incomplete":
        time.sleep(0.05)
    assert emu.stored_response(rid)["status"] == "incomplete"


def test_stop_closes_socket() -> None:
    emulator = HermesEmulator().start()
    port = emulator.port
    with requests.Session() as session:
        session.get(emulator.base_url + "/health", timeout=5)  # leaves an idle keep-alive
        emulator.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    assert emulator.executions == 0 and not emulator.running


def test_stopping_during_a_slow_run_prints_no_traceback(capfd) -> None:
    emulator = HermesEmulator().start()
    seen: list[str] = []

    client = emulator.client(load_entrypoints=False)  # here: a busy machine may start the thread late

    def call() -> None:
        with client:
            try:
                client.chat(prompt="SLOW:5 x")
            except Exception as exc:  # the connection goes away with the emulator
                seen.append(type(exc).__name__)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 10
    while emulator.executions == 0 and time.monotonic() < deadline:  # the run is under way
        time.sleep(0.02)
    assert emulator.executions == 1
    emulator.stop()
    caller.join(10)
    assert seen == ["TransportError"]
    assert "Traceback" not in capfd.readouterr().err


def _documented_routes() -> set[tuple[str, str]]:
    """(method, route) of every row of the route table in docs/emulator.md."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "emulator.md").read_text(encoding="utf-8")
    table = text.split("It serves", 1)[1].split("\n\n", 2)[1]
    found = set()
    for row in table.splitlines()[2:]:
        methods, routes = row.split("|")[1:3]
        found |= {(m, r) for m in re.findall(r"`([A-Z]+)`", methods) for r in re.findall(r"`(/[^`]*)`", routes)}
    return found


def test_the_route_table_is_the_servers() -> None:
    """The emulator page lists every route the server answers, and nothing it does not: the table is
    built from the families' own ROUTES here, and each route is asked once."""
    from hermes_sdk.testing.families import FAMILY_MODULES
    from hermes_sdk.testing.routes import Router

    served = {(m, re.sub(r"\{[a-z_]+\}", "{id}", route.template))
              for route in Router(FAMILY_MODULES).routes for m in route.methods}
    assert _documented_routes() == served
    from hermes_sdk.testing.versions import SERVER_VERSIONS

    # the newest release the emulator plays answers every route (0.19.0 has no steer, no model options)
    with HermesEmulator(server_version=SERVER_VERSIONS[-1]) as emu, requests.Session() as http:
        http.headers["Authorization"] = f"Bearer {emu.api_key}"
        for method, route in sorted(served):
            reply = http.request(method, emu.base_url + route.replace("{id}", "x-none"),
                                 json={} if method in ("POST", "PATCH") else None, timeout=30)
            assert reply.status_code != 405 and reply.text != "404: Not Found", (method, route, reply.status_code)
        assert http.get(emu.base_url + "/v1/nothing-here", timeout=30).text == "404: Not Found"
        # A HEAD reply has no body: one there was read as the next reply's start (BadStatusLine).
        assert http.head(emu.base_url + "/health", timeout=30).content == b""
        assert http.get(emu.base_url + "/health", timeout=30).json()["status"] == "ok"
    assert emu.connections == 1


def test_emulator_options_name_every_keyword_option_of_the_emulator() -> None:
    """``options_from()``/``serve(**options)``/the factory fixture are typed by ``EmulatorOptions``: it
    must stay the emulator's keyword-only options, with the same annotations."""
    import inspect

    from hermes_sdk.testing.emulator import EmulatorOptions

    keyword_only = {
        name: param.annotation
        for name, param in inspect.signature(HermesEmulator.__init__).parameters.items()
        if param.kind is inspect.Parameter.KEYWORD_ONLY
    }
    declared = {name: getattr(t, "__forward_arg__", t) for name, t in EmulatorOptions.__annotations__.items()}
    assert keyword_only == declared  # both as source text (from __future__ import annotations)
