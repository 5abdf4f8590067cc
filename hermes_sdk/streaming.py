"""SSE streams: live events, the connector's aggregate (with its gaps fixed), and early cancel.

Events are parsed from the body's bytes as they arrive: a plain chunked body (what Hermes sends) is
cut from the socket's buffered reads by ``_dechunk``; an encoded one goes through urllib3's
``read_chunked``, a close-delimited one through ``raw.read1()`` (iterating a response reads 128-byte
chunks, and ``iter_content(None)`` holds every event back on a close-delimited stream). Frames are
cut and parsed by ``_sse_frames`` (linear, the same for any chunking, size-limited) with the
connector's rules; ``_FrameClient`` keeps sseclient-py's ``SSEClient`` interface over it.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional

import requests
import sseclient
import urllib3.exceptions

from ._constants import MAX_SSE_FRAME_BYTES, MAX_STREAM_BYTES, READ_CHUNK_BYTES
from .aggregate import Accumulator, Aggregate, decode_event, event_name  # noqa: F401  (re-exported)
from .deadline import WATCHDOG, Alarm
from .errors import (
    DeadlineExceededError,
    HermesError,
    InvalidResponseError,
    TransportError,
)
from .models import ActionResult, StreamEvent, StreamResult
from .transport import socket_of, untouched_body

if TYPE_CHECKING:
    from .stages.streams import StreamSink

_log = logging.getLogger("hermes_sdk")
_BOUNDARIES = (b"\n\n", b"\r\n\r\n", b"\r\r")


def _body(response: requests.Response) -> Iterator[bytes]:
    """The body's bytes as they arrive, by the cheapest reader that keeps urllib3's guarantees."""
    raw = response.raw
    read1 = getattr(raw, "read1", None)
    if _reads_chunks(raw):
        if _plain_socket_body(raw):
            return _dechunk(raw)
        # Each HTTP chunk as it arrives, parsed by urllib3 itself under one error catcher: read1()
        # costs several times more per call and returns a single chunk (usually one event) anyway.
        return raw.read_chunked(READ_CHUNK_BYTES, decode_content=True)  # type: ignore[no-any-return]
    if read1 is not None:
        return iter(lambda: read1(READ_CHUNK_BYTES, decode_content=True), b"")
    return response.iter_content(chunk_size=None)  # urllib3 1.x: no read1; chunks still arrive live


def _plain_socket_body(raw: Any) -> bool:
    """An untouched, unencoded chunked body straight off urllib3's socket file (``_dechunk`` reads it)."""
    fp = untouched_body(raw)
    return fp is not None and bool(fp.chunked) and fp.chunk_left is None and raw.chunk_left is None


_MAX_CHUNK_LINE = 65_536  # urllib3's limit on a chunk-size or trailer line
# Big enough to cut a read's worth of events at once, small enough that the few copies a read goes
# through (read buffer, joined data, frames) stay well under the keep_events=False budget of 1 MiB.
_DECHUNK_READ_BYTES = 16_384


def _dechunk(raw: Any) -> Iterator[bytes]:
    """Decode a chunked body from the socket's buffered file, a read (up to 16 KiB) at a time.

    urllib3's ``read_chunked`` makes two buffered reads and a readline per HTTP chunk, and Hermes
    sends one chunk per event: this reads whatever has arrived, cuts every chunk in it and yields
    their data joined, at once (urllib3 waits for the whole of a chunk, up to 64 KiB).
    Errors are urllib3's (``ProtocolError``, ``ReadTimeoutError``), as ``read_chunked`` raises them.
    The connection returns to the pool only after the last chunk and the trailer were read, with
    nothing left over; on any failure or early exit both the response and connection are closed.
    """
    read1 = raw._fp.fp.read1
    pool = raw._pool
    buf = b""
    pos = 0
    clean = False

    def more(keep: bytes) -> bytes:
        try:
            data: bytes = read1(_DECHUNK_READ_BYTES)
        except socket.timeout:
            raise urllib3.exceptions.ReadTimeoutError(pool, None, "Read timed out.") from None
        except OSError as exc:
            raise urllib3.exceptions.ProtocolError(f"Connection broken: {exc!r}", exc) from None
        if not data:
            raise urllib3.exceptions.ProtocolError("Response ended prematurely")
        return keep + data

    def line() -> bytes:
        nonlocal buf, pos
        end = buf.find(b"\n", pos)
        while end < 0 or end - pos > _MAX_CHUNK_LINE:
            if len(buf) - pos > _MAX_CHUNK_LINE:
                raise urllib3.exceptions.ProtocolError("Response chunk line exceeded maximum allowed length")
            buf, pos = more(buf[pos:]), 0
            end = buf.find(b"\n")
        found, pos = buf[pos:end], end + 1
        return found

    try:
        left = 0  # data bytes still to come in the current chunk
        crlf = False  # the CRLF after a chunk's data is still to be skipped
        while True:
            out: list[memoryview] = []  # views: the data is copied once, by the join below
            view = memoryview(buf)
            finished = False
            while True:  # every chunk (or part of one) already in the buffer
                if left:
                    take = len(buf) - pos
                    if take <= 0:
                        break
                    if take > left:
                        take = left
                    out.append(view[pos:pos + take])
                    pos += take
                    left -= take
                    if left:
                        break
                    crlf = True
                if crlf:
                    if len(buf) - pos < 2:
                        break
                    pos += 2
                    crlf = False
                end = buf.find(b"\n", pos)
                if end < 0 or end - pos > _MAX_CHUNK_LINE:
                    if len(buf) - pos > _MAX_CHUNK_LINE:
                        raise urllib3.exceptions.ProtocolError("Response chunk size line exceeds the limit")
                    break
                size_line, pos = buf[pos:end], end + 1
                try:
                    left = int(size_line, 16)  # int() ignores the CR
                except ValueError:
                    try:  # chunk extensions (";name=value") are allowed and ignored
                        left = int(size_line.split(b";", 1)[0], 16)
                    except ValueError:
                        raise urllib3.exceptions.ProtocolError(
                            f"Invalid chunk length: {size_line[:20]!r}") from None
                if left < 0:
                    raise urllib3.exceptions.ProtocolError(f"Invalid chunk length: {size_line[:20]!r}")
                if not left:
                    finished = True
                    break
            piece = b"".join(out) if out else b""
            out.clear()
            view.release()
            if piece:  # what has arrived goes out at once, as one piece: frames are cut downstream
                yield piece
                piece = b""
            if finished:
                break
            buf, pos = more(buf[pos:]), 0
        while True:  # trailer fields, then a blank line (a server that just stops is tolerated, as urllib3 does)
            if pos >= len(buf):
                try:
                    buf, pos = more(b""), 0
                except urllib3.exceptions.ProtocolError:
                    buf, pos = b"", 0
                    break
            if not line().strip():
                break
        clean = pos >= len(buf)  # bytes past the body: the connection is out of step, not reusable
    finally:
        original = raw._fp
        if original is not None:
            original.close()
        if clean:
            raw.release_conn()
        else:
            raw.close()


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


_BOM = b"\xef\xbb\xbf"


def _sse_frames(source: Iterator[bytes], parse: bool = False) -> Iterator[Any]:
    """Split a byte stream into frames, whatever its HTTP chunking (a frame may keep its boundary:
    blank lines mean nothing inside a frame); with ``parse``, yield each frame's ``(event, id, data)``
    instead (``_parse_frame``; frames it drops are skipped). Parsing here, not in a generator on top,
    saves a generator step per event on the hot path.

    A frame ends at the first of ``\\n\\n``, ``\\r\\n\\r\\n`` or ``\\r\\r`` (the earliest end) in the
    whole byte stream, so a boundary split across two chunks is seen; the open frame is kept as a
    list of pieces, joined once (linear, however many lines or chunks make it). A frame over 1 MiB,
    boundary included, is refused as soon as its open part passes the limit. One UTF-8 byte-order
    mark at the start of the stream is skipped, as the SSE standard says. A stream over 64 MiB is
    refused (``MAX_STREAM_BYTES``).
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
                yield from _parsed(b"".join(pieces)) if parse else (b"".join(pieces),)
                pieces, size, tail, pos = [], 0, b"", cut
        if b"\r" not in chunk:
            # The usual case, LF only: split() does it. (A CR in an open frame's tail was handled above.)
            if pos:
                chunk = chunk[pos:]
            frames = chunk.split(b"\n\n")
            rest = frames.pop()
            if frames:
                first = frames[0]
                if pieces:
                    if size + len(first) + 2 > limit:
                        raise _too_large()
                    pieces.append(first)
                    frames[0] = b"".join(pieces)
                    pieces, size = [], 0
                tail = b""
                if len(chunk) > limit - 2 and max(map(len, frames)) > limit - 2:
                    raise _too_large()
                if not parse:
                    yield from frames
                else:
                    for frame in frames:
                        if frame[:6] == b"data: " and b"\n" not in frame:
                            # The usual frame, one data line: what _parse_frame would make of it.
                            yield "message", None, frame[6:].decode("utf-8")
                        else:
                            yield from _parsed(frame)
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
            yield from _parsed(frame) if parse else (frame,)
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
        yield from _parsed(b"".join(pieces)) if parse else (b"".join(pieces),)


def _parsed(frame: bytes) -> tuple[tuple[str, Optional[str], str], ...]:
    item = _parse_frame(frame)
    return () if item is None else (item,)


def _parse_frame(chunk: bytes) -> Optional[tuple[str, Optional[str], str]]:
    """``(event, id, data)`` of a frame with a ``data``, ``event`` or ``id`` field, else None."""
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
        return None  # comments, blank or unknown fields only
    return name or "message", event_id, "\n".join(data) if data else ""


def _reads_chunks(raw: Any) -> bool:
    """A chunked urllib3 body that ``read_chunked`` can parse (same errors as ``read1``: urllib3's).

    A ``read1`` set on the instance (a session that wraps or taps it) is honoured: read1 is used.
    """
    try:
        return bool(getattr(raw, "chunked", False)) and callable(getattr(raw, "read_chunked", None)) \
            and "read1" not in getattr(raw, "__dict__", {}) and bool(raw.supports_chunked_reads())
    except Exception:
        return False




class _FrameClient(sseclient.SSEClient):  # type: ignore[misc]
    """sseclient-py's framing with the connector's dispatch rule.

    sseclient-py drops a frame without ``data:``; the connector keeps any frame with a ``data``,
    ``event`` or ``id`` field, so ``event: done`` alone still ends a stream.
    """

    def __init__(self, source: Iterator[bytes]) -> None:
        # Not super().__init__: sseclient-py would log on its class's module logger, here
        # "hermes_sdk.streaming", whose records skip the redacting filter on "hermes_sdk".
        self._event_source = source
        self._char_enc = "utf-8"
        self._logger = _log

    def _read(self) -> Iterator[bytes]:
        # sseclient-py's own _read grows each frame a line at a time (quadratic in its lines) and
        # does not skip a byte-order mark; _sse_frames is linear and chunking-independent.
        return _sse_frames(self._event_source)

    def frames(self) -> Iterator[tuple[str, Optional[str], str]]:
        """``(event, id, data)`` for each frame that has a ``data``, ``event`` or ``id`` field."""
        return _sse_frames(self._event_source, parse=True)  # type: ignore[no-any-return]


def _sse_events(source: Iterator[bytes]) -> Iterator[tuple[str, Optional[str], str]]:
    """``(event, id, data)`` per dispatched frame; ``"message"`` when a frame has no ``event:`` line."""
    return _FrameClient(source).frames()


class HermesStream:
    """A live stream: iterate for events, ``text_deltas()`` for text, ``result()`` for the aggregate.

    Closing before the terminal event cancels the call (the connection is dropped, so Hermes
    interrupts the agent); a stream read to its end leaves the connection in the pool for reuse.
    Use it as a context manager so it is closed either way.

    ``replayed`` is True for a stream answered from the idempotency record (it yields the recorded
    events); ``action_id`` names its AIP action; ``action_result`` is its settled
    :class:`~hermes_sdk.ActionResult` once it ended.
    """

    replayed = False
    action_id: Optional[str] = None  # the AIP action (the original one when replayed)
    #: The settled ActionResult (after the stream ended), as recorded and observed.
    action_result: Optional[ActionResult] = None

    def __init__(self, response: requests.Response, aggregate: Aggregate, *,
                 deadline: Optional[float] = None, alarm: Optional[Alarm] = None,
                 idle_timeout: Optional[float] = None, sink: Optional[StreamSink] = None) -> None:
        self._response = response
        self._agg = aggregate
        self._deadline = deadline
        self._alarm = alarm
        self._idle_timeout = idle_timeout
        self._idle: Optional[Alarm] = None
        if idle_timeout is not None:
            self._rearm_idle()
        self._sink = sink
        self._observed = sink is not None and sink.observed
        self._source = _body(response)
        self._events = _sse_frames(self._source, parse=True)
        self._result: Optional[StreamResult] = None
        self._pending_piece: Optional[str] = None
        self._replay: Optional[Iterator[StreamEvent]] = None
        self._recorded: Optional[StreamResult] = None

    @classmethod
    def replay(cls, recorded: StreamResult, accumulator: Optional[Accumulator] = None) -> "HermesStream":
        """A stream answered from the idempotency record: nothing executed.

        A record keeps the aggregate, not each event, so a replay yields the recorded events only
        when there are some, and ``text_deltas()`` gives the recorded text as one piece.
        """
        self = cls.__new__(cls)
        self._response = None  # type: ignore[assignment]
        # Only to give text_deltas() the same pieces as the live stream did.
        self._agg = Aggregate(recorded.endpoint_id, recorded.operation, recorded.http_status,
                              max(len(recorded.events), 1) + 1, recorded.session_id, keep_events=False,
                              accumulator=accumulator)
        self._deadline = None
        self._alarm = None
        self._idle_timeout = None
        self._idle = None
        self._sink = None
        self._observed = False
        self._source = iter(())
        self._events = iter(())
        self._result = None
        self._pending_piece = None
        self._replay = iter(recorded.events)
        self._recorded = recorded
        self.replayed = True
        return self

    @property
    def session_id(self) -> Optional[str]:
        """The ``X-Hermes-Session-Id`` response header (pass it as ``session_id=`` to continue), or None."""
        return self._agg.session_id

    @property
    def headers(self) -> Mapping[str, str]:
        """Hermes' response headers (case-insensitive); empty for a replayed stream."""
        return self._response.headers if self._response is not None else {}

    @property
    def http_status(self) -> int:
        """The HTTP status of the stream's response."""
        return self._agg.http_status

    @property
    def closed(self) -> bool:
        """Whether the stream has settled (ended, failed or closed); ``result()`` then returns at once."""
        return self._result is not None

    def __iter__(self) -> Iterator[StreamEvent]:
        while self._result is None:
            event = self._next()
            if event is None:
                return
            yield event

    def _next(self) -> Optional[StreamEvent]:
        agg = self._agg
        if self._replay is not None:
            replayed = next(self._replay, None)
            if replayed is None:
                self._result = self._recorded
                return None
            self._pending_piece = agg.add(replayed)
            return replayed
        if agg.done:
            self._settle()
            return None
        try:
            if self._deadline is not None and time.time() > self._deadline:
                raise DeadlineExceededError("the call's deadline passed during the stream",
                                            uncertain_outcome=True, details={"operation": agg.operation})
            sse = next(self._events, None)
        except HermesError as exc:
            if not exc.uncertain_outcome:
                # A stream refused mid-way (size limits, bad bytes): the agent may have acted already.
                exc = type(exc)(exc.message, code=exc.code, uncertain_outcome=True, http_status=agg.http_status,
                                details={"operation": agg.operation, **exc.details})
            self._fail(exc)
            raise exc from None
        except (requests.RequestException, OSError, ValueError, urllib3.exceptions.HTTPError) as exc:
            # Transport failures and undecodable bytes mid-stream are typed, never raw (urllib3's
            # read1 raises its own ProtocolError / ReadTimeoutError, which requests does not wrap here).
            typed: HermesError
            cut = self._cut_by_timer()
            if isinstance(exc, UnicodeDecodeError):
                typed = InvalidResponseError("the stream is not valid UTF-8", uncertain_outcome=True,
                                             details={"operation": agg.operation})
            elif cut is not None:
                typed = cut
            else:
                typed = TransportError(f"the stream broke ({type(exc).__name__})", uncertain_outcome=True,
                                       details={"operation": agg.operation, "exception": type(exc).__name__})
            self._fail(typed)
            raise typed from None
        if sse is None:
            cut = self._cut_by_timer()
            if cut is not None and not agg.terminal:  # the watchdog ended a body that looked complete
                self._fail(cut)
                raise cut
            self._settle()
            return None
        name, event_id, raw_data = sse
        event = decode_event(name, event_id, raw_data, agg.terminal_names)
        if self._idle is not None:
            self._rearm_idle()
        self._pending_piece = agg.add(event)
        if self._observed:
            self._sink.event(event)  # type: ignore[union-attr]
        return event

    def _cut_by_timer(self) -> Optional[HermesError]:
        """The deadline or idle error, if one of this stream's alarms fired."""
        op = self._agg.operation
        if self._idle is not None and self._idle.fired:
            return DeadlineExceededError(
                f"no stream event for {self._idle_timeout:g} s (idle_timeout; keepalives do not count)",
                uncertain_outcome=True, details={"operation": op, "reason": "idle_timeout",
                                                 "idle_timeout": self._idle_timeout})
        if (self._alarm is not None and self._alarm.fired) or (
                self._deadline is not None and time.time() >= self._deadline - 0.01):
            return DeadlineExceededError("the call's deadline passed during the stream", uncertain_outcome=True,
                                         details={"operation": op})
        return None

    def _rearm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        assert self._idle_timeout is not None
        self._idle = WATCHDOG.arm(time.time() + self._idle_timeout)
        self._idle.attach(socket_of(self._response))

    def text_deltas(self) -> Iterator[str]:
        """Yield visible text pieces as they arrive (reasoning never included)."""
        recorded = self._recorded
        if recorded is not None and not recorded.events:
            if self._result is None:
                self._result = recorded
                if recorded.text:
                    yield recorded.text
            return
        for _ in self:
            if self._pending_piece:
                yield self._pending_piece

    def typed(self) -> Iterator[Any]:
        """Yield typed events as they arrive: ``MessageDelta`` per visible text piece, and the tool
        events (``ToolProgress`` on chat streams, ``FunctionCall`` / ``FunctionCallOutput`` on
        Responses streams). Other events are skipped; iterate the stream itself for every event.
        """
        typed_of = self._agg.accumulator.typed
        for event in self:
            typed = typed_of(event, self._pending_piece)
            if typed is not None:
                yield typed

    def result(self) -> StreamResult:
        """Read to the end and return the aggregate; never raises for a stream-level outcome."""
        while self._result is None:
            try:
                if self._next() is None:
                    break
            except HermesError:
                break
        assert self._result is not None
        return self._result

    def close(self) -> None:
        """Cancel the stream if it has not ended; idempotent.

        A stream that already saw its terminal event (the caller broke out of the loop there)
        settles as it ended, not cancelled.
        """
        if self._result is None:
            if self._replay is not None:
                self._result = self._recorded
                return
            if self._agg.done:
                self._settle()
                return
            self._response.close()
            self._finish(self._agg.result(cancelled=True))

    def abort(self) -> bool:
        """Interrupt the stream from another thread: its socket is shut down, so a read blocked on
        it returns at once and the reading thread settles the stream (``close()`` would wait for
        that read). Returns whether a socket was found to shut down."""
        sock = socket_of(self._response) if self._response is not None else None
        if sock is None:
            return False
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            return False
        return True

    def _fail(self, error: HermesError) -> None:
        self._response.close()
        self._finish(self._agg.result(error=error))

    def _settle(self) -> None:
        if self._agg.terminal:
            self._drain()
        else:
            self._response.close()
        self._finish(self._agg.result())

    def _drain(self) -> None:
        """After the terminal event, read the (tiny) rest so the connection can be reused."""
        raw = self._response.raw
        try:
            left = 65_536
            for data in self._source:  # the reader _body chose keeps the body's framing state
                left -= len(data)
                if left <= 0:
                    break
            else:
                raw.release_conn()
                return
        except (requests.RequestException, OSError, ValueError, urllib3.exceptions.HTTPError):
            pass
        self._response.close()

    def _finish(self, result: StreamResult) -> None:
        """The one place a stream settles (end, error, close or garbage collection): exactly once."""
        if self._result is not None:  # closed from another thread while a read was failing
            return
        self._result = result
        if self._idle is not None:
            self._idle.cancel()
        if self._alarm is not None:
            self._alarm.cancel()
        if self._sink is not None:
            self.action_result = self._sink.settled(result)

    def __enter__(self) -> "HermesStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # An abandoned stream must not hold its connection open, nor leave its record pending:
        # dropping the connection cancels the call, so it settles as closed would.
        try:
            if self._result is None and self._replay is None:
                self._response.close()
                self._finish(self._agg.result(cancelled=not self._agg.done))
        except Exception:
            pass


class ChatStream(HermesStream):
    """The live stream of a :meth:`~hermes_sdk.HermesClient.chat_stream` call (chat completion chunks)."""


class ResponseStream(HermesStream):
    """The live stream of a :meth:`~hermes_sdk.HermesClient.responses_stream` call.

    Its events are Responses events; ``result().final`` is the terminal Responses envelope.
    """


class RunEventStream(HermesStream):
    """A ``run_events`` subscription: data-only SSE (the event type is the JSON ``event`` field, no
    ``[DONE]``); it ends after ``run.completed|failed|cancelled`` with the comment ``: stream closed``.

    Hermes has one queue per run and no resume: never open a second one for the same run
    (:class:`hermes_sdk.runs.Run` holds the only one, read on a thread of its own).
    """

    #: The thread that reads this stream (set by :class:`~hermes_sdk.runs.Run`), or None.
    owner: Optional[threading.Thread] = None

    def close(self) -> None:
        """Cancel the subscription; from another thread than its reader, only interrupt the read
        (the reader settles the stream: two threads must never read one socket)."""
        owner = self.owner
        if owner is not None and owner is not threading.current_thread() and owner.is_alive():
            if self._result is None:
                self.abort()
            return
        super().close()
