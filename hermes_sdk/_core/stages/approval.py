"""Stage 2, approval: an approval-gated operation runs only with an approved decision bound to its input."""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Optional

from ...errors import ApprovalRequiredError, HermesError, InvalidInputError, PluginError
from .._constants import APPROVAL_TTL_SECONDS
from ..approval import (
    ApprovalDecision,
    ApprovalProvider,
    ApprovalRequest,
    ProviderAnswer,
    approval_required_message,
    ask,
    check,
    identifiers_of,
    input_hash,
)
from ..approver_view import input_view
from ..call import Call
from ..endpoints import ExecutionContext
from ..redaction import Redactor


def request_for(capability_id: str, input: Mapping[str, object], reason: Optional[str], action_id: str,
                context: Optional[ExecutionContext], redactor: Redactor,
                identifiers: Optional[Mapping[str, str]] = None) -> ApprovalRequest:
    """The ApprovalRequest for an input: bound by its canonical hash, with the approver's view of it.

    The snapshot is the input as an approver sees it (:func:`~hermes_sdk._core.approver_view.input_view`:
    every value shown but a secret's, not the log redaction), ``fully_shown`` False when the client's
    policy hides more. Its ``operation`` comes from the capability id and its ``identifiers`` from
    the input's id fields (plus ``identifiers``, e.g. a run command's pattern key).
    """
    now = time.time()
    digest = input_hash(capability_id, input)  # first: an input JSON cannot encode is refused as such
    view = input_view(redactor, input)
    return ApprovalRequest(
        id=f"aprq_{uuid.uuid4().hex}", action_id=action_id, capability_id=capability_id,
        input_snapshot=view.snapshot, input_hash=digest, reason=reason,
        fully_shown=view.fully_shown, not_shown=view.not_shown,
        requested_at=now, expires_at=now + APPROVAL_TTL_SECONDS,
        principal_id=context.principal_id if context else None, tenant_id=context.tenant_id if context else None,
        operation=capability_id.rpartition(":")[2], identifiers={**identifiers_of(input), **(identifiers or {})},
    )


def ask_provider(provider: ApprovalProvider, request: ApprovalRequest) -> ProviderAnswer:
    """Ask an approval provider; a provider that raises something other than a HermesError is a PluginError."""
    try:
        return ask(provider, request)
    except HermesError:
        raise
    except Exception as exc:
        raise PluginError(f"the approval provider failed: {type(exc).__name__}",
                          details={"hook": "approval_provider"}) from exc


def as_decision(value: object) -> ApprovalDecision:
    """An ApprovalDecision, or its AIP JSON shape as one; InvalidInputError for anything else."""
    if isinstance(value, Mapping):
        try:
            value = ApprovalDecision(**value)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"approval is not a valid decision: {exc}",
                                    details={"field": "approval"}) from None
    if not isinstance(value, ApprovalDecision):
        raise InvalidInputError("approval must be an ApprovalDecision", details={"field": "approval"})
    return value


def approve(call: Call) -> None:
    """Set ``call.decision`` from ``approval=`` or the approval provider, checked against this input."""
    if not call.contract.requires_approval:
        return
    rt = call.runtime
    request = request_for(call.capability_id, call.input, call.reason, call.action_id, call.context, rt.redactor)
    decision = call.approval
    if decision is None and rt.approval_provider is not None:
        decision = ask_provider(rt.approval_provider, request)
    if decision is None:
        raise ApprovalRequiredError(approval_required_message(call.operation),
                                    details={"input_hash": request.input_hash, "approval_request_id": request.id})
    call.decision = check(as_decision(decision), request)  # the decision completed with its evidence
