"""The cron backend: schedules, the job store and the ticker that runs due jobs (Hermes' ``cron/``).

``/api/jobs`` (``families/jobs.py``) edits the store; the ticker (every ``jobs_tick_seconds``, Hermes:
60 s; or ``HermesEmulator.tick_jobs()``) runs each due job as one agent turn in a
``cron_<id>_<stamp>`` session. Mirrors ``spec/hermes-sessions-jobs.md`` section 7.
"""

from __future__ import annotations

import copy
import os
import re
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from .model import Cancelled, RequestInfo
from .sessiondb import UPSTREAM_MODEL, SessionDB, SessionRow
from .wire import JSONDict

if TYPE_CHECKING:
    from .state import EmulatorState

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
_PROCESS_ID = uuid.uuid4().hex
_PROCESS_STARTED = int(time.monotonic())


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def iso(moment: datetime) -> str:
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
    now = now or utcnow()
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
        return {"kind": "once", "run_at": iso(moment), "display": f"once at {moment.strftime('%Y-%m-%d %H:%M')}"}
    if _DURATION.match(schedule):
        moment = now + timedelta(minutes=_minutes(schedule))
        return {"kind": "once", "run_at": iso(moment), "display": f"once in {schedule}"}
    raise ValueError(INVALID_SCHEDULE.format(schedule))


def job_id_of(job: JSONDict) -> str:
    return str(job["id"])  # the uuid hex the emulator gave it


def schedule_of(job: JSONDict) -> JSONDict:
    schedule = job["schedule"]
    assert isinstance(schedule, dict)  # the emulator's own parse_schedule() result
    return schedule


def check_not_past(schedule: JSONDict, now: datetime) -> None:
    if schedule["kind"] == "once":
        run_at = datetime.fromisoformat(str(schedule["run_at"]))
        if run_at < now - timedelta(seconds=PAST_GRACE_SECONDS):
            raise ValueError(
                f"Requested one-shot time {iso(run_at)} is more than {PAST_GRACE_SECONDS}s in the past "
                "and cannot be scheduled."
            )


def next_run(schedule: JSONDict, after: datetime) -> str | None:
    kind = schedule.get("kind")
    if kind == "interval":
        minutes = schedule["minutes"]
        assert isinstance(minutes, int)  # parse_schedule() stores an int
        return iso(after + timedelta(minutes=minutes))
    if kind == "cron":
        return iso(cron_next(str(schedule["expr"]), after))
    if kind == "once":
        return str(schedule["run_at"])
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
                item["latest_execution"] = copy.deepcopy(self.executions.get(job_id_of(job)))
                out.append(item)
            return out

    def clear(self) -> None:
        with self.lock:
            self.jobs.clear()
            self.executions.clear()


# --------------------------------------------------------------------------- the ticker


def tick(state: EmulatorState) -> list[str]:
    """Run every due job once (one agent turn each, in its own cron session); return their ids."""
    store = state.jobs
    with store.tick_lock:
        now = utcnow()
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
        return [job_id_of(job) for job in due]


def _execute(state: EmulatorState, job: JSONDict, tick_at: datetime) -> None:
    db = state.transcripts
    assert isinstance(db, SessionDB)
    session_id = f"cron_{job['id']}_{tick_at.strftime('%Y%m%d_%H%M%S')}"
    prompt = f"{CRON_PREFIX}\n\n{job['prompt']}" if job.get("prompt") else CRON_PREFIX
    row = SessionRow(id=session_id, source="cron", title=f"{job['name']} \u00b7 {tick_at.strftime('%b %d %H:%M')}")
    row.system_prompt, row.model_config = "", True
    db.create(row)
    claimed = iso(utcnow())
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
    finished = utcnow()
    store = state.jobs
    with store.lock:
        job_id = job_id_of(job)
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
            "finished_at": iso(finished),
            "error": error,
        }
        if live is None:
            return
        repeat = live.get("repeat")
        completed = 0
        if isinstance(repeat, dict):
            completed = repeat["completed"] = int(repeat.get("completed") or 0) + 1
        live.update(last_run_at=iso(finished), last_status="error" if error else "ok", last_error=error)
        live["fire_claim"] = None
        times = repeat.get("times") if isinstance(repeat, dict) else None
        exhausted = isinstance(times, int) and not isinstance(times, bool) and completed >= times
        if schedule_of(live).get("kind") == "once" or exhausted:
            del store.jobs[job_id]
            store.executions.pop(job_id, None)
            return
        live["next_run_at"] = next_run(schedule_of(live), finished)


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


__all__ = ["JobStore", "Ticker", "check_not_past", "cron_next", "iso", "job_id_of", "next_run", "parse_schedule",
           "schedule_of", "tick", "utcnow"]
