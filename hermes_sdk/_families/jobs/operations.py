"""The cron jobs family (``/api/jobs``), as specs.

Inputs follow the connector (``spec/hermes-sessions-jobs.md`` section 9.2): a ``job_id`` must be
12 lower-case hex characters (refused before I/O otherwise); create takes ``name`` (1-200),
``schedule``, ``prompt`` (at most 5000), ``deliver``, ``skills``, ``repeat`` (an integer of at
least 1); update the same plus ``enabled`` and ``skill``. The 500s Hermes answers for a schedule
it cannot parse, a past one-shot time, invalid JSON or its lifecycle guard store nothing: they
are refined into a permanent refusal (not retryable, not uncertain) with the server's message.
"""

from __future__ import annotations

import re
from typing import Mapping

from hermes_sdk._families._shared import CONTROL_FIELDS, contract, encode_body, only_fields, require_input
from hermes_sdk.errors import HermesError, RemoteRejectedError
from hermes_sdk.plugin import Contract, OperationSpec, RequestParts, path_id
from hermes_sdk.plugin import invalid_input as bad

from . import types

JOB_ID = re.compile(r"[a-f0-9]{12}")
MAX_NAME_CHARS = 200
MAX_SCHEDULE_CHARS = 512
MAX_PROMPT_CHARS = 5000
MAX_DELIVER_CHARS = 256
MAX_SKILLS = 256
MAX_SKILL_CHARS = 256
CREATE_FIELDS = ("name", "schedule", "prompt", "deliver", "skills", "repeat")
UPDATE_FIELDS = ("name", "schedule", "prompt", "deliver", "skills", "skill", "repeat", "enabled")


def job_id_value(value: object) -> str:
    """A job id as Hermes makes them: exactly 12 lower-case hex characters (``uuid4().hex[:12]``)."""
    path_id("job_id", value)  # the rule of every path id first, then Hermes' own format
    if not isinstance(value, str) or JOB_ID.fullmatch(value) is None:
        raise bad("job_id", "`job_id` must match ^[a-f0-9]{12}$ (a job's id, not its name)")
    return value


def _text(data: Mapping[str, object], name: str, limit: int, *, required: bool = False) -> None:
    value = data.get(name)
    if value is None:
        if required:
            raise bad(name, f"'{name}' is required")
        return
    if not isinstance(value, str):
        raise bad(name, f"'{name}' must be a string")
    if required and not value.strip():
        raise bad(name, f"'{name}' must not be empty")
    if len(value.strip() if name == "name" else value) > limit:
        raise bad(name, f"'{name}' is longer than {limit} characters", limit=limit)


def _check_fields(data: Mapping[str, object], *, create: bool) -> dict[str, object]:
    _text(data, "name", MAX_NAME_CHARS, required=create)
    _text(data, "schedule", MAX_SCHEDULE_CHARS, required=create)
    _text(data, "prompt", MAX_PROMPT_CHARS)
    _text(data, "deliver", MAX_DELIVER_CHARS)
    if not create:
        _text(data, "skill", MAX_SKILL_CHARS)
        for name in ("name", "schedule"):  # strings by now (_text)
            value = data.get(name)
            if isinstance(value, str) and not value.strip():
                raise bad(name, f"'{name}' must not be empty")
    skills = data.get("skills")
    if skills is not None:
        if not isinstance(skills, list) or len(skills) > MAX_SKILLS:
            raise bad("skills", f"'skills' must be a list of at most {MAX_SKILLS} skill names")
        for i, item in enumerate(skills):
            if not isinstance(item, str) or not item.strip() or len(item) > MAX_SKILL_CHARS:
                raise bad(f"skills[{i}]", f"skills[{i}] must be a non-empty string of at most {MAX_SKILL_CHARS} "
                                          "characters")
    repeat = data.get("repeat")
    if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1):
        raise bad("repeat", "'repeat' must be an integer of at least 1 (how many times the job runs)")
    enabled = data.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        raise bad("enabled", "'enabled' must be a boolean")
    return {k: v for k, v in data.items() if k not in CONTROL_FIELDS and k != "job_id" and v is not None}


def build_list(operation: str, raw: object) -> RequestParts:
    """``GET /api/jobs?include_disabled=true|false``."""
    data = require_input(raw)
    only_fields(data, ("include_disabled",))
    flag = data.get("include_disabled")
    if flag is not None and not isinstance(flag, bool):
        raise bad("include_disabled", "'include_disabled' must be a boolean")
    return RequestParts({}, query=(("include_disabled", "true" if flag else "false"),))


def build_create(operation: str, raw: object) -> RequestParts:
    """``POST /api/jobs``: name and schedule required."""
    data = require_input(raw)
    only_fields(data, CREATE_FIELDS)
    return RequestParts({}, encode_body(_check_fields(data, create=True)))


def build_update(operation: str, raw: object) -> RequestParts:
    """``PATCH /api/jobs/{job_id}``: at least one of the whitelisted fields."""
    data = require_input(raw)
    only_fields(data, ("job_id",) + UPDATE_FIELDS)
    job_id = job_id_value(data.get("job_id"))
    body = _check_fields(data, create=False)
    if not body:
        raise bad("input", f"give at least one field to update: {', '.join(UPDATE_FIELDS)}")
    return RequestParts({}, encode_body(body), path_params={"job_id": job_id})


def build_job(operation: str, raw: object) -> RequestParts:
    """``GET``/``DELETE /api/jobs/{job_id}`` and ``POST …/pause|resume|run``: the id only, no body."""
    data = require_input(raw)
    only_fields(data, ("job_id",))
    return RequestParts({}, path_params={"job_id": job_id_value(data.get("job_id"))})


def refine_job_error(error: HermesError) -> HermesError:
    """A jobs 500 with Hermes' ``{"error": "<text>"}`` body is the handler's broad ``except``
    around validation (a bad schedule, a past one-shot, invalid JSON, the lifecycle guard): nothing
    was stored, so it is a permanent refusal with the server's message, not an uncertain outage.
    A 500 without that body (a crash, a proxy) stays a ServerError."""
    message = error.details.get("provider_message")
    if error.http_status == 500 and isinstance(message, str):
        return RemoteRejectedError(
            f"Hermes refused the job: {message}", http_status=500,
            details={**error.details, "stored": False, "refused_with_500": True})
    return error


_J = "/api/jobs/{job_id}"
_AGENT_WRITE = ("read", "write", "external_network")


def _mutation(operation: str, method: str, path: str, **overrides: object) -> Contract:
    return contract(operation, method, path, read_only=False, requires_approval=True, key_requirement="required",
                    **overrides)


_INTERNAL_WRITE = {"classification": "internal", "contains_pii": True, "redaction_required": True}

JOBS_LIST: OperationSpec[list[types.Job]] = OperationSpec(
    contract("jobs_list", "GET", "/api/jobs", read_only=True), build_list, decode=types.jobs)
JOB_CREATE: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_create", "POST", "/api/jobs"), build_create, decode=types.job, refine_error=refine_job_error)
JOB_GET: OperationSpec[types.Job] = OperationSpec(
    contract("job_get", "GET", _J, read_only=True), build_job, decode=types.job, reply_id="job.id")
JOB_UPDATE: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_update", "PATCH", _J), build_update, decode=types.job, refine_error=refine_job_error,
    reply_id="job.id")
JOB_DELETE: OperationSpec[types.JobDeleted] = OperationSpec(
    _mutation("job_delete", "DELETE", _J, risk="high", side_effects=("read", "delete", "external_network"),
              data={"classification": "restricted", "contains_pii": True, "redaction_required": True}),
    build_job, decode=types.job_deleted, refine_error=refine_job_error, reply_id="id")
JOB_PAUSE: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_pause", "POST", _J + "/pause", data=dict(_INTERNAL_WRITE)), build_job, decode=types.job,
    refine_error=refine_job_error, reply_id="job.id")
JOB_RESUME: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_resume", "POST", _J + "/resume", data=dict(_INTERNAL_WRITE)), build_job, decode=types.job,
    refine_error=refine_job_error, reply_id="job.id")
JOB_RUN: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_run", "POST", _J + "/run", risk="high", kind="agent", side_effects=_AGENT_WRITE),
    build_job, decode=types.job, refine_error=refine_job_error, reply_id="job.id")

JOB_SPECS = (JOBS_LIST, JOB_CREATE, JOB_GET, JOB_UPDATE, JOB_DELETE, JOB_PAUSE, JOB_RESUME, JOB_RUN)
