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

from hermes_sdk._families._shared import CONTROL_FIELDS, contract, encode_body
from hermes_sdk.errors import HermesError, RemoteRejectedError
from hermes_sdk.plugin import Bool, Contract, Field, Input, Int, ListOf, OperationSpec, PathId, RequestParts, Text

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
    _JOB_ID.check("job_id", value)
    return str(value)


_JOB_ID = PathId(JOB_ID.pattern, "`job_id` must match ^[a-f0-9]{12}$ (a job's id, not its name)")
_ID = Field("job_id", _JOB_ID, required=True, null="checked",
            doc="the job's id (12 lower-case hex characters)")
_NAME = Text(MAX_NAME_CHARS, non_empty=True, strip_for_length=True)
_SCHEDULE = Text(MAX_SCHEDULE_CHARS, non_empty=True)
_TEXTS = (Field("prompt", Text(MAX_PROMPT_CHARS)), Field("deliver", Text(MAX_DELIVER_CHARS)))
_SKILLS = Field("skills", ListOf(Text(MAX_SKILL_CHARS, non_empty=True), MAX_SKILLS,
                                 message=f"'{{field}}' must be a list of at most {MAX_SKILLS} skill names",
                                 item_message=f"{{field}} must be a non-empty string of at most {MAX_SKILL_CHARS} "
                                              "characters"))
_REPEAT = Field("repeat", Int(1, message="'{field}' must be an integer of at least 1 (how many times the job runs)"),
                doc="how many times the job runs")

LIST_INPUT = Input((Field("include_disabled", Bool()),))
CREATE_INPUT = Input((Field("name", _NAME, required=True), Field("schedule", _SCHEDULE, required=True), *_TEXTS,
                      _SKILLS, _REPEAT))
UPDATE_INPUT = Input((_ID, Field("name", _NAME), Field("schedule", _SCHEDULE), *_TEXTS, _SKILLS,
                      Field("skill", Text(MAX_SKILL_CHARS)), _REPEAT, Field("enabled", Bool())),
                     at_least_one=(UPDATE_FIELDS,), none_given="give at least one field to update: {names}")
JOB_INPUT = Input((_ID,))


def _body(data: Mapping[str, object]) -> dict[str, object]:
    return {k: v for k, v in data.items() if k not in CONTROL_FIELDS and k != "job_id" and v is not None}


def build_list(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``GET /api/jobs?include_disabled=true|false``."""
    return RequestParts({}, query=(("include_disabled", "true" if data.get("include_disabled") else "false"),))


def build_create(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``POST /api/jobs``: name and schedule required."""
    return RequestParts({}, encode_body(_body(data)))


def build_update(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``PATCH /api/jobs/{job_id}``: at least one of the whitelisted fields."""
    return RequestParts({}, encode_body(_body(data)), path_params={"job_id": str(data["job_id"])})


def build_job(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``GET``/``DELETE /api/jobs/{job_id}`` and ``POST …/pause|resume|run``: the id only, no body."""
    return RequestParts({}, path_params={"job_id": str(data["job_id"])})


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
    contract("jobs_list", "GET", "/api/jobs", read_only=True), build_list, decode=types.jobs, input=LIST_INPUT)
JOB_CREATE: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_create", "POST", "/api/jobs"), build_create, decode=types.job, refine_error=refine_job_error,
    input=CREATE_INPUT)
JOB_GET: OperationSpec[types.Job] = OperationSpec(
    contract("job_get", "GET", _J, read_only=True), build_job, decode=types.job, reply_id="job.id", input=JOB_INPUT)
JOB_UPDATE: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_update", "PATCH", _J), build_update, decode=types.job, refine_error=refine_job_error,
    reply_id="job.id", input=UPDATE_INPUT)
JOB_DELETE: OperationSpec[types.JobDeleted] = OperationSpec(
    _mutation("job_delete", "DELETE", _J, risk="high", side_effects=("read", "delete", "external_network"),
              data={"classification": "restricted", "contains_pii": True, "redaction_required": True}),
    build_job, decode=types.job_deleted, refine_error=refine_job_error, reply_id="id", input=JOB_INPUT)
JOB_PAUSE: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_pause", "POST", _J + "/pause", data=dict(_INTERNAL_WRITE)), build_job, decode=types.job,
    refine_error=refine_job_error, reply_id="job.id", input=JOB_INPUT)
JOB_RESUME: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_resume", "POST", _J + "/resume", data=dict(_INTERNAL_WRITE)), build_job, decode=types.job,
    refine_error=refine_job_error, reply_id="job.id", input=JOB_INPUT)
JOB_RUN: OperationSpec[types.Job] = OperationSpec(
    _mutation("job_run", "POST", _J + "/run", risk="high", kind="agent", side_effects=_AGENT_WRITE),
    build_job, decode=types.job, refine_error=refine_job_error, reply_id="job.id", input=JOB_INPUT)

JOB_SPECS = (JOBS_LIST, JOB_CREATE, JOB_GET, JOB_UPDATE, JOB_DELETE, JOB_PAUSE, JOB_RESUME, JOB_RUN)
