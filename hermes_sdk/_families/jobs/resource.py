"""``client.jobs``: Hermes' cron jobs (``/api/jobs``): scheduled agent turns."""

from __future__ import annotations

import builtins
from typing import Optional, TypeVar

import attrs

from hermes_sdk.plugin import (
    REQUIRED,
    UNCHANGED,
    ApprovalDecision,
    CallOptions,
    Deadline,
    ExecutionContext,
    FamilyExecutor,
    OperationSpec,
    TimeoutLike,
)

from .operations import (
    JOB_CREATE,
    JOB_DELETE,
    JOB_GET,
    JOB_PAUSE,
    JOB_RESUME,
    JOB_RUN,
    JOB_UPDATE,
    JOBS_LIST,
    UPDATE_FIELDS,
)
from .types import Job, JobDeleted

T = TypeVar("T")


class Jobs:
    """Cron jobs: every mutation (create, update, delete, pause, resume, run) is approval-gated and
    needs an ``idempotency_key`` (the connector's contract), as ``response_delete`` is: the
    decision comes from ``approval=`` or the approval provider, bound to the exact input
    (``client.approval_request("job_pause", {"job_id": ...})``); without one nothing is sent.

    A ``job_id`` that is not 12 lower-case hex characters is refused before I/O. A schedule Hermes
    cannot parse, a one-shot time in the past or its lifecycle guard come back as a
    RemoteRejectedError (Hermes answers 500, but nothing was stored: not retryable, not uncertain).
    Every method also takes ``endpoint=``, ``action_id=``, ``context=``, ``deadline=``, ``timeout=``.
    """

    def __init__(self, executor: FamilyExecutor) -> None:
        self._executor = executor

    def list(self, *, include_disabled: bool = False, endpoint: Optional[str] = None,
             action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
             deadline: Deadline = None, timeout: TimeoutLike = None) -> list[Job]:
        """Every job in creation order (``GET /api/jobs``); paused and disabled ones only with
        ``include_disabled=True``. Retried like every read."""
        return self._executor.request(JOBS_LIST, {"include_disabled": include_disabled}, CallOptions(
            endpoint=endpoint, action_id=action_id, context=context, deadline=deadline, timeout=timeout))

    def get(self, job_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
            context: Optional[ExecutionContext] = None, deadline: Deadline = None,
            timeout: TimeoutLike = None) -> Job:
        """One job (``GET /api/jobs/{id}``); NotFoundError for an unknown id (a one-shot job deletes
        itself after it ran)."""
        return self._executor.request(JOB_GET, {"job_id": job_id}, CallOptions(
            endpoint=endpoint, action_id=action_id, context=context, deadline=deadline, timeout=timeout))

    def create(self, *, name: str, schedule: str, prompt: Optional[str] = None, deliver: Optional[str] = None,
               skills: Optional[builtins.list[str]] = None, repeat: Optional[int] = None,
               idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
               reason: Optional[str] = None, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> Job:
        """Create a job (``POST /api/jobs``; Hermes answers 200).

        ``schedule``: ``every 30m`` / ``every 2h`` / ``every 1d``, a five-field cron expression
        (``0 9 * * 1-5``), an ISO time (a one-shot; naive times are Hermes' timezone) or a bare
        duration (``30m``: a one-shot that far from now). ``repeat`` limits the runs; ``deliver``
        defaults to ``local``. Job names need not be unique.
        """
        given = {"name": name, "schedule": schedule, "prompt": prompt, "deliver": deliver, "skills": skills,
                 "repeat": repeat}
        return self._mutate(JOB_CREATE, {k: v for k, v in given.items() if v is not None}, idempotency_key,
                            approval, reason, endpoint, action_id, context, deadline, timeout)

    def update(self, job_id: str, *, name: str = UNCHANGED, schedule: str = UNCHANGED, prompt: str = UNCHANGED,
               deliver: str = UNCHANGED, skills: builtins.list[str] = UNCHANGED, repeat: int = UNCHANGED,
               enabled: bool = UNCHANGED, idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
               reason: Optional[str] = None, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> Job:
        """Change a job (``PATCH /api/jobs/{id}``); a keyword left out is left unchanged.

        A new ``schedule`` recomputes ``next_run_at``; ``enabled=False`` hides the job from the
        default list but leaves it scheduled (use :meth:`pause` to stop it).
        """
        values = dict(zip(("name", "schedule", "prompt", "deliver", "skills", "repeat", "enabled"),
                          (name, schedule, prompt, deliver, skills, repeat, enabled)))
        data: dict[str, object] = {"job_id": job_id}
        data.update({k: v for k, v in values.items() if v is not UNCHANGED and k in UPDATE_FIELDS})
        return self._mutate(JOB_UPDATE, data, idempotency_key, approval, reason, endpoint, action_id, context,
                            deadline, timeout)

    def delete(self, job_id: str, *, idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
               reason: Optional[str] = None, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> JobDeleted:
        """Delete a job and its output directory (``DELETE /api/jobs/{id}``)."""
        found = self._mutate(JOB_DELETE, {"job_id": job_id}, idempotency_key, approval, reason, endpoint,
                                         action_id, context, deadline, timeout)
        return attrs.evolve(found, id=found.id or job_id)

    def pause(self, job_id: str, *, idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
              reason: Optional[str] = None, endpoint: Optional[str] = None, action_id: Optional[str] = None,
              context: Optional[ExecutionContext] = None, deadline: Deadline = None,
              timeout: TimeoutLike = None) -> Job:
        """Pause a job (``POST …/pause``): ``state`` ``paused``, ``enabled`` False."""
        return self._mutate(JOB_PAUSE, {"job_id": job_id}, idempotency_key, approval, reason, endpoint, action_id,
                            context, deadline, timeout)

    def resume(self, job_id: str, *, idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
               reason: Optional[str] = None, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> Job:
        """Resume a job (``POST …/resume``): scheduled again, ``next_run_at`` recomputed from now
        (a one-shot whose time passed is refused)."""
        return self._mutate(JOB_RESUME, {"job_id": job_id}, idempotency_key, approval, reason, endpoint, action_id,
                            context, deadline, timeout)

    def run(self, job_id: str, *, idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
            reason: Optional[str] = None, endpoint: Optional[str] = None, action_id: Optional[str] = None,
            context: Optional[ExecutionContext] = None, deadline: Deadline = None,
            timeout: TimeoutLike = None) -> Job:
        """Make a job due now (``POST …/run``): it does **not** run in this request.

        Hermes sets ``next_run_at`` to now (un-pausing the job) and its scheduler runs it on its
        next tick (every 60 s); the job is returned as Hermes returns it, with ``last_run_at``
        still unchanged. Read the outcome later with :meth:`get` (``last_run_at``,
        ``last_status``, ``last_error``): a one-shot job deletes itself after it ran.
        """
        return self._mutate(JOB_RUN, {"job_id": job_id}, idempotency_key, approval, reason, endpoint, action_id,
                            context, deadline, timeout)

    def _mutate(self, spec: OperationSpec[T], data: dict[str, object], key: str, approval: Optional[ApprovalDecision],
                reason: Optional[str], endpoint: Optional[str], action_id: Optional[str],
                context: Optional[ExecutionContext], deadline: Deadline, timeout: TimeoutLike) -> T:
        return self._executor.request(spec, data, CallOptions(
            endpoint=endpoint, idempotency_key=None if key is REQUIRED else key, action_id=action_id,
            context=context, deadline=deadline, timeout=timeout, approval=approval, reason=reason))
