"""Shared mutable state of one emulator: config, stores, counters, faults.

It imports no family: the stores two families share live here (the run registry chat and runs use,
state.db, the response store), and each family's ``reset(state)`` clears what is its own.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, TypeVar, cast

from .cron import JobStore
from .model import AgentResult, ScriptedModel
from .runmachine import RunRegistry
from .sessiondb import SessionDB
from .store import IdempotencyCache, ResponseStore
from .versions import Behaviour

FAULT_MODES = ("before_response", "mid_body", "mid_stream")
T = TypeVar("T")


@dataclass(frozen=True)
class SeenRequest:
    """One request as the emulator received it (for assertions)."""

    method: str
    path: str
    headers: dict[str, str]
    body: object  # parsed JSON, or None when absent/invalid
    raw_body: bytes = b""

    def header(self, name: str) -> str | None:
        """A request header by name (case-insensitive), or None."""
        lowered = name.lower()
        for key, value in self.headers.items():
            if key.lower() == lowered:
                return value
        return None


@dataclass
class Fault:
    """A connection-drop switch armed by ``HermesEmulator.drop_connection``, or a refusal (mode
    ``refuse``: ``status`` with ``Retry-After: retry_after``) armed by ``HermesEmulator.refuse``."""

    mode: str
    path: str | None = None
    count: int = 1
    after_events: int = 1
    after_execution: bool = True
    status: int = 503
    retry_after: str | None = None

    def matches(self, method: str, path: str) -> bool:
        """Whether the fault applies to this request (default: the two agent POST routes); a path
        with ``*`` is a pattern (``/v1/runs/*/approval``)."""
        if self.path is not None and "*" in self.path:
            return fnmatchcase(path, self.path)
        if self.path is None:
            return method == "POST" and path in (
                "/v1/chat/completions",
                "/v1/responses",
                "/v1/runs",
            )
        return path == self.path or path.startswith(self.path.rstrip("/") + "/")


@dataclass
class CachedChat:
    """A chat result kept in the idempotency cache, with the session id it ran in."""

    result: AgentResult
    session_id: str


@dataclass
class Settings:
    """The server switches a test may change; ``reset()`` restores the constructor's values."""

    api_key: str
    max_concurrent_runs: int
    keepalive_seconds: float
    delta_batch_ms: float
    framing: str
    draining: bool = False
    approval_timeout: float = 60.0  # approvals.timeout: an unanswered approval is BLOCKED after it
    run_events_keepalive_seconds: float = 30.0  # ": keepalive" on an idle /v1/runs/{id}/events
    run_stream_ttl: float = 300.0  # an unsubscribed event buffer is dropped this long after creation
    run_status_ttl: float = 3600.0  # a finished run object is dropped this long after its last update
    stop_latency: float = 0.2  # how long a POST /stop takes to interrupt the agent
    jobs_tick_seconds: float = 60.0  # the cron ticker's interval (0: only HermesEmulator.tick_jobs())
    server_version: str = "0.19.0"  # the Hermes release played (versions.SERVER_VERSIONS)


class RunSlot:
    """One agent run's place under ``max_concurrent_runs``; ``release()`` gives it back once.

    A slot taken before the last ``reset()`` no longer counts, and giving it back changes nothing."""

    __slots__ = ("_state",)

    def __init__(self, state: EmulatorState) -> None:
        self._state = state

    def release(self) -> None:
        """Give the slot back (a second call does nothing)."""
        self._state._release(self)


class EmulatorState:
    """Everything one emulator's connection threads share: settings, model, stores, counters and faults."""

    def __init__(self, settings: Settings, max_stored_responses: int, token_delay: float) -> None:
        self.defaults = Settings(**vars(settings))
        self.settings = settings
        self.model = ScriptedModel(token_delay=token_delay)
        self.runs = RunRegistry()
        self.default_toolsets: tuple[str, ...] = ()
        self.default_approval_mode = "manual"
        self.store = ResponseStore(max_stored_responses)
        self.default_store_size = max_stored_responses
        self.idempotency: IdempotencyCache[Any] = IdempotencyCache()
        #: 0.21+: POST /v1/runs keys -> (body fingerprint, run id), kept like runs_idempotency.db.
        self.run_keys: dict[str, tuple[str, str]] = {}
        self._behaviour = Behaviour(settings.server_version)
        self.transcripts = SessionDB()  # state.db: /api/sessions and every route's session turns
        self.jobs = JobStore()
        self.skills: list[dict[str, object]] = []  # /v1/skills entries: name, description, category
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._runs_in_flight: set[RunSlot] = set()  # reset() empties it: older slots no longer count
        self._connections = 0
        self._requests: list[SeenRequest] = []
        self._faults: list[Fault] = []
        self._slots: dict[str, object] = {}

    def slot(self, name: str, factory: Callable[[], T]) -> T:
        """A family's own store, made by ``factory`` on first use (a family added later keeps its state here)."""
        with self._lock:
            if name not in self._slots:
                self._slots[name] = factory()
            return cast(T, self._slots[name])

    @property
    def behaviour(self) -> Behaviour:
        """What the played server version does (``Settings.server_version``)."""
        if self._behaviour.version != self.settings.server_version:
            self._behaviour = Behaviour(self.settings.server_version)
        return self._behaviour

    # -- concurrency cap ------------------------------------------------------
    def try_acquire_run(self) -> RunSlot | None:
        """Take a run slot; None when the run cap is reached (the request is then answered 429)."""
        with self._lock:
            cap = self.settings.max_concurrent_runs
            if cap > 0 and len(self._runs_in_flight) >= cap:
                return None
            slot = RunSlot(self)
            self._runs_in_flight.add(slot)
            return slot

    def _release(self, slot: RunSlot) -> None:
        with self._lock:
            self._runs_in_flight.discard(slot)

    @property
    def active_runs(self) -> int:
        """Agent runs in flight now."""
        with self._lock:
            return len(self._runs_in_flight)

    @property
    def active_api_runs(self) -> int:
        """``/health/detailed``: runs that are queued, running or waiting for approval."""
        with self.runs.lock:
            runs = list(self.runs.runs.values())
        return sum(1 for r in runs if r.state in ("queued", "running", "waiting_for_approval"))

    # -- counters and records ---------------------------------------------------
    def count_connection(self) -> None:
        """Count one accepted TCP connection."""
        with self._lock:
            self._connections += 1

    @property
    def connections(self) -> int:
        """TCP connections accepted so far."""
        with self._lock:
            return self._connections

    def record(self, request: SeenRequest) -> None:
        """Remember one received request."""
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[SeenRequest]:
        """A copy of the requests received so far, in order."""
        with self._lock:
            return list(self._requests)

    # -- faults -------------------------------------------------------------------
    def arm(self, fault: Fault) -> None:
        """Arm a connection fault for the next matching requests."""
        with self._lock:
            self._faults.append(fault)

    def take_fault(self, method: str, path: str) -> Fault | None:
        """The first armed fault matching this request (using up one of its count), or None."""
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path):
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                    return fault
        return None

    def reset(self) -> None:
        """Clear the model, the tools, the replay cache, counters and faults and restore the settings.

        The families' own stores are cleared by their ``reset(state)`` (``routes.reset_families``).
        """
        self.model.reset()
        toolbox = self.model.toolbox
        with toolbox._lock:
            toolbox.files.clear()
            toolbox.command_allowlist.clear()
        toolbox.toolsets = self.default_toolsets
        toolbox.approval_mode = self.default_approval_mode
        self.idempotency.clear()
        with self._lock:
            # A turn of the last test may still be between its reply and its release: it must not
            # take the next test's only slot (a 429 to a fresh emulator, seen under load in CI).
            self._runs_in_flight.clear()
            self._connections = 0
            self._requests.clear()
            self._faults.clear()
            self.settings = Settings(**vars(self.defaults))


__all__ = [
    "FAULT_MODES",
    "CachedChat",
    "EmulatorState",
    "Fault",
    "RunSlot",
    "SeenRequest",
    "Settings",
]
