"""The line-oriented SSE decoder (hermes_sdk/sse.py) against the framer it replaced (issue 24).

The old framer is kept here, unchanged but for its limits being arguments, as the oracle: for any
stream with one kind of line end (what servers send), any chunking, BOM or not, a stream cut
inside a frame, and frames at the size bound, the decoder gives the old events, keepalives, frames
and errors. Where line ends are mixed, the decoder follows the SSE standard (a blank line ends the
frame, whatever ends it), which the old framer did not: that difference is spelled out below.
"""

from __future__ import annotations

import itertools
from typing import Any, Iterator, Optional
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_sdk._core import sse
from hermes_sdk._core._constants import MAX_SSE_FRAME_BYTES, MAX_STREAM_BYTES
from hermes_sdk._core.sse import Triple
from hermes_sdk.errors import InvalidResponseError

DETERMINISTIC = settings(derandomize=True, database=None, deadline=None, max_examples=400)

_BOUNDARIES = (b"\n\n", b"\r\n\r\n", b"\r\r")
_BOM = b"\xef\xbb\xbf"
KEEPALIVE = None


def _old_too_large(limit: int) -> InvalidResponseError:
    return InvalidResponseError("frame too large", details={"limit_bytes": limit})


# ---------------------------------------------------------------- the old framer (the oracle)


def _old_frame_end(chunk: bytes, start: int) -> int:
    """Where the first frame boundary at or after ``start`` ends (the smallest end), or -1."""
    end = -1
    for boundary in _BOUNDARIES:
        i = chunk.find(boundary, start)
        if i >= 0 and (end < 0 or i + len(boundary) < end):
            end = i + len(boundary)
    return end


def old_frames(source: Iterator[bytes], parse: bool = False, limit: int = MAX_SSE_FRAME_BYTES,
               stream_limit: int = MAX_STREAM_BYTES) -> Iterator[Any]:
    """Split a byte stream into frames; with ``parse``, yield each frame's ``(event, id, data)`` (or
    :data:`KEEPALIVE`) instead. Parsing here, not in a generator on top, saves a generator step per
    event on the hot path.

    A frame ends at the first of ``\\n\\n``, ``\\r\\n\\r\\n`` or ``\\r\\r`` (the earliest end) in the
    whole byte stream, so a boundary split across two chunks is seen; the open frame is kept as a
    list of pieces, joined once (linear, however many lines or chunks make it).
    """
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
        if total > stream_limit:
            raise InvalidResponseError("stream too long", details={"limit_bytes": stream_limit})
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
            end = _old_frame_end(probe, 0)
            if end > 0:
                cut = end - len(tail)
                if size + cut > limit:
                    raise _old_too_large(limit)
                pieces.append(chunk[:cut])
                yield _old_parse_frame(b"".join(pieces)) if parse else b"".join(pieces)
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
                        raise _old_too_large(limit)
                    pieces.append(first)
                    found[0] = b"".join(pieces)
                    pieces, size = [], 0
                tail = b""
                if len(chunk) > limit - 2 and max(map(len, found)) > limit - 2:
                    raise _old_too_large(limit)
                if not parse:
                    yield from found
                else:
                    for frame in found:
                        if frame[:6] == b"data: " and b"\n" not in frame:
                            # The usual frame, one data line: what _parse_frame would make of it.
                            yield "message", None, frame[6:].decode("utf-8")
                        else:
                            yield _old_parse_frame(frame)
            if rest:
                size += len(rest)
                if size > limit:
                    raise _old_too_large(limit)
                pieces.append(rest)
                tail = (tail + rest)[-3:] if len(rest) < 3 else rest[-3:]
            continue
        end = _old_frame_end(chunk, pos)
        while end >= 0:
            if size + end - pos > limit:
                raise _old_too_large(limit)
            if pieces:
                pieces.append(chunk[pos:end])
                frame = b"".join(pieces)
                pieces, size = [], 0
            else:
                frame = chunk[pos:end]
            tail = b""
            yield _old_parse_frame(frame) if parse else frame
            pos = end
            end = _old_frame_end(chunk, pos)
        if pos < len(chunk):
            rest = chunk[pos:] if pos else chunk
            size += len(rest)
            if size > limit:
                raise _old_too_large(limit)
            pieces.append(rest)
            tail = (tail + rest)[-3:] if len(rest) < 3 else rest[-3:]
    if size:  # the stream ended inside a frame: it is still parsed (and counted)
        yield _old_parse_frame(b"".join(pieces)) if parse else b"".join(pieces)


def _old_parse_frame(chunk: bytes) -> Optional[Triple]:
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


# ---------------------------------------------------------------- streams


LINES = st.one_of(
    st.sampled_from([b"data: x", b"data:", b"data", b"data:  two spaces", b"data: [DONE]", b'data: {"a": 1}',
                     b"event: done", b"event:", b"event: response.output_text.delta", b"id: 7", b"id:",
                     b": keepalive", b":", b"retry: 10", b"unknown: y", b"data: \xc3\xa9\xe2\x9c\x93",
                     b"data: a:b", b"", b"data: " + b"z" * 30]),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=12)
      .map(lambda t: b"data: " + t.encode()),
)
FRAMES = st.lists(st.lists(LINES, min_size=1, max_size=4), max_size=6)


@st.composite
def streams(draw: Any) -> bytes:
    """A stream with one kind of line end: frames of lines, each ended by a blank line; maybe a BOM,
    extra blank lines and a cut inside its last frame."""
    nl = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    body = b"".join(nl.join(lines) + nl + nl * draw(st.integers(1, 3)) for lines in draw(FRAMES))
    body += draw(st.sampled_from([b"", b"data: tail", b"data: tail" + nl, b": c" + nl, nl]))
    return (_BOM if draw(st.booleans()) else b"") + body


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)])]


def run(gen: Iterator[Any]) -> tuple[list[Any], Optional[int]]:
    """What a stream yields, and the limit of the error that ended it (None: it ended)."""
    out: list[Any] = []
    try:
        for item in gen:
            out.append(item)
    except InvalidResponseError as exc:
        return out, exc.details["limit_bytes"]
    return out, None


def new_events(chunks: list[bytes]) -> list[Optional[Triple]]:
    return list(sse.events(iter(chunks)))


# ---------------------------------------------------------------- the same as before


@DETERMINISTIC
@given(stream=streams(), cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_any_chunking_gives_the_old_events_and_keepalives(stream: bytes, cuts: list[int]) -> None:
    chunks = chunked(stream, cuts)
    want = list(old_frames(iter([stream]), parse=True))
    assert new_events(chunks) == want
    assert list(old_frames(iter(chunks), parse=True)) == want  # the oracle itself is chunking-free


@DETERMINISTIC
@given(stream=streams(), cuts=st.lists(st.integers(0, 10_000), max_size=6))
def test_any_chunking_gives_the_old_frames(stream: bytes, cuts: list[int]) -> None:
    got = [f.rstrip(b"\r\n") for f in sse.frames(iter(chunked(stream, cuts)))]
    assert got == [f.rstrip(b"\r\n") for f in old_frames(iter([stream]))]


@DETERMINISTIC
@given(nl=st.sampled_from([b"\n", b"\r\n", b"\r"]), sizes=st.lists(st.integers(1, 70), min_size=1, max_size=5),
       unended=st.booleans(), cuts=st.lists(st.integers(0, 10_000), max_size=8))
def test_the_frame_bound_is_the_old_one_whatever_the_chunking(nl: bytes, sizes: list[int], unended: bool,
                                                               cuts: list[int]) -> None:
    # A small bound (64 bytes), so frames just under, at and over it are cheap: a frame's bytes, its
    # boundary included, may be at most the bound; an open frame is refused as soon as it passes it.
    limit = 64
    lines = [b"data: " + b"d" * max(size - 6, 0) if size >= 6 else b":" * size for size in sizes]
    stream = b"".join(line + nl + nl for line in lines)
    if unended:
        stream = stream[:-2 * len(nl)]
    byte_by_byte = [stream[i:i + 1] for i in range(len(stream))]  # the old framer's most eager chunking
    want = run(old_frames(iter(byte_by_byte), parse=True, limit=limit))
    with mock.patch.object(sse, "MAX_SSE_FRAME_BYTES", limit):
        got = run(sse.SSEDecoder().iter_bytes(iter(chunked(stream, cuts))))
        assert run(sse.SSEDecoder().iter_bytes(iter(byte_by_byte))) == want
    assert got == want


def test_the_stream_bound_counts_bytes_after_the_bom() -> None:
    chunk = b": " + b"k" * 1022 + b"\n\n"
    count = MAX_STREAM_BYTES // len(chunk)
    assert run(sse.events(itertools.repeat(chunk, count)))[1] is None
    assert run(sse.events(itertools.chain([_BOM], itertools.repeat(chunk, count))))[1] is None
    assert run(sse.events(itertools.repeat(chunk, count + 1)))[1] == MAX_STREAM_BYTES


def test_a_crlf_boundary_split_before_its_last_lf_counts_its_four_bytes() -> None:
    # The frame plus "\r\n\r\n" is one byte over the bound: refused however the LF arrives.
    frame = b"d" * (MAX_SSE_FRAME_BYTES - 3)
    for chunks in ([frame + b"\r\n\r\n"], [frame + b"\r\n\r", b"\n"], [frame, b"\r", b"\n\r", b"\n"]):
        assert run(sse.frames(iter(chunks)))[1] == MAX_SSE_FRAME_BYTES, chunks
    fits = frame[1:] + b"\r\n\r"
    assert run(sse.frames(iter([fits, b"\n"])))[1] is None


def test_a_cr_ended_frame_is_dispatched_at_once() -> None:
    # A CR-only stream's frame ends at its second CR: the event does not wait for the next chunk.
    gen = sse.events(iter([b"data: a\r\r", b"data: b\r\r"]))
    assert next(gen) == ("message", None, "a")
    assert next(gen) == ("message", None, "b")


# ---------------------------------------------------------------- what changed: mixed line ends


def test_a_blank_line_ends_a_frame_whatever_ends_the_lines() -> None:
    # "\n\r" is a line end and a blank line (the SSE standard); the old framer looked only for
    # "\n\n", "\r\n\r\n" and "\r\r", so it ran both frames together into one event ("a\nb").
    stream = b"data: a\n\rdata: b\r\n\n"
    assert new_events([stream]) == [("message", None, "a"), ("message", None, "b")]
    assert list(old_frames(iter([stream]), parse=True)) == [("message", None, "a\nb")]


@pytest.mark.parametrize("chunks", [[b"data: a\r", b"\ndata: b\r\n\r\n"], [b"data: a\r\n", b"data: b\r", b"\n\r\n"]])
def test_a_crlf_split_across_chunks_is_one_line_end(chunks: list[bytes]) -> None:
    assert new_events(chunks) == [("message", None, "a\nb")]
