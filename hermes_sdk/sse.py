"""Server-sent events off the wire: a response body's bytes, cut into frames, parsed into events.

The one place where SSE bytes become events. :func:`body_chunks` reads the body with urllib3's
public readers, :func:`events` frames and parses it under the SDK's limits and yields
``(event, id, data)`` per dispatched frame, or :data:`KEEPALIVE` for a frame that is no event.

Readers: a chunked body (what Hermes sends, one HTTP chunk per event) is read with
``HTTPResponse.read_chunked``, so each chunk is handed on as soon as the whole of it has arrived; a
close-delimited one with ``HTTPResponse.read1`` (urllib3 >= 2.2), which returns what has arrived.
``iter_content`` is the fallback for a body that is not urllib3's: iterating a response reads
128-byte chunks, and ``iter_content(None)`` holds every event back on a close-delimited stream.

Limits: a frame over ``MAX_SSE_FRAME_BYTES`` (boundary included) is refused as soon as its open
part passes the limit, whatever the chunking; a stream over ``MAX_STREAM_BYTES`` is refused; one
UTF-8 byte-order mark at the start of the stream is skipped, as the SSE standard says. How many
events a stream may have is the aggregate's limit (``max_events``).

Dispatch is the connector's rule: a frame with a ``data``, ``event`` or ``id`` field is an event
(``event: done`` alone ends a stream); a frame with only comments or unknown fields is not, but it
is yielded as :data:`KEEPALIVE` so the reader sees the stream is alive (its deadline is checked)
without counting it as an event (``idle_timeout`` is not re-armed by keepalives).

Why not sseclient-py: measured on this code base (docs/performance.md), its ``SSEClient`` grows a
frame a line at a time (``bytes +=`` per line, and ``str +=`` per data line), which is quadratic in
a frame's lines: a 320 KB frame of 40,000 short lines took 1.2 s, and a frame the limits accept
(120,000 lines, just under 1 MiB) 3.8 s, where this parser takes milliseconds. It costs 2.2 us more
per event than this parser (2.97 vs 0.81 us per Hermes chat chunk over 16 KiB reads, next to a
5.1 us http.client floor), it does not dispatch a frame without ``data:`` (the connector's
``event: done``), and it drops comments silently. Its framing could only be changed through its
private ``_read``.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Optional, Tuple

import requests

from ._constants import MAX_SSE_FRAME_BYTES, MAX_STREAM_BYTES, READ_CHUNK_BYTES
from .errors import InvalidResponseError

#: ``(event, id, data)`` of a dispatched frame; ``event`` is ``"message"`` when the frame names none.
Triple = Tuple[str, Optional[str], str]
#: What :func:`events` yields for a frame that is no event (a keepalive comment, unknown fields).
KEEPALIVE = None

_BOUNDARIES = (b"\n\n", b"\r\n\r\n", b"\r\r")
_BOM = b"\xef\xbb\xbf"


def body_chunks(response: requests.Response) -> Iterator[bytes]:
    """The body's bytes as they arrive, by the cheapest public reader that delivers them live.

    Read to its end, a urllib3 body returns its connection to the pool itself; a caller that stops
    early closes the response.
    """
    raw = response.raw
    if _reads_chunks(raw):
        # Each HTTP chunk as it arrives (up to 64 KiB at a time), parsed by urllib3 under one error
        # catcher: read1() costs several times more per call and returns a single chunk anyway.
        return raw.read_chunked(READ_CHUNK_BYTES, decode_content=True)
    read1 = getattr(raw, "read1", None)
    if read1 is not None:
        return iter(lambda: read1(READ_CHUNK_BYTES, decode_content=True), b"")
    return response.iter_content(chunk_size=None)


def _reads_chunks(raw: Any) -> bool:
    """A chunked urllib3 body that ``read_chunked`` can parse (its errors are read1's: urllib3's).

    A ``read1`` a caller set on this response (a session that taps the bytes) is honoured: read1
    is used then.
    """
    try:
        return bool(getattr(raw, "chunked", False)) and callable(getattr(raw, "read_chunked", None)) \
            and "read1" not in vars(raw) and bool(raw.supports_chunked_reads())
    except Exception:
        return False


def events(source: Iterator[bytes]) -> Iterator[Optional[Triple]]:
    """``(event, id, data)`` per dispatched frame of a byte stream, :data:`KEEPALIVE` per frame that
    is no event; the same for any chunking of the same bytes. Raises ``InvalidResponseError`` at a
    limit (see the module docstring)."""
    return _frames(source, parse=True)


def frames(source: Iterator[bytes]) -> Iterator[bytes]:
    """The frames of a byte stream, whatever its chunking (a frame may keep its boundary)."""
    return _frames(source, parse=False)


def _too_large() -> InvalidResponseError:
    # Streams are model calls: Hermes has begun the work, so cutting the stream leaves it uncertain.
    return InvalidResponseError(f"an SSE frame exceeds the {MAX_SSE_FRAME_BYTES}-byte limit",
                                uncertain_outcome=True, details={"limit_bytes": MAX_SSE_FRAME_BYTES})


def _frame_end(chunk: bytes, start: int) -> int:
    """Where the first frame boundary at or after ``start`` ends (the smallest end), or -1."""
    end = -1
    for boundary in _BOUNDARIES:
        i = chunk.find(boundary, start)
        if i >= 0 and (end < 0 or i + len(boundary) < end):
            end = i + len(boundary)
    return end


def _frames(source: Iterator[bytes], parse: bool = False) -> Iterator[Any]:
    """Split a byte stream into frames; with ``parse``, yield each frame's ``(event, id, data)`` (or
    :data:`KEEPALIVE`) instead. Parsing here, not in a generator on top, saves a generator step per
    event on the hot path.

    A frame ends at the first of ``\\n\\n``, ``\\r\\n\\r\\n`` or ``\\r\\r`` (the earliest end) in the
    whole byte stream, so a boundary split across two chunks is seen; the open frame is kept as a
    list of pieces, joined once (linear, however many lines or chunks make it).
    """
    limit = MAX_SSE_FRAME_BYTES
    total = 0
    pieces: list[bytes] = []
    size = 0  # bytes of the open frame
    tail = b""  # its last (at most 3) bytes: a boundary may start there
    source = iter(source)
    head = b""  # the stream's first bytes, until a BOM can be told apart
    for chunk in source:
        head += chunk
        if len(head) >= 3 or not _BOM.startswith(head):
            break
    for chunk in itertools.chain((head[3:] if head.startswith(_BOM) else head,), source):
        total += len(chunk)
        if total > MAX_STREAM_BYTES:
            raise InvalidResponseError(f"stream exceeds the {MAX_STREAM_BYTES}-byte limit", uncertain_outcome=True,
                                       details={"limit_bytes": MAX_STREAM_BYTES})
        if not chunk:
            continue
        if parse and not size and chunk[:6] == b"data: " and chunk.find(b"\n") == len(chunk) - 2 \
                and chunk[-1:] == b"\n" and len(chunk) <= limit and b"\r" not in chunk:
            # A whole one-line data frame and nothing open: what Hermes sends, a chunk per event.
            yield "message", None, chunk[6:-2].decode("utf-8")
            continue
        pos = 0
        if size:
            # A boundary that starts in the open frame's tail and ends in this chunk.
            probe = tail + chunk[:3]
            end = _frame_end(probe, 0)
            if end > 0:
                cut = end - len(tail)
                if size + cut > limit:
                    raise _too_large()
                pieces.append(chunk[:cut])
                yield _parse_frame(b"".join(pieces)) if parse else b"".join(pieces)
                pieces, size, tail, pos = [], 0, b"", cut
        if b"\r" not in chunk:
            # The usual case, LF only: split() does it. (A CR in an open frame's tail was handled above.)
            if pos:
                chunk = chunk[pos:]
            found = chunk.split(b"\n\n")
            rest = found.pop()
            if found:
                first = found[0]
                if pieces:
                    if size + len(first) + 2 > limit:
                        raise _too_large()
                    pieces.append(first)
                    found[0] = b"".join(pieces)
                    pieces, size = [], 0
                tail = b""
                if len(chunk) > limit - 2 and max(map(len, found)) > limit - 2:
                    raise _too_large()
                if not parse:
                    yield from found
                else:
                    for frame in found:
                        if frame[:6] == b"data: " and b"\n" not in frame:
                            # The usual frame, one data line: what _parse_frame would make of it.
                            yield "message", None, frame[6:].decode("utf-8")
                        else:
                            yield _parse_frame(frame)
            if rest:
                size += len(rest)
                if size > limit:
                    raise _too_large()
                pieces.append(rest)
                tail = (tail + rest)[-3:] if len(rest) < 3 else rest[-3:]
            continue
        end = _frame_end(chunk, pos)
        while end >= 0:
            if size + end - pos > limit:
                raise _too_large()
            if pieces:
                pieces.append(chunk[pos:end])
                frame = b"".join(pieces)
                pieces, size = [], 0
            else:
                frame = chunk[pos:end]
            tail = b""
            yield _parse_frame(frame) if parse else frame
            pos = end
            end = _frame_end(chunk, pos)
        if pos < len(chunk):
            rest = chunk[pos:] if pos else chunk
            size += len(rest)
            if size > limit:
                raise _too_large()
            pieces.append(rest)
            tail = (tail + rest)[-3:] if len(rest) < 3 else rest[-3:]
    if size:  # the stream ended inside a frame: it is still parsed (and counted)
        yield _parse_frame(b"".join(pieces)) if parse else b"".join(pieces)


def _parse_frame(chunk: bytes) -> Optional[Triple]:
    """``(event, id, data)`` of a frame with a ``data``, ``event`` or ``id`` field, else KEEPALIVE."""
    if chunk[:6] == b"data: " and b"\n" not in chunk and b"\r" not in chunk:
        return "message", None, chunk[6:].decode("utf-8")
    name: Optional[str] = None
    event_id: Optional[str] = None
    data: Optional[list[str]] = None
    for raw in chunk.splitlines():  # bytes: splits on CR, LF and CRLF only
        if not raw or raw[:1] == b":":
            continue
        field, _, value = raw.decode("utf-8").partition(":")
        if value[:1] == " ":
            value = value[1:]
        if field == "data":
            if data is None:
                data = [value]
            else:
                data.append(value)
        elif field == "event":
            name = value
        elif field == "id":
            event_id = value
    if data is None and name is None and event_id is None:
        return KEEPALIVE  # comments, blank or unknown fields only
    return name or "message", event_id, "\n".join(data) if data else ""
