"""The SDK's chunked-body reader (``sse.body_chunks``: urllib3's ``read_chunked``) on real sockets.

Hermes sends one HTTP chunk per event. These pin what the stream needs from the reader: the same
events whatever the TCP segmentation, each chunk delivered as it arrives, the connection back in
the pool after a clean end (counted at the server) and not after a broken one, typed errors.
"""

from __future__ import annotations

import gzip
import json
import socket
import time
from typing import Any

import pytest
from core_support import chunk, raw_client, sse_head

from hermes_sdk import StreamError, TransportError


def _event(i: int) -> bytes:
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": f"t{i} "}}]}
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _stream_bytes(n: int, trailer: bytes = b"0\r\n\r\n") -> bytes:
    finish = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    pieces = [chunk(_event(i)) for i in range(n)]
    pieces.append(chunk(b"data: " + json.dumps(finish).encode() + b"\n\n"))
    pieces.append(chunk(b"data: [DONE]\n\n"))
    return b"".join(pieces) + trailer


def _text(n: int) -> str:
    return "".join(f"t{i} " for i in range(n))


@pytest.mark.parametrize("segment", [1, 2, 3, 7, 64, 1000])
def test_any_segmentation_gives_the_same_events_and_reuses_the_connection(raw_server, segment: int) -> None:
    body = _stream_bytes(20, trailer=b"0\r\nX-Trailer: yes\r\n\r\n")

    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        sock.sendall(sse_head())
        for i in range(0, len(body), segment):
            sock.sendall(body[i:i + segment])
            if segment < 8 and i % 97 == 0:
                time.sleep(0.001)  # let small segments arrive as separate reads

    server = raw_server(handler)
    with raw_client(server) as c:
        for _ in range(3):
            result = c.chat_stream(prompt="hi").result()
            assert result.status == "completed" and result.text == _text(20) and result.event_count == 22
    assert server.connections == 1  # each stream ended cleanly, so its connection went back to the pool


def test_a_chunk_is_yielded_before_the_next_one_arrives(raw_server) -> None:
    # Two chunks, the second sent only once the test has the first: the first is delivered at
    # once (else next() would wait for a chunk the server holds back). (An event that shares one
    # HTTP chunk with a later one waits for the end of that chunk: urllib3's read_chunked reads
    # whole chunks; Hermes sends one chunk per event.)
    first, second = _event(0), _event(1)
    done = chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"

    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        sock.sendall(sse_head() + chunk(first))
        srv.held = not srv.event("got the first").wait(60)
        sock.sendall(chunk(second) + done)

    server = raw_server(handler)
    with raw_client(server) as c:
        with c.chat_stream(prompt="hi") as stream:
            it = iter(stream)
            assert next(it).data["choices"][0]["delta"]["content"] == "t0 "
            assert not hasattr(server, "held"), "the first chunk waited for the second"
            server.event("got the first").set()
            assert next(it).data["choices"][0]["delta"]["content"] == "t1 "
            assert stream.result().status == "completed"


@pytest.mark.parametrize("late", [False, True], ids=["same-segment", "after-the-body"])
def test_bytes_after_the_body_never_reach_the_next_response(raw_server, late: bool) -> None:
    # A server that sends more than the body it framed is out of step. Bytes that came with the
    # body are dropped with the finished response; bytes that arrive later make urllib3 drop the
    # idle connection when it is next taken from the pool (its socket is readable).
    garbage = b"HTTP/1.1 200 OK\r\n"

    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        if late:  # once the client has read the whole response: an order, not a sleep
            sock.sendall(sse_head() + _stream_bytes(2))
            srv.event(f"read {len(srv.requests)}").wait(60)
            sock.sendall(garbage)
            srv.event(f"garbage {len(srv.requests)}").set()
        else:
            sock.sendall(sse_head() + _stream_bytes(2) + garbage)

    server = raw_server(handler)
    with raw_client(server) as c:
        for n in range(1, 4):
            result = c.chat_stream(prompt="hi").result()
            assert result.status == "completed" and result.text == _text(2) and result.event_count == 4
            if late:
                server.event(f"read {n}").set()
                assert server.event(f"garbage {n}").wait(60)
    assert server.connections == (3 if late else 1)
    assert len(server.requests) == 3


@pytest.mark.parametrize("cut", ["mid_size_line", "mid_data", "before_crlf"])
def test_a_body_cut_short_is_a_transport_error_with_an_uncertain_outcome(raw_server, cut: str) -> None:
    first_two = chunk(_event(0)) + chunk(_event(1))
    tails = {"mid_size_line": first_two + b"4", "mid_data": first_two + b"40\r\ndata: {",
             "before_crlf": first_two + chunk(_event(2))[:-2]}

    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        sock.sendall(sse_head() + tails[cut])
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    server = raw_server(handler)
    with raw_client(server) as c:
        stream = c.chat_stream(prompt="hi")
        with pytest.raises(TransportError) as info:
            for _ in stream:
                pass
    assert info.value.uncertain_outcome is True
    assert stream.result().status == "failed"


def test_a_body_cut_after_the_terminal_event_completes_without_reusing_the_connection(raw_server) -> None:
    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        sock.sendall(sse_head() + _stream_bytes(3)[:-5])  # no last chunk
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    server = raw_server(handler)
    with raw_client(server) as c:
        for _ in range(2):
            assert c.chat_stream(prompt="hi").result().status == "completed"
    assert server.connections == 2


def test_an_invalid_chunk_size_is_a_transport_error(raw_server) -> None:
    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        sock.sendall(sse_head() + chunk(_event(0)) + b"zz\r\ndata: x\r\n")

    server = raw_server(handler)
    with raw_client(server) as c:
        with pytest.raises(TransportError) as info:
            list(c.chat_stream(prompt="hi"))
    assert info.value.uncertain_outcome is True


def test_a_trailer_cut_off_by_the_server_still_completes(raw_server) -> None:
    # urllib3 tolerates a server that closes instead of sending the final blank line.
    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        sock.sendall(sse_head() + _stream_bytes(1, trailer=b"0\r\n"))
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()

    server = raw_server(handler)
    with raw_client(server) as c:
        assert c.chat_stream(prompt="hi").result().text == _text(1)


def test_a_gzip_stream_is_decoded_by_the_sdk(raw_server) -> None:
    # Not asked for (the SDK sends Accept-Encoding: identity): read undecoded by urllib3's chunk
    # reader, decoded by the SDK's bounded inflater (tests/core/test_decompression.py).
    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        events = b"".join(_event(i) for i in range(3)) + b"data: [DONE]\n\n"
        body = gzip.compress(events)
        sock.sendall(sse_head(extra="Content-Encoding: gzip\r\n") + chunk(body[:10]) + chunk(body[10:]) + b"0\r\n\r\n")

    server = raw_server(handler)
    with raw_client(server) as c:
        result = c.chat_stream(prompt="hi").result()
    assert result.status == "completed" and result.text == _text(3)


def test_a_stream_without_its_terminal_event_is_incomplete_not_broken(raw_server) -> None:
    def handler(sock: socket.socket, req: Any, srv: Any) -> None:
        sock.sendall(sse_head() + chunk(_event(0)) + b"0\r\n\r\n")

    server = raw_server(handler)
    with raw_client(server) as c:
        result = c.chat_stream(prompt="hi").result()
    assert result.status == "failed" and isinstance(result.error, StreamError)
    assert result.error.details["reason"] == "upstream_stream_closed_without_terminal_event"
