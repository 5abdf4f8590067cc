"""Compressed replies: the SDK asks for ``identity`` and decodes an unasked-for gzip or deflate body
itself, bounded, on every urllib3 it supports (tox -e deps-lowest runs this on urllib3 1.26, whose
own decoders inflate a whole read at once: a 250 KiB gzip bomb became 256 MiB in one call).

Peak memory is measured with tracemalloc (zlib's buffers and the decoded bytes are traced), the
fault server's bombs running in the same process: a bound of 64 MiB for a 16 MiB limit is far from
the 256 MiB an unbounded decoder takes.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib
from typing import Any, Callable, Iterator

import pytest
import requests
import urllib3
from core_support import chunk, json_response, raw_client, sse_head

from hermes_sdk import HermesClient, InvalidResponseError, ServerError
from hermes_sdk._core._inflate import Inflater, inflate_chunks
from hermes_sdk.testing import FaultServer

CHAT = {"id": "chatcmpl-1", "object": "chat.completion", "model": "hermes-agent",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ECHO: packed " + "x" * 5000},
                     "finish_reason": "stop"}]}
BODY = json.dumps(CHAT).encode()
_MiB = 1024 * 1024


def _raw_deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def _peak(call: Callable[[], Any]) -> tuple[int, Any]:
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        try:
            outcome: Any = call()
        except Exception as exc:  # the outcome is checked by the caller
            outcome = exc
        return tracemalloc.get_traced_memory()[1] - base, outcome
    finally:
        tracemalloc.stop()


def test_the_sdk_asks_for_an_identity_body_even_on_a_session_that_asks_for_gzip(raw_server: Any) -> None:
    def handler(sock: Any, req: Any, srv: Any) -> None:
        sock.sendall(json_response(200, BODY))

    server = raw_server(handler)
    with raw_client(server) as client:
        client.chat(prompt="hi")
    session = requests.Session()  # requests' default headers ask for gzip, deflate
    with HermesClient(base_url=server.base_url, api_key="k" * 20, session=session, load_entrypoints=False) as client:
        client.chat(prompt="hi")
    assert [r.header("Accept-Encoding") for r in server.requests] == ["identity", "identity"]


@pytest.mark.parametrize("encoding,packed", [("gzip", gzip.compress(BODY)), ("x-gzip", gzip.compress(BODY)),
                                             ("deflate", zlib.compress(BODY)), ("deflate", _raw_deflate(BODY)),
                                             ("gzip", gzip.compress(BODY[:100]) + gzip.compress(BODY[100:]))],
                         ids=["gzip", "x-gzip", "deflate-zlib", "deflate-raw", "gzip-two-members"])
@pytest.mark.parametrize("framing", ["sized", "chunked"])
def test_an_unasked_for_compressed_reply_is_decoded(raw_server: Any, encoding: str, packed: bytes,
                                                    framing: str) -> None:
    def handler(sock: Any, req: Any, srv: Any) -> None:
        if framing == "sized":
            sock.sendall(json_response(200, packed, extra=f"Content-Encoding: {encoding}\r\n"))
        else:
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                         + f"Content-Encoding: {encoding}\r\n\r\n".encode()
                         + chunk(packed[:7]) + chunk(packed[7:]) + b"0\r\n\r\n")

    server = raw_server(handler)
    with raw_client(server) as client:
        assert client.chat(prompt="hi").text == CHAT["choices"][0]["message"]["content"]
        assert client.chat(prompt="hi").text.startswith("ECHO: packed")
    assert server.connections == 1  # a decoded body read to its end frees the connection for reuse


@pytest.mark.parametrize("encoding,packed,reason", [
    ("br", b"\x0b\x02\x80{}\x03", "unsupported_content_encoding"),
    ("gzip, gzip", gzip.compress(gzip.compress(BODY)), "unsupported_content_encoding"),
    ("gzip", b"\x1f\x8b not gzip at all", "corrupt_content_encoding"),
    ("gzip", gzip.compress(BODY)[:-30], "corrupt_content_encoding"),
], ids=["br", "stacked", "corrupt", "truncated"])
def test_a_compressed_reply_the_sdk_cannot_read_is_an_invalid_response(raw_server: Any, encoding: str,
                                                                        packed: bytes, reason: str) -> None:
    def handler(sock: Any, req: Any, srv: Any) -> None:
        sock.sendall(json_response(200, packed, extra=f"Content-Encoding: {encoding}\r\n"))

    server = raw_server(handler)
    with raw_client(server) as client:
        with pytest.raises(InvalidResponseError) as info:
            client.chat(prompt="hi")
    assert info.value.details.get("reason") == reason
    assert info.value.uncertain_outcome is True  # the model may have run


def test_a_stream_in_a_coding_the_sdk_cannot_read_fails_as_an_invalid_response(raw_server: Any) -> None:
    def handler(sock: Any, req: Any, srv: Any) -> None:
        sock.sendall(sse_head(extra="Content-Encoding: br\r\n") + chunk(b"\x0b\x02\x80data: x\n\n\x03")
                     + b"0\r\n\r\n")

    server = raw_server(handler)
    with raw_client(server) as client:
        result = client.chat_stream(prompt="hi", idempotency_key="br-stream").result()
        record = client.records.get("cap:hermes_agent:default:chat_stream", "br-stream")
    assert result.status == "failed" and isinstance(result.error, InvalidResponseError)
    assert result.error.details["reason"] == "unsupported_content_encoding" and result.error.uncertain_outcome
    assert record is not None and record.result["status"] == "failed"


@pytest.mark.parametrize("fault,error", [("gzip_bomb", InvalidResponseError), ("gzip_bomb_error", ServerError)])
def test_a_gzip_bomb_costs_the_limit_not_what_it_inflates_to(fault: str, error: type) -> None:
    with FaultServer(fault=fault) as server:
        with HermesClient(base_url=server.base_url, api_key=server.api_key, load_entrypoints=False) as client:
            peak, outcome = _peak(lambda: client.chat(prompt="hi"))
    assert isinstance(outcome, error), outcome
    assert peak < 64 * _MiB, f"{peak / _MiB:.0f} MiB on urllib3 {urllib3.__version__}"


def test_a_gzip_bomb_stream_is_decoded_a_piece_at_a_time(raw_server: Any) -> None:
    # 256 MiB of zeros in about 250 KiB: no frame boundary, so the 1 MiB frame limit refuses it.
    bomb = gzip.compress(b"data: " + b"\0" * (256 * _MiB), compresslevel=1)

    def handler(sock: Any, req: Any, srv: Any) -> None:
        head = sse_head(extra="Content-Encoding: gzip\r\n")
        try:
            sock.sendall(head + b"".join(chunk(bomb[i:i + 65536]) for i in range(0, len(bomb), 65536))
                         + b"0\r\n\r\n")
        except OSError:
            pass

    server = raw_server(handler)
    with raw_client(server) as client:
        peak, outcome = _peak(lambda: client.chat_stream(prompt="hi").result())
    error = getattr(outcome, "error", outcome)
    assert isinstance(error, InvalidResponseError), outcome
    assert peak < 32 * _MiB, f"{peak / _MiB:.0f} MiB on urllib3 {urllib3.__version__}"


def test_the_inflater_returns_no_more_than_it_is_given_room_for() -> None:
    data = bytes(range(256)) * 4000 + b"z" * 300_000
    for coding, packed in (("gzip", gzip.compress(data)), ("deflate", zlib.compress(data)),
                           ("deflate", _raw_deflate(data))):
        for step in (1, 13, 4096):
            pieces: Iterator[bytes] = (packed[i:i + step] for i in range(0, len(packed), step))
            out = list(inflate_chunks(pieces, coding, 1000))
            assert b"".join(out) == data and max(map(len, out)) <= 1000
    inflater = Inflater("gzip")
    assert len(inflater.feed(gzip.compress(b"\0" * (64 * _MiB)), 4096)) == 4096 and inflater.pending
