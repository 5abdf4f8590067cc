"""Hermes cron jobs (``/api/jobs``) and skills (``/v1/skills``): typed results.

What Hermes 0.19.0 does and the SDK relies on (``spec/hermes-sessions-jobs.md`` sections 7-8):

- success is 200 with ``{"job": {...}}``, ``{"jobs": [...]}`` or ``{"ok": true}`` (create too);
- errors are ``{"error": "<text>"}``; a bad schedule, a past one-shot time, invalid JSON or the
  lifecycle guard answer **500** and store nothing: the SDK reports those as a permanent refusal;
- ``POST /api/jobs/{id}/run`` only makes the job due: the scheduler runs it on its next tick
  (every 60 s), so the returned job still shows ``last_run_at: None``.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import attrs

from ..errors import InvalidResponseError

JSONDict = dict[str, Any]


def _opt_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _object(data: Any, what: str) -> JSONDict:
    if not isinstance(data, dict):
        raise InvalidResponseError(f"Hermes returned a {type(data).__name__} where {what} was expected")
    return data


@attrs.frozen
class Job:
    """One cron job as Hermes returns it (every field is in ``raw``).

    ``schedule`` is Hermes' parsed schedule object (``{"kind": "interval", "minutes": 120,
    "display": "every 120m"}``, ``{"kind": "cron", "expr": ...}``, ``{"kind": "once", "run_at":
    ...}``); ``schedule_display`` its text. Times are ISO 8601 strings with an offset. ``repeat``
    is ``{"times": N|None, "completed": N}`` (PATCH can store a bare number there).
    """

    id: str
    name: str
    schedule: Optional[JSONDict] = None
    prompt: Optional[str] = None
    enabled: bool = True
    next_run_at: Optional[str] = None
    last_run_at: Optional[str] = None
    state: Optional[str] = None
    schedule_display: Optional[str] = None
    skills: tuple[str, ...] = ()
    deliver: Optional[str] = None
    repeat: Any = None
    last_status: Optional[str] = None
    last_error: Optional[str] = None
    created_at: Optional[str] = None
    paused_at: Optional[str] = None
    raw: JSONDict = attrs.field(factory=dict, repr=False, eq=False)

    @property
    def paused(self) -> bool:
        """Whether the job is paused (``state`` ``paused``)."""
        return self.state == "paused"


@attrs.frozen
class JobDeleted:
    """The 200 ``{"ok": true}`` of ``DELETE /api/jobs/{id}`` (its output directory is removed too)."""

    id: str
    deleted: bool = True
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)


@attrs.frozen
class Skill:
    """One entry of ``GET /v1/skills`` (``category`` is None for a skill directly under ``skills/``)."""

    name: str
    description: Optional[str] = None
    category: Optional[str] = None
    raw: JSONDict = attrs.field(factory=dict, repr=False, eq=False)


def job_of(data: Any) -> Job:
    """A Job from one job object."""
    obj = _object(data, "a job object")
    if not isinstance(obj.get("id"), str):
        raise InvalidResponseError("the job object has no id")
    schedule = obj.get("schedule")
    skills = obj.get("skills")
    return Job(
        id=obj["id"], name=str(obj.get("name") or ""), schedule=schedule if isinstance(schedule, dict) else None,
        prompt=_opt_str(obj.get("prompt")), enabled=obj.get("enabled") is not False,
        next_run_at=_opt_str(obj.get("next_run_at")), last_run_at=_opt_str(obj.get("last_run_at")),
        state=_opt_str(obj.get("state")), schedule_display=_opt_str(obj.get("schedule_display")),
        skills=tuple(s for s in skills if isinstance(s, str)) if isinstance(skills, list) else (),
        deliver=_opt_str(obj.get("deliver")), repeat=obj.get("repeat"), last_status=_opt_str(obj.get("last_status")),
        last_error=_opt_str(obj.get("last_error")), created_at=_opt_str(obj.get("created_at")),
        paused_at=_opt_str(obj.get("paused_at")), raw=obj)


def job(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
        replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> Job:
    """Decode ``{"job": {...}}``."""
    return job_of(_object(data, "a job envelope").get("job"))


def jobs(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
         replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> list[Job]:
    """Decode ``{"jobs": [...]}`` (creation order)."""
    rows = _object(data, "a job list").get("jobs")
    if not isinstance(rows, list):
        raise InvalidResponseError("the job list has no 'jobs' array")
    return [job_of(row) for row in rows]


def job_deleted(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
                replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> JobDeleted:
    """Decode ``{"ok": true}``; the resource fills in the id it deleted."""
    obj = _object(data, "a delete receipt")
    return JobDeleted(id=str(obj.get("id") or ""), deleted=obj.get("ok") is True, action_id=action_id,
                      replayed=replayed)


def skills(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
           replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> list[Skill]:
    """Decode ``{"object": "list", "data": [{name, description, category}...]}``."""
    rows = _object(data, "a skill list").get("data")
    if not isinstance(rows, list):
        raise InvalidResponseError("the skill list has no 'data' array")
    return [Skill(name=str(row.get("name") or ""), description=_opt_str(row.get("description")),
                  category=_opt_str(row.get("category")), raw=row) for row in rows if isinstance(row, dict)]


def health_detailed(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
                    replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> JSONDict:
    """``GET /health/detailed`` as Hermes sends it (a dict: readiness checks, gateway state, pid...)."""
    return _object(data, "a health object")


def model_options(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
                  replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> JSONDict:
    """``GET /api/model/options`` as Hermes sends it (``providers``: each with ``slug``, ``models``,
    ``is_current``...)."""
    found = _object(data, "a model options object")
    if not isinstance(found.get("providers"), list):
        raise InvalidResponseError("the model options have no 'providers' array")
    return found


__all__ = ["Job", "JobDeleted", "Skill"]
