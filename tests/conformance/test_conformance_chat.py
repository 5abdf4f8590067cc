"""Chat completions: transcripts 01, 02, 03, 20 and 23, through the SDK's public API."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from conformance_helpers import (
    CHAT_ID,
    CHAT_SID,
    FAIL400_TEXT,
    FAIL500_TEXT,
    REMOTE_REJECTED,
    REMOTE_TEMPORARY,
    STREAM_FAILED,
    TRUNCATION_TEXT,
    ZERO_CHAT_USAGE,
    Target,
    assert_error,
    assert_usage,
    derived_chat_session_id,
    uniq,
)

from hermes_sdk import AgentIncompleteError, BadRequestError, ChatCompletion, StreamResult
from hermes_sdk._core.capabilities import capability_id

# --------------------------------------------------------------------------- 01


def test_01_chat_nonstream_system_and_user(server: Target) -> None:
    user = uniq("hello there")
    mark = server.mark()
    with server.client() as client:
        done = client.chat(messages=[{"role": "system", "content": "You are terse."},
                                     {"role": "user", "content": user}])
    assert isinstance(done, ChatCompletion)
    assert CHAT_ID.match(done.id), done.id
    assert done.raw["object"] == "chat.completion"
    assert done.model == "hermes-agent"
    assert isinstance(done.created, int)
    assert done.text == f"ECHO: {user}"
    assert done.finish_reason == "stop"
    assert done.hermes is None and "hermes" not in done.raw
    assert done.completed
    assert "system_fingerprint" not in done.raw
    assert set(done.raw) == {"id", "object", "created", "model", "choices", "usage"}
    assert_usage(done.usage, "chat")
    assert done.session_id == derived_chat_session_id("You are terse.", user)
    calls = server.calls_since(mark)
    assert [c["roles"] for c in calls] == [["system", "user"]]
    assert calls[0]["last_user"] == user


def test_01_stateless_history_keeps_the_derived_session_id(server: Target) -> None:
    first = uniq("hello there")
    with server.client() as client:
        one = client.chat(messages=[{"role": "system", "content": "You are terse."},
                                    {"role": "user", "content": first}])
        mark = server.mark()
        two = client.chat(messages=[{"role": "system", "content": "You are terse."},
                                    {"role": "user", "content": first},
                                    {"role": "assistant", "content": one.text},
                                    {"role": "user", "content": "second turn"}])
    assert two.text == "ECHO: second turn"
    assert two.session_id == one.session_id == derived_chat_session_id("You are terse.", first)
    assert [c["roles"] for c in server.calls_since(mark)] == [["system", "user", "assistant", "user"]]


def test_01_content_parts_and_model_echo(server: Target) -> None:
    word = uniq("parts")
    with server.client() as client:
        done = client.chat(model="my-client-model", messages=[
            {"role": "user", "content": [{"type": "text", "text": word}, {"type": "text", "text": "array"}]}])
    assert done.model == "my-client-model"
    assert done.text == f"ECHO: {word}\narray"
    assert CHAT_SID.match(done.session_id or "")


def test_01_stream_given_as_string_false_is_not_a_stream(server: Target) -> None:
    # The SDK always sends a real boolean; the wire accepts strings too (L142-164).
    word = uniq("stringly")
    reply = server.http.post(server.url("/v1/chat/completions"), headers=server.auth(), timeout=30,
                             json={"stream": "false", "messages": [{"role": "user", "content": word}]})
    assert reply.status_code == 200
    assert reply.headers["Content-Type"] == "application/json; charset=utf-8"
    assert reply.json()["choices"][0]["message"]["content"] == f"ECHO: {word}"


def test_01_through_invoke(server: Target) -> None:
    user = uniq("invoke chat")
    with server.client() as client:
        result = client.invoke(capability_id("default", "chat"), {"prompt": user})
    assert result.status == "completed" and result.error is None
    assert result.output["choices"][0]["message"]["content"] == f"ECHO: {user}"
    assert result.session_id == derived_chat_session_id("", user)
    assert result.http_status == 200


# --------------------------------------------------------------------------- 02


def test_02_session_header_loads_history_and_ignores_body_history(server: Target) -> None:
    sid = uniq("sdk-sess").replace(" ", "-")
    with server.client() as client:
        m1 = server.mark()
        one = client.chat(prompt="my name is Ada", session_id=sid)
        m2 = server.mark()
        two = client.chat(prompt="what is my name?", session_id=sid)
        m3 = server.mark()
        three = client.chat(session_id=sid, messages=[
            {"role": "user", "content": "IGNORED-OLD"},
            {"role": "assistant", "content": "IGNORED-OLD-REPLY"},
            {"role": "user", "content": "third"}])
    assert [one.session_id, two.session_id, three.session_id] == [sid] * 3
    assert [one.text, two.text, three.text] == ["ECHO: my name is Ada", "ECHO: what is my name?", "ECHO: third"]
    # History comes from the server's session store: upstream roles grow 2 -> 4 -> 6.
    assert [c["n_messages"] for c in server.calls_between(m1, m2)] == [2]
    assert [c["n_messages"] for c in server.calls_between(m2, m3)] == [4]
    third = server.calls_since(m3)
    assert [c["roles"] for c in third] == [["system", "user", "assistant", "user", "assistant", "user"]]
    assert third[0]["last_user"] == "third"


def test_02_session_key_is_echoed(server: Target) -> None:
    reply = server.http.post(server.url("/v1/chat/completions"), timeout=30,
                             headers=server.auth(**{"X-Hermes-Session-Key": "agent:main:sdk:user-1"}),
                             json={"messages": [{"role": "user", "content": uniq("key test")}]})
    assert reply.status_code == 200
    assert reply.headers["X-Hermes-Session-Key"] == "agent:main:sdk:user-1"
    assert CHAT_SID.match(reply.headers["X-Hermes-Session-Id"])
    with server.client() as client:  # the SDK sends it and still gets a normal completion
        done = client.chat(prompt=uniq("key test"), session_key="agent:main:sdk:user-1")
    assert done.finish_reason == "stop"


def test_02_path_shaped_session_id_is_a_server_400(server: Target) -> None:
    mark = server.mark()
    with server.client() as client, pytest.raises(BadRequestError) as info:
        client.chat(prompt="x", session_id="../../etc")
    assert_error(info.value, code=REMOTE_REJECTED, category="permanent", http_status=400, retryable=False)
    assert info.value.details["provider_error"] == {"type": "invalid_request_error"}
    assert "Invalid session ID" in info.value.message
    assert server.calls_since(mark) == []


# --------------------------------------------------------------------------- 03


def _chunks(result: StreamResult) -> list[dict[str, Any]]:
    return [e.data for e in result.events if isinstance(e.data, dict)]


def test_03_chat_stream_event_order(server: Target) -> None:
    user = uniq("stream me one two three four five six seven")
    with server.client() as client:
        stream = client.chat_stream(prompt=user)
        pieces = list(stream.text_deltas())
        result = stream.result()
    assert result.status == "completed" and result.error is None and result.terminal
    assert result.text == "".join(pieces) == f"ECHO: {user}"
    assert result.http_status == 200
    assert stream.session_id == result.session_id == derived_chat_session_id("", user)
    assert all(e.event is None for e in result.events)  # bare data: lines, no event: line
    assert result.events[-1].data == "[DONE]" and result.events[-1].terminal
    chunks = _chunks(result)
    assert len(chunks) == len(result.events) - 1
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({(c["id"], c["created"], c["model"]) for c in chunks}) == 1
    assert CHAT_ID.match(chunks[0]["id"])
    first, *content, final = chunks
    assert first["choices"] == [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]
    assert content and all(set(c["choices"][0]["delta"]) == {"content"} for c in content)
    assert all(c["choices"][0]["finish_reason"] is None and "usage" not in c for c in content)
    assert final["choices"] == [{"index": 0, "delta": {}, "finish_reason": "stop"}]
    assert_usage(final["usage"], "chat")
    assert "error" not in final and "hermes" not in final
    assert result.finish_reason == "stop" and result.usage == final["usage"]


def test_03_chat_stream_with_session_header(server: Target) -> None:
    sid = uniq("sdk-sess-stream").replace(" ", "-")
    with server.client() as client:
        stream = client.chat_stream(prompt="streamed turn", session_id=sid, stream_options={"include_usage": True})
        result = stream.result()
    assert stream.session_id == sid
    assert result.text == "ECHO: streamed turn"
    # include_usage is ignored: usage only in the finish chunk, no extra usage-only chunk.
    chunks = _chunks(result)
    assert [("usage" in c) for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert all(c["choices"] for c in chunks)


# --------------------------------------------------------------------------- 20


def test_20_chat_fail500_is_a_soft_200(server: Target) -> None:
    mark = server.mark()
    with server.client() as client:
        done = client.chat(prompt=uniq("please FAIL500"))
    assert done.finish_reason == "error"
    assert done.text == f"API call failed after 1 retries: {FAIL500_TEXT}"
    assert done.hermes == {"completed": False, "partial": False, "failed": True,
                           "error": FAIL500_TEXT, "error_code": "agent_error"}
    assert not done.completed
    assert done.usage == ZERO_CHAT_USAGE
    assert len(server.calls_since(mark)) == 1  # api_max_retries: 1


def test_20_chat_fail500_headers(server: Target) -> None:
    reply = server.http.post(server.url("/v1/chat/completions"), headers=server.auth(), timeout=30,
                             json={"messages": [{"role": "user", "content": uniq("please FAIL500")}]})
    assert reply.status_code == 200
    assert reply.headers["X-Hermes-Completed"] == "false"
    assert reply.headers["X-Hermes-Partial"] == "false"
    assert reply.headers["X-Hermes-Error"] == FAIL500_TEXT


def test_20_chat_fail400_is_a_soft_200(server: Target) -> None:
    with server.client() as client:
        done = client.chat(prompt=uniq("please FAIL400"))
    assert done.finish_reason == "error"
    assert done.text == FAIL400_TEXT
    assert done.hermes == {"completed": False, "partial": False, "failed": True,
                           "error": FAIL400_TEXT, "error_code": "agent_error"}


def test_20_chat_truncate_is_a_soft_partial(server: Target) -> None:
    mark = server.mark()
    with server.client() as client:
        done = client.chat(prompt=uniq("please TRUNCATE"))
    assert done.finish_reason == "length"
    assert done.text == "ECHO-PART" * 4
    assert done.hermes == {"completed": False, "partial": True, "failed": False,
                           "error": TRUNCATION_TEXT, "error_code": "output_truncated"}
    assert done.usage == ZERO_CHAT_USAGE
    calls = server.calls_since(mark)
    assert [c["n_messages"] for c in calls] == [2, 4, 6, 8]  # three continuation requests


def test_20_chat_truncempty_is_a_502_agent_incomplete(server: Target) -> None:
    with server.client() as client, pytest.raises(AgentIncompleteError) as info:
        client.chat(prompt=uniq("please TRUNCEMPTY"))
    err = info.value
    assert_error(err, code=REMOTE_TEMPORARY, category="temporary", http_status=502, uncertain=True)
    assert err.hermes == {"completed": False, "partial": True, "failed": False}
    assert err.details["provider_error"] == {"type": "server_error", "code": "agent_incomplete"}
    assert TRUNCATION_TEXT in err.message
    reply = server.http.post(server.url("/v1/chat/completions"), headers=server.auth(), timeout=30,
                             json={"messages": [{"role": "user", "content": uniq("please TRUNCEMPTY")}]})
    assert reply.status_code == 502
    assert reply.headers["X-Hermes-Completed"] == "false" and reply.headers["X-Hermes-Partial"] == "true"
    assert "X-Hermes-Error" not in reply.headers
    assert reply.json() == {"error": {"message": TRUNCATION_TEXT, "type": "server_error", "param": None,
                                      "code": "agent_incomplete",
                                      "hermes": {"completed": False, "partial": True, "failed": False}}}


def _stream_failure(server: Target, prompt: str) -> tuple[StreamResult, list[dict[str, Any]]]:
    with server.client() as client:
        result = client.chat_stream(prompt=uniq(prompt)).result()
    assert result.events[-1].data == "[DONE]"
    assert result.status == "failed" and result.terminal
    assert result.error is not None
    assert_error(result.error, code=STREAM_FAILED, category="connector", http_status=None, uncertain=True)
    chunks = _chunks(result)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert chunks[-1]["choices"][0]["delta"] == {}
    assert chunks[-1]["usage"] == ZERO_CHAT_USAGE
    return result, chunks


def test_20_chat_stream_fail500(server: Target) -> None:
    result, chunks = _stream_failure(server, "stream FAIL500")
    assert len(chunks) == 2  # role chunk, then the finish chunk: no text was streamed
    final = chunks[-1]
    assert final["choices"][0]["finish_reason"] == "error" == result.finish_reason
    assert final["error"] == {"message": FAIL500_TEXT, "type": "agent_error"}
    assert final["hermes"] == {"completed": False, "partial": False, "failed": True,
                               "error": FAIL500_TEXT, "error_code": "agent_error"}
    assert result.text == ""


def test_20_chat_stream_truncate(server: Target) -> None:
    result, chunks = _stream_failure(server, "stream TRUNCATE")
    assert result.text == "ECHO-PART" * 4
    # How the four ECHO-PART replies are cut into deltas is up to the upstream LLM.
    assert "".join(c["choices"][0]["delta"]["content"] for c in chunks[1:-1]) == "ECHO-PART" * 4
    final = chunks[-1]
    assert final["choices"][0]["finish_reason"] == "length"
    assert final["error"] == {"message": TRUNCATION_TEXT, "type": "agent_error"}
    assert final["hermes"]["error_code"] == "output_truncated" and final["hermes"]["partial"] is True


def test_20_chat_stream_truncempty(server: Target) -> None:
    result, chunks = _stream_failure(server, "stream TRUNCEMPTY")
    assert len(chunks) == 2 and result.text == ""
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["hermes"] == {"completed": False, "partial": True, "failed": False,
                                    "error": TRUNCATION_TEXT, "error_code": "output_truncated"}


# --------------------------------------------------------------------------- 23


class _TapSession(requests.Session):
    """Records the raw bytes the SDK's stream reader pulls off the wire (for the comment line)."""

    def __init__(self) -> None:
        super().__init__()
        self.trust_env = False
        self.wire: list[bytes] = []

    def send(self, request: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        response = super().send(request, **kwargs)
        # Whichever reader the SDK picks for this urllib3 (read1, read_chunked, stream, or on urllib3
        # 1.26 http.client's read1 on its own connection's sdk_reply), its bytes are recorded.
        raw = response.raw
        reply = getattr(getattr(raw, "connection", None), "sdk_reply", None)
        for target, name in ((raw, "read1"), (reply, "read1"), (raw, "read_chunked"), (raw, "stream")):
            method = getattr(target, name, None) if target is not None else None
            if method is not None:
                setattr(target, name, self._tap(method, generator=name != "read1"))
        return response

    def _tap(self, method: Any, generator: bool) -> Any:
        if generator:
            def chunks(*args: Any, **kw: Any) -> Any:
                for data in method(*args, **kw):
                    self.wire.append(data)
                    yield data
            return chunks

        def read(*args: Any, **kw: Any) -> bytes:
            data: bytes = method(*args, **kw)
            self.wire.append(data)
            return data
        return read


@pytest.mark.slow_on_hermes
def test_23_keepalive_comment_is_skipped(server: Target) -> None:
    tap = _TapSession()
    with server.keepalive_window() as keepalive:
        stall = keepalive + 5 if server.kind == "hermes" else 2  # transcript 23: SLOW:35 vs 30 s
        prompt = f"SLOW:{stall:g} keepalive please"
        began = time.monotonic()
        with server.client(session=tap) as client:
            result = client.chat_stream(prompt=prompt).result()
        elapsed = time.monotonic() - began
    assert elapsed >= stall - 0.5
    assert b": keepalive\n\n" in b"".join(tap.wire)
    # The comment never surfaces as an event: role, content..., finish, [DONE].
    assert result.status == "completed" and result.text == f"ECHO: {prompt}"
    assert all(e.data is not None and e.raw_data.strip() for e in result.events)
    chunks = _chunks(result)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert result.events[-1].data == "[DONE]"
    assert len(result.events) == len(chunks) + 1
