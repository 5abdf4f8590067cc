"""The run machinery: runs, their event queues, the event emitter and the approval wait.

``/v1/runs`` (``families/runs.py``) and streamed chat turns on 0.21+ (``families/chat.py``) both
run an agent whose approvals are answered at ``/v1/runs/{id}/approval``, so what they share lives
here, outside either family. Everything mirrors ``spec/hermes-runs.md``.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .tools import Danger
from .wire import JSONDict

if TYPE_CHECKING:
    from .state import EmulatorState

TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "interrupted"})
APPROVAL_POLL_SECONDS = 1.0  # the approval wait notices a stop within ~1 s (tools/approval.py:3134)


HANDOFF_WAIT_SECONDS = 1.0


def _no_ack() -> None:
    return None


class RunQueue:
    """``asyncio.Queue`` semantics for threads: each item goes to ONE getter, oldest waiter first.

    A hand-off to a waiting subscriber blocks the producer until that subscriber has written
    the item (or found its client gone), as Hermes' single event loop orders it: a dead
    subscriber then drops the buffer before the next event is queued.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: deque[JSONDict | None] = deque()
        self._waiters: deque[_Waiter] = deque()

    def put(self, item: JSONDict | None) -> None:
        with self._lock:
            waiter = self._waiters.popleft() if self._waiters else None
            if waiter is None:
                self._items.append(item)
                return
            waiter.item = item
            waiter.ready.set()
        waiter.processed.wait(HANDOFF_WAIT_SECONDS)

    def get(self, timeout: float) -> tuple[bool, JSONDict | None, Callable[[], None]]:
        """``(True, item, ack)``, or ``(False, None, ack)`` after ``timeout`` s without one.

        Call ``ack()`` once the item was written (or the write failed).
        """
        with self._lock:
            if self._items:
                return True, self._items.popleft(), _no_ack
            waiter = _Waiter()
            self._waiters.append(waiter)
        if waiter.ready.wait(max(0.0, timeout)):
            return True, waiter.item, waiter.processed.set
        with self._lock:
            if waiter.ready.is_set():  # handed over just as the wait timed out
                return True, waiter.item, waiter.processed.set
            self._waiters.remove(waiter)
        return False, None, _no_ack

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


@dataclass
class _Waiter:
    ready: threading.Event = field(default_factory=threading.Event)
    processed: threading.Event = field(default_factory=threading.Event)
    item: JSONDict | None = None


@dataclass
class PendingApproval:
    danger: Danger
    answered: threading.Event = field(default_factory=threading.Event)
    choice: str | None = None
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)


class Run:
    """One run: its status object, control state and pending approvals."""

    def __init__(self, run_id: str, session_id: str, model: object, created_at: float) -> None:
        self.run_id = run_id
        self.lock = threading.Lock()
        self.status: JSONDict = {
            "object": "hermes.run",
            "run_id": run_id,
            "status": "queued",
            "updated_at": created_at,
            "created_at": created_at,
            "session_id": session_id,
            "model": model,
        }
        self.cancel = threading.Event()
        self.stop_requested = threading.Event()  # POST /stop was answered; cancel lands later
        self.done = threading.Event()  # the agent task has finished
        # The approval session closes when the agent returns, before the terminal status and event:
        # a caller who saw ``run.completed`` must get ``approval_not_active``, never ``not_pending``.
        self.approvals_closed = threading.Event()
        self.approvals: deque[PendingApproval] = deque()
        self.session_patterns: set[str] = set()
        self.steers: list[str] = []  # 0.20+: steer messages taken in
        self.exact_approvals = False  # 0.21+: an answer's request_id resolves exactly that request
        self.events_emitted: list[JSONDict] = []  # everything the agent queued (for tests; 0.21+: replay log)
        self.closed = False  # 0.21+: the log is complete (the run's task ended)
        self.changed = threading.Condition(self.lock)  # 0.21+: a log reader waits for the next event

    def set_status(self, status: str | None = None, **fields: object) -> None:
        """Hermes' ``_set_run_status``: status and ``updated_at`` first, then the fields."""
        with self.lock:
            if status is not None:
                self.status["status"] = status
            self.status["updated_at"] = time.time()
            self.status.update(fields)

    def snapshot(self) -> JSONDict:
        with self.lock:
            return dict(self.status)

    @property
    def state(self) -> str:
        with self.lock:
            return str(self.status["status"])


class RunRegistry:
    """All runs of one emulator plus the per-run event queues (Hermes' ``_run_streams``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: dict[str, Run] = {}
        self.streams: dict[str, RunQueue] = {}
        self.streams_created: dict[str, float] = {}
        self.subscribers: set[str] = set()

    def get(self, run_id: str) -> Run | None:
        with self.lock:
            return self.runs.get(run_id)

    def put_event(self, run_id: str, queue: RunQueue, event: JSONDict | None) -> None:
        """``_put_event_if_active``: only while this run still owns its transport."""
        with self.lock:
            if self.streams.get(run_id) is not queue:
                return
        queue.put(event)

    def drop_stream(self, run_id: str) -> None:
        with self.lock:
            self.subscribers.discard(run_id)
            self.streams.pop(run_id, None)
            self.streams_created.pop(run_id, None)

    def sweep(self, now: float, stream_ttl: float, status_ttl: float) -> None:
        """Unsubscribed buffers older than ``stream_ttl``; terminal runs ``status_ttl`` after update."""
        with self.lock:
            for run_id, created in list(self.streams_created.items()):
                if now - created > stream_ttl and run_id not in self.subscribers:
                    self.streams.pop(run_id, None)
                    self.streams_created.pop(run_id, None)
            for run_id, run in list(self.runs.items()):
                snap = run.snapshot()
                updated = snap["updated_at"]
                assert isinstance(updated, float)  # set_status() stores time.time()
                if snap["status"] in TERMINAL_STATUSES and now - updated > status_ttl:
                    del self.runs[run_id]

    def clear_finished(self) -> None:
        with self.lock:
            for run_id, run in list(self.runs.items()):
                if run.done.is_set():
                    del self.runs[run_id]
                    self.streams.pop(run_id, None)
                    self.streams_created.pop(run_id, None)
                    self.subscribers.discard(run_id)



class Emitter:
    """Queues events for the run's subscriber and keeps ``last_event`` current."""

    def __init__(self, state: EmulatorState, run: Run, queue: RunQueue | None) -> None:
        self.state = state
        self.run = run
        self.queue = queue

    def put(self, event: JSONDict | None) -> None:
        numbered = self.state.behaviour.event_ids
        with self.run.lock:
            if event is not None:
                if numbered:
                    event["seq"] = len(self.run.events_emitted)
                self.run.events_emitted.append(event)
            else:
                self.run.closed = True
            self.run.changed.notify_all()
        if self.queue is not None:
            self.state.runs.put_event(self.run.run_id, self.queue, event)

    def event(self, event_type: str, **fields: object) -> None:
        event: JSONDict = {"event": event_type, "run_id": self.run.run_id, "timestamp": time.time()}
        event.update(fields)
        if event_type != "message.delta":  # deltas never touch the status object
            self.run.set_status(last_event=event_type)
        self.put(event)


def await_approval(state: EmulatorState, run: Run, emit: Emitter, danger: Danger) -> str:
    """Block like ``_await_gateway_decision``: answer, timeout, or a stop (resolved as deny)."""
    pending = PendingApproval(danger)
    with run.lock:
        run.approvals.append(pending)
    event = approval_event(state, danger, pending, run.run_id)
    run.set_status("waiting_for_approval", last_event="approval.request")
    if state.behaviour.exact_approvals:  # 0.21+: the status embeds the pending request
        run.set_status(approval=dict(event))
    emit.put(event)
    deadline = time.monotonic() + state.settings.approval_timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or state.model.stopping.is_set():
            outcome = "timeout"
            break
        if pending.answered.wait(min(remaining, APPROVAL_POLL_SECONDS)):
            return pending.choice or "deny"
        if run.cancel.is_set():
            outcome = "deny"
            break
    with run.lock:
        if pending in run.approvals:
            run.approvals.remove(pending)
    if pending.answered.is_set():
        return pending.choice or "deny"
    return outcome


def approval_event(state: EmulatorState, danger: Danger, pending: PendingApproval, run_id: str) -> JSONDict:
    """An ``approval.request`` as the played version sends it (0.20+: ``request_id``, ``allow_session``)."""
    event: JSONDict = danger.payload()
    if state.behaviour.request_ids:
        event.update(allow_session="session" in danger.choices, request_id=pending.request_id)
    event.update(event="approval.request", run_id=run_id, timestamp=time.time(), choices=danger.choices)
    return event


__all__ = [
    "Emitter",
    "PendingApproval",
    "Run",
    "RunQueue",
    "RunRegistry",
    "approval_event",
    "await_approval",
]
