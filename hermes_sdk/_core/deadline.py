"""Time: relative timeouts, absolute deadlines, and the watchdog that makes a deadline wall-clock.

A socket timeout bounds each read, not the call: a server that drips a byte at a time, or a
stream of keepalive comments, would keep a call alive forever. The watchdog shuts the call's
socket down when its deadline passes, whatever the server sends, so the blocked read returns at
once and the call ends with ``deadline_exceeded``.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import socket
import threading
import time
from typing import Callable, Optional, Protocol, Union

import attrs

from ..errors import InvalidInputError

#: An attrs validator of an optional number of seconds.
SecondsCheck = Callable[[object, "attrs.Attribute[Optional[float]]", Optional[float]], None]


def _seconds(field: str) -> SecondsCheck:
    def check(_: object, attribute: "attrs.Attribute[Optional[float]]", value: Optional[float]) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value <= 0 or value > 10 ** 9:
            raise InvalidInputError(f"timeout.{field} must be a positive number of seconds",
                                    details={"field": f"timeout.{field}"})
    return check


class Shuttable(Protocol):
    """What an alarm shuts down when it fires: a socket, or anything with its ``shutdown(how)``."""

    def shutdown(self, how: int, /) -> None:
        """Shut the connection down (``socket.SHUT_RDWR``): a blocked read returns at once."""


@attrs.frozen
class CallTimeout:
    """Relative time limits in seconds: ``total`` bounds the whole call in wall-clock time.

    ``connect`` bounds opening the connection and ``read`` each wait for bytes; ``None`` leaves
    a limit to its default (connect 10 s; read and total: the capability's published
    ``sla.timeout_ms``). A plain number ``timeout=30`` means ``Timeout(total=30)``.
    """

    total: Optional[float] = attrs.field(default=None, validator=_seconds("total"))
    connect: Optional[float] = attrs.field(default=None, validator=_seconds("connect"))
    read: Optional[float] = attrs.field(default=None, validator=_seconds("read"))


Timeout = CallTimeout  # the former name (it collides with requests'); hermes_sdk.Timeout warns


TimeoutLike = Union[Timeout, float, int, None]


def as_timeout(value: object, field: str = "timeout") -> Optional[Timeout]:
    """A Timeout from ``timeout=`` (seconds or a Timeout); InvalidInputError for anything else."""
    if value is None or isinstance(value, Timeout):
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value <= 0 or value > 10 ** 9:
        raise InvalidInputError(f"{field} must be a positive number of seconds (relative) or a Timeout",
                                details={"field": field})
    return Timeout(total=float(value))


def effective(call_timeout: Optional[Timeout], client_timeout: Optional[Timeout]) -> Timeout:
    """The call's own limits over the client's, field by field."""
    if call_timeout is None:
        return client_timeout or Timeout()
    if client_timeout is None:
        return call_timeout
    return Timeout(total=call_timeout.total if call_timeout.total is not None else client_timeout.total,
                   connect=call_timeout.connect if call_timeout.connect is not None else client_timeout.connect,
                   read=call_timeout.read if call_timeout.read is not None else client_timeout.read)


class Alarm:
    """One armed deadline: the sockets it shuts down when it fires."""

    __slots__ = ("when", "fired", "_sockets", "_lock", "_done", "_owner")

    def __init__(self, when: float, owner: Optional["Watchdog"] = None) -> None:
        self.when = when
        self.fired = False
        self._sockets: list[Shuttable] = []
        self._lock = threading.Lock()
        self._done = False
        self._owner = owner

    def attach(self, sock: Optional[Shuttable]) -> None:
        """Watch ``sock`` too (a call's connection, once known): a socket, or anything with its
        ``shutdown(how)``."""
        if sock is None:
            return
        with self._lock:
            if self.fired:
                _shutdown(sock)
            elif not self._done and sock not in self._sockets:
                self._sockets.append(sock)

    def fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _shutdown(sock)

    def cancel(self) -> None:
        """Disarm: the call ended in time."""
        with self._lock:
            if self._done:
                return
            self._done = True
            self._sockets = []
        if self._owner is not None:
            self._owner.dropped += 1  # approximate (no lock): it only says when to sweep


def _shutdown(sock: Shuttable) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


_SWEEP_AT = 256  # cancelled alarms that may wait in the heap before a sweep


class Watchdog:
    """One daemon thread for the process: fires each alarm at its time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Alarm]] = []
        self._cond = threading.Condition(threading.Lock())
        self._count = itertools.count()
        self._thread: Optional[threading.Thread] = None
        self._wake_at = 0.0  # when the thread wakes by itself (inf: only when notified)
        #: Alarms cancelled since the last sweep (some may still sit in the heap).
        self.dropped = 0

    def arm(self, when: float) -> Alarm:
        """An alarm for the epoch time ``when``."""
        alarm = Alarm(when, self)
        heap = self._heap
        with self._cond:
            # Calls mostly end in the order they began, so the alarms they cancelled sit on top:
            # dropping them here keeps the heap as small as the calls in flight (a busy client
            # would otherwise hold a minute of finished alarms).
            while heap and heap[0][2]._done:
                heapq.heappop(heap)
            if self.dropped > _SWEEP_AT and self.dropped * 2 > len(heap):
                # An earlier live alarm on top keeps cancelled ones below it (a stream's idle
                # alarm, re-armed per event, under a long call's deadline): sweep them all, so
                # the heap stays as large as the alarms in flight (amortised O(1) per alarm).
                heap[:] = [entry for entry in heap if not entry[2]._done]
                heapq.heapify(heap)
                self.dropped = 0
            heapq.heappush(heap, (when, next(self._count), alarm))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="hermes-sdk-deadlines", daemon=True)
                self._thread.start()
            elif when < self._wake_at:
                # Only an alarm due before the thread wakes anyway needs it now: waking it for
                # every call costs a thread switch (and the GIL) per call.
                self._cond.notify()
        return alarm

    def pending(self) -> int:
        """How many alarms the heap holds (armed, or cancelled and not yet dropped)."""
        with self._cond:
            return len(self._heap)

    def _after_fork(self) -> None:
        # The child has no watchdog thread and must not wait on a lock the parent held.
        self._cond = threading.Condition(threading.Lock())
        self._heap = []
        self._thread = None
        self._wake_at = 0.0
        self.dropped = 0

    def _run(self) -> None:
        while True:
            with self._cond:
                heap = self._heap
                while heap and heap[0][2]._done:
                    heapq.heappop(heap)
                if not heap:
                    self._wake_at = math.inf
                    self._cond.wait()
                    continue
                when, _, alarm = heap[0]
                delay = when - time.time()
                if delay > 0:
                    delay = min(delay, 60.0)
                    self._wake_at = time.time() + delay
                    self._cond.wait(delay)
                    continue
                heapq.heappop(heap)
            alarm.fire()


WATCHDOG = Watchdog()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCHDOG._after_fork)

_current = threading.local()


def current_alarm() -> Optional[Alarm]:
    """The alarm of the call this thread is sending (the transport attaches new connections to it)."""
    return getattr(_current, "alarm", None)


def set_current_alarm(alarm: Optional[Alarm]) -> None:
    _current.alarm = alarm
