"""Streams: live delivery in both framings, keepalives, truncation, cancel, reuse, failure outcomes."""

from __future__ import annotations

import json
import time

import pytest
from core_support import chunk, raw_client, sse_head, wait_for

from hermes_sdk import AuthenticationError, HermesClient, StreamCancelledError, StreamError, TransportError
from hermes_sdk.testing import Reply

P = "connector.hermes_agent."


def chat_chunk(content: str = "", finish: str | None = None, **extra) -> bytes:
    payload = {"object": "chat.completion.chunk",
               "choices": [{"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}],
               **extra}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def frame(data: bytes, chunked: bool) -> bytes:
    return chunk(data) if chunked else data


def responses_delta(content: str) -> bytes:
    payload = {"type": "response.output_text.delta", "delta": content}
    return b"event: response.output_text.delta\ndata: " + json.dumps(payload).encode() + b"\n\n"


def held_stream_handler(chunked: bool, op: str = "chat_stream"):
    """Send one event, then hold the rest until the test has received it (each stream its own shape:
    a Responses stream folds only Responses events into its text)."""
    text = chat_chunk if op == "chat_stream" else responses_delta
    def handler(sock, req, srv) -> None:
        sock.sendall(sse_head(chunked) + frame(text("first "), chunked))
        srv.released = srv.event("go").wait(60)
        sock.sendall(frame(b": keepalive\n\n", chunked) + frame(text("second"), chunked)
                     + frame(chat_chunk(finish="stop"), chunked) + frame(b"data: [DONE]\n\n", chunked))
        if chunked:
            sock.sendall(b"0\r\n\r\n")
        else:
            sock.close()
    return handler


@pytest.mark.parametrize("chunked", [True, False], ids=["chunked", "close-delimited"])
@pytest.mark.parametrize("op", ["chat_stream", "responses_stream"])
def test_events_arrive_live(raw_server, chunked: bool, op: str) -> None:
    server = raw_server(held_stream_handler(chunked, op))
    with raw_client(server) as c:
        stream = c.chat_stream(prompt="x") if op == "chat_stream" else c.responses_stream(input="x")
        it = iter(stream)
        first = next(it)
        # The server still holds the rest (it waits for "go"): the first event did not wait for it.
        assert not hasattr(server, "released"), "the first event must not wait for the rest of the stream"
        assert not server.event("go").is_set()
        piece = first.data["choices"][0]["delta"]["content"] if op == "chat_stream" else first.data["delta"]
        assert piece == "first "
        server.event("go").set()
        rest = list(it)
    assert server.released is True
    assert len(rest) == 3 and rest[-1].data == "[DONE]" and rest[-1].terminal
    res = stream.result()
    assert res.status == "completed" and res.text == "first second" and res.event_count == 4


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_emulator_streams_in_both_framings(emu, framing: str) -> None:
    emu.framing = framing
    emu.script(Reply(deltas=["alpha ", "beta ", "gamma"]), Reply(deltas=["one ", "two"]))
    with emu.client(load_entrypoints=False) as c:
        chat = c.chat_stream(prompt="x")
        pieces = list(chat.text_deltas())
        assert pieces == ["alpha ", "beta ", "gamma"] and chat.result().text == "alpha beta gamma"
        resp = c.responses_stream(input="y").result()
        assert resp.status == "completed" and resp.text == "one two"
        assert [e.event for e in resp.events][-1] == "response.completed"


def test_keepalive_comments_skipped(emu) -> None:
    emu.keepalive_seconds = 0.05
    with emu.client(load_entrypoints=False) as c:
        res = c.chat_stream(prompt="SLOW:0.3 wait").result()
    assert res.status == "completed" and res.text == "ECHO: SLOW:0.3 wait"
    assert all(e.raw_data for e in res.events) and all(":" != e.raw_data[:1] for e in res.events)
    assert len(res.events) == res.event_count


def test_max_events_truncation(client: HermesClient) -> None:
    stream = client.chat_stream(prompt=" ".join(f"w{i}" for i in range(30)), max_events=3)
    events = list(stream)
    res = stream.result()
    assert len(events) == 3 and len(res.events) == 3
    assert res.status == "failed" and res.truncated is True and res.terminal is False
    assert isinstance(res.error, StreamError) and res.error.code == P + "stream_truncated"
    r = client.invoke("cap:hermes_agent:default:responses_stream", {"body": {"input": "a b c d e f g h"},
                                                                     "max_events": 2})
    assert r.status == "failed" and r.error.code == P + "stream_truncated" and r.output["truncated"] is True
    assert len(r.output["events"]) == 2


def test_max_events_reached_by_terminal_event_is_completed(client: HermesClient) -> None:
    full = client.chat_stream(prompt="short").result()
    exact = client.chat_stream(prompt="short", max_events=full.event_count).result()
    assert exact.status == "completed" and exact.terminal and not exact.truncated


def test_early_close_cancels_and_server_sees_disconnect(raw_server) -> None:
    def handler(sock, req, srv) -> None:
        sock.sendall(sse_head() + chunk(chat_chunk("first")))
        try:
            for _ in range(500):
                time.sleep(0.01)
                sock.sendall(chunk(b": keepalive\n\n"))
        except OSError:
            srv.disconnects += 1
    server = raw_server(handler)
    with raw_client(server) as c:
        stream = c.chat_stream(prompt="x")
        next(iter(stream))
        stream.close()
        stream.close()  # idempotent
        res = stream.result()
    assert res.status == "cancelled" and isinstance(res.error, StreamCancelledError)
    assert res.error.code == P + "cancelled" and res.text == "first"
    assert wait_for(lambda: server.disconnects == 1)


def test_emulator_sees_cancel_and_keeps_incomplete_snapshot(client: HermesClient, emu) -> None:
    emu.token_delay = 0.05
    with client.responses_stream({"input": " ".join(["word"] * 60)}) as stream:
        first = next(iter(stream))
        assert first.event == "response.created"
        rid = first.data["response"]["id"]
    assert stream.result().status == "cancelled"
    assert wait_for(lambda: (emu.stored_response(rid) or {}).get("status") == "incomplete")


def test_context_manager_and_result(client: HermesClient) -> None:
    with client.chat_stream(prompt="ctx manager") as stream:
        res = stream.result()
        assert stream.result() is res  # settled once
    assert res.status == "completed" and res.text == "ECHO: ctx manager"
    assert stream.closed and list(stream) == []


def test_connection_reused_across_streams_and_calls(client: HermesClient, emu) -> None:
    client.chat(prompt="one")
    assert client.chat_stream(prompt="two").result().status == "completed"
    stream = client.responses_stream(input="three")
    for _ in stream:
        pass
    rid = stream.result().final["id"]
    assert list(client.chat_stream(prompt="four").text_deltas())
    client.response_get(rid)
    client.responses(input="five")
    emu.framing = "close"  # close-delimited streams cannot be reused; the pool opens a new one
    client.chat_stream(prompt="six").result()
    client.chat(prompt="seven")
    assert emu.connections == 2


def test_connection_reused_chunked_only(client: HermesClient, emu) -> None:
    for i in range(3):
        client.chat_stream(prompt=f"s{i}").result()
        client.responses_stream(input=f"r{i}").result()
        client.chat(prompt=f"c{i}")
    assert emu.connections == 1


@pytest.mark.parametrize("prompt,finish", [("TRUNCATE", "length"), ("FAIL500", "error")])
def test_chat_stream_failure_chunk_ends_failed(client: HermesClient, prompt: str, finish: str) -> None:
    res = client.chat_stream(prompt=prompt).result()
    assert res.terminal is True and res.events[-1].data == "[DONE]"
    assert res.status == "failed" and res.finish_reason == finish
    assert isinstance(res.error, StreamError) and res.error.code == P + "stream_failed"
    assert res.error.details["finish_reason"] == finish and res.error.details["hermes"]["completed"] is False
    r = client.invoke("cap:hermes_agent:default:chat_stream", {"prompt": prompt})
    assert r.status == "failed" and r.error.code == P + "stream_failed"


def test_responses_stream_failed_event(client: HermesClient) -> None:
    res = client.responses_stream(input="TRUNCEMPTY").result()
    assert res.status == "failed" and res.terminal
    assert res.error.code == P + "stream_failed" and res.error.details["event"] == "response.failed"
    assert res.final["status"] == "failed"


def test_reasoning_never_enters_text(raw_server) -> None:
    def chat(sock, req, srv) -> None:
        if "/v1/chat" in req.target:
            body = (chat_chunk().replace(b'"delta": {}', b'"delta": {"reasoning_content": "thinking..."}')
                    + chat_chunk("visible") + chat_chunk(finish="stop") + b"data: [DONE]\n\n")
        else:
            events = [("response.created", {"response": {"id": "resp_1", "status": "in_progress"}}),
                      ("response.reasoning_text.delta", {"delta": "secret plan"}),
                      ("response.reasoning_summary_text.delta", {"delta": "summary"}),
                      ("response.output_text.delta", {"delta": "answer"}),
                      ("response.completed", {"response": {"id": "resp_1", "status": "completed"}})]
            body = b"".join(f"event: {n}\ndata: {json.dumps(d)}\n\n".encode() for n, d in events)
        sock.sendall(sse_head(chunked=False) + body)
        sock.close()
    server = raw_server(chat)
    with raw_client(server) as c:
        chat_res = c.chat_stream(prompt="x")
        assert list(chat_res.text_deltas()) == ["visible"]
        assert chat_res.result().text == "visible" and chat_res.result().events[0].data["choices"]
        resp = c.responses_stream(input="x")
        assert list(resp.text_deltas()) == ["answer"]
        assert resp.result().text == "answer" and resp.result().status == "completed"


def test_text_deltas_match_text(client: HermesClient) -> None:
    stream = client.chat_stream(prompt="one two three four five six seven")
    pieces = list(stream.text_deltas())
    assert len(pieces) > 1 and "".join(pieces) == stream.result().text == "ECHO: one two three four five six seven"


def test_session_id_on_stream(client: HermesClient) -> None:
    s = client.chat_stream(prompt="x", session_id="stream-session")
    assert s.session_id == "stream-session"
    s.result()
    derived = client.chat_stream(prompt="x")
    assert derived.session_id.startswith("api-")
    derived.close()


def test_mid_stream_drop_chunked_raises_transport_error(client: HermesClient, emu) -> None:
    emu.drop_connection("mid_stream", after_events=2)
    stream = client.chat_stream(prompt="a b c d e f g h i j k l m n")
    received = []
    with pytest.raises(TransportError) as info:
        for event in stream:
            received.append(event)
    assert len(received) == 2
    assert info.value.code == P + "transport" and info.value.uncertain_outcome is True
    res = stream.result()
    assert res.status == "failed" and res.error is info.value


def test_mid_stream_drop_close_delimited_is_incomplete(client: HermesClient, emu) -> None:
    emu.framing = "close"
    emu.drop_connection("mid_stream", after_events=2)
    res = client.chat_stream(prompt="a b c d e f g h i j k l m n").result()
    assert res.status == "failed" and res.error.code == P + "stream_incomplete" and not res.terminal
    assert res.error.details["reason"] == "upstream_stream_closed_without_terminal_event"


def test_status_error_before_stream_raises(emu) -> None:
    with HermesClient(emu.base_url, "bad-key", load_entrypoints=False) as c:
        with pytest.raises(AuthenticationError):
            c.chat_stream(prompt="x")
        r = c.invoke("cap:hermes_agent:default:responses_stream", {"body": {"input": "x"}})
        assert r.status == "failed" and r.error.http_status == 401


def test_invalid_utf8_stream(raw_server) -> None:
    def handler(sock, req, srv) -> None:
        sock.sendall(sse_head(chunked=False) + b"data: \xff\xfe\n\n")
        sock.close()
    server = raw_server(handler)
    with raw_client(server) as c:
        res = c.chat_stream(prompt="x").result()
    assert res.status == "failed" and res.error.code == P + "invalid_response"


def test_frames_are_dispatched_as_the_connector_does(raw_server) -> None:
    # A frame with only id: or only event: is an event; one with only comments or unknown fields is not.
    body = (b': comment only\n\n'
            + b'data: {"choices":[{"delta":{"content":"A"}}]}\n\n'
            + b'id: 7\n\n'
            + b'retry: 100\nfoo: bar\n\n'
            + b'data: line one\ndata:line two\nid: 8\n\n'
            + b'event: done\n\n'
            + b'data: never read\n\n')
    def handler(sock, req, srv) -> None:
        sock.sendall(sse_head(chunked=False) + body)
        sock.close()
    server = raw_server(handler)
    with raw_client(server) as c:
        res = c.chat_stream(prompt="x").result()
    assert [(e.event, e.id, e.raw_data) for e in res.events] == [
        (None, None, '{"choices":[{"delta":{"content":"A"}}]}'),
        (None, "7", ""),
        (None, "8", "line one\nline two"),
        ("done", None, ""),
    ]
    assert res.events[1].data is None and res.events[2].data == "line one\nline two"
    assert res.events[-1].terminal and res.terminal and res.status == "completed" and res.text == "A"


def test_chat_stream_usage_is_only_a_json_object(raw_server) -> None:
    # StreamResult.usage is an object or None in every family: a chunk's non-object usage is not taken.
    usage = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
    bodies = [chat_chunk("A", usage=usage) + chat_chunk(finish="stop", usage=7) + b"data: [DONE]\n\n",
              chat_chunk("A", usage="n/a") + chat_chunk(finish="stop", usage=None) + b"data: [DONE]\n\n"]
    def handler(sock, req, srv) -> None:
        sock.sendall(sse_head(chunked=False) + bodies.pop(0))
        sock.close()
    server = raw_server(handler)
    with raw_client(server) as c:
        kept, none = c.chat_stream(prompt="x").result(), c.chat_stream(prompt="x").result()
    assert kept.usage == usage and kept.status == "completed" and kept.text == "A"
    assert none.usage is None and none.status == "completed" and none.events[0].data["usage"] == "n/a"
