"""Runtime: what the stages need from a client, as one value (stages never reach into the client)."""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Optional

import attrs
import pluggy

from . import _fork
from .endpoints import seconds_value
from .families import Registry
from .idempotency import IdempotencyStore
from .redaction import Redactor
from .retry import RetryPolicy
from .server_features import FeatureCache
from .transport import Transport

if TYPE_CHECKING:
    from .approval import ApprovalProvider
    from .deadline import CallTimeout
    from .runs import Run
    from .streaming import HermesStream

#: How long a client remembers that it stopped a run: a stopped run is cancelled within about a
#: second, and Hermes drops a finished run's status an hour after it ended; a day is ample.
STOPPED_RUN_MEMORY_SECONDS = 86_400.0
#: At most this many stopped runs are remembered (the oldest stop is forgotten first): a bound on
#: what a long-lived client holds, far above the runs one client stops within a day in practice.
STOPPED_RUNS_MAX = 10_000


class StoppedRuns:
    """The runs a client asked to stop (no approval is sent to them afterwards), bounded in age and count.

    Thread-safe; shared by a client and its ``with_options`` copies, and dropped with them.
    """

    def __init__(self, max_entries: int = STOPPED_RUNS_MAX,
                 max_age: float = STOPPED_RUN_MEMORY_SECONDS) -> None:
        self.max_entries = max_entries
        self.max_age = max_age
        self._stopped: "OrderedDict[str, float]" = OrderedDict()
        self._lock = threading.Lock()
        _fork.register(self)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # another thread may have held it at the fork

    def add(self, run_id: str) -> None:
        """Remember that this client stopped ``run_id`` (now)."""
        now = time.monotonic()
        with self._lock:
            self._stopped[run_id] = now
            self._stopped.move_to_end(run_id)
            self._prune(now)

    def __contains__(self, run_id: object) -> bool:
        with self._lock:
            self._prune(time.monotonic())
            return run_id in self._stopped

    def __len__(self) -> int:
        with self._lock:
            return len(self._stopped)

    def _prune(self, now: float) -> None:
        stopped = self._stopped
        while stopped and (len(stopped) > self.max_entries or next(iter(stopped.values())) <= now - self.max_age):
            stopped.popitem(last=False)


def _retention(value: object) -> float:
    return seconds_value(value, "key_retention")


@attrs.frozen
class Runtime:
    """The client's plugin manager, store, transport, redactor and call settings.

    ``HermesClient.with_options`` makes a copy with other settings over the same transport (and so
    the same connection pool), store and plugins.
    """

    pm: pluggy.PluginManager
    store: IdempotencyStore
    transport: Transport
    redactor: Redactor
    approval_provider: Optional[ApprovalProvider] = None
    #: The families this client knows (the ``hermes_families`` hook of its plugins).
    registry: Registry = attrs.field(kw_only=True, eq=False, repr=False)
    retry: RetryPolicy = RetryPolicy()  #: what is retried, and how often
    strict_idempotency: bool = True  #: a key reused with a different input is refused
    #: Seconds a keyed call's record is kept (a finite number >= 0: NaN would never expire).
    key_retention: float = attrs.field(default=86_400.0, converter=_retention)
    timeout: Optional[CallTimeout] = None  #: the client's default Timeout (None: each contract's own)
    #: Streams not yet settled; ``close()`` cancels them (shared with ``with_options`` copies).
    open_streams: "weakref.WeakSet[HermesStream]" = attrs.field(factory=weakref.WeakSet, eq=False, repr=False)
    allow_permanent_approvals: bool = False  #: whether ``always`` may be sent to a run's approval
    #: Runs this client asked to stop: no approval is ever sent to them afterwards.
    stopped_runs: StoppedRuns = attrs.field(factory=StoppedRuns, eq=False)
    #: The :class:`~hermes_sdk._core.runs.Run` handles of this client by run id (weakly: dropped with them),
    #: so ``invoke(...run_events)`` never opens a second subscription on a run one of them follows.
    followed_runs: "weakref.WeakValueDictionary[str, Run]" = attrs.field(
        factory=weakref.WeakValueDictionary, eq=False, repr=False)
    #: What each endpoint's server supports (read once from the server; shared with copies).
    server_features: FeatureCache = attrs.field(factory=FeatureCache, eq=False, repr=False)

    @property
    def max_attempts(self) -> int:
        """Attempts of a retry-safe call."""
        return self.retry.max_attempts
