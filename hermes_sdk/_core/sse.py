"""Server-sent events off the wire: a response body's bytes, cut into frames, parsed into events.

The one place where SSE bytes become events. :func:`body_chunks` reads the body with urllib3's
public readers, :func:`events` frames and parses it under the SDK's limits and yields
``(event, id, data)`` per dispatched frame, or :data:`KEEPALIVE` for a frame that is no event.

Readers: a chunked body (what Hermes sends, one HTTP chunk per event) is read with
``HTTPResponse.read_chunked``, so each chunk is handed on as soon as the whole of it has arrived; a
close-delimited one with ``HTTPResponse.read1`` (urllib3 >= 2.2), which returns what has arrived,
or on urllib3 1.26 (no read1) with http.client's ``read1`` of the reply the SDK's connection
received. ``stream()`` and ``iter_content`` are the fallbacks for a body read from memory (a mock, a
cassette). Every reader returns the bytes undecoded: a compressed body (not asked for) is decoded
by :func:`hermes_sdk._core._inflate.inflate_chunks`, at most ``READ_CHUNK_BYTES`` at a time.

Decoding is line-oriented and incremental (the shape of openai-python's ``SSEDecoder``): bytes are
cut into lines (CRLF, LF or CR), a line is a field of the open frame, and a blank line ends it.
One fast path: a chunk that is one whole ``data:`` frame with nothing open (what Hermes sends, an
HTTP chunk per event) is decoded without cutting it into lines.

Limits: a frame over ``MAX_SSE_FRAME_BYTES`` (its lines' ends and the closing blank line included)
is refused as soon as its open part passes the limit, whatever the chunking: the line buffer
counts the open frame's bytes as they arrive; a stream over ``MAX_STREAM_BYTES`` is refused; one
UTF-8 byte-order mark at the start of the stream is skipped, as the SSE standard says. How many
events a stream may have is the aggregate's limit (``max_events``).

Dispatch is the connector's rule: a frame with a ``data``, ``event`` or ``id`` field is an event
(``event: done`` alone ends a stream); a frame with only comments or unknown fields is not, but it
is yielded as :data:`KEEPALIVE` so the reader sees the stream is alive (its deadline is checked)
without counting it as an event (``idle_timeout`` is not re-armed by keepalives).

Why not sseclient-py: measured on this code base (docs/performance.md), its ``SSEClient`` grows a
frame a line at a time (``bytes +=`` per line, and ``str +=`` per data line), which is quadratic in
a frame's lines: a 320 KB frame of 40,000 short lines took 1.2 s, and a frame the limits accept
(120,000 lines, just under 1 MiB) 3.8 s, where this parser takes milliseconds. It costs over twice
this parser's CPU time per event (2.5 vs 1.1 us per Hermes chat chunk over 16 KiB reads, 0.75 us
for a chunk per event; the http.client floor is about 5 us per event), it does not dispatch a
frame without ``data:`` (the connector's ``event: done``), and it drops comments silently. Its
framing could only be changed through its private ``_read``.
"""

from __future__ import annotations

import enum
import itertools
from typing import Generic, Iterable, Iterator, Optional, Tuple, TypeVar, Union

import requests
import urllib3.response

from ..errors import InvalidResponseError
from ._constants import MAX_SSE_FRAME_BYTES, MAX_STREAM_BYTES, READ_CHUNK_BYTES
from ._inflate import coding_of, inflate_chunks

#: ``(event, id, data)`` of a dispatched frame; ``event`` is ``"message"`` when the frame names none.
Triple = Tuple[str, Optional[str], str]
#: What :func:`events` yields for a frame that is no event (a keepalive comment, unknown fields).
KEEPALIVE = None
T = TypeVar("T")

_BOM = b"\xef\xbb\xbf"


def body_chunks(response: requests.Response) -> Iterator[bytes]:
    """The body's bytes as they arrive, by the cheapest public reader that delivers them live.

    Read to its end, a urllib3 body returns its connection to the pool itself; a caller that stops
    early closes the response.
    """
    try:
        coding = coding_of(response.headers, uncertain=True)
    except InvalidResponseError as exc:
        return _refused(exc)  # raised at the first read, where the stream settles its failures
    source = _undecoded_chunks(response)
    return source if coding is None else inflate_chunks(source, coding, READ_CHUNK_BYTES)


def _refused(error: InvalidResponseError) -> Iterator[bytes]:
    raise error
    yield b""  # a generator: nothing is raised until it is read


def _undecoded_chunks(response: requests.Response) -> Iterator[bytes]:
    raw = response.raw
    own = isinstance(raw, urllib3.response.HTTPResponse)  # else a stand-in (vcrpy's) without decode_content
    if own and _reads_chunks(raw):
        # Each HTTP chunk as it arrives (up to 64 KiB at a time), parsed by urllib3 under one error
        # catcher: read1() costs several times more per call and returns a single chunk anyway.
        return raw.read_chunked(READ_CHUNK_BYTES, decode_content=False)
    read1 = getattr(raw, "read1", None)
    if read1 is not None:
        if own:
            return iter(lambda: read1(READ_CHUNK_BYTES, decode_content=False), b"")
        return iter(lambda: read1(READ_CHUNK_BYTES), b"")
    reply = getattr(getattr(raw, "connection", None), "sdk_reply", None)
    if own and callable(getattr(reply, "read1", None)):
        # urllib3 1.26, a real socket: http.client's read1 returns what has arrived.
        return iter(lambda: reply.read1(READ_CHUNK_BYTES), b"")  # type: ignore[union-attr]
    if own:
        return raw.stream(READ_CHUNK_BYTES, decode_content=False)
    return response.iter_content(chunk_size=None)


def _reads_chunks(raw: urllib3.response.HTTPResponse) -> bool:
    """A chunked urllib3 body that ``read_chunked`` can parse (its errors are read1's: urllib3's).

    A ``read1`` a caller set on this response (a session that taps the bytes) is honoured: read1
    is used then.
    """
    try:
        return bool(getattr(raw, "chunked", False)) and callable(getattr(raw, "read_chunked", None)) \
            and "read1" not in vars(raw) and bool(raw.supports_chunked_reads())
    except Exception:
        return False


def events(source: Iterable[bytes]) -> Iterator[Optional[Triple]]:
    """``(event, id, data)`` per dispatched frame of a byte stream, :data:`KEEPALIVE` per frame that
    is no event; the same for any chunking of the same bytes. Raises ``InvalidResponseError`` at a
    limit (see the module docstring)."""
    return SSEDecoder().iter_bytes(source)


def frames(source: Iterable[bytes]) -> Iterator[bytes]:
    """The frames of a byte stream, whatever its chunking, each with its lines' ends."""
    return _Framer().iter_bytes(source)


def _too_large() -> InvalidResponseError:
    # Streams are model calls: Hermes has begun the work, so cutting the stream leaves it uncertain.
    return InvalidResponseError(f"an SSE frame exceeds the {MAX_SSE_FRAME_BYTES}-byte limit",
                                uncertain_outcome=True, details={"limit_bytes": MAX_SSE_FRAME_BYTES})


def _too_long() -> InvalidResponseError:
    return InvalidResponseError(f"stream exceeds the {MAX_STREAM_BYTES}-byte limit", uncertain_outcome=True,
                                details={"limit_bytes": MAX_STREAM_BYTES})


class _Pending(enum.Enum):
    """What :meth:`_LineDecoder.decode` returns for a line that does not end a frame."""

    LINE = 0


PENDING = _Pending.LINE
_BLANK = (b"\n", b"\r\n", b"\r")


class _LineDecoder(Generic[T]):
    """Bytes to lines to frames, incrementally: the line buffer and the frame bound.

    A line ends at CRLF, LF or CR (an LF that opens the next chunk after a CR is that CR's line
    end). A blank line ends the open frame, unless it is the frame's first line (so a frame ends at
    ``\\n\\n``, ``\\r\\n\\r\\n`` or ``\\r\\r``, as it always did). The open frame's bytes, its ends and the
    open line included, are counted as they arrive and bounded by ``MAX_SSE_FRAME_BYTES``.
    Subclasses say what a line adds to a frame (:meth:`_field`) and what an ended frame is
    (:meth:`_dispatch`).
    """

    def __init__(self) -> None:
        self._open: list[bytes] = []  # the open line's pieces (no line end yet)
        self._open_size = 0
        self._size = 0  # bytes of the open frame's complete lines
        self._lines = 0  # complete lines of the open frame
        self._crlf = False  # the open frame's last line ended with CRLF
        self._skip_lf = False  # the last chunk ended with CR: a first LF in the next one ends that line

    def iter_bytes(self, source: Iterable[bytes]) -> Iterator[T]:
        """What each frame of a byte stream dispatches, whatever its chunking; a stream that ends
        inside a frame still dispatches it."""
        total = 0
        split, decode, whole = self._split, self.decode, self._data_frame
        idle = True  # nothing open: no line, no frame, no CR whose LF may start the next chunk
        for chunk in _without_bom(source):
            size = len(chunk)
            total += size
            if total > MAX_STREAM_BYTES:
                raise _too_long()
            # The hot path: a chunk that is one whole one-line data frame, nothing open (what
            # Hermes sends, an HTTP chunk per event), is not split into lines. Its only LFs are the
            # last two bytes, it has no CR (13: an int is looked for without bytes' slower path).
            if idle and chunk.find(b"\n") == size - 2 and chunk[-1] == 10 and chunk[:6] == b"data: " \
                    and 13 not in chunk and size <= MAX_SSE_FRAME_BYTES:
                yield whole(chunk)
                continue
            for line in split(chunk):
                item = decode(line)
                if item is not PENDING:
                    yield item
            idle = not (self._size or self._open or self._skip_lf)
        yield from self._end()

    def decode(self, line: bytes) -> Union[T, _Pending]:
        """One line, its end kept: a field of the open frame, or the blank line that ends it."""
        if line in _BLANK and self._lines:
            if line == b"\r" and self._crlf and self._size + 1 > MAX_SSE_FRAME_BYTES:
                raise _too_large()  # a CRLF stream's boundary counts the LF a next chunk may bring
            item = self._dispatch(line)
            self._size = self._lines = 0
            self._crlf = False
            return item
        self._lines += 1
        self._crlf = line[-2:] == b"\r\n"
        self._field(line)
        return PENDING

    def _split(self, chunk: bytes) -> Iterator[bytes]:
        """The complete lines a chunk ends (its end kept); the rest is kept as the open line."""
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
                self._grow_lf()
        lines = chunk.splitlines(keepends=True)
        if not lines:
            return
        end = lines[-1][-1:]
        rest = lines.pop() if end not in _BLANK else None
        self._skip_lf = end == b"\r"
        for line in lines:
            if self._open:
                line = b"".join((*self._open, line))
                self._open, self._open_size = [], 0
            self._size += len(line)
            if self._size > MAX_SSE_FRAME_BYTES:
                raise _too_large()
            yield line
        if rest is not None:
            self._keep_open(rest)

    def _grow_lf(self) -> None:
        """The LF of a CRLF split across chunks: counted when its line's frame is still open."""
        if self._size:
            self._size += 1
            self._crlf = True
            if self._size > MAX_SSE_FRAME_BYTES:
                raise _too_large()

    def _keep_open(self, piece: bytes) -> None:
        """A line without its end yet (its bytes count towards the frame's bound)."""
        self._open.append(piece)
        self._open_size += len(piece)
        if self._size + self._open_size > MAX_SSE_FRAME_BYTES:
            raise _too_large()

    def _end(self) -> Iterator[T]:
        """The stream ended: an open line and an open frame are dispatched as if they had ended."""
        if self._open:
            line = b"".join(self._open)
            self._open, self._open_size = [], 0
            self._size += len(line)
            self.decode(line)
        if self._lines:
            self._size = self._lines = 0
            yield self._dispatch(b"")

    def _data_frame(self, chunk: bytes) -> T:
        """What a whole frame of one ``data: `` line (and its boundary) dispatches."""
        raise NotImplementedError

    def _field(self, line: bytes) -> None:
        raise NotImplementedError

    def _dispatch(self, end: bytes) -> T:
        raise NotImplementedError


class SSEDecoder(_LineDecoder[Optional[Triple]]):
    """``(event, id, data)`` per frame with a ``data``, ``event`` or ``id`` field, :data:`KEEPALIVE`
    per other frame (comments, unknown fields, blank lines).

    Fields: ``data`` lines are joined with ``\\n``; the last ``event`` and ``id`` win (``event``
    names ``"message"`` when absent or empty); an ``id`` is the frame's own; one space after the
    colon is dropped; a line starting with ``:`` is a comment.
    """

    def __init__(self) -> None:
        super().__init__()
        self._event: Optional[str] = None
        self._id: Optional[str] = None
        self._data: Optional[list[str]] = None

    def _data_frame(self, chunk: bytes) -> Optional[Triple]:
        return "message", None, chunk[6:-2].decode("utf-8")

    def _field(self, line: bytes) -> None:
        if line[:1] == b":" or line in _BLANK:
            return
        name, _, value = line.rstrip(b"\r\n").decode("utf-8").partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            if self._data is None:
                self._data = [value]
            else:
                self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            self._id = value

    def _dispatch(self, end: bytes) -> Optional[Triple]:
        event, event_id, data = self._event, self._id, self._data
        if data is None and event is None and event_id is None:
            return KEEPALIVE  # comments, blank or unknown fields only
        self._event = self._id = self._data = None
        return event or "message", event_id, "\n".join(data) if data else ""


class _Framer(_LineDecoder[bytes]):
    """Each frame's bytes (its lines and their ends), for the tests of the framing itself."""

    def __init__(self) -> None:
        super().__init__()
        self._frame: list[bytes] = []

    def _data_frame(self, chunk: bytes) -> bytes:
        return chunk

    def _field(self, line: bytes) -> None:
        self._frame.append(line)

    def _grow_lf(self) -> None:
        if self._size:  # the rest of a CRLF: part of the open frame
            self._frame.append(b"\n")
        super()._grow_lf()

    def _dispatch(self, end: bytes) -> bytes:
        self._frame.append(end)
        frame, self._frame = b"".join(self._frame), []
        return frame


def _without_bom(source: Iterable[bytes]) -> Iterator[bytes]:
    """The stream's chunks, one UTF-8 byte-order mark at its start left out (the SSE standard)."""
    source = iter(source)
    head = b""
    for chunk in source:
        head += chunk
        if len(head) >= 3 or not _BOM.startswith(head):
            break
    return itertools.chain((head[3:] if head.startswith(_BOM) else head,), source)
