"""Size limits, redirects, and the typed results (attrs types, raw provider fields, Hermes state)."""

from __future__ import annotations

import json

import pytest
from core_support import agent_requests, chunk, json_response, raw_client, sse_head

from hermes_sdk import (
    ChatCompletion,
    HermesClient,
    HermesResponse,
    InvalidResponseError,
    PayloadTooLargeError,
    RemoteRejectedError,
)
from hermes_sdk.types import ChatMessage, Choice

MiB = 1024 * 1024


# ---------------------------------------------------------------- request body limit


def test_request_body_over_limit_is_refused_locally(client: HermesClient, emu) -> None:
    with pytest.raises(PayloadTooLargeError) as info:
        client.chat(prompt="x" * 10_000_001)
    err = info.value
    assert err.details["limit_bytes"] == 10_000_000 and err.details["body_bytes"] > 10_000_000
    assert err.code == "connector.hermes_agent.configuration_or_input" and err.uncertain_outcome is False
    assert err.details["sent"] is False
    with pytest.raises(PayloadTooLargeError):
        client.responses_stream({"input": "y", "instructions": "é" * 5_000_001})  # counted in UTF-8 bytes
    r = client.invoke("cap:hermes_agent:default:responses", {"body": {"input": "z" * 10_000_000}})
    assert r.status == "failed" and isinstance(r.error, PayloadTooLargeError)
    assert emu.requests_seen == []


def test_request_body_at_limit_is_sent(raw_server) -> None:
    server = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, b'{"id":"c","choices":[]}')))
    overhead = len(json.dumps({"model": "hermes-agent", "messages": [{"role": "user", "content": ""}],
                               "stream": False}, separators=(",", ":")))
    with raw_client(server) as c:
        c.chat(prompt="p" * (10_000_000 - overhead))
    assert len(server.requests[0].body) == 10_000_000


# ---------------------------------------------------------------- response limits


def test_json_response_over_16_mib_by_content_length(raw_server) -> None:
    def handler(sock, req, srv) -> None:
        sock.sendall(f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {16 * MiB + 1}\r\n\r\n"
                     .encode() + b"{")
        srv.event("done").wait(2)
    server = raw_server(handler)
    with raw_client(server) as c, pytest.raises(InvalidResponseError) as info:
        c.chat(prompt="x")
    server.event("done").set()
    err = info.value
    assert err.code == "connector.hermes_agent.invalid_response" and err.details["limit_bytes"] == 16 * MiB
    assert err.uncertain_outcome is True and err.http_status == 200


def test_json_response_over_16_mib_chunked(raw_server) -> None:
    def handler(sock, req, srv) -> None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        piece = chunk(b" " * MiB)
        try:
            for _ in range(17):
                sock.sendall(piece)
            sock.sendall(b"0\r\n\r\n")
        except OSError:
            pass
    server = raw_server(handler)
    with raw_client(server) as c, pytest.raises(InvalidResponseError) as info:
        c.response_get("resp_big")
    assert info.value.uncertain_outcome is False  # a read: nothing changed on the server
    assert len(server.requests) == 1, "an oversized body is not retried"


def test_sse_frame_over_1_mib(raw_server) -> None:
    def handler(sock, req, srv) -> None:
        sock.sendall(sse_head() + chunk(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'))
        try:
            sock.sendall(chunk(b"data: " + b"a" * (MiB + 16)))
        except OSError:
            pass
        srv.event("done").wait(2)
    server = raw_server(handler)
    with raw_client(server) as c:
        stream = c.chat_stream(prompt="x")
        it = iter(stream)
        assert next(it).data["choices"][0]["delta"]["content"] == "hi"
        with pytest.raises(InvalidResponseError) as info:
            next(it)
    server.event("done").set()
    assert info.value.details["limit_bytes"] == MiB
    res = stream.result()
    assert res.status == "failed" and res.error.code == "connector.hermes_agent.invalid_response"
    assert res.text == "hi"


@pytest.mark.parametrize("chunked", [True, False])
@pytest.mark.parametrize("over", [1, 60_000])
def test_a_complete_frame_just_over_1_mib_ends_the_stream(raw_server, chunked: bool, over: int) -> None:
    # The whole frame, its boundary and the next event arrive together: the limit still holds.
    frame = b'data: {"choices":[{"delta":{"content":"' + b"c" * (MiB + over) + b'"}}]}\n\n'
    body = frame + b"data: [DONE]\n\n"
    def handler(sock, req, srv) -> None:
        if chunked:
            sock.sendall(sse_head() + chunk(body) + b"0\r\n\r\n")
        else:
            sock.sendall(sse_head(chunked=False) + body)
            sock.close()
    server = raw_server(handler)
    with raw_client(server) as c:
        res = c.chat_stream(prompt="x").result()
    assert res.status == "failed" and res.error.code == "connector.hermes_agent.invalid_response"
    assert res.text == ""


def test_sse_frames_near_limit_are_fine(raw_server) -> None:
    big = json.dumps({"choices": [{"delta": {"content": "b" * (MiB - 200)}}]}).encode()
    def handler(sock, req, srv) -> None:
        sock.sendall(sse_head() + chunk(b"data: " + big + b"\n\n") + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")
    server = raw_server(handler)
    with raw_client(server) as c:
        res = c.chat_stream(prompt="x").result()
    assert res.status == "completed" and len(res.text) == MiB - 200


def test_stream_over_64_mib(raw_server) -> None:
    comment = b":" + b"k" * (512 * 1024 - 3) + b"\n\n"  # keepalive comments: valid SSE, never events
    def handler(sock, req, srv) -> None:
        sock.sendall(sse_head(chunked=False) + b'data: {"choices":[{"delta":{"content":"start"}}]}\n\n')
        try:
            for _ in range(140):  # 70 MiB
                sock.sendall(comment)
        except OSError:
            pass
        sock.close()
    server = raw_server(handler)
    with raw_client(server) as c:
        stream = c.chat_stream(prompt="x")
        with pytest.raises(InvalidResponseError) as info:
            list(stream)
    assert info.value.details["limit_bytes"] == 64 * MiB
    res = stream.result()
    assert res.status == "failed" and res.text == "start" and res.event_count == 1


# ---------------------------------------------------------------- redirects


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_redirects_never_followed(raw_server, status: int) -> None:
    target = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, b"{}")))
    def handler(sock, req, srv) -> None:
        sock.sendall(f"HTTP/1.1 {status} Moved\r\nLocation: {target.base_url}/v1/chat/completions\r\n"
                     "Content-Length: 0\r\n\r\n".encode())
    server = raw_server(handler)
    with raw_client(server) as c:
        with pytest.raises(RemoteRejectedError) as info:
            c.chat(prompt="x")
        assert info.value.http_status == status and info.value.details["redirect_not_followed"] is True
        with pytest.raises(RemoteRejectedError):
            c.response_get("resp_1")
        with pytest.raises(RemoteRejectedError):
            c.chat_stream(prompt="x")
    assert target.connections == 0 and len(server.requests) == 3


# ---------------------------------------------------------------- results


def test_chat_result_types_and_raw(raw_server) -> None:
    payload = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1893456000, "model": "m",
               "system_fingerprint": "fp", "vendor": {"k": [1]},
               "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                            "message": {"role": "assistant", "content": "hello", "refusal": None}}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3, "extra": 9}}
    server = raw_server(lambda sock, req, srv: sock.sendall(
        json_response(200, json.dumps(payload).encode(), "X-Hermes-Session-Id: api-0123456789abcdef\r\n")))
    with raw_client(server) as c:
        out = c.chat(prompt="x")
    assert isinstance(out, ChatCompletion)
    assert isinstance(out.choices[0], Choice) and isinstance(out.choices[0].message, ChatMessage)
    assert out.choices[0].message.role == "assistant" and out.text == "hello"
    assert (out.id, out.model, out.created, out.finish_reason) == ("chatcmpl-1", "m", 1893456000, "stop")
    assert out.usage["extra"] == 9 and out.hermes is None and out.completed
    assert out.raw == payload, "unknown provider fields are kept"
    assert out.session_id == "api-0123456789abcdef"


def test_response_result_types_and_raw(raw_server) -> None:
    payload = {"id": "resp_1", "object": "response", "status": "completed", "created_at": 5, "model": "m",
               "output": [{"type": "function_call", "name": "f"},
                          {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": "a"}, {"type": "output_text", "text": "b"}]}],
               "usage": {"input_tokens": 1}, "future_field": True}
    server = raw_server(lambda sock, req, srv: sock.sendall(
        json_response(200, json.dumps(payload).encode(), "X-Hermes-Session-Id: 7b7c1f\r\n")))
    with raw_client(server) as c:
        out = c.responses(input="x")
    assert isinstance(out, HermesResponse)
    assert (out.id, out.status, out.created_at, out.output_text) == ("resp_1", "completed", 5, "ab")
    assert out.raw["future_field"] is True and out.session_id == "7b7c1f"


@pytest.mark.parametrize("body", [b"[1, 2]", b'"just a string"', b'{"choices": "nope"}'])
def test_malformed_chat_body_is_invalid_response(raw_server, body: bytes) -> None:
    server = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, body)))
    with raw_client(server) as c, pytest.raises(InvalidResponseError) as info:
        c.chat(prompt="x")
    assert info.value.uncertain_outcome is True and info.value.http_status == 200


def test_chat_partial_results_keep_hermes_state(client: HermesClient, emu) -> None:
    out = client.chat(prompt="TRUNCATE please")
    assert out.finish_reason == "length" and not out.completed
    assert out.text and "ECHO-PART" in out.text
    assert out.hermes["error_code"] == "output_truncated" and out.hermes["partial"] is True
    failed = client.chat(prompt="FAIL500")
    assert failed.finish_reason == "error" and failed.hermes["completed"] is False
    assert failed.raw["hermes"] == failed.hermes
    r = client.invoke("cap:hermes_agent:default:chat", {"prompt": "TRUNCATE"})
    assert r.status == "completed" and r.output["hermes"]["error_code"] == "output_truncated"


def test_session_id_read_back_from_header(client: HermesClient, emu) -> None:
    derived = client.chat(prompt="first turn")
    assert derived.session_id.startswith("api-") and len(derived.session_id) == 20
    again = client.chat(prompt="first turn")
    assert again.session_id == derived.session_id  # stable derived id
    explicit = client.chat(prompt="turn", session_id="my-session")
    assert explicit.session_id == "my-session"
    assert emu.session_messages("my-session")[-1]["content"] == "ECHO: turn"
    stream = client.chat_stream(prompt="s", session_id="my-session")
    assert stream.session_id == "my-session"
    assert stream.result().session_id == "my-session"
    resp = client.responses(input="x")
    assert resp.session_id and len(resp.session_id) == 36
    assert agent_requests(emu)[0].header("X-Hermes-Session-Id") is None


def test_redirect_with_caller_session(raw_server) -> None:
    import requests

    target = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, b"{}")))
    server = raw_server(lambda sock, req, srv: sock.sendall(
        f"HTTP/1.1 302 Found\r\nLocation: {target.base_url}/x\r\nContent-Length: 2\r\n\r\nhi".encode()))
    with requests.Session() as session, raw_client(server, session=session) as c:
        with pytest.raises(RemoteRejectedError) as info:
            c.response_get("resp_1")
    assert info.value.http_status == 302 and target.connections == 0


def _frames(*chunks: bytes) -> list[bytes]:
    from hermes_sdk._core.streaming import _sse_frames

    return list(_sse_frames(iter(chunks)))


def test_frame_accounting_within_and_across_chunks() -> None:
    # The wire tests above cover the framings; this pins the arithmetic at the edges. A frame's size
    # counts its boundary; exactly 1 MiB is accepted, one byte more is refused, however it is chunked.
    exact = b"d" * (MiB - 2) + b"\n\n"
    for chunks in ([exact], [exact[:-1], exact[-1:]], [exact[:10], exact[10:-2], b"\n", b"\nok\n\n"]):
        assert _frames(*chunks)[0].rstrip(b"\n") == b"d" * (MiB - 2)
    for over in ([b"d" * (MiB - 1) + b"\n\n"], [b"d" * (MiB - 1) + b"\n", b"\n"],
                 [b"ok\n\n" + b"d" * (MiB - 1) + b"\n\nx\n\n"], [b"d" * (MiB + 1)],
                 [b"d" * (MiB - 3) + b"\r\n\r\n"], [b"d" * 10, b"d" * (MiB - 11), b"\r", b"\r"]):
        with pytest.raises(InvalidResponseError) as info:
            _frames(*over)
        assert info.value.details["limit_bytes"] == MiB
    # An open frame exactly at the limit is fine until it grows; chunking never resets the count.
    assert _frames(b"d" * MiB) == [b"d" * MiB]
    with pytest.raises(InvalidResponseError):
        _frames(*([b"d" * 1000] * (MiB // 1000 + 1)))


def test_a_boundary_split_across_chunks_ends_the_frame() -> None:
    # Issue 9: each chunk ended just before the last "\n" of its boundary, so no chunk held a whole
    # "\n\n" and the open-frame count grew until a valid stream of small events was refused as > 1 MiB.
    event = b'data: {"x": 1}\n'
    chunks = [event] + [b"\n" + event] * 100_000 + [b"\n"]
    assert len(_frames(*chunks)) == 100_001
    for boundary in (b"\r\n\r\n", b"\r\r", b"\n\n"):
        stream = (b"data: y" + boundary) * 3
        for cut in range(len(stream) + 1):
            got = [f.rstrip(b"\r\n") for f in _frames(stream[:cut], stream[cut:])]
            assert got == [b"data: y"] * 3, (boundary, cut)


def test_a_utf8_bom_at_stream_start_does_not_swallow_the_first_event() -> None:
    from hermes_sdk._core.streaming import _sse_events

    stream = b"\xef\xbb\xbfdata: first\n\ndata: second\n\n"
    want = [("message", None, "first"), ("message", None, "second")]
    for cut in range(len(stream) + 1):
        assert list(_sse_events(iter([stream[:cut], stream[cut:]]))) == want, cut
    # Only at the start: a BOM later is data (here, an unknown field name, so no event).
    assert list(_sse_events(iter([b"data: a\n\n\xef\xbb\xbfdata: b\n\n"]))) == [("message", None, "a")]


def test_a_frame_of_many_short_lines_is_linear() -> None:
    # CPU time of this thread, not the wall clock: a busy machine stretches the wall time of both
    # sizes by whatever it runs meanwhile; the work each size costs stays what it is.
    import time

    from hermes_sdk._core.streaming import _sse_events

    def cost(lines: int) -> float:
        body = b"data: x\n" * lines + b"\n"
        chunks = [body[i:i + 128] for i in range(0, len(body), 128)]
        start = time.thread_time()
        events = list(_sse_events(iter(chunks)))
        spent = time.thread_time() - start
        assert len(events) == 1 and len(events[0][2]) == 2 * lines - 1
        return spent

    cost(1000)
    small = min(cost(10_000) for _ in range(3))
    large = min(cost(120_000) for _ in range(2))  # 120k lines: just under 1 MiB
    # 12 times the lines: ~12 times the work when linear, ~144 times when quadratic.
    assert large < max(small, 0.001) * 12 * 4, (small, large)


def test_json_nested_too_deep_in_an_event_is_kept_as_raw_text() -> None:
    from hermes_sdk._core.streaming import decode_event

    deep = "[" * 100_000 + "]" * 100_000
    event = decode_event("message", None, deep)
    assert event.data == deep and event.raw_data == deep
    event = decode_event("message", None, '{"a":' + deep + "}")
    assert isinstance(event.data, str)
