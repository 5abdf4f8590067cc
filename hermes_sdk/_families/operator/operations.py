"""The connector's ``operator`` operation: a governed run on ``/v1/runs`` (spec section 9.4).

One capability, several HTTP calls: ``POST /v1/runs`` starts it, its events (or ``GET
/v1/runs/{id}``) follow it, ``POST /v1/runs/{id}/approval`` answers it on resume. The registered
spec is composite (``invoke()`` hands the whole action to ``resource.py``); its two
internal specs share its contract and capability id, so the idempotency key, the approval binding
and the records of a start and of a resume are the operator's.
"""

from __future__ import annotations

import json
from typing import Mapping

import attrs

from hermes_sdk._families.runs.operations import APPROVAL_CHOICES, refine_run_error, refine_start_error
from hermes_sdk._families.runs.types import ApprovalAnswer, RunStarted, approval_answer, run_started
from hermes_sdk.errors import InvalidInputError
from hermes_sdk.plugin import (
    CONFIDENTIAL,
    MODEL_SIDE_EFFECTS,
    ActionResult,
    AdmitContext,
    Anything,
    Bool,
    Contract,
    Field,
    Input,
    ListOf,
    Object,
    OneOf,
    OperationSpec,
    RequestParts,
    Rule,
    Text,
    path_id,
)
from hermes_sdk.plugin import invalid_input as bad

from .._shared import encode_body, require_input

MAX_INPUT_BYTES = 1024 * 1024
MAX_CANDIDATES = 256
#: The run's instructions (the connector's policy ``system_instructions``).
SYSTEM_INSTRUCTIONS = (
    "You are executing an AIP operator action. The user message is a JSON object: work toward its "
    "`objective`, use its `context`, stay within its `constraints`, and report the outcome in plain text. "
    "Dangerous commands wait for a human approval: do not try to work around a denial."
)

OPERATOR_CONTRACT = Contract(
    operation="operator", method="POST", path="/v1/runs", risk="high", stability="stable", requires_approval=True,
    key_requirement="required", key_ttl_ms=86_400_000, retry_safe=False, streaming=True,
    side_effects=MODEL_SIDE_EFFECTS + ("code_execution",), data=dict(CONFIDENTIAL), expected_latency_ms=30_000,
    timeout_ms=900_000, supports_async=True, supports_cancel=True, async_expected=True, kind="agent")


def _aip(data: Mapping[str, object], name: str) -> str:
    aip = data.get("_aip")
    value = aip.get(name) if isinstance(aip, Mapping) else None
    if not isinstance(value, str) or not value:
        raise InvalidInputError("the operator runs only through client.operate() or invoke() (its governed "
                                "lifecycle)", details={"field": "_aip"})
    return value


_CANDIDATES = f"'candidate_capabilities' must be at most {MAX_CANDIDATES} non-empty strings"
#: A start: the objective and what the run may use.
START_INPUT = Input((
    Field("objective", Text(non_empty=True, message="'{field}' must be a non-empty string"), required=True,
          null="checked", doc="what the operator works toward"),
    Field("context", Anything(), doc="any JSON the run is given as context"),
    Field("candidate_capabilities", OneOf((ListOf(Text(non_empty=True), MAX_CANDIDATES),), _CANDIDATES)),
    Field("constraints", Object()),
), control=("_aip",), unknown="unknown operator field {name}")
#: A resume's ``resume`` object (its field paths under ``resume.``).
RESUME_FIELDS = Input((
    Field("source_action_id", Text(non_empty=True, message="'{field}' must be the operator action id"),
          required=True, null="checked", doc="the operator action id"),
    Field("choice", Text(one_of=APPROVAL_CHOICES, message=f"'{{field}}' must be one of {', '.join(APPROVAL_CHOICES)}"),
          required=True, null="checked"),
    Field("resolve_all", Bool(message="'{field}' must be a boolean"), null="checked"),
), control=(), unknown="unknown resume field {name}")
def _resume_fields(data: Mapping[str, object]) -> None:
    RESUME_FIELDS.check(data["resume"], prefix="resume.")


#: A resume: ``{"resume": {source_action_id, choice, resolve_all}}``.
RESUME_INPUT = Input((
    Field("resume", Object(message="'{field}' must be an object", input=RESUME_FIELDS), required=True,
          null="checked"),
), control=("_aip",), unknown="a resume takes only 'resume'", rules=(Rule("resume_fields", _resume_fields),))


def _start_or_resume(data: Mapping[str, object]) -> None:
    (RESUME_INPUT if "resume" in data else START_INPUT).check(data)


#: The composite's input: a start, or a resume (``resume`` given, alone).
OPERATOR_INPUT = Input(
    (attrs.evolve(START_INPUT.fields[0], required=False), *START_INPUT.fields[1:],
     Field("resume", Object(input=RESUME_FIELDS), doc="resume a waiting operator action (alone)")),
    extra="provider", numbers=False,
    first=(Rule("start_or_resume", _start_or_resume, "a start (objective required) or a resume (resume alone)",
                 ("resume",)),))


def check_objective(data: Mapping[str, object]) -> dict[str, object]:
    """The start input (``objective``, ``context``, ``candidate_capabilities``, ``constraints``) as
    the run's objective payload."""
    START_INPUT.check(data)
    return _objective(data)


def _objective(data: Mapping[str, object]) -> dict[str, object]:
    candidates = data.get("candidate_capabilities")
    constraints = data.get("constraints")
    return {"kind": "aip_operator_objective", "objective": data.get("objective"), "context": data.get("context"),
            "candidate_capabilities": list(candidates) if isinstance(candidates, list) else [],
            "constraints": dict(constraints) if isinstance(constraints, Mapping) else {},
            "execution_contract": {"downstream_action_ids": "server_assigned_per_call",
                                   "forbid_operator_action_id_reuse": True}}


def check_resume(data: Mapping[str, object]) -> Mapping[str, object]:
    """The resume input ``{"resume": {source_action_id, choice, resolve_all}}``: its ``resume``."""
    RESUME_INPUT.check(data)
    resume = data["resume"]
    assert isinstance(resume, Mapping)
    return resume


def build_start(operation: str, raw: object) -> RequestParts:
    """``POST /v1/runs`` with the objective as pretty-printed JSON and the action's own session."""
    data = require_input(raw)
    payload = _objective(data)
    action_id = _aip(data, "action_id")
    try:
        text = json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise bad("context", f"the operator input is not JSON-serialisable: {type(exc).__name__}") from None
    if len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
        raise bad("input", f"the operator input is over {MAX_INPUT_BYTES} bytes", limit_bytes=MAX_INPUT_BYTES)
    body = {"input": text, "instructions": SYSTEM_INSTRUCTIONS, "session_id": f"aip-operator-{action_id}"}
    return RequestParts({}, encode_body(body))


def build_resume(operation: str, raw: object) -> RequestParts:
    """``POST /v1/runs/{run_id}/approval`` with the resume's choice (the run id comes from the store)."""
    data = require_input(raw)
    resume = data["resume"]
    assert isinstance(resume, Mapping)
    run_id = path_id("run_id", _aip(data, "run_id"))
    body: dict[str, object] = {"choice": resume["choice"]}
    if resume.get("resolve_all"):
        body["all"] = True
    return RequestParts({}, encode_body(body), path_params={"run_id": run_id})


def build_any(operation: str, raw: object) -> RequestParts:
    """The composite spec: a start or a resume input (checked by :data:`OPERATOR_INPUT`; the lifecycle
    sends the requests)."""
    return RequestParts({})


def admit_resume(ctx: AdmitContext[None]) -> None:
    """``always`` only when the client allows permanent approvals (as for ``run_approval``)."""
    resume = ctx.input.get("resume")
    choice = resume.get("choice") if isinstance(resume, Mapping) else None
    if choice == "always" and not ctx.allow_permanent_approvals:
        raise InvalidInputError(
            "'always' makes Hermes allow the pattern process-wide and rewrite its config; build the client "
            "with allow_permanent_approvals=True to send it", details={"field": "resume.choice", "sent": False})


#: The operator's capability. Its lifecycle (``composite``) is the resource's: the family
#: (``__init__``) joins the two, so operations never import a resource.
OPERATOR: OperationSpec[ActionResult] = OperationSpec(OPERATOR_CONTRACT, build_any, input=OPERATOR_INPUT)
#: The start call: the operator's contract, bounded like the connector's start call (60 s).
OPERATOR_START: OperationSpec[RunStarted] = OperationSpec(
    attrs.evolve(OPERATOR_CONTRACT, streaming=False, timeout_ms=60_000), build_start, decode=run_started,
    refine_error=refine_start_error, input=START_INPUT)
#: The approval a resume sends, under the operator's capability (its key and approval binding).
OPERATOR_RESUME: OperationSpec[ApprovalAnswer] = OperationSpec(
    attrs.evolve(OPERATOR_CONTRACT, path="/v1/runs/{run_id}/approval", streaming=False, timeout_ms=60_000),
    build_resume, decode=approval_answer, admit=admit_resume, refine_error=refine_run_error, input=RESUME_INPUT)

