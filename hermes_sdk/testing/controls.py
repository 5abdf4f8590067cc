"""The emulator's controls, one object per family (``emulator.runs``, ``emulator.sessions``, ...), and
the flat shortcuts ``HermesEmulator`` has always had (``run_status``, ``job_ids``, ...), each one line
over its family's control. A family module offers a control as ``CONTROL``, a class built with the
emulator's state; a family added later is reached with ``emulator.control(name)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, TypeVar

from .families.discovery import DiscoveryControl
from .families.jobs import JobsControl
from .families.responses import ResponsesControl
from .families.runs import RunsControl
from .families.sessions import SessionsControl

if TYPE_CHECKING:
    from .state import EmulatorState
    from .store import ResponseStore

C = TypeVar("C")
JSONDict = dict[str, object]


def controls_of(families: Sequence[ModuleType], state: EmulatorState) -> dict[str, object]:
    """Each family's ``CONTROL(state)`` by the family's name (its module's last name)."""
    return {f.__name__.rsplit(".", 1)[-1]: f.CONTROL(state) for f in families if hasattr(f, "CONTROL")}


class FamilyControls:
    """The per-family controls of an emulator, and the flat members that reach them."""

    _controls: dict[str, object]

    def control(self, family: str) -> object:
        """The control object of ``family`` (a module name in ``families.FAMILY_MODULES``)."""
        try:
            return self._controls[family]
        except KeyError:
            raise LookupError(f"the emulator serves no {family!r} family with a control") from None

    def _typed(self, family: str, kind: type[C]) -> C:
        found = self.control(family)
        if not isinstance(found, kind):
            raise TypeError(f"{family}'s control is a {type(found).__name__}, not a {kind.__name__}")
        return found

    @property
    def runs(self) -> RunsControl:
        """Runs: ``status``, ``ids``, ``events``, ``pending_approvals``, ``wait`` and the runs' settings."""
        return self._typed("runs", RunsControl)

    @property
    def sessions(self) -> SessionsControl:
        """Sessions: ``get``, ``ids``, ``rows``, ``transcript``."""
        return self._typed("sessions", SessionsControl)

    @property
    def jobs(self) -> JobsControl:
        """Cron jobs: ``get``, ``ids``, ``tick``, ``tick_seconds``."""
        return self._typed("jobs", JobsControl)

    @property
    def responses(self) -> ResponsesControl:
        """Responses: ``store``, ``stored``."""
        return self._typed("responses", ResponsesControl)

    @property
    def discovery(self) -> DiscoveryControl:
        """Discovery: ``skills``, ``add_skill``."""
        return self._typed("discovery", DiscoveryControl)

    # -- the flat shortcuts (docs/emulator.md names them; none is deprecated) ----------------------
    @property
    def approval_timeout(self) -> float:
        return self.runs.approval_timeout

    @approval_timeout.setter
    def approval_timeout(self, seconds: float) -> None:
        self.runs.approval_timeout = seconds

    @property
    def run_events_keepalive_seconds(self) -> float:
        return self.runs.events_keepalive_seconds

    @run_events_keepalive_seconds.setter
    def run_events_keepalive_seconds(self, seconds: float) -> None:
        self.runs.events_keepalive_seconds = seconds

    @property
    def run_stream_ttl(self) -> float:
        return self.runs.stream_ttl

    @run_stream_ttl.setter
    def run_stream_ttl(self, seconds: float) -> None:
        self.runs.stream_ttl = seconds

    @property
    def run_status_ttl(self) -> float:
        return self.runs.status_ttl

    @run_status_ttl.setter
    def run_status_ttl(self, seconds: float) -> None:
        self.runs.status_ttl = seconds

    @property
    def stop_latency(self) -> float:
        return self.runs.stop_latency

    @stop_latency.setter
    def stop_latency(self, seconds: float) -> None:
        self.runs.stop_latency = seconds

    def run_status(self, run_id: str) -> JSONDict | None:
        """The run object ``GET /v1/runs/{id}`` would return, or None."""
        return self.runs.status(run_id)

    def run_ids(self) -> list[str]:
        return self.runs.ids()

    def run_events(self, run_id: str) -> list[JSONDict]:
        """Every event the run queued so far, whoever (if anyone) received it."""
        return self.runs.events(run_id)

    def pending_approvals(self, run_id: str) -> list[JSONDict]:
        """The run's unanswered approval requests, oldest first (payload fields only)."""
        return self.runs.pending_approvals(run_id)

    def wait_run(self, run_id: str, timeout: float = 10.0) -> JSONDict | None:
        """Block until the run's task finished (or ``timeout``); return its run object."""
        return self.runs.wait(run_id, timeout)

    @property
    def store(self) -> ResponseStore:
        """The response store (``ids()``, ``peek(id)``, ``conversations()``, ``len()``, ``in``)."""
        return self.responses.store

    def stored_response(self, response_id: str) -> JSONDict | None:
        """The stored Responses envelope for ``response_id``, or None (does not refresh its LRU position)."""
        return self.responses.stored(response_id)

    def session_messages(self, session_id: str) -> list[dict[str, str]]:
        """The chat transcript kept for ``session_id`` (Hermes' state.db)."""
        return self.sessions.transcript(session_id)

    def session(self, session_id: str) -> JSONDict | None:
        """The session object ``GET /api/sessions/{id}`` would return, or None."""
        return self.sessions.get(session_id)

    def session_ids(self) -> list[str]:
        """Every session id in the store (any source), most recently active first."""
        return self.sessions.ids()

    def session_rows(self, session_id: str) -> list[JSONDict]:
        """The session's message rows as ``GET …/messages`` shapes them (no fork redirect)."""
        return self.sessions.rows(session_id)

    def job(self, job_id: str) -> JSONDict | None:
        """The job object ``GET /api/jobs/{id}`` would return, or None."""
        return self.jobs.get(job_id)

    def job_ids(self) -> list[str]:
        """Every job id (disabled ones too), in creation order."""
        return self.jobs.ids()

    def tick_jobs(self) -> list[str]:
        """Run the cron ticker once now: every enabled job whose ``next_run_at`` is due runs one
        agent turn (in a ``cron_<id>_<stamp>`` session); returns the ids of the jobs that ran."""
        return self.jobs.tick()

    @property
    def jobs_tick_seconds(self) -> float:
        """The background ticker's interval in seconds (Hermes: 60; 0 = only ``tick_jobs()``); settable."""
        return self.jobs.tick_seconds

    @jobs_tick_seconds.setter
    def jobs_tick_seconds(self, seconds: float) -> None:
        self.jobs.tick_seconds = seconds

    @property
    def skills(self) -> list[dict[str, object]]:
        """``/v1/skills`` entries (``name``, ``description``, ``category``); mutable, cleared by ``reset()``."""
        return self.discovery.skills

    def add_skill(self, name: str, description: str = "", category: str | None = None) -> None:
        """Install a skill, as a ``HERMES_HOME/skills/[category/]name/SKILL.md`` would."""
        self.discovery.add_skill(name, description, category)


__all__ = ["FamilyControls", "controls_of"]
