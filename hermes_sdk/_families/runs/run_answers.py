"""How a run's approval answer reaches Hermes: asked and sent on a thread of its own.

A person's decision (the inbox) can come at any moment, between two ``run.wait()`` calls or with
milliseconds left of one. So the provider is asked on a daemon thread, and that thread also sends
the answer, on the answer's own bound (the run's deadline, else the request's 15-minute TTL), never
on the remnant of whichever wait is running. Hermes 0.19 and 0.20 apply an answer to their oldest
pending request, with no id, so an answer is never sent twice once Hermes may have applied it:

- an answer that certainly did not leave (``details["sent"] is False``) stays queued and is sent
  again (a refused connection, a deadline that passed before the POST);
- one whose outcome is uncertain (cut after it may have left) is checked: ``GET /v1/runs/{id}``
  says whether the run still waits for this very request (0.21+: the status names the request; before:
  still ``waiting_for_approval`` with the ``updated_at`` read just before the POST, which Hermes
  moves on any answer or new request). Only then is it sent again; otherwise it counts as delivered.

Tries are spaced by a doubling pause (``RESEND_PAUSE`` up to ``RESEND_MAX_PAUSE``), never sooner than
the server's ``Retry-After`` (capped at ``RETRY_AFTER_MAX``), and stop at the answer's bound, when
the run handle is closed, or when its client is.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import TYPE_CHECKING, Callable, Optional, Union

from hermes_sdk.errors import (
    ApprovalNotActiveError,
    ApprovalNotPendingError,
    HermesError,
    RunNotFoundError,
    StaleApprovalError,
)
from hermes_sdk.plugin import ApprovalProvider, ApprovalRequest, StreamEvent
from hermes_sdk.plugin import ask_approval_provider as ask_provider

if TYPE_CHECKING:
    from .events import ApprovalRequested
    from .run import Run, _Pending
    from .types import RunStatus

log = logging.getLogger("hermes_sdk")

#: What the events reader and the approval thread hand a Run's consumer: ``("event", event)``,
#: ``("end", None)``, ``("broken", error)`` or ``("decided", None)``.
Item = tuple[str, Union[StreamEvent, HermesError, None]]

#: Events after which an answer to an earlier approval request may land on another one: the request
#: was resolved (answered, timed out, blocked) or the run ended.
MOVED_ON = frozenset({"approval.responded", "tool.completed", "run.completed", "run.failed", "run.cancelled",
                      "run.interrupted"})
RESEND_PAUSE = 0.25  # the first pause between two tries of an answer or of a status check; then doubled
RESEND_MAX_PAUSE = 8.0  # the longest pause between two tries (a refusing server is asked ~8 times a minute)
RETRY_AFTER_MAX = 30.0  # a longer Retry-After is waited for this long
CLOSE_CHECK = 0.1  # while pausing, how often a closed client is noticed (a closed run wakes it at once)
SENT = "sent"  # a _Pending's choice once its answer may have left


class RunQueue(queue.Queue[Item]):
    """A run's local queue that also counts, as the reader puts them, the events that say Hermes
    moved on (``MOVED_ON``, or an event about another run), and remembers the count at each event.

    The answer's sender compares a request's count with the current one without taking events
    from the consumer: a larger count means an event not yet accounted for may have resolved it.
    """

    def __init__(self, run_id: str) -> None:
        super().__init__()
        self.run_id = run_id
        self.moves = 0
        self._marks: dict[int, int] = {}
        self._counting = threading.Lock()

    def put(self, item: Item, block: bool = True, timeout: Optional[float] = None) -> None:
        payload = item[1]
        if isinstance(payload, StreamEvent):
            data = payload.data
            with self._counting:
                if isinstance(data, dict) and (data.get("event") in MOVED_ON or data.get("run_id") not in (
                        None, self.run_id)):
                    self.moves += 1
                self._marks[id(payload)] = self.moves
        super().put(item, block, timeout)

    def mark(self, event: StreamEvent) -> int:
        """The count when ``event`` was put (taken once, by the consumer)."""
        with self._counting:
            return self._marks.pop(id(event), self.moves)


class Asking:
    """One request decided by the approval provider on a daemon thread, which then hands the
    decision to ``on_decision`` (the sender) on the same thread; when done it puts
    ``("decided", None)`` on the run's queue, which wakes a waiting consumer."""

    def __init__(self, provider: ApprovalProvider, request: ApprovalRequest, wake: "queue.Queue[Item]",
                 on_decision: Callable[[object], None]) -> None:
        self.request = request
        self.done = threading.Event()
        self._error: Optional[BaseException] = None
        self._wake = wake
        self._start(lambda: self._ask(provider, on_decision))

    def _start(self, work: Callable[[], None]) -> None:
        self.done.clear()
        threading.Thread(target=self._run, args=(work,), daemon=True, name="hermes-sdk-approval").start()

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except BaseException as exc:  # handed to the consumer's thread by raise_error()
            self._error = exc
        self.done.set()
        self._wake.put(("decided", None))

    def _ask(self, provider: ApprovalProvider, on_decision: Callable[[object], None]) -> None:
        decision = ask_provider(provider, self.request)
        if decision is not None:  # None: left pending, the caller answers with run.approve(...)
            on_decision(decision)

    def again(self, send: Callable[[], None]) -> None:
        """Send a queued answer again, on a thread of its own (the last try ended unsent)."""
        if self.done.is_set():
            self._start(send)

    def raise_error(self) -> None:
        """Raise what the provider (or turning its decision into a choice) raised, once."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def pause(closing: threading.Event, seconds: float, closed: Callable[[], bool]) -> bool:
    """Wait ``seconds`` unless ``closing`` is set or ``closed()`` turns true; False when it did."""
    end = time.monotonic() + seconds
    while not closed():
        left = end - time.monotonic()
        if left <= 0:
            return True
        if closing.wait(min(left, CLOSE_CHECK)):
            return False
    return False


#: How long after an ``approval.request`` event's ``timestamp`` the run object's ``updated_at`` may
#: be and still be that request's own update (Hermes stamps the event, then the status, on one
#: thread, microseconds apart; the next request comes after this one is resolved: an answer or its
#: ``approvals.timeout``, whole seconds).
SAME_REQUEST_SECONDS = 0.5


def waits_for(status: "RunStatus", event: "ApprovalRequested") -> bool:
    """Whether the run object ``status`` (``waiting_for_approval``) still waits for ``event``'s
    request, read off the server itself rather than off the events this client has read so far
    (a busy client may not have read yet that the request timed out and the next was asked).

    0.21+ names the pending request in the status. Before, nothing changes a waiting run's
    ``updated_at`` but a resolution or a new request: the status is this request's own when its
    ``updated_at`` is the event's ``timestamp`` or just after. Unknown (no times) counts as yes:
    the answer's older checks (the events read, Hermes' own request id) still apply."""
    pending = status.approval.get("request_id") if status.approval else None
    if pending and event.request_id:
        return bool(pending == event.request_id)
    if status.updated_at is None or event.timestamp is None:
        return True
    return event.timestamp <= status.updated_at <= event.timestamp + SAME_REQUEST_SECONDS


class Sender:
    """Sends one pending request's answer for ``run`` (on the asking thread), as the module says."""

    def __init__(self, run: "Run", pending: "_Pending", choice: str) -> None:
        self.run = run
        self.pending = pending
        self.choice = choice
        request = pending.asking.request if pending.asking is not None else None
        ends = [t for t in (run._deadline, request.expires_at if request else None) if t is not None]
        self.bound: Optional[float] = min(ends) if ends else None
        self.tries = 0  # failed tries so far (of the answer, or of a status check): the pause doubles
        self.last_error: Optional[HermesError] = None  # the last failure, for its Retry-After

    def left(self) -> Optional[float]:
        return None if self.bound is None else self.bound - time.time()

    def closed(self) -> bool:
        """Whether the run handle or its client was closed: nothing more is sent for it."""
        return self.run._closing.is_set() or self.run._runs.client_closed()

    def _wait(self) -> bool:
        """The pause before the next try (doubling, never under the last ``Retry-After``, within the
        bound); False when the bound passed or the run or client was closed meanwhile."""
        self.tries += 1
        delay = min(RESEND_PAUSE * 2 ** min(self.tries - 1, 16), RESEND_MAX_PAUSE)
        error, self.last_error = self.last_error, None
        if error is not None and error.retry_after_ms is not None:
            delay = max(delay, min(error.retry_after_ms / 1000.0, RETRY_AFTER_MAX))
        left = self.left()
        if left is not None:
            if left <= 0:
                return False
            delay = min(delay, left)
        return pause(self.run._closing, delay, self.run._runs.client_closed) and not self.closed()

    def __call__(self) -> None:
        if self.run._runs.client_closed():
            return  # a closed client sends nothing more
        while self._claim():
            if self._send():
                return
            if not self._wait():
                return

    def _claim(self) -> bool:
        """Wait until the answer may go (it is the oldest, and no event received since its request
        says Hermes moved on); then mark it sent (it may leave from now). False: not to be sent."""
        run, pending = self.run, self.pending
        with run._answering:
            while True:
                verdict = run._may_send(pending)
                pending.held = verdict == "later"
                if verdict != "later":
                    break
                left = self.left()
                if (left is not None and left <= 0) or self.closed():
                    return False  # stays queued: a later wait() tries again
                run._answering.wait(0.5 if left is None else min(0.5, left))
            if verdict == "send":
                pending.choice = SENT
            return verdict == "send"

    def _unsent(self) -> None:
        with self.run._answering:
            if self.pending.choice == SENT:
                self.pending.choice = self.choice

    def _send(self) -> bool:
        """One try; True once settled (delivered, or no longer Hermes' to apply)."""
        run, event = self.run, self.pending.event
        baseline = self._status()
        if baseline is None:
            self._unsent()
            return False
        if baseline.status != "waiting_for_approval":  # resolved meanwhile: sent now, it would land on another
            log.info("hermes_sdk: a run's approval was no longer pending at Hermes (%s); not sent", baseline.status)
            return True
        if not waits_for(baseline, event):  # Hermes waits for a later request: this one was resolved
            log.info("hermes_sdk: a run's approval was resolved at Hermes and another asked; not sent")
            return True
        try:
            answer = run._runs.approve(run.id, self.choice, request_id=event.request_id, endpoint=run._endpoint,
                                       context=run._context, deadline=self.bound)
        except StaleApprovalError:
            run._drop_request(event.request_id)
            return True
        except (ApprovalNotPendingError, ApprovalNotActiveError):
            return True  # Hermes has nothing pending (timed out, or the run ended): nothing applied
        except HermesError as exc:
            self.last_error = exc
            if exc.details.get("sent") is False:
                self._unsent()
                return not exc.retryable and exc.category not in ("transport", "temporary")
            return not self._still_waits(baseline, exc)
        run._answered(answer.resolved, baseline.updated_at)
        return True

    def _status(self) -> "Optional[RunStatus]":
        """The run object (None: not known before the bound)."""
        run = self.run
        while True:
            try:
                return run._runs.get(run.id, endpoint=run._endpoint, context=run._context, deadline=self.bound)
            except RunNotFoundError:
                raise
            except HermesError as exc:
                self.last_error = exc
                if not self._wait():
                    return None

    def _still_waits(self, baseline: "RunStatus", error: HermesError) -> bool:
        """After an answer cut with an uncertain outcome: whether Hermes still waits for this very
        request (then the answer is sent again); unknown counts as no (never twice)."""
        last, self.last_error = self.last_error, None
        status = self._status()
        self.last_error = last  # the answer's own refusal paces its next try
        request_id = self.pending.event.request_id
        if status is None or status.status != "waiting_for_approval":
            still = False
        elif request_id and status.approval and status.approval.get("request_id"):
            still = status.approval.get("request_id") == request_id
        else:
            still = status.updated_at is not None and status.updated_at == baseline.updated_at
        log.warning("hermes_sdk: a run's approval answer was cut (%s); Hermes %s", type(error).__name__,
                    "still waits for it: sending it again" if still else "moved on: not sent again")
        if still:
            self._unsent()
        return still


__all__ = ["Asking", "Item", "MOVED_ON", "RunQueue", "SENT", "Sender"]
