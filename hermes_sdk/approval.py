"""Approval for ``response_delete``: a decision bound to the exact input, with evidence and a TTL."""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Union

import attrs

from ._constants import APPROVAL_TTL_SECONDS
from .errors import ApprovalDeniedError

DECISIONS = ("approved", "denied", "expired", "revoked")
#: How far an approved decision reaches when it answers a run's approval request: ``once`` (the
#: default, this command), ``session`` (this pattern for the rest of this run), ``always`` (Hermes
#: allows the pattern process-wide and rewrites its config; needs ``allow_permanent_approvals``).
SCOPES = ("once", "session", "always")


def canonical_input(input: Mapping[str, Any]) -> dict[str, Any]:
    """The input as approved: control values that are not part of the intent are left out."""
    return {k: v for k, v in input.items() if k not in ("idempotency_key", "_aip")}


def input_hash(capability_id: str, input: Mapping[str, Any]) -> str:
    """Canonical SHA-256 over the capability id and input (sorted keys, compact, UTF-8)."""
    text = json.dumps({"capability_id": capability_id, "input": canonical_input(input)},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@attrs.frozen
class ApprovalDecision:
    approval_id: str
    decision: str = attrs.field(validator=attrs.validators.in_(DECISIONS))
    approver: str
    decided_at: float
    expires_at: float
    input_hash: str
    reason: Optional[str] = None
    policy_decision_id: Optional[str] = None
    # Evidence from the request it answers (filled by ``ApprovalRequest.approve/deny`` and ``check``).
    input_snapshot: Optional[dict[str, Any]] = None
    approval_request_id: Optional[str] = None
    #: For a run's approval request: ``once`` (None means once), ``session`` or ``always`` (see SCOPES).
    scope: Optional[str] = attrs.field(default=None, validator=attrs.validators.optional(
        attrs.validators.in_(SCOPES)))

    def evidence(self) -> dict[str, Any]:
        """The decision and its evidence as kept with the recorded result (the audit record)."""
        return attrs.asdict(self)


@attrs.frozen
class ApprovalRequest:
    """What an approver sees: never the raw input, only its redacted snapshot and its hash."""

    id: str
    action_id: str
    capability_id: str
    input_snapshot: dict[str, Any]
    input_hash: str
    reason: Optional[str]
    requested_at: float
    expires_at: float
    principal_id: Optional[str] = None
    tenant_id: Optional[str] = None

    def approve(self, *, approver: str, policy_decision_id: str, reason: Optional[str] = None,
                scope: Optional[str] = None) -> ApprovalDecision:
        """An approved decision bound to this request.

        Args:
            approver: who approved.
            policy_decision_id: the policy decision that allowed it.
            reason: why (default: the request's reason).
            scope: for a run's approval request, ``session`` approves the pattern for the rest of
                the run; None or ``once`` approves this command only.
        """
        return self._decide("approved", approver, reason, policy_decision_id, scope)

    def deny(self, *, approver: str, reason: Optional[str] = None) -> ApprovalDecision:
        """A denied decision bound to this request."""
        return self._decide("denied", approver, reason, None)

    def _decide(self, decision: str, approver: str, reason: Optional[str],
                policy_decision_id: Optional[str], scope: Optional[str] = None) -> ApprovalDecision:
        now = time.time()
        return ApprovalDecision(
            approval_id=f"apr_{uuid.uuid4().hex}", decision=decision, approver=approver, decided_at=now,
            expires_at=min(now + APPROVAL_TTL_SECONDS, self.expires_at), input_hash=self.input_hash,
            reason=reason or self.reason, policy_decision_id=policy_decision_id,
            input_snapshot=self.input_snapshot, approval_request_id=self.id, scope=scope,
        )


ProviderFn = Callable[[ApprovalRequest], Optional[ApprovalDecision]]
ApprovalProvider = Union[ProviderFn, "HasRequestApproval"]


class HasRequestApproval(Protocol):
    def request_approval(self, request: ApprovalRequest) -> Optional[ApprovalDecision]: ...


def ask(provider: Any, request: ApprovalRequest) -> Optional[ApprovalDecision]:
    """Call a provider given as a callable or as an object with ``request_approval``."""
    method = getattr(provider, "request_approval", None)
    if callable(method):
        return method(request)  # type: ignore[no-any-return]
    if callable(provider):
        return provider(request)  # type: ignore[no-any-return]
    raise TypeError("an approval provider must be callable or have request_approval()")


def check(decision: ApprovalDecision, request: ApprovalRequest, now: Optional[float] = None) -> ApprovalDecision:
    """Raise ApprovalDeniedError unless the decision approves this exact input, with evidence, in time.

    Returns the decision completed with the request's evidence (reason, redacted input snapshot,
    request id): the record kept with the action result.
    """
    now = time.time() if now is None else now
    details = {"approval_id": decision.approval_id, "decision": decision.decision}
    if decision.decision != "approved":
        raise ApprovalDeniedError(f"approval was {decision.decision}", details=details)
    if decision.input_hash != request.input_hash:
        raise ApprovalDeniedError("approval is bound to a different input", details={**details,
                                                                                      "reason": "input_mismatch"})
    if now >= decision.expires_at or now - decision.decided_at >= APPROVAL_TTL_SECONDS:
        raise ApprovalDeniedError("approval expired (15-minute TTL)", details={**details, "reason": "expired"})
    if decision.decided_at > now + 60:
        raise ApprovalDeniedError("approval is dated in the future", details={**details, "reason": "clock"})
    missing = [name for name, value in (("reason", decision.reason or request.reason),
                                        ("policy_decision_id", decision.policy_decision_id),
                                        ("approver", decision.approver)) if not value]
    if missing:
        raise ApprovalDeniedError("approval lacks required evidence", details={**details, "missing": missing})
    return attrs.evolve(decision, reason=decision.reason or request.reason,
                        input_snapshot=decision.input_snapshot or request.input_snapshot,
                        approval_request_id=decision.approval_request_id or request.id)


class DenyAll:
    """The default: no approver is configured, so nothing destructive runs."""

    def request_approval(self, request: ApprovalRequest) -> Optional[ApprovalDecision]:
        return None


class CallbackProvider:
    """Wraps a function; handy for an interactive prompt or a ticketing system."""

    def __init__(self, callback: ProviderFn) -> None:
        self._callback = callback

    def request_approval(self, request: ApprovalRequest) -> Optional[ApprovalDecision]:
        return self._callback(request)


def _names(value: Optional[Iterable[str]]) -> Optional[frozenset[str]]:
    if value is None:
        return None
    return frozenset([value]) if isinstance(value, str) else frozenset(value)


@attrs.frozen
class PolicyRule:
    """Approve when principal and tenant match (None matches any); the rule names its policy decision."""

    policy_decision_id: str
    principals: Optional[frozenset[str]] = attrs.field(default=None, converter=_names)
    tenants: Optional[frozenset[str]] = attrs.field(default=None, converter=_names)
    capabilities: Optional[frozenset[str]] = attrs.field(default=None, converter=_names)

    def matches(self, request: ApprovalRequest) -> bool:
        return all(allowed is None or value in allowed for allowed, value in (
            (self.principals, request.principal_id), (self.tenants, request.tenant_id),
            (self.capabilities, request.capability_id)))


class StaticPolicyProvider:
    """Approves requests that match a rule (on principal, tenant, capability); denies the rest."""

    def __init__(self, rules: Iterable[PolicyRule], approver: str = "static-policy",
                 deny_unmatched: bool = True) -> None:
        self.rules = tuple(rules)
        self.approver = approver
        self.deny_unmatched = deny_unmatched

    def request_approval(self, request: ApprovalRequest) -> Optional[ApprovalDecision]:
        for rule in self.rules:
            if rule.matches(request):
                return request.approve(approver=self.approver, policy_decision_id=rule.policy_decision_id,
                                       reason=request.reason or "approved by static policy")
        if self.deny_unmatched:
            return request.deny(approver=self.approver, reason="no policy rule matched")
        return None
