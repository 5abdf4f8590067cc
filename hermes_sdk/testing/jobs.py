"""``/api/jobs``: Hermes 0.19.0's cron jobs, with an in-process ticker the tests control.

Mirrors ``spec/hermes-sessions-jobs.md`` section 7 (``hermes-wire/63``-``69``), corrected by the
live server where it differs: errors are ``{"error": "<string>"}``; create answers 200;
invalid JSON, schedule parse errors, past one-shots and the lifecycle guard are 500s that
store nothing; ids are 12 lower-case hex; ``POST …/run`` only sets ``next_run_at`` to now and
the next tick (every ``jobs_tick_seconds``, Hermes: 60 s; or ``HermesEmulator.tick_jobs()``)
runs due jobs as one agent turn each, in a ``cron_<id>_<stamp>`` session.
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from .model import Cancelled, RequestInfo
from .sessiondb import UPSTREAM_MODEL, SessionDB, SessionRow
from .wire import JSONDict

if TYPE_CHECKING:
    from .server import Exchange
    from .state import EmulatorState

JOB_ID = re.compile(r"^[a-f0-9]{12}$")
UPDATABLE = ("name", "schedule", "prompt", "deliver", "skills", "skill", "repeat", "enabled")
NAME_MAX = 200
PROMPT_MAX = 5000
NOTHING_TO_RUN = ("Cron job has nothing to run: prompt is blank and no script or skill(s) are set. Provide a "
                  "prompt, a script, or at least one skill.")
PAST_GRACE_SECONDS = 120
_DURATION = re.compile(r"^(\d+)\s*(m|min|mins|minute|minutes|h|hr|hrs|hour|hours|d|day|days)$", re.IGNORECASE)
_CRON_FIELD = re.compile(r"^[\d*\-,/]+$")
_CRON_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
INVALID_SCHEDULE = (
    "Invalid schedule '{0}'. Use:\n"
    "  - Duration: '30m', '2h', '1d' (one-shot)\n"
    "  - Interval: 'every 30m', 'every 2h' (recurring)\n"
    "  - Cron: '0 9 * * *' (cron expression)\n"
    "  - Timestamp: '2026-02-03T14:00:00' (one-shot at time)"
)
CRON_PREFIX = (
    "[IMPORTANT: You are running as a scheduled cron job. DELIVERY: Your final response will be "
    "automatically delivered to the user \u2014 do NOT use send_message or try to deliver the output "
    "yourself. Just produce your report/output as your final response and the system handles the rest. "
    'SILENT: If there is genuinely nothing new to report, respond with exactly "[SILENT]" (nothing '
    "else) to suppress delivery. Never combine [SILENT] with content \u2014 either report your findings "
    "normally, or say [SILENT] and nothing more.]"
)
# tools/cronjob_tools.py: a few of the threat patterns (the ones the captures hit, and kin).
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
_PROCESS_ID = uuid.uuid4().hex
_PROCESS_STARTED = int(time.monotonic())


class JobError(Exception):
    """A ``{"error": message}`` answer with ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _iso(moment: datetime) -> str:
    return moment.isoformat()


# --------------------------------------------------------------------------- schedules


def _minutes(text: str) -> int:
    match = _DURATION.match(text.strip())
    if not match:
        raise ValueError(f"Invalid duration: '{text.strip()}'. Use format like '30m', '2h', or '1d'")
    unit = match.group(2).lower()[0]
    return int(match.group(1)) * {"m": 1, "h": 60, "d": 1440}[unit]


def _cron_sets(expr: str) -> list[set[int]]:
    sets: list[set[int]] = []
    for text, (low, high) in zip(expr.split(), _CRON_RANGES):
        values: set[int] = set()
        for part in text.split(","):
            base, _, step_text = part.partition("/")
            step = int(step_text) if step_text else 1
            if base == "*":
                start, end = low, high
            elif "-" in base:
                a, _, b = base.partition("-")
                start, end = int(a), int(b)
            else:
                start = int(base)
                end = high if step_text else start
            if start < low or end > high or start > end or step < 1:
                raise ValueError("out of range")
            values.update(range(start, end + 1, step))
        if high == 7 and 7 in values:
            values.discard(7)
            values.add(0)
        sets.append(values)
    return sets


def cron_next(expr: str, after: datetime) -> datetime:
    """The first minute strictly after ``after`` that matches the five-field ``expr`` (UTC)."""
    minutes, hours, days, months, weekdays = _cron_sets(expr)
    dom_any, dow_any = expr.split()[2] == "*", expr.split()[4] == "*"
    start = after.replace(second=0, microsecond=0) + timedelta(minutes=1)
    day = start.replace(hour=0, minute=0)
    for _ in range(366 * 5):
        dow = (day.weekday() + 1) % 7  # cron: 0 = Sunday
        if dom_any and dow_any:
            day_ok = True
        elif dom_any:
            day_ok = dow in weekdays
        elif dow_any:
            day_ok = day.day in days
        else:
            day_ok = day.day in days or dow in weekdays
        if day.month in months and day_ok:
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    candidate = day.replace(hour=hour, minute=minute)
                    if candidate >= start:
                        return candidate
        day += timedelta(days=1)
    raise ValueError(f"Invalid cron expression '{expr}': no matching time")


def parse_schedule(text: str, now: datetime | None = None) -> JSONDict:
    """``cron/jobs.py:parse_schedule``; raises ValueError with Hermes' message."""
    now = now or _now()
    schedule = text.strip()
    lowered = schedule.lower()
    if lowered.startswith("every "):
        minutes = _minutes(schedule[6:])
        return {"kind": "interval", "minutes": minutes, "display": f"every {minutes}m"}
    fields = schedule.split()
    if len(fields) == 5 and all(_CRON_FIELD.match(f) for f in fields):
        try:
            _cron_sets(schedule)
        except ValueError:
            raise ValueError(
                f"Invalid cron expression '{schedule}': [{schedule}] is not acceptable, out of range"
            ) from None
        return {"kind": "cron", "expr": schedule, "display": schedule}
    if "T" in schedule or re.match(r"^\d{4}-\d{2}-\d{2}", schedule):
        try:
            moment = datetime.fromisoformat(schedule.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(INVALID_SCHEDULE.format(schedule)) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)  # the configured Hermes timezone: UTC
        return {"kind": "once", "run_at": _iso(moment), "display": f"once at {moment.strftime('%Y-%m-%d %H:%M')}"}
    if _DURATION.match(schedule):
        moment = now + timedelta(minutes=_minutes(schedule))
        return {"kind": "once", "run_at": _iso(moment), "display": f"once in {schedule}"}
    raise ValueError(INVALID_SCHEDULE.format(schedule))


def _id(job: JSONDict) -> str:
    return str(job["id"])  # the uuid hex the emulator gave it


def _schedule(job: JSONDict) -> JSONDict:
    schedule = job["schedule"]
    assert isinstance(schedule, dict)  # the emulator's own parse_schedule() result
    return schedule


def _check_not_past(schedule: JSONDict, now: datetime) -> None:
    if schedule["kind"] == "once":
        run_at = datetime.fromisoformat(str(schedule["run_at"]))
        if run_at < now - timedelta(seconds=PAST_GRACE_SECONDS):
            raise ValueError(
                f"Requested one-shot time {_iso(run_at)} is more than {PAST_GRACE_SECONDS}s in the past "
                "and cannot be scheduled."
            )


def next_run(schedule: JSONDict, after: datetime) -> str | None:
    kind = schedule.get("kind")
    if kind == "interval":
        minutes = schedule["minutes"]
        assert isinstance(minutes, int)  # parse_schedule() stores an int
        return _iso(after + timedelta(minutes=minutes))
    if kind == "cron":
        return _iso(cron_next(str(schedule["expr"]), after))
    if kind == "once":
        return str(schedule["run_at"])
    return None


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


# --------------------------------------------------------------------------- the store


class JobStore:
    """Jobs in creation order (Hermes' ``cron/jobs.json``) plus their latest executions."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.jobs: dict[str, JSONDict] = {}
        self.executions: dict[str, JSONDict] = {}
        self.tick_lock = threading.Lock()
        self.ticks = 0

    def get(self, job_id: str) -> JSONDict | None:
        with self.lock:
            job = self.jobs.get(job_id)
            return copy.deepcopy(job) if job is not None else None

    def listing(self, include_disabled: bool) -> list[JSONDict]:
        with self.lock:
            out = []
            for job in self.jobs.values():
                if not include_disabled and job.get("enabled") is not True:
                    continue
                item = copy.deepcopy(job)
                item["latest_execution"] = copy.deepcopy(self.executions.get(_id(job)))
                out.append(item)
            return out

    def clear(self) -> None:
        with self.lock:
            self.jobs.clear()
            self.executions.clear()


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
    now = _now()
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
    _check_not_past(schedule, now)
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
        "created_at": _iso(now),
        "next_run_at": next_run(schedule, _now()),
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
        store.jobs[_id(job)] = job
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
    now = _now()
    schedule: JSONDict | None = None
    if "schedule" in updates:
        schedule = parse_schedule(str(updates.pop("schedule")), now)
        _check_not_past(schedule, now)
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
                job["next_run_at"] = next_run(schedule, _now())
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
        job.update(enabled=False, state="paused", paused_at=_iso(_now()), paused_reason=None)

    _mutate(ex, job_id, pause)


@_guard
def handle_resume(ex: Exchange, job_id: str) -> None:
    def resume(job: JSONDict) -> None:
        now = _now()
        _check_not_past(_schedule(job), now)
        job.update(enabled=True, state="scheduled", paused_at=None, paused_reason=None)
        job["next_run_at"] = next_run(_schedule(job), now)

    _mutate(ex, job_id, resume)


@_guard
def handle_run(ex: Exchange, job_id: str) -> None:
    if ex.state.settings.draining:
        raise JobError(503, "Gateway is draining; retry shortly")

    def trigger(job: JSONDict) -> None:
        job.update(enabled=True, state="scheduled", paused_at=None, paused_reason=None, next_run_at=_iso(_now()))

    _mutate(ex, job_id, trigger)


# --------------------------------------------------------------------------- the ticker


def tick(state: EmulatorState) -> list[str]:
    """Run every due job once (one agent turn each, in its own cron session); return their ids."""
    store = state.jobs
    with store.tick_lock:
        now = _now()
        with store.lock:
            due = [
                copy.deepcopy(job)
                for job in store.jobs.values()
                if job.get("enabled") is True
                and job.get("state") == "scheduled"
                and job.get("next_run_at")
                and datetime.fromisoformat(str(job["next_run_at"])) <= now
            ]
            store.ticks += 1
        for job in due:
            _execute(state, job, now)
        return [_id(job) for job in due]


def _execute(state: EmulatorState, job: JSONDict, tick_at: datetime) -> None:
    db = state.transcripts
    assert isinstance(db, SessionDB)
    session_id = f"cron_{job['id']}_{tick_at.strftime('%Y%m%d_%H%M%S')}"
    prompt = f"{CRON_PREFIX}\n\n{job['prompt']}" if job.get("prompt") else CRON_PREFIX
    row = SessionRow(id=session_id, source="cron", title=f"{job['name']} \u00b7 {tick_at.strftime('%b %d %H:%M')}")
    row.system_prompt, row.model_config = "", True
    db.create(row)
    claimed = _iso(_now())
    db.add_message(session_id, "user", prompt)
    info = RequestInfo(
        endpoint="cron",
        prompt=prompt,
        history=[],
        system_prompt="",
        session_id=session_id,
        stream=False,
        body={"job_id": job["id"]},
        headers={},
    )
    error: str | None = None
    try:
        result = state.model.run(info, lambda _piece: None, threading.Event())
        if result.failed:
            error = f"RuntimeError: {result.error}"
        elif result.final_response:
            db.add_message(session_id, "assistant", result.final_response, finish="stop")
        if result.completed:

            def account(r: SessionRow) -> None:
                r.model = UPSTREAM_MODEL
                r.input_tokens += result.prompt_tokens
                r.output_tokens += result.completion_tokens
                r.api_call_count += 1
                r.estimated_cost_usd = 0.0

            db.update(session_id, account)
    except Cancelled:
        error = "RuntimeError: interrupted"
    db.end(session_id, "cron_complete")
    finished = _now()
    store = state.jobs
    with store.lock:
        job_id = _id(job)
        live = store.jobs.get(job_id)
        store.executions[job_id] = {
            "id": uuid.uuid4().hex,
            "job_id": job_id,
            "source": "builtin",
            "process_id": _PROCESS_ID,
            "pid": os.getpid(),
            "process_started_at": _PROCESS_STARTED,
            "status": "failed" if error else "completed",
            "claimed_at": claimed,
            "started_at": claimed,
            "finished_at": _iso(finished),
            "error": error,
        }
        if live is None:
            return
        repeat = live.get("repeat")
        completed = 0
        if isinstance(repeat, dict):
            completed = repeat["completed"] = int(repeat.get("completed") or 0) + 1
        live.update(last_run_at=_iso(finished), last_status="error" if error else "ok", last_error=error)
        live["fire_claim"] = None
        times = repeat.get("times") if isinstance(repeat, dict) else None
        exhausted = isinstance(times, int) and not isinstance(times, bool) and completed >= times
        if _schedule(live).get("kind") == "once" or exhausted:
            del store.jobs[job_id]
            store.executions.pop(job_id, None)
            return
        live["next_run_at"] = next_run(_schedule(live), finished)


class Ticker:
    """The in-process scheduler thread: ``tick()`` every ``interval`` seconds while running."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="hermes-emulator-cron")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._stop.wait(0.05):
            interval = self._state.settings.jobs_tick_seconds
            if not interval or interval <= 0:
                last = time.monotonic()
                continue
            if time.monotonic() - last >= interval:
                last = time.monotonic()
                try:
                    tick(self._state)
                except Exception:  # noqa: BLE001, S110 - a ticker must survive a failing job
                    pass


__all__ = ["JobStore", "Ticker", "cron_next", "parse_schedule", "tick"]
