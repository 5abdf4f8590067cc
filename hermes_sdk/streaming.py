"""SSE streams: live events, the connector's aggregate (with its gaps fixed), and early cancel.

The wire (reading the body, framing, parsing, limits) is :mod:`hermes_sdk.sse`; a stream pulls
``(event, id, data)`` triples from it and folds them into its aggregate.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Optional

import requests
import urllib3.exceptions

from .deadline import WATCHDOG, Alarm
from .errors import (
    STREAM_FAILED,
    STREAM_INCOMPLETE,
    STREAM_TRUNCATED,
    CancelledError,
    DeadlineExceededError,
    HermesError,
    InvalidResponseError,
    StreamError,
    TransportError,
)
from .events import tool_event, typed_stream_event
from .models import ActionResult, StreamEvent, StreamResult
from .sse import body_chunks
from .sse import events as sse_events
from .sse import frames as sse_frames
from .transport import socket_of

if TYPE_CHECKING:
    from .stages.streams import StreamSink

_log = logging.getLogger("hermes_sdk")
TERMINAL_NAMES = frozenset({"done", "run.completed", "run.failed", "run.cancelled", "response.completed",
                            "response.failed", "response.incomplete", "error"})
FAILED_NAMES = frozenset({"run.failed", "response.failed", "response.incomplete", "error"})
_COMPACT_PARTS = 4096  # Aggregate joins its text pieces into one block at this many
_raw_decode = json.JSONDecoder().raw_decode  # json.loads' default decoder configuration
_END: Any = object()  # the end of a stream's events


def _sse_events(source: Iterator[bytes]) -> Iterator[tuple[str, Optional[str], str]]:
    """``(event, id, data)`` per dispatched frame (keepalives left out): :func:`hermes_sdk.sse.events`."""
    return (sse for sse in sse_events(source) if sse is not None)


_sse_frames = sse_frames  # the framer, under the name tests know it by


def decode_event(name: str, event_id: Optional[str], raw_data: str) -> StreamEvent:
    """Parse one event the connector's way: ``[DONE]``, blank → None, JSON, else the raw string."""
    data: Any
    if raw_data == "[DONE]":
        data = "[DONE]"
    elif not raw_data.strip():
        data = None
    else:
        try:
            if raw_data[0] == "{":  # json.loads without its two whitespace regex scans
                data, end = _raw_decode(raw_data)
                if end != len(raw_data):
                    data = json.loads(raw_data)  # trailing whitespace, or extra data (raises)
            else:
                data = json.loads(raw_data)
        except (ValueError, RecursionError):  # nested too deep for the decoder: kept as the raw string
            data = raw_data
    if name != "message":
        terminal = name in TERMINAL_NAMES or data == "[DONE]"
        return StreamEvent(name, event_id or None, data, raw_data, terminal)
    if type(data) is dict:  # event_name(), inline: this runs once per event
        named = data.get("event")
        terminal = isinstance(named, str) and named in TERMINAL_NAMES
    else:
        terminal = data == "[DONE]"
    return StreamEvent(None, event_id or None, data, raw_data, terminal)


def event_name(event: Optional[str], data: Any) -> Optional[str]:
    """An event's name: its SSE ``event:`` field, else the ``event`` key of its JSON data, else None."""
    if event:
        return event
    if isinstance(data, dict):
        name = data.get("event")
        if isinstance(name, str):
            return name
    return None


class Aggregate:
    """The stream result being built, one event at a time, so iteration stays live."""

    def __init__(self, endpoint_id: str, operation: str, http_status: int, max_events: int,
                 session_id: Optional[str], keep_events: bool = True) -> None:
        self.endpoint_id = endpoint_id
        self.operation = operation
        self.http_status = http_status
        self.max_events = max_events
        self.session_id = session_id
        self.keep_events = keep_events
        self.events: list[StreamEvent] = []
        self.count = 0
        self.parts: list[str] = []
        self._text = ""  # earlier parts, joined
        self.terminal = False
        self.truncated = False
        self.last_name: Optional[str] = None
        self.last_data: Any = None
        self.finish_reason: Optional[str] = None
        self.chat_error: Any = None
        self.hermes: Any = None
        self.usage: Optional[dict[str, Any]] = None
        self.final: Optional[dict[str, Any]] = None
        self.tools: list[Any] = []  # typed tool events (ToolProgress, FunctionCall, FunctionCallOutput)

    def add(self, event: StreamEvent) -> Optional[str]:
        """Fold one event in; return the text it adds (or None)."""
        self.count += 1
        if self.keep_events:
            self.events.append(event)
        data = event.data
        name = event.event
        if name is None and isinstance(data, dict):  # event_name(), inline: this runs once per event
            named = data.get("event")
            name = named if isinstance(named, str) else None
        if name is not None:
            self.last_name = name
            self.last_data = data
        piece = None
        if isinstance(data, dict):
            piece = self._fold(name, data)
        if len(self.parts) >= _COMPACT_PARTS:
            # Thousands of tiny str objects cost ~60 bytes each; joined text costs only itself.
            self._compact()
        if event.terminal:
            self.terminal = True
        elif self.count >= self.max_events:
            # The seed page: max_events stops collection *before* a terminal event.
            self.truncated = True
        return piece

    def _compact(self) -> str:
        """Append the pending pieces to the text and return it.

        ``text += ...`` on a local with no other reference lets CPython grow the string in place,
        so the text is never held twice (a join of blocks would be, at the end of a long stream).
        """
        text = self._text
        self._text = ""
        text += "".join(self.parts)
        self.parts.clear()
        self._text = text
        return text

    def _fold(self, name: Optional[str], data: dict[str, Any]) -> Optional[str]:
        choices = data.get("choices")
        if isinstance(choices, list):
            first = choices[0] if choices and isinstance(choices[0], dict) else {}
            delta = first.get("delta")
            if first.get("finish_reason"):
                self.finish_reason = first["finish_reason"]
                self.final = data
            if data.get("usage") is not None:
                self.usage = data["usage"]
            if data.get("error") is not None:
                self.chat_error = data["error"]
            if data.get("hermes") is not None:
                self.hermes = data["hermes"]
            # Only visible content: reasoning deltas never enter the text.
            content = delta.get("content") if isinstance(delta, dict) else None
            if isinstance(content, str) and content:
                self.parts.append(content)
                return content
            return None
        if name == "response.output_text.delta":
            piece = data.get("delta")
            if isinstance(piece, str) and piece:
                self.parts.append(piece)
                return piece
        elif name == "message.delta":  # a run's events: the JSON names its own type
            piece = data.get("delta")
            if isinstance(piece, str) and piece:
                self.parts.append(piece)
                return piece
        elif name == "run.completed":
            self.final = data
            if isinstance(data.get("usage"), dict):
                self.usage = data["usage"]
        elif name in ("hermes.tool.progress", "response.output_item.done"):
            found = tool_event(name, data)
            if found is not None:
                self.tools.append(found)
        elif name in ("response.completed", "response.failed", "response.incomplete"):
            envelope = data.get("response")
            if isinstance(envelope, dict):
                self.final = envelope
                if isinstance(envelope.get("usage"), dict):
                    self.usage = envelope["usage"]
        return None

    @property
    def done(self) -> bool:
        """Whether collection has stopped (a terminal event arrived, or ``max_events`` was reached)."""
        return self.terminal or self.truncated

    def result(self, error: Optional[HermesError] = None, cancelled: bool = False) -> StreamResult:
        """The StreamResult so far; ``error`` or ``cancelled`` say why a stream without a terminal event ended."""
        status, error = self._outcome(error, cancelled)
        return StreamResult(
            endpoint_id=self.endpoint_id, operation=self.operation, http_status=self.http_status,
            events=self.events, text=self._compact(), terminal=self.terminal,
            truncated=self.truncated,
            status=status, error=error, session_id=self.session_id, event_count=self.count,
            finish_reason=self.finish_reason, usage=self.usage, final=self.final, tools=list(self.tools),
        )

    def _outcome(self, error: Optional[HermesError], cancelled: bool) -> tuple[str, Optional[HermesError]]:
        op = {"operation": self.operation}
        if self.terminal:
            if self.last_name == "run.cancelled":
                return "cancelled", None
            if self.last_name in FAILED_NAMES:
                return "failed", StreamError("the stream ended with a failure event", code=STREAM_FAILED,
                                             uncertain_outcome=True,
                                             details={**op, "event": self.last_name, "data": self.last_data})
            # The connector calls these chat streams completed; their final chunk says otherwise.
            if self.finish_reason in ("error", "length") or self.chat_error is not None:
                return "failed", StreamError(
                    f"the chat stream finished with finish_reason {self.finish_reason!r}", code=STREAM_FAILED,
                    uncertain_outcome=True, details={**op, "finish_reason": self.finish_reason,
                                                     "error": self.chat_error, "hermes": self.hermes})
            return "completed", None
        if cancelled:
            return "cancelled", CancelledError("the stream was closed before its terminal event",
                                               uncertain_outcome=True, details=op)
        if error is not None:
            return "failed", error
        if self.truncated:
            return "failed", StreamError(f"the stream reached max_events={self.max_events} before a terminal event",
                                         code=STREAM_TRUNCATED, uncertain_outcome=True, details=op)
        return "failed", StreamError("the stream closed without a terminal event", code=STREAM_INCOMPLETE,
                                     uncertain_outcome=True,
                                     details={**op, "reason": "upstream_stream_closed_without_terminal_event"})


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
        self._source = body_chunks(response)
        self._events = sse_events(self._source)
        self._result: Optional[StreamResult] = None
        self._pending_piece: Optional[str] = None
        self._replay: Optional[Iterator[StreamEvent]] = None
        self._recorded: Optional[StreamResult] = None

    @classmethod
    def replay(cls, recorded: StreamResult) -> "HermesStream":
        """A stream answered from the idempotency record: nothing executed.

        A record keeps the aggregate, not each event, so a replay yields the recorded events only
        when there are some, and ``text_deltas()`` gives the recorded text as one piece.
        """
        self = cls.__new__(cls)
        self._response = None  # type: ignore[assignment]
        # Only to give text_deltas() the same pieces as the live stream did.
        self._agg = Aggregate(recorded.endpoint_id, recorded.operation, recorded.http_status,
                              max(len(recorded.events), 1) + 1, recorded.session_id, keep_events=False)
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
            sse = next(self._events, _END)
            while sse is None:  # a frame that is no event (a keepalive): the stream is alive, no event counted
                if self._deadline is not None and time.time() > self._deadline:
                    raise DeadlineExceededError("the call's deadline passed during the stream",
                                                uncertain_outcome=True, details={"operation": agg.operation})
                sse = next(self._events, _END)
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
        if sse is _END:
            cut = self._cut_by_timer()
            if cut is not None and not agg.terminal:  # the watchdog ended a body that looked complete
                self._fail(cut)
                raise cut
            self._settle()
            return None
        event = decode_event(*sse)
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
        for event in self:
            typed = typed_stream_event(event, self._pending_piece)
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
            for data in self._source:  # the reader body_chunks chose keeps the body's framing state
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
