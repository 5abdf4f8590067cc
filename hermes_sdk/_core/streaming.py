"""SSE streams: live events, the connector's aggregate (with its gaps fixed), and early cancel.

The wire (reading the body, framing, parsing, limits) is :mod:`hermes_sdk.sse`; a stream pulls
``(event, id, data)`` triples from it and folds them into its aggregate.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import TYPE_CHECKING, Iterator, Mapping, Optional, Protocol

import requests

from ..errors import (
    DeadlineExceededError,
    HermesError,
    InvalidInputError,
    InvalidResponseError,
    PluginError,
    TransportError,
)
from . import _fork
from ._detach import detach
from ._wire import FRAMING_FAULTS, TRANSPORT_FAULTS, WIRE_FAULTS
from .aggregate import Accumulator, Aggregate, decode_event, event_name  # noqa: F401  (re-exported)
from .deadline import WATCHDOG, Alarm
from .models import ActionResult, StreamEvent, StreamResult
from .sse import Triple, body_chunks
from .sse import events as sse_events
from .sse import frames as sse_frames
from .transport import socket_of

if TYPE_CHECKING:
    from .stages.streams import StreamSink

_log = logging.getLogger("hermes_sdk")


def _sse_events(source: Iterator[bytes]) -> Iterator[Triple]:
    """``(event, id, data)`` per dispatched frame (keepalives left out): :func:`hermes_sdk._core.sse.events`."""
    return (sse for sse in sse_events(source) if sse is not None)


_sse_frames = sse_frames  # the framer, under the name tests know it by


class EventHook(Protocol):
    """Sees a live stream's events on the reader's thread: each one while ``every`` is true, then
    only those with an SSE ``event:`` name (the per-event path calls nothing for the rest)."""

    every: bool

    def __call__(self, event: StreamEvent) -> None:
        """See one event; a failure raised here ends the stream with it (see ``HermesStream``)."""

    def ended(self) -> None:
        """The stream settled (called once, from wherever it settles; must not raise)."""


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
    #: Sees live events on the reader's thread (a chat stream's approval requests, 0.21+).
    _on_event: Optional[EventHook] = None
    #: The settled ActionResult (after the stream ended), as recorded and observed.
    action_result: Optional[ActionResult] = None

    def __init__(self, response: requests.Response, aggregate: Aggregate, *,
                 deadline: Optional[float] = None, alarm: Optional[Alarm] = None,
                 idle_timeout: Optional[float] = None, sink: Optional[StreamSink] = None) -> None:
        self._response = response
        self._pid = _fork.PID  # a forked child must not read (nor close) its parent's stream
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
        # Kept events are kept as their wire text (name, id, data: no new object per event) and
        # parsed again when result() is first read: an event the caller dropped is freed at once,
        # where a kept parsed one cost ~1.7 KB, the allocator's fresh pages and the GC's passes.
        self._kept: Optional[tuple[list[str], list[Optional[str]], list[str]]] = None
        if aggregate.keep_events:
            aggregate.keep_events = False
            self._kept = ([], [], [])
        self._pending_piece: Optional[str] = None
        self._replay: Optional[Iterator[StreamEvent]] = None
        self._recorded: Optional[StreamResult] = None
        #: The event hook's failure that ended the stream: ``result()`` raises it.
        self._hook_error: Optional[HermesError] = None

    @classmethod
    def replay(cls, recorded: StreamResult, accumulator: Optional[Accumulator] = None) -> "HermesStream":
        """A stream answered from the idempotency record: nothing executed.

        A record keeps the aggregate, not each event, so a replay yields the recorded events only
        when there are some, and ``text_deltas()`` gives the recorded text as one piece.
        """
        self = cls.__new__(cls)
        self._response = None  # type: ignore[assignment]
        self._pid = _fork.PID
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
        self._kept = None
        self._hook_error = None
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
        """The next event, or None once the stream has settled; a failure settles it and is raised."""
        if self._replay is not None:
            return self._next_replayed()
        if self._pid != _fork.PID:
            raise InvalidInputError(
                "this stream was opened by the parent process before a fork; its connection is the "
                "parent's, so this process cannot read it (open the stream in the child)",
                details={"operation": self._agg.operation, "reason": "stream_of_parent_process"})
        agg = self._agg
        if agg.terminal or agg.truncated or agg.accumulator.rejected is not None:  # agg.done, inline
            self._settle()
            return None
        deadline = self._deadline
        try:
            # The next (event, id, data) off the wire; keepalives are read past, the deadline is
            # checked before every read.
            if deadline is not None and time.time() > deadline:
                raise self._deadline_passed()
            for sse in self._events:
                if sse is not None:
                    break
                # A frame that is no event (a keepalive): the stream is alive, no event counted.
                if deadline is not None and time.time() > deadline:
                    raise self._deadline_passed()
            else:
                sse = None  # the body's end
        except HermesError as exc:
            error = self._mid_stream(exc)
        except WIRE_FAULTS as exc:
            # Transport failures and undecodable bytes mid-stream are typed, never raw (urllib3's
            # read1 raises its own ProtocolError / ReadTimeoutError, which requests does not wrap here).
            error = self._typed_fault(exc)
        else:
            if sse is None:
                self._ended()
                return None
            # The event (inline: this is the per-event path).
            name, event_id, data = sse
            event = decode_event(name, event_id, data, agg.terminal_names)
            if self._idle is not None:
                self._rearm_idle()
            kept = self._kept
            if kept is not None:  # what Aggregate.add would have kept (_next stops once it is done)
                kept[0].append(name)
                kept[1].append(event_id)
                kept[2].append(data)
            self._pending_piece = agg.add(event)
            if self._observed:
                self._sink.event(event)  # type: ignore[union-attr]
            hook = self._on_event
            if hook is None or not (hook.every or event.event is not None):
                return event
            try:
                hook(event)
                return event
            except Exception as exc:  # a failure answering the stream's approval: it ends the stream
                error = self._hook_error = self._hook_failed(exc)
        self._fail(error)
        raise detach(error) from None  # without the reader's frames (see _detach)

    def _next_replayed(self) -> Optional[StreamEvent]:
        replayed = next(self._replay, None) if self._replay is not None else None
        if replayed is None:
            self._result = self._recorded
            return None
        self._pending_piece = self._agg.add(replayed)
        return replayed

    def _deadline_passed(self) -> DeadlineExceededError:
        return DeadlineExceededError("the call's deadline passed during the stream", uncertain_outcome=True,
                                     details={"operation": self._agg.operation})

    def _hook_failed(self, exc: Exception) -> HermesError:
        """The typed error of an event hook's failure (an approval the provider could not decide, or
        whose answer Hermes refused): the turn may have run, or may still run, so it is uncertain."""
        if not isinstance(exc, HermesError):
            exc = PluginError(f"a stream event hook failed: {type(exc).__name__}",
                              details={"hook": "stream_event", "exception": type(exc).__name__})
        exc.uncertain_outcome = True
        exc.retryable = False
        exc.details.setdefault("operation", self._agg.operation)
        return exc

    def _mid_stream(self, exc: HermesError) -> HermesError:
        """A stream refused mid-way (size limits, bad bytes): the agent may have acted already."""
        if exc.uncertain_outcome:
            return exc
        agg = self._agg
        return type(exc)(exc.message, code=exc.code, uncertain_outcome=True, http_status=agg.http_status,
                         details={"operation": agg.operation, **exc.details})

    def _typed_fault(self, exc: BaseException) -> HermesError:
        """The typed error of a transport failure or undecodable bytes mid-stream."""
        agg = self._agg
        cut = self._cut_by_timer()
        if isinstance(exc, UnicodeDecodeError):
            return InvalidResponseError("the stream is not valid UTF-8", uncertain_outcome=True,
                                        http_status=agg.http_status, details={"operation": agg.operation})
        if cut is not None:
            return cut
        if isinstance(exc, FRAMING_FAULTS) and not isinstance(exc, TRANSPORT_FAULTS):
            # Bytes no HTTP parser accepts (a negative chunk size): a bad reply, status kept.
            return InvalidResponseError(f"the stream has malformed HTTP framing ({type(exc).__name__})",
                                        uncertain_outcome=True, http_status=agg.http_status,
                                        details={"operation": agg.operation, "reason": "malformed_framing",
                                                 "exception": type(exc).__name__})
        return TransportError(f"the stream broke ({type(exc).__name__})", uncertain_outcome=True,
                              http_status=agg.http_status,
                              details={"operation": agg.operation, "exception": type(exc).__name__})

    def _ended(self) -> None:
        """The body ended: settled, unless the watchdog ended a body that looked complete."""
        cut = self._cut_by_timer()
        if cut is not None and not self._agg.terminal:
            self._fail(cut)
            raise cut
        self._settle()

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
        if self._idle_timeout is None:  # only armed for a stream with an idle timeout
            return
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

    def typed(self) -> Iterator[object]:
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
        """Read to the end and return the aggregate; never raises for a stream-level outcome.

        Raises:
            HermesError: what ended the stream on the SDK's side while it answered one of its
                events (a chat stream's approval: the provider failed, or Hermes refused the
                answer), uncertain (the turn may have run); or why this process cannot read it.
        """
        failure: Optional[HermesError] = None
        while self._result is None:
            try:
                if self._next() is None:
                    break
            except HermesError as exc:
                failure = exc
                break
        result = self._result
        if self._hook_error is not None:
            raise self._hook_error
        if result is None:  # not settled: a stream this process cannot read (a forked child's)
            raise failure if failure is not None else InvalidResponseError(
                "the stream ended without an outcome", uncertain_outcome=True,
                details={"operation": self._agg.operation})
        kept = self._kept
        if kept is not None and result is not self._recorded:
            self._kept = None
            names, ids, data = kept
            terminal = self._agg.terminal_names
            result.events = [decode_event(n, i, d, terminal) for n, i, d in zip(names, ids, data)]
        return result

    def close(self) -> None:
        """Cancel the stream if it has not ended; idempotent.

        A stream that already saw its terminal event (the caller broke out of the loop there)
        settles as it ended, not cancelled.
        """
        if self._result is None:
            if self._replay is not None:
                self._result = self._recorded
                return
            if self._pid != _fork.PID:  # the parent's stream (a forked child): nothing of it is closed here
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
        if self._pid != _fork.PID:  # shutting down the parent's socket would end its stream too
            return False
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
                release = getattr(raw, "release_conn", None)  # a recorder's reply (vcrpy 8) has no pool
                if release is not None:
                    release()
                return
        except WIRE_FAULTS:
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
        if self._on_event is not None:
            self._on_event.ended()

    def __enter__(self) -> "HermesStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # An abandoned stream must not hold its connection open, nor leave its record pending:
        # dropping the connection cancels the call, so it settles as closed would.
        try:
            if self._pid != _fork.PID:  # the parent's: it settles (and records) it, not this process
                return
            if self._result is None and self._replay is None:
                self._response.close()
                self._finish(self._agg.result(cancelled=not self._agg.done))
        except Exception:
            pass


