"""Hermes cron jobs (``/api/jobs``): typed results.

What Hermes 0.19.0 does and the SDK relies on (``spec/hermes-sessions-jobs.md`` sections 7-8):

- success is 200 with ``{"job": {...}}``, ``{"jobs": [...]}`` or ``{"ok": true}`` (create too);
- errors are ``{"error": "<text>"}``; a bad schedule, a past one-shot time, invalid JSON or the
  lifecycle guard answer **500** and store nothing: the SDK reports those as a permanent refusal;
- ``POST /api/jobs/{id}/run`` only makes the job due: the scheduler runs it on its next tick
  (every 60 s), so the returned job still shows ``last_run_at: None``.
"""

from __future__ import annotations

from typing import Any, Optional

import attrs

from hermes_sdk.plugin import many, one, shape


@shape("a job object", required=("id",), malformed="the job object has no id")
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
    schedule: Optional[dict[str, Any]] = None
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
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)

    @property
    def paused(self) -> bool:
        """Whether the job is paused (``state`` ``paused``)."""
        return self.state == "paused"


def _is_true(value: object) -> bool:
    return value is True


@shape("a delete receipt", keys={"deleted": "ok"}, rules={"deleted": _is_true})
@attrs.frozen
class JobDeleted:
    """The 200 ``{"ok": true}`` of ``DELETE /api/jobs/{id}`` (its output directory is removed too)."""

    id: str
    deleted: bool = True
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)


#: ``{"job": {...}}``.
job = one(Job, envelope="job", what="a job envelope")
#: ``{"jobs": [...]}`` (creation order).
jobs = many(Job, "jobs", "a job list")
#: ``{"ok": true}``; the resource fills in the id it deleted.
job_deleted = one(JobDeleted)


__all__ = ["Job", "JobDeleted"]
