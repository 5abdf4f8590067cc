"""Durable runs: :class:`Run`, the handle ``client.runs.start()`` returns.

What Hermes 0.19.0 does and the SDK relies on (``spec/hermes-runs.md``):

- a run's events go to ONE subscriber, without resume: the SDK subscribes once, as soon as the run
  started, and never again; when that stream breaks it polls ``GET /v1/runs/{id}`` until the run
  ends or the deadline passes, and the result says ``events_complete=False``;
- an ``approval.request`` has no id and answers are oldest first; the agent waits (the run holds
  a concurrency slot) until an answer, a stop, or Hermes' own approval timeout (then BLOCKED). So
  the SDK answers only the oldest request it knows to be unanswered, and not at all when the
  events it already received say Hermes moved on (an answer meant for one command would land on
  the next one);
- an approval sent after ``/stop`` can still execute the command, so none is ever sent once this
  client asked to stop the run.
"""

from __future__ import annotations

import functools
import json
import logging
import queue
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Iterator, Optional

import attrs

from hermes_sdk.errors import (
    STREAM_INCOMPLETE,
    ApprovalDeniedError,
    ApprovalRequiredError,
    DeadlineExceededError,
    HermesError,
    InvalidInputError,
    InvalidResponseError,
    RunNotFoundError,
    StaleApprovalError,
    StreamCancelledError,
    StreamError,
    TransportError,
)
from hermes_sdk.plugin import (
    RECORDER_POLL,
    ApprovalProvider,
    ApprovalRequest,
    ExecutionContext,
    StreamEvent,
    as_decision,
    buffering_recorder,
    raised_by_test_double,
    replaying_recorder,
    seconds_value,
)
from hermes_sdk.plugin import check_decision as check
from hermes_sdk.plugin import recorder_refusal as refusal

from .event_order import EventOrder, Unplaceable
from .events import (
    ApprovalRequested,
    ApprovalResponded,
    RunCompleted,
    RunEvent,
    RunFailed,
    RunInterrupted,
    ToolCompleted,
    parse_run_event,
)
from .run_answers import SENT, Asking, RunQueue, Sender
from .types import TERMINAL_STATUSES, ApprovalAnswer, RunResult, RunStarted, RunStatus, SteerAnswer

if TYPE_CHECKING:
    from .resource import Runs
    from .types import RunEventStream


log = logging.getLogger("hermes_sdk")

#: How often one Run re-subscribes from its last event id after its events stream broke.
RESUME_MAX = 5
_POLLED = "the outcome comes from polling the run's status"  # the end of a polled result's events_note
POLL_FIRST_INTERVAL = 0.25
POLL_MAX_INTERVAL = 2.0


@attrs.define(eq=False)
class _Pending:
    """One approval request seen and not answered yet; ``choice``: the provider's answer, not yet sent
    (``SENT`` once it may have left); ``mark``: how many events saying Hermes moved on had arrived
    when it did, or were accounted for since (see :class:`~.run_answers.RunQueue`)."""

    event: ApprovalRequested
    asking: Optional[Asking] = None
    choice: Optional[str] = None
    mark: int = 0
    held: bool = False  # its sender waits for the consumer to account for events received


class Run:
    """A started run: follow it with :meth:`events` or :meth:`wait`; :meth:`approve`, :meth:`stop`.

    The events stream was opened when the run started (Hermes keeps one queue per run, without
    resume); it is read on a background thread into a local queue, and consumed by
    :meth:`events` / :meth:`wait` on the caller's thread, where approval requests go to the
    approval provider. Do not consume one Run from two threads at once.

    Attributes:
        run_id: the run id (the canonical name, as on :class:`RunResult` and :class:`RunStatus`);
            ``id`` is the same value.
        status: the last status this client saw (``started``, ``running``, ``waiting_for_approval``,
            ``stopping``, ``completed``, ``failed`` or ``cancelled``).
        replayed: True when ``run()`` replayed the idempotency record: nothing was sent, and this
            handle polls the status instead of subscribing (the first caller may hold the events).
    """

    @property
    def id(self) -> str:
        """The run id: the same as ``run_id``."""
        return self.run_id

    def __init__(self, runs: "Runs", started: RunStarted, *, endpoint: Optional[str] = None,
                 approval_provider: Optional[ApprovalProvider] = None, deadline: Optional[float] = None,
                 context: Optional[ExecutionContext] = None, objective: Optional[str] = None,
                 session_id: Optional[str] = None) -> None:
        self.run_id = started.run_id
        self.status = started.status
        self.replayed = started.replayed
        self.action_id = started.action_id
        self._runs: "Runs" = runs  # the runs resource of the client that started it
        self._endpoint = endpoint
        self._provider = approval_provider
        self._deadline = deadline
        self._context = context
        self._objective = objective  # shown to the approval provider (through the redactor)
        self._session_id = session_id or started.run_id  # Hermes' default session is the run id
        self._queue = RunQueue(started.run_id)
        self._until = deadline  # the bound of the wait()/events() in progress
        self._stream: Optional[RunEventStream] = None
        self._subscribed = False
        self._released = False  # the caller closed the subscription, or it was not believed
        self._polling = started.replayed
        self._stream_error: Optional[HermesError] = None
        self._events: list[RunEvent] = []
        self._order = EventOrder()  # the reader's record: each event delivered once, gaps noted
        self._asked: set[str] = set()  # the approval requests seen (by request_id), never asked twice
        self._pending: deque[_Pending] = deque()
        self._answered_unseen = 0
        self._answered_waiting_at: Optional[float] = None  # see _answered
        self._result: Optional[RunResult] = None
        self._recorder: Optional[str] = None  # a recorder that buffers whole replies (vcrpy): see .recorders
        self._replaying: Optional[str] = None  # such a recorder's replay: refuses as its recording did
        self._lock = threading.Lock()
        # Guards the pending requests between the consumer, the caller and the answers' senders.
        self._answering = threading.Condition(threading.RLock())
        self._closing = threading.Event()  # close() was called: an answer's sender tries no more

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, status={self.status!r})"

    # ------------------------------------------------------------ public

    @property
    def pending_approval(self) -> Optional[ApprovalRequested]:
        """The oldest approval request this client saw and nobody answered yet: the one Hermes applies
        the next answer to (it answers oldest first, with no id)."""
        return self._pending[0].event if self._pending else None

    @property
    def stream_error(self) -> Optional[HermesError]:
        """Why the events stream broke (the run was then followed by polling), or None."""
        return self._stream_error

    @property
    def result(self) -> Optional[RunResult]:
        """The final result once the run ended as seen by :meth:`events` / :meth:`wait`, else None."""
        return self._result

    def events(self) -> Iterator[RunEvent]:
        """Yield the run's typed events live, until its terminal event (or the run's deadline).

        Each ``ApprovalRequested`` is first handed to the approval provider (if any). When the
        stream breaks, iteration ends without the terminal event: call :meth:`wait`, which polls.
        Calling ``events()`` again continues where the last iteration stopped (never re-subscribes);
        events already consumed (by ``wait()`` too) are in ``run.result.events``, not yielded again.
        """
        while True:
            self._until = self._deadline
            event = self._next(self._deadline, poll=False)
            if event is None:
                return
            yield event

    def wait(self, timeout: Optional[float] = None) -> RunResult:
        """Follow the run until it ends or ``timeout`` seconds (and the run's deadline) pass.

        Consumes the events nobody iterated (answering approvals through the provider); after a
        broken stream, polls the status. Returns a :class:`RunResult` whose status is not terminal
        when time ran out first.

        Raises:
            ApprovalRequiredError: while polling, the run waits for an approval request this client
                never received and the server's run object does not name it (before 0.21), so the
                provider cannot be asked (``details["reason"] == "approval_not_received"``): answer
                it with :meth:`approve` or stop the run. (0.21+ names it: it is asked as usual.)
        """
        until = self._deadline
        if timeout is not None:
            limit = time.time() + seconds_value(timeout, "timeout")
            until = limit if until is None else min(until, limit)
        self._until = until
        while self._result is None:
            if self._next(until, poll=True) is None and (until is not None and time.time() >= until):
                break
        return self._result if self._result is not None else self._snapshot(self.status)

    def approve(self, choice: str = "once", *, resolve_all: bool = False) -> ApprovalAnswer:
        """Answer the oldest pending approval: ``once``, ``session`` (this run), ``deny``, or
        ``always`` (only with ``HermesClient(allow_permanent_approvals=True)``: Hermes then allows
        the pattern process-wide and rewrites its config). Refused after :meth:`stop`.

        The answer names the oldest request this handle saw (its ``request_id``, when the server
        gave one): Hermes 0.21+ resolves exactly that request, 0.19 and 0.20 their oldest pending
        one (:attr:`pending_approval`), whatever command the caller had in mind. Bounded by the
        run's deadline while it is ahead.

        Raises:
            RunStoppedError: this client stopped the run; nothing is sent.
            ApprovalNotPendingError: nothing is waiting (409 ``approval_not_pending``).
            StaleApprovalError: the named request is no longer pending (0.21+).
            ApprovalNotActiveError: the run finished or was stopped (409 ``approval_not_active``).
        """
        with self._answering:  # an answer the provider's thread is sending is not the caller's to give
            unsent = [p for p in self._pending if p.choice != SENT]
        oldest = unsent[0].event if unsent and not resolve_all else None
        request_id = oldest.request_id if oldest is not None else None
        try:
            answer = self._runs.approve(self.id, choice, resolve_all=resolve_all, request_id=request_id,
                                        endpoint=self._endpoint, context=self._context,
                                        deadline=self._ahead_of_deadline())
        except StaleApprovalError:
            self._drop_request(request_id)
            raise
        self._answered(answer.resolved)
        return answer

    def steer(self, text: str) -> SteerAnswer:
        """Send a message to the running agent (``POST /v1/runs/{id}/steer``, Hermes 0.20+); it
        arrives as ``run.steered``. See :meth:`Runs.steer <hermes_sdk.types.Runs.steer>`."""
        return self._runs.steer(self.id, text, endpoint=self._endpoint, context=self._context,
                                deadline=self._ahead_of_deadline())

    def stop(self) -> RunStatus:
        """Ask Hermes to stop the run (it ends ``cancelled``); from now on no approval is sent.

        A run that already finished answers 404: then its final status is returned (and a run this
        handle saw end is not sent a stop at all: its task may still be closing, when Hermes would
        answer 200 ``stopping`` for a run that is over). Bounded by the run's deadline while it is
        ahead; a stop asked for after it passed still goes out (within the published timeout).
        """
        bound = self._ahead_of_deadline()
        if self._result is not None:
            self._runs.mark_stopped(self.id)
            return self._runs.get(self.id, endpoint=self._endpoint, context=self._context, deadline=bound)
        try:
            status = self._runs.stop(self.id, endpoint=self._endpoint, context=self._context, deadline=bound)
        except RunNotFoundError:
            status = self._runs.get(self.id, endpoint=self._endpoint, context=self._context,
                                    deadline=self._ahead_of_deadline())
            if not status.terminal:
                raise
        self.status = status.status if self.status not in TERMINAL_STATUSES else self.status
        return status

    def refresh(self) -> RunStatus:
        """Fetch the run object (``GET /v1/runs/{id}``) and update :attr:`status` (bounded by the
        run's deadline while it is ahead)."""
        status = self._runs.get(self.id, endpoint=self._endpoint, context=self._context,
                                deadline=self._ahead_of_deadline())
        if self._result is None:
            self.status = status.status
        return status

    def close(self) -> None:
        """Drop the events connection (the run goes on at Hermes; this handle then polls). An
        approval answer that failed is not tried again from now on."""
        self._released = True
        self._closing.set()
        stream = self._stream
        if stream is not None and not stream.closed:
            stream.close()  # from this thread: interrupts the reader, which settles the stream
            # Events already read are still delivered; then the handle polls (never re-subscribes).
            self._queue.put(("broken", StreamCancelledError("the events stream was closed by the caller")))

    # ------------------------------------------------------------ following

    def _subscribe(self) -> None:
        """Open the one events subscription and start its reader thread (called once, early)."""
        if self._subscribed or self._polling:
            return
        self._subscribed = True
        self._runs.follow(self)
        self._recorder = buffering_recorder()
        if self._recorder is not None:  # the subscription would block until the run ends: opened aside
            threading.Thread(target=self._subscribe_aside, daemon=True, name=f"hermes-sdk-run-{self.id[-8:]}").start()
            return
        self._replaying = replaying_recorder()
        try:
            self._stream = self._runs._subscribe(self.id, self._endpoint, self._context, self._deadline)
        except HermesError as exc:
            self._broken(exc)
            return
        except Exception as exc:
            if self._replaying is None or not raised_by_test_double(exc):
                raise
            # The recording has no events: it was refused while the run waited (vcrpy had not read them
            # whole). Its status looks are replayed as they were made, and refuse the run where they did
            # (wait() and events() alike, as while recording).
            self._recorder = self._replaying
            return
        thread = threading.Thread(target=self._read, args=(self._stream,), daemon=True,
                                  name=f"hermes-sdk-run-{self.id[-8:]}")
        self._stream.owner = thread
        thread.start()

    def _subscribe_aside(self) -> None:
        try:
            stream = self._stream = self._runs._subscribe(self.id, self._endpoint, self._context, self._deadline)
        except HermesError as exc:
            self._queue.put(("broken", exc))
            return
        stream.owner = threading.current_thread()
        self._read(stream)

    def _watch_status(self) -> None:
        """Under a recorder that buffers: refuse the run once it waits for a person (see .recorders)."""
        try:
            status = self._runs.get(self.id, endpoint=self._endpoint, context=self._context,
                                    deadline=self._ahead_of_deadline())
        except HermesError:
            return  # the stream (or the next look) tells
        self._refuse_waiting(status.status)

    def _refuse_waiting(self, status: str) -> None:
        if self._recorder is None or status != "waiting_for_approval" or self._result is not None:
            return
        try:
            self.stop()
            stopped = True
        except HermesError:
            stopped = False
        raise refusal(self._recorder, self.id, stopped)

    def _following(self) -> bool:
        """Whether this handle's events subscription is open."""
        stream = self._stream
        return stream is not None and not stream.closed and not self._released

    def _read(self, stream: RunEventStream) -> None:
        """Read the subscription into the queue, each event once. Where the server numbers its events
        (``id:``, 0.21+), a broken stream is re-subscribed with ``Last-Event-ID``; what a resumed
        stream repeats is skipped, and what cannot be placed (reused or backward ids, a replay
        without ids that differs) ends the subscription: see :mod:`.event_order`."""
        order = self._order
        resumes = 0
        while True:
            error: Optional[HermesError]
            try:
                for event in stream:
                    if isinstance(event.data, dict) and not order.place(event.id, event.data):
                        continue  # a repeat of an event already delivered
                    self._queue.put(("event", event))
                result = stream.result()
                if result.terminal:
                    self._queue.put(("end", None))
                    return
                error = result.error
            except Unplaceable as exc:
                stream.close()
                self._queue.put(("broken", InvalidResponseError(
                    str(exc), uncertain_outcome=True,
                    details={"operation": "run_events", "reason": "events_out_of_order"})))
                return
            except HermesError as exc:
                error = exc
            except Exception as exc:  # never leave the consumer waiting on a dead reader
                error = TransportError(f"the run's events stream failed ({type(exc).__name__})",
                                       uncertain_outcome=True)
            last_id = order.resume_after
            if last_id is None or resumes >= RESUME_MAX or self._released or not _resumable(error):
                self._queue.put(("broken", error))
                return
            resumes += 1
            log.info("hermes_sdk: the events stream of a run broke (%s); resuming after its last event id",
                     type(error).__name__ if error else "closed")
            order.resumed()
            try:
                stream = self._runs._subscribe(self.id, self._endpoint, self._context, self._deadline,
                                               last_event_id=last_id)
            except HermesError as exc:
                self._queue.put(("broken", exc))
                return
            stream.owner = threading.current_thread()
            self._stream = stream
            if self._released:  # closed by the caller while re-subscribing
                stream.close()

    def _broken(self, error: Optional[HermesError]) -> None:
        if not self._polling:
            self._polling = True
            self._stream_error = error
            log.info("hermes_sdk: the events stream of a run broke (%s); polling its status",
                     type(error).__name__ if error else "closed")

    def _next(self, until: Optional[float], poll: bool) -> Optional[RunEvent]:
        """The next event (approvals handled), or None once the run ended, time ran out, or (when
        not ``poll``) the stream broke."""
        while self._result is None:
            if self._polling:
                if not poll:
                    return None
                self._poll(until)
                return None
            remaining = None if until is None else until - time.time()
            if remaining is not None and remaining <= 0:
                return None
            slice_ = remaining if self._recorder is None else min(remaining or RECORDER_POLL, RECORDER_POLL)
            try:
                kind, payload = self._queue.get(timeout=slice_)
            except queue.Empty:
                if self._recorder is None or (until is not None and time.time() >= until):
                    return None
                self._watch_status()
                continue
            if isinstance(payload, StreamEvent):  # kind "event"
                mark = self._queue.mark(payload)
                data = payload.data
                if not isinstance(data, dict):
                    continue
                named = data.get("run_id")
                if named is not None and named != self.id:
                    # An event about another run is not this run's (above all not its end): the
                    # stream is not to be believed from here on; the status is polled instead.
                    self._reject_stream(InvalidResponseError(
                        "the run's events stream sent an event about another run", uncertain_outcome=True,
                        details={"operation": "run_events", "reason": "another_object"}))
                    self._settled(mark)
                    continue
                event = parse_run_event(data)
                self._events.append(event)
                with self._answering:  # observed and accounted for at once (see _settled)
                    self._observe(event, mark)
                    self._settled(mark)
                if isinstance(event, ApprovalRequested) and self._replaying is not None:
                    self._recorder = self._replaying  # recorded, it was refused: so is its replay
                    self._refuse_waiting("waiting_for_approval")
                if isinstance(event, (ApprovalRequested, ApprovalResponded)):
                    self._answer_oldest()  # a new request, or the next one is now the oldest
                return event
            if kind == "decided":  # the provider decided after a bound passed: send its answer now
                self._answer_oldest()
                continue
            if kind == "broken" or self._result is None:  # "end" without a terminal event is broken too
                self._broken(payload)
        return None

    def _reject_stream(self, error: HermesError) -> None:
        """Stop believing the events stream: drop what it still holds, close it, and poll."""
        self._released = True
        stream = self._stream
        if stream is not None and not stream.closed:
            stream.abort()  # the reader thread's blocked read returns at once
        self._broken(error)

    def _observe(self, event: RunEvent, mark: int = 0) -> None:
        if event.terminal:
            status = ("completed" if isinstance(event, RunCompleted) else
                      "failed" if isinstance(event, RunFailed) else
                      "interrupted" if isinstance(event, RunInterrupted) else "cancelled")
            self._pending.clear()
            self.status = status
            self._result = RunResult(
                run_id=self.id, status=status,
                output=event.output if isinstance(event, (RunCompleted, RunInterrupted)) else None,
                usage=event.usage if isinstance(event, RunCompleted) else None,
                error=event.error if isinstance(event, (RunFailed, RunInterrupted)) else None,
                events=list(self._events), events_complete=not self._order.notes,
                events_note="; ".join(self._order.notes) or None)
            return
        if isinstance(event, ApprovalRequested):
            identity = _approval_identity(event)
            if identity in self._asked:
                return  # the same request announced again (a resumed stream): asked about once
            self._asked.add(identity)
            self._pending.append(_Pending(event, mark=mark))
            self.status = "waiting_for_approval"
            return
        if isinstance(event, ApprovalResponded):
            if self._answered_unseen > 0:
                self._answered_unseen = max(0, self._answered_unseen - max(event.resolved, 1))
            else:  # answered elsewhere (another client or a person)
                for _ in range(max(event.resolved, 1)):
                    if self._pending:
                        self._pending.popleft()
            if self.status != "stopping":
                self.status = "running"
            return
        if isinstance(event, ToolCompleted) and self._pending:
            # The command's approval ended without an answer: Hermes' timeout, or a stop (BLOCKED).
            self._pending.clear()
        if self.status in ("started", "queued", "waiting_for_approval"):
            self.status = "running"

    def _answered(self, resolved: int, waiting_at: Optional[float] = None) -> None:
        """An answer was applied; ``waiting_at``: the run object's ``updated_at`` while it waited for
        that request (None: not read), which tells a later poll whether it waits for a new one."""
        with self._answering:
            self._answered_waiting_at = waiting_at
            for _ in range(max(resolved, 1)):
                if self._pending:
                    self._pending.popleft()
            self._answered_unseen += max(resolved, 1)
            if self.status == "waiting_for_approval":
                self.status = "running"

    def _settled(self, mark: int) -> None:
        """The consumer accounted for every event up to one whose mark is ``mark``: what they said
        about the pending requests is in ``_pending`` now; wake the senders waiting on it."""
        with self._answering:
            for pending in self._pending:
                pending.mark = max(pending.mark, mark)
            self._answering.notify_all()

    def _may_send(self, pending: _Pending) -> str:
        """Whether ``pending``'s answer may go now (``send``), after the consumer caught up
        (``later``), or never (``drop``: answered, resolved at Hermes, the run ended or was stopped)."""
        if (self._result is not None or self._runs.stopped(self.id) or pending.choice in (None, SENT)
                or not any(p is pending for p in self._pending)):
            return "drop"
        if self._pending[0] is not pending or self._queue.moves > pending.mark:
            return "later"  # an older request first, or an event not accounted for yet may have resolved it
        return "send"

    def _decided(self, pending: _Pending, decision: object) -> None:
        """On the asking thread: the provider decided; send the answer there, on its own bound."""
        with self._answering:
            asking = pending.asking  # set under this lock before the thread could get here
            if asking is None:
                return
            choice = choice_for(decision, asking.request, pending.event, self._runs.allow_permanent_approvals)
            pending.choice = choice
        Sender(self, pending, choice)()

    def _answer_oldest(self) -> None:
        """Hand the oldest unanswered request to the provider, whose thread sends its answer.

        Hermes applies an answer to its oldest pending request, with no id: so only the oldest
        request this client knows of is ever answered (a later one waits until every older one
        is answered, by the provider or the caller), and its answer is not sent when the events
        already received show that Hermes moved on (the request timed out, or was answered
        elsewhere): sent then, it would land on the next command. Never asked, never answered
        once this client stopped the run (Hermes resolves the request as deny); not asked past the
        bound of the wait in progress (the next wait asks).

        The provider is asked on a thread of its own, so a provider that waits for a person (the
        inbox) cannot hold the caller past that bound; the same thread sends the decision on the
        answer's own bound (``run_answers``), whether or not a wait is running. What the provider
        raised is raised here, on the caller's thread; an answer that did not leave is sent again.
        """
        runs = self._runs
        while True:
            with self._answering:
                oldest = self._pending[0] if self._pending else None
                if oldest is None or self._provider is None or runs.stopped(self.id):
                    return
                asking = oldest.asking
                if asking is None:
                    if self._bound_passed():
                        return
                    event = oldest.event
                    request = runs.approval_request(self.id, event_command(event), reason=event.description,
                                                    endpoint=self._endpoint, pattern_key=event.pattern_key,
                                                    session_id=self._session_id, objective=self._objective,
                                                    context=self._context)
                    asking = oldest.asking = Asking(self._provider, request, self._queue,
                                                    functools.partial(self._decided, oldest))
                elif oldest.choice not in (None, SENT) and not self._bound_passed():
                    asking.again(Sender(self, oldest, str(oldest.choice)))  # decided; it did not leave
            if not self._await(asking, oldest):
                return  # the bound came first: the provider's thread goes on deciding and sending
            asking.raise_error()  # a provider's failure is raised here, on the caller's thread
            with self._answering:
                if self._pending and self._pending[0] is oldest:
                    return  # left to the caller (None), or not sent (yet)

    def _await(self, asking: Asking, pending: _Pending) -> bool:
        """Wait, within the bound of the wait in progress, for the provider's thread to decide and
        send; False when the bound came first or its sender waits for this consumer to read on."""
        while True:
            left = self._remaining()
            if asking.done.wait(0.05 if left is None else min(0.05, left)):
                return True
            if pending.held or self._bound_passed():
                return False

    def _drop_request(self, request_id: Optional[str]) -> None:
        """Forget a request the server says is no longer pending."""
        with self._answering:
            for item in list(self._pending):
                if item.event.request_id == request_id:
                    self._pending.remove(item)

    def _remaining(self) -> Optional[float]:
        return None if self._until is None else max(0.0, self._until - time.time())

    def _bound_passed(self) -> bool:
        return self._until is not None and time.time() >= self._until

    def _ahead_of_deadline(self) -> Optional[float]:
        """The run's deadline for a call the caller makes through this handle, while it is ahead."""
        deadline = self._deadline
        return deadline if deadline is not None and deadline > time.time() else None

    def _poll(self, until: Optional[float]) -> None:
        """Poll the run object until it ends or ``until`` passes; a transient failure is retried."""
        interval = POLL_FIRST_INTERVAL
        while True:
            try:
                status = self._runs.get(self.id, endpoint=self._endpoint, context=self._context,
                                              deadline=until)
            except RunNotFoundError:
                raise
            except HermesError as exc:
                if until is not None and time.time() >= until:
                    return
                if not exc.retryable and exc.category not in ("temporary", "transport"):
                    raise
                status = None
            if status is not None:
                self._refuse_waiting(status.status)
                if status.status != self.status and self._result is None:
                    self.status = status.status
                if status.status == "waiting_for_approval":
                    self._approval_from_status(status)
                elif not status.terminal:
                    self._answered_unseen = 0  # Hermes has moved on from every answer sent so far
                if status.terminal:
                    self._pending.clear()
                    self._result = RunResult(run_id=self.id, status=status.status, output=status.output,
                                             usage=status.usage, error=status.error, events=list(self._events),
                                             events_complete=False, events_note=self._incomplete(_POLLED))
                    return
            delay = interval if until is None else min(interval, until - time.time())
            if delay <= 0:
                return
            time.sleep(delay)
            interval = min(interval * 2, POLL_MAX_INTERVAL)

    def _approval_from_status(self, status: RunStatus) -> None:
        """While polling (the events stream broke, or what it sent could not be placed): Hermes waits
        for an approval. A request this client never received is read from the run object (0.21+
        embeds it) and put to the provider like one from the stream (once: a request already asked
        about is not asked again). When the run object does not say which request it is, a provider
        could never be asked: raise rather than wait for Hermes' timeout in silence."""
        with self._answering:
            if self._pending or self._provider is None or self._runs.stopped(self.id):
                return
        shown = status.approval
        if isinstance(shown, dict) and shown.get("run_id") in (None, self.id):
            event = parse_run_event({**shown, "event": "approval.request", "run_id": self.id})
            if isinstance(event, ApprovalRequested):
                with self._answering:
                    self._observe(event)  # a request asked about already is not pending again
                    asked = bool(self._pending)
                if asked:
                    self._answer_oldest()
                return
        answered_at = self._answered_waiting_at
        if self._answered_unseen and (answered_at is None or status.updated_at in (None, answered_at)):
            return  # the request this client answered may still show: Hermes has not moved on yet
        raise ApprovalRequiredError(
            "the run waits for an approval request this client never received (its events stream "
            "broke or could not be placed, and the server's run object does not say which request "
            "it is): answer it with run.approve(...) or stop the run", details={
                "operation": "run_approval", "reason": "approval_not_received", "run_id": self.id})

    def _snapshot(self, status: str) -> RunResult:
        return RunResult(run_id=self.id, status=status, events=list(self._events), events_complete=False,
                         events_note=self._incomplete("the run had not ended when the time ran out"))

    def _incomplete(self, outcome: str) -> str:
        """Why a result lacks events: the reader's notes, how the stream ended, then ``outcome``."""
        notes = list(self._order.notes)
        error = self._stream_error
        if self.replayed:
            notes.append("a replayed start: this handle never subscribed to the events")
        elif error is not None and error.message not in notes:  # run.stream_error has the details
            notes.append(f"the events stream broke ({type(error).__name__})")
        elif self._polling and error is None:
            notes.append("the events stream ended before the run")
        return "; ".join(notes + [outcome])


def _approval_identity(event: ApprovalRequested) -> str:
    """What names one approval request: its ``request_id`` (0.20+), else its JSON without ``seq``
    (0.19 has no id; the float timestamp tells two requests for one command apart)."""
    if event.request_id:
        return "id:" + event.request_id
    return json.dumps({k: v for k, v in event.raw.items() if k != "seq"}, sort_keys=True, default=str)


def objective_of(input: object) -> Optional[str]:
    """What a run was asked to do: its input text, or the last user message's text."""
    if isinstance(input, str):
        return input
    if isinstance(input, (list, tuple)):
        for message in reversed(input):
            if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
                return str(message["content"])
    return None


def _resumable(error: Optional[HermesError]) -> bool:
    """Whether a broken subscription may be resumed: a lost connection or an early end, not a
    deadline, a cancel, a refusal or a stream that named another run."""
    if isinstance(error, StreamError):
        return error.code == STREAM_INCOMPLETE
    return error is None or (isinstance(error, TransportError)
                             and not isinstance(error, (DeadlineExceededError, StreamCancelledError)))


def event_command(event: ApprovalRequested) -> object:
    """The command of an approval request as Hermes sent it: any JSON value (None when absent)."""
    if "command" in event.raw:
        return event.raw["command"]
    return event.command or None


def command_unknown(command: object) -> Optional[str]:
    """Why a command cannot be shown as what would run (not a string, or empty), else None."""
    if isinstance(command, str):
        return "Hermes sent an empty command" if not command.strip() else None
    kind = "no command" if command is None else f"the command as a JSON {type(command).__name__}"
    return f"Hermes sent {kind}, not a string: what would run is not known from it"


def choice_for(decision: object, request: ApprovalRequest, event: ApprovalRequested, allow_permanent: bool) -> str:
    """The run approval choice an approval decision stands for.

    approved → ``once`` (``session`` / ``always`` when ``decision.scope`` says so; ``session`` not
    offered → ``once``); denied, expired, revoked, or an approval that fails the binding, TTL or
    evidence check → ``deny``. ``always`` without ``allow_permanent_approvals`` raises
    InvalidInputError (nothing is sent; the request stays pending).
    """
    decision = as_decision(decision)
    if decision.decision != "approved":
        return "deny"
    if command_unknown(event_command(event)) is not None:
        # Nobody saw what would run, not even a blind policy: nothing is approved unseen.
        log.warning("hermes_sdk: a run approval for a command that is not a string; answering deny")
        return "deny"
    try:
        check(decision, request)
    except ApprovalDeniedError as exc:
        log.warning("hermes_sdk: a run approval failed its check (%s); answering deny",
                    exc.details.get("reason") or exc.details.get("missing") or "denied")
        return "deny"
    scope = decision.scope or "once"
    if scope == "always":
        if not allow_permanent:
            raise InvalidInputError(
                "'always' makes Hermes allow the pattern process-wide and rewrite its config; build the "
                "client with allow_permanent_approvals=True to allow it", details={"field": "scope"})
        return "always" if "always" in event.choices or not event.choices else "once"
    if scope == "session" and event.choices and "session" not in event.choices:
        return "once"  # e.g. a smart-denied request offers only once/deny: once is the narrower grant
    return scope


__all__ = ["Run", "choice_for", "command_unknown", "event_command", "objective_of"]
