"""``/api/jobs``: Hermes 0.19.0's cron jobs, with an in-process ticker the tests control.

Mirrors ``spec/hermes-sessions-jobs.md`` section 7 (``hermes-wire/63``-``69``), corrected by the
live server where it differs: errors are ``{"error": "<string>"}``; create answers 200;
invalid JSON, schedule parse errors, past one-shots and the lifecycle guard are 500s that
store nothing; ids are 12 lower-case hex; ``POST …/run`` only sets ``next_run_at`` to now and
the next tick (``cron.py``, every ``jobs_tick_seconds``, Hermes: 60 s; or ``HermesEmulator.tick_jobs()``)
runs due jobs as one agent turn each, in a ``cron_<id>_<stamp>`` session.
"""

from __future__ import annotations

import copy
import json
import re
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from ..cron import JobStore, check_not_past, iso, job_id_of, next_run, parse_schedule, schedule_of, tick, utcnow
from ..routes import Route
from ..sessiondb import UPSTREAM_MODEL
from ..wire import JSONDict

if TYPE_CHECKING:
    from ..exchange import Exchange
    from ..state import EmulatorState

JOB_ID = re.compile(r"^[a-f0-9]{12}$")
UPDATABLE = ("name", "schedule", "prompt", "deliver", "skills", "skill", "repeat", "enabled")
NAME_MAX = 200
PROMPT_MAX = 5000
NOTHING_TO_RUN = ("Cron job has nothing to run: prompt is blank and no script or skill(s) are set. Provide a "
                  "prompt, a script, or at least one skill.")
THREAT_PATTERNS = (
    ("prompt_injection", re.compile(r"ignore\s+(all\s+)?(previous|prior|above)\s+instructions", re.I)),
    ("read_secrets", re.compile(r"(cat|less|more|head|tail)\s+\S*(\.env|id_rsa|\.netrc|credentials)", re.I)),
    ("exfiltration", re.compile(r"(curl|wget)\s+.*(\$\(|`|--data|-d\s)", re.I)),
)
LIFECYCLE = re.compile(r"hermes\s+gateway\s+(restart|stop|kill)", re.I)
LIFECYCLE_MESSAGE = (
    "Blocked: cron job contains a gateway lifecycle command (restart/stop/kill). This is blocked to "
    "prevent agent-driven SIGTERM-respawn loops under launchd/systemd supervision (#30719). Run "
    "`hermes gateway restart` from a shell outside the running gateway instead."
)


class JobError(Exception):
    """A ``{"error": message}`` answer with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _skills(raw: Any) -> list[str]:
    items = [raw] if isinstance(raw, str) else list(raw or [])
    out: list[str] = []
    for item in items:
        text = str(item).strip()
        if text and text not in out:
            out.append(text)
    return out


def _threat(prompt: str) -> str | None:
    for name, pattern in THREAT_PATTERNS:
        if pattern.search(prompt):
            return (
                f"Blocked: prompt matches threat pattern '{name}'. Cron prompts must not contain injection "
                "or exfiltration payloads."
            )
    return None


def _origin(ex: Exchange) -> JSONDict:
    peer = str(ex.client_ip)
    origin: JSONDict = {"platform": "api_server", "chat_id": "api", "source_ip": peer, "peer_ip": peer}
    agent = ex.header("User-Agent")
    if agent:
        origin["user_agent"] = agent
    forwarded = ex.header("X-Forwarded-For")
    if forwarded:
        origin["forwarded_for"] = forwarded
    real = ex.header("X-Real-IP")
    if real:
        origin["real_ip"] = real
    return origin


def _store(ex: Exchange) -> JobStore:
    return ex.state.jobs


def _send(ex: Exchange, status: int, payload: JSONDict) -> None:
    ex.send_json(status, payload)


def _guard(fn: Callable[..., None]) -> Callable[..., None]:
    def wrapper(ex: Exchange, *args: str) -> None:
        try:
            fn(ex, *args)
        except JobError as exc:
            _send(ex, exc.status, {"error": exc.message})
        except Exception as exc:  # noqa: BLE001 - Hermes' broad except: 500 with the text
            _send(ex, 500, {"error": str(exc)})

    return wrapper


def _json(ex: Exchange) -> Any:
    # Any on purpose: the routes use the body as Hermes' Python does, so a wrong type fails with
    # Python's own TypeError/AttributeError text in the 500 (``_guard``), as it does in Hermes.
    return json.loads((b"" if ex.oversize else ex.raw_body).decode("utf-8"))  # ValueError -> 500


def _job_id(job_id: str) -> str:
    if not JOB_ID.match(job_id):
        raise JobError(400, "Invalid job ID format")
    return job_id


def _existing(ex: Exchange, job_id: str) -> JSONDict:
    job = _store(ex).get(_job_id(job_id))
    if job is None:
        raise JobError(404, "Job not found")
    return job


def _check_name(name: Any) -> None:
    if len(name) > NAME_MAX:
        raise JobError(400, f"Name must be \u2264 {NAME_MAX} characters")


def _check_prompt(prompt: Any) -> None:
    if len(prompt) > PROMPT_MAX:
        raise JobError(400, f"Prompt must be \u2264 {PROMPT_MAX} characters")
    threat = _threat(str(prompt))
    if threat:
        raise JobError(400, threat)


# --------------------------------------------------------------------------- routes


@_guard
def handle_list(ex: Exchange) -> None:
    query = parse_qs(ex.query, keep_blank_values=True)
    flag = (query.get("include_disabled") or ["false"])[0].strip().lower()
    _send(ex, 200, {"jobs": _store(ex).listing(flag in ("true", "1"))})


@_guard
def handle_create(ex: Exchange) -> None:
    body = _json(ex)
    name = (body.get("name") or "").strip()
    schedule_text = (body.get("schedule") or "").strip()
    prompt = body.get("prompt", "")
    if not name:
        raise JobError(400, "Name is required")
    _check_name(name)
    if not schedule_text:
        raise JobError(400, "Schedule is required")
    _check_prompt(prompt)
    repeat = body.get("repeat")
    if repeat is not None and (not isinstance(repeat, int) or repeat < 1):
        raise JobError(400, "Repeat must be a positive integer")
    if LIFECYCLE.search(str(prompt)):
        raise ValueError(LIFECYCLE_MESSAGE)
    now = utcnow()
    if ex.state.behaviour.job_refusals_400:
        # 0.21+ (measured on 0.22.2): a bad schedule and a job with nothing to run are 400s.
        try:
            schedule = parse_schedule(schedule_text, now)
        except ValueError as exc:
            raise JobError(400, str(exc)) from None
        if not str(prompt or "").strip() and not body.get("script") and not body.get("skills") \
                and not body.get("skill"):
            raise JobError(400, NOTHING_TO_RUN)
    else:
        schedule = parse_schedule(schedule_text, now)
    check_not_past(schedule, now)
    skills = _skills(body.get("skills"))
    times = repeat if repeat is not None else (1 if schedule["kind"] == "once" else None)
    job: JSONDict = {
        "id": uuid.uuid4().hex[:12],
        "name": name,
        "prompt": prompt,
        "skills": skills,
        "skill": skills[0] if skills else None,
        "model": None,
        "provider": None,
        "provider_snapshot": "custom",
        "model_snapshot": UPSTREAM_MODEL,
        "base_url": None,
        "script": None,
        "no_agent": False,
        "context_from": None,
        "schedule": schedule,
        "schedule_display": schedule["display"],
        "repeat": {"times": times, "completed": 0},
        "enabled": True,
        "state": "scheduled",
        "paused_at": None,
        "paused_reason": None,
        "created_at": iso(now),
        "next_run_at": next_run(schedule, utcnow()),
        "last_run_at": None,
        "last_status": None,
        "last_error": None,
        "last_delivery_error": None,
        "deliver": body.get("deliver") or "local",
        "origin": _origin(ex),
        "enabled_toolsets": None,
        "workdir": None,
    }
    store = _store(ex)
    with store.lock:
        store.jobs[job_id_of(job)] = job
    _send(ex, 200, {"job": copy.deepcopy(job)})


@_guard
def handle_get(ex: Exchange, job_id: str) -> None:
    _send(ex, 200, {"job": _existing(ex, job_id)})


@_guard
def handle_update(ex: Exchange, job_id: str) -> None:
    _job_id(job_id)
    body = _json(ex)
    updates = {k: body[k] for k in UPDATABLE if k in body}
    if not updates:
        raise JobError(400, "No valid fields to update")
    if "name" in updates:
        _check_name(updates["name"])
        updates["name"] = updates["name"].strip()
    if "prompt" in updates:
        _check_prompt(updates["prompt"])
    updates.pop("skill", None)  # accepted by the whitelist, but has no effect (hermes-wire/64 U11)
    now = utcnow()
    schedule: JSONDict | None = None
    if "schedule" in updates:
        schedule = parse_schedule(str(updates.pop("schedule")), now)
        check_not_past(schedule, now)
    store = _store(ex)
    with store.lock:
        job = store.jobs.get(job_id)
        if job is None:
            raise JobError(404, "Job not found")
        if "skills" in updates:
            skills = _skills(updates.pop("skills"))
            job["skills"], job["skill"] = skills, (skills[0] if skills else None)
        job.update(updates)
        if schedule is not None:
            job["schedule"], job["schedule_display"] = schedule, schedule["display"]
            if job.get("state") != "paused":
                job["next_run_at"] = next_run(schedule, utcnow())
        result = copy.deepcopy(job)
    _send(ex, 200, {"job": result})


@_guard
def handle_delete(ex: Exchange, job_id: str) -> None:
    _existing(ex, job_id)
    store = _store(ex)
    with store.lock:
        store.jobs.pop(job_id, None)
        store.executions.pop(job_id, None)
    _send(ex, 200, {"ok": True})


def _mutate(ex: Exchange, job_id: str, fn: Callable[[JSONDict], None]) -> None:
    _existing(ex, job_id)
    store = _store(ex)
    with store.lock:
        job = store.jobs.get(job_id)
        if job is None:
            raise JobError(404, "Job not found")
        fn(job)
        result = copy.deepcopy(job)
    _send(ex, 200, {"job": result})


@_guard
def handle_pause(ex: Exchange, job_id: str) -> None:
    def pause(job: JSONDict) -> None:
        job.update(enabled=False, state="paused", paused_at=iso(utcnow()), paused_reason=None)

    _mutate(ex, job_id, pause)


@_guard
def handle_resume(ex: Exchange, job_id: str) -> None:
    def resume(job: JSONDict) -> None:
        now = utcnow()
        check_not_past(schedule_of(job), now)
        job.update(enabled=True, state="scheduled", paused_at=None, paused_reason=None)
        job["next_run_at"] = next_run(schedule_of(job), now)

    _mutate(ex, job_id, resume)


@_guard
def handle_run(ex: Exchange, job_id: str) -> None:
    if ex.state.settings.draining:
        raise JobError(503, "Gateway is draining; retry shortly")

    def trigger(job: JSONDict) -> None:
        job.update(enabled=True, state="scheduled", paused_at=None, paused_reason=None, next_run_at=iso(utcnow()))

    _mutate(ex, job_id, trigger)


class JobsControl:
    """``emulator.jobs``: the cron jobs, the ticker's interval and a tick on demand."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state

    def get(self, job_id: str) -> JSONDict | None:
        """The job object ``GET /api/jobs/{id}`` would return, or None."""
        return self._state.jobs.get(job_id)

    def ids(self) -> list[str]:
        """Every job id (disabled ones too), in creation order."""
        return [str(j["id"]) for j in self._state.jobs.listing(include_disabled=True)]

    def tick(self) -> list[str]:
        """Run the cron ticker once now: every enabled job whose ``next_run_at`` is due runs one
        agent turn (in a ``cron_<id>_<stamp>`` session); returns the ids of the jobs that ran."""
        return tick(self._state)

    @property
    def tick_seconds(self) -> float:
        """The background ticker's interval in seconds (Hermes: 60; 0 = only ``tick()``); settable."""
        return self._state.settings.jobs_tick_seconds

    @tick_seconds.setter
    def tick_seconds(self, seconds: float) -> None:
        self._state.settings.jobs_tick_seconds = max(0.0, float(seconds))


def reset(state: EmulatorState) -> None:
    """Forget every job and execution."""
    state.jobs.clear()


_ITEM = "/api/jobs/{job_id}"
ROUTES = (
    Route(("GET",), "/api/jobs", handle_list),
    Route(("POST",), "/api/jobs", handle_create),
    Route(("GET",), _ITEM, handle_get, decoded=True),
    Route(("PATCH",), _ITEM, handle_update, decoded=True),
    Route(("DELETE",), _ITEM, handle_delete, decoded=True),
    Route(("POST",), _ITEM + "/pause", handle_pause, decoded=True),
    Route(("POST",), _ITEM + "/resume", handle_resume, decoded=True),
    Route(("POST",), _ITEM + "/run", handle_run, decoded=True),
)

CONTROL = JobsControl
