"""Idempotency store calls inside the call's deadline.

A store that says it honours the deadline itself (``honours_deadline = True``: the memory and
SQLite stores) is called on the caller's thread and reads the time it has from
:func:`store_deadline`. Any other store (a network store, a third party's) is called on a worker
thread that the caller waits for until the deadline: a call not back by then is *abandoned*. The
worker finishes it whenever the store answers (the store's own timeouts bound that), and a
reservation that lands after it was given up is given back by that worker.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable, Optional, TypeVar

from . import _fork

T = TypeVar("T")

_local = threading.local()


def store_deadline() -> Optional[float]:
    """The epoch time by which the store operation running on this thread must return, or None
    when no call bound applies (``client.records``, the operator tools)."""
    return getattr(_local, "deadline", None)


class StoreTimeout(TimeoutError):
    """A store call did not return by its deadline (abandoned, or the store gave up at it)."""


def honours_deadline(store: object) -> bool:
    """Whether the store bounds its own waits by :func:`store_deadline` (then no worker thread)."""
    return getattr(store, "honours_deadline", False) is True


#: Called on the worker, with (value, error), when an abandoned store call finally returns.
Late = Callable[[object, Optional[BaseException]], None]


def call_store(store: object, fn: Callable[[], T], deadline: Optional[float], late: Optional[Late] = None) -> T:
    """``fn()`` (one store method), bounded by ``deadline``; :class:`StoreTimeout` when it was not back."""
    if deadline is None:
        return fn()
    if honours_deadline(store):
        previous = getattr(_local, "deadline", None)
        _local.deadline = deadline
        try:
            return fn()
        finally:
            _local.deadline = previous
    return WORKERS.run(fn, deadline, late)  # type: ignore[return-value]


class _Task:
    __slots__ = ("fn", "deadline", "late", "done", "lock", "started", "abandoned", "value", "error")

    def __init__(self, fn: Callable[[], object], deadline: float, late: Optional[Late]) -> None:
        self.fn, self.deadline, self.late = fn, deadline, late
        self.done = threading.Event()
        self.lock = threading.Lock()
        self.started = self.abandoned = False
        self.value: object = None
        self.error: Optional[BaseException] = None


class Workers:
    """Daemon threads for store calls no deadline reaches. At most :attr:`MAX_THREADS`: past that a
    call waits in line until its deadline, and a call abandoned in line never runs."""

    MAX_THREADS = 64
    IDLE_SECONDS = 30.0  # an idle worker ends after this long

    def __init__(self) -> None:
        self._reset()
        _fork.register(self)

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._queue: "queue.SimpleQueue[_Task]" = queue.SimpleQueue()
        self._idle = 0  # threads waiting for a task (or about to)
        self._waiting = 0  # tasks put and not yet taken
        self.threads = 0
        #: Store calls abandoned at their deadline that have not returned yet (each holds a thread).
        self.abandoned = 0

    _after_fork = _reset  # a child has none of its parent's threads

    def run(self, fn: Callable[[], object], deadline: float, late: Optional[Late]) -> object:
        remaining = deadline - time.time()
        if remaining <= 0:
            raise StoreTimeout("the deadline passed before the store was called")
        task = _Task(fn, deadline, late)
        with self._lock:
            self._waiting += 1
            start = self._waiting > self._idle and self.threads < self.MAX_THREADS
            if start:
                self.threads += 1
                self._idle += 1
        if start:
            threading.Thread(target=self._work, name="hermes-sdk-store", daemon=True).start()
        self._queue.put(task)
        task.done.wait(remaining)
        with task.lock:
            if not task.done.is_set():
                task.abandoned = True
                if task.started:
                    with self._lock:
                        self.abandoned += 1
                raise StoreTimeout("the idempotency store did not answer by the call's deadline")
        if task.error is not None:
            raise task.error
        return task.value

    def _work(self) -> None:
        while True:
            try:
                task = self._queue.get(timeout=self.IDLE_SECONDS)
            except queue.Empty:
                with self._lock:
                    if self._waiting >= self._idle:  # a task was put that counts on this thread
                        continue
                    self._idle -= 1
                    self.threads -= 1
                    return
            with self._lock:
                self._idle -= 1
                self._waiting -= 1
            self._run(task)
            with self._lock:
                self._idle += 1

    def _run(self, task: _Task) -> None:
        with task.lock:
            if task.abandoned:  # given up while in line: it never reached the store
                return
            task.started = True
        _local.deadline = task.deadline
        value: object = None
        error: Optional[BaseException] = None
        try:
            value = task.fn()
        except BaseException as exc:  # handed to the caller (or to ``late``)
            error = exc
        finally:
            _local.deadline = None
        with task.lock:
            task.value, task.error = value, error
            task.done.set()
            late = task.abandoned
        if late:
            with self._lock:
                self.abandoned -= 1
            if task.late is not None:
                try:
                    task.late(value, error)
                except Exception:  # the store failed again: nothing more to do here
                    pass


WORKERS = Workers()


class Abandoned:
    """Action ids whose reservation was given up before anything was sent but may still land in
    the store: a later call of this process that finds one pending knows it never ran.

    Two threads may act on one such record: the worker that gives it back when it lands, and a
    retry that takes the key over. Each first *claims* the id; only the claimant forgets the
    record, and a thread that lost the claim waits until the claimant is done before it reads
    the key again (its read may predate the claimant's forget)."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._after_fork()
        _fork.register(self)

    def _after_fork(self) -> None:
        self._ids: dict[str, None] = {}
        self._settling: dict[str, threading.Event] = {}  # claimed, its claimant not done yet
        self._lock = threading.Lock()

    def add(self, action_id: str) -> None:
        with self._lock:
            self._ids[action_id] = None
            while len(self._ids) > self.LIMIT:
                del self._ids[next(iter(self._ids))]

    def claim(self, action_id: str) -> Optional[threading.Event]:
        """Take ``action_id`` (None when it is not, or no longer, abandoned); the claimant calls
        :meth:`release` with the event it got when it is done with the record."""
        with self._lock:
            if self._ids.pop(action_id, "absent") == "absent":
                return None
            done = self._settling[action_id] = threading.Event()
            return done

    def release(self, action_id: str, done: threading.Event) -> None:
        with self._lock:
            if self._settling.get(action_id) is done:
                del self._settling[action_id]
        done.set()

    def wait_settled(self, action_id: str, timeout: Optional[float]) -> None:
        """Wait (at most ``timeout`` seconds) until a claimant of ``action_id`` is done with it."""
        with self._lock:
            done = self._settling.get(action_id)
        if done is not None:
            done.wait(timeout)

    def __contains__(self, action_id: object) -> bool:
        return action_id in self._ids


ABANDONED = Abandoned()
