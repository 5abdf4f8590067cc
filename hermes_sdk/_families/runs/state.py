"""The runs family's per-client state (``Family(state=RunsState)``): the runs this client stopped and
the :class:`~hermes_sdk.types.Run` handles following a run's events; and the store's index of the
runs an operator action started (shared by every client of the store).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING

import attrs

from hermes_sdk.errors import PluginError
from hermes_sdk.plugin import IdempotencyRecord, IdempotencyStore, RecordsView, renew_after_fork

if TYPE_CHECKING:
    from .run import Run

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
        renew_after_fork(self)

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


@attrs.define(eq=False)
class RunsState:
    """One client's run state (shared with its ``with_options`` copies, dropped with them)."""

    #: Runs this client asked to stop: no approval is ever sent to them afterwards.
    stopped: StoppedRuns = attrs.field(factory=StoppedRuns)
    #: The Run handles of this client by run id (weakly: dropped with them), so
    #: ``invoke(...run_events)`` never opens a second subscription on a run one of them follows.
    followed: "weakref.WeakValueDictionary[str, Run]" = attrs.field(factory=weakref.WeakValueDictionary,
                                                                    repr=False)


# ------------------------------------------------------------------ the operator runs' index

#: The store namespace of operator state (the connector's binding namespace), and of the index
#: that tells every client sharing the store which runs an operator action started.
OPERATOR_STATE_NAMESPACE = "aip.connector.hermes_agent.operator_runs.v1"
RUN_INDEX_NAMESPACE = OPERATOR_STATE_NAMESPACE + ".by_run"
#: How long a run is known as an operator's: Hermes forgets a finished run within the hour, and
#: an operator's run lasts at most its 24-hour key.
RUN_INDEX_SECONDS = 2 * 86_400.0


def scope_digest(*parts: "str | None") -> str:
    """A short digest of what scopes a lookup (a Hermes URL, a tenant): part of a store namespace."""
    import hashlib

    text = "\n".join(part if part is not None else "\0" for part in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _run_index_key(run_id: str) -> tuple[str, str]:
    # Keyed by the run id alone, not by the server's URL: every client sharing the store must find
    # it, however it spells the server (localhost, 127.0.0.1, a DNS name, a trailing slash, a port
    # spelled out), and whatever its tenant. Hermes makes run ids (``run_<32 hex>``, ``chatcmpl-…``)
    # unique; two servers whose run ids collide would both be gated: over-protected, never under.
    return RUN_INDEX_NAMESPACE, f"run:{run_id}"


def _legacy_run_index_key(base_url: str, run_id: str) -> tuple[str, str]:
    # How earlier releases keyed it (by the URL's text): still read, so an upgrade keeps the
    # gate on the operator runs they started.
    return RUN_INDEX_NAMESPACE, f"{scope_digest(base_url)}:{run_id}"


def mark_operator_run(store: IdempotencyStore, run_id: str) -> None:
    """Note in the shared store that ``run_id`` is an operator's run (on any Hermes)."""
    ns, key = _run_index_key(run_id)
    now = time.time()
    try:
        store.reserve(IdempotencyRecord(capability_id=ns, key=key, action_id=f"opidx_{key}", input_hash="",
                                        state="completed", created_at=now, expires_at=now + RUN_INDEX_SECONDS,
                                        result={"operator": True}, completed_at=now))
    except Exception as exc:
        raise PluginError(f"the idempotency store failed to record the operator run: {type(exc).__name__}",
                          details={"hook": "idempotency_store"}) from exc


def is_operator_run(records: RecordsView, base_url: str, run_id: str) -> bool:
    """Whether an operator action started ``run_id`` (as far as the store shared with it knows):
    by the run id, or by an older release's record under ``base_url``."""
    return any(records.get(*key) is not None
               for key in (_run_index_key(run_id), _legacy_run_index_key(base_url, run_id)))


__all__ = ["RunsState", "StoppedRuns", "is_operator_run", "mark_operator_run"]
