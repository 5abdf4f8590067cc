"""Approval for ``response_delete``: a decision bound to the exact input, with evidence and a TTL."""

from __future__ import annotations

import hashlib
import json
import math
import time
import uuid
from typing import Iterable, Mapping, Optional, Protocol, Union

import attrs

from ..errors import ApprovalDeniedError, InvalidInputError
from ._constants import APPROVAL_TTL_SECONDS

DECISIONS = ("approved", "denied", "expired", "revoked")
#: How far an approved decision reaches when it answers a run's approval request: ``once`` (the
#: default, this command), ``session`` (this pattern for the rest of this run), ``always`` (Hermes
#: allows the pattern process-wide and rewrites its config; needs ``allow_permanent_approvals``).
SCOPES = ("once", "session", "always")
#: Input fields an approval provider may read in clear on ``ApprovalRequest.identifiers``: the ids
#: of what the operation acts on (never a prompt or an output, which stay redacted).
IDENTIFIER_FIELDS = ("response_id", "run_id", "session_id", "new_session_id", "job_id")


def identifiers_of(input: Mapping[str, object]) -> dict[str, str]:
    """The ids an input acts on (``IDENTIFIER_FIELDS`` given as non-empty strings), in clear."""
    found = {name: input.get(name) for name in IDENTIFIER_FIELDS}
    return {name: value for name, value in found.items() if isinstance(value, str) and value}


def canonical_input(input: Mapping[str, object]) -> dict[str, object]:
    """The input as approved: control values that are not part of the intent are left out."""
    return {k: v for k, v in input.items() if k not in ("idempotency_key", "_aip")}


#: Built once: ``json.dumps`` with options builds an encoder per call (~1 us of every keyed call).
_HASH_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def input_hash(capability_id: str, input: Mapping[str, object]) -> str:
    """Canonical SHA-256 over the capability id and input (sorted keys, compact, UTF-8).

    Raises InvalidInputError for an input JSON cannot encode (a part that never reaches the
    provider body can still reach here): the hash is taken before anything is sent or reserved.
    """
    try:
        text = _HASH_ENCODER.encode({"capability_id": capability_id, "input": canonical_input(input)})
        data = text.encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        from ..errors import InvalidInputError

        raise InvalidInputError(f"input is not JSON-serialisable: {type(exc).__name__}",
                                details={"field": "input"}) from None
    return hashlib.sha256(data).hexdigest()


def _timestamp(value: object) -> bool:
    """A usable decision time: a finite real number of epoch seconds (not a bool, NaN or infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) < 1e12 if isinstance(value, int) else math.isfinite(value) and abs(value) < 1e12


def _check_timestamp(_: object, attribute: "attrs.Attribute[float]", value: object) -> None:
    if not _timestamp(value):
        raise InvalidInputError(f"approval {attribute.name} must be finite epoch seconds, not {value!r}",
                                details={"field": f"approval.{attribute.name}"})


@attrs.frozen
class ApprovalDecision:
    """An approver's answer to an :class:`~hermes_sdk.ApprovalRequest`, bound to one input by its hash.

    Build it with :meth:`~hermes_sdk.ApprovalRequest.approve` or :meth:`~hermes_sdk.ApprovalRequest.deny`
    (or from its AIP JSON shape) and pass it as ``approval=``. Before anything is sent, the SDK checks it
    against the call's own input, TTL and evidence; a mismatch raises :class:`~hermes_sdk.ApprovalDeniedError`.

    Attributes:
        approval_id: this decision's id (``apr_...``).
        decision: ``approved``, ``denied``, ``expired`` or ``revoked``; only ``approved`` lets a call run.
        approver: who decided (a person or a policy engine).
        decided_at: when, in epoch seconds; a decision is valid for 15 minutes.
        expires_at: epoch seconds after which the decision no longer counts.
        input_hash: :func:`~hermes_sdk.input_hash` of the capability id and the input it approves.
        reason: why the action is wanted (required evidence; the request's ``reason`` when not given).
        policy_decision_id: the policy decision that allowed it (required evidence).
        input_snapshot: the input as the approver was shown it (see ``ApprovalRequest``); not in ``repr()``.
        approval_request_id: the id of the :class:`~hermes_sdk.ApprovalRequest` it answers.
        scope: for a run's approval request, ``once`` (None), ``session`` or ``always``.
        blind: the approver knowingly approves a command that was not fully shown
            (``ApprovalRequest.fully_shown`` False); without it such an approval does not stand.
    """

    approval_id: str
    decision: str = attrs.field(validator=attrs.validators.in_(DECISIONS))
    approver: str
    decided_at: float = attrs.field(validator=_check_timestamp)
    expires_at: float = attrs.field(validator=_check_timestamp)
    input_hash: str
    reason: Optional[str] = None
    policy_decision_id: Optional[str] = None
    # Evidence from the request it answers (filled by ``ApprovalRequest.approve/deny`` and ``check``).
    input_snapshot: Optional[dict[str, object]] = attrs.field(default=None, repr=False)
    approval_request_id: Optional[str] = None
    #: For a run's approval request: ``once`` (None means once), ``session`` or ``always`` (see SCOPES).
    scope: Optional[str] = attrs.field(default=None, validator=attrs.validators.optional(
        attrs.validators.in_(SCOPES)))
    blind: bool = False

    def evidence(self) -> dict[str, object]:
        """The decision and its evidence as kept with the recorded result (the audit record)."""
        return attrs.asdict(self)


@attrs.frozen
class ApprovalRequest:
    """What an approver sees: the operation, the ids it acts on, the redacted input and its hash.

    Handed to the approval provider, or built up front with
    :meth:`~hermes_sdk.HermesClient.approval_request`; answer it with :meth:`approve` or :meth:`deny`.
    The same provider answers approval-gated calls (``response_delete``, ...) *and* the agent's
    shell commands during a run (``operation == "run_approval"``): tell them apart by
    :attr:`operation` before approving anything.

    Attributes:
        id: this request's id (``aprq_...``).
        action_id: the action that asks.
        capability_id: the capability to approve.
        input_snapshot: the input as the approver is shown it: every value (ids, names, a job's
            schedule and prompt, a run's command) with only secrets' values replaced and every
            character visible, not the log redaction; where the client's policy hides more,
            :attr:`fully_shown` is False. Not in ``repr()``.
        input_hash: :func:`~hermes_sdk.input_hash` of the capability id and the exact input.
        reason: the ``reason=`` given to the call, or None.
        requested_at: epoch seconds of the request.
        expires_at: epoch seconds after which a decision on it no longer counts (15 minutes).
        principal_id: the principal of the call's context, or None.
        tenant_id: the tenant of the call's context, or None.
        operation: the operation asking (``response_delete``, ``run_approval`` for a run's
            shell command, ...), as in the capability id.
        identifiers: the ids the operation acts on, in clear (``response_id``, ``session_id``,
            ``job_id``; for a run's command ``run_id``, Hermes' ``pattern_key``, e.g.
            ``recursive delete``, and the run's ``session_id``; for a command in a ``client.operate`` run also
            ``operator_action_id``, the id ``operate(resume=...)`` takes); prompts and outputs are
            never in it. Not in ``repr()``.
        objective: for a run's command, what the run was asked to do (its input, or an operator
            run's objective) through the client's redactor (credentials and ids scrubbed, plugin
            filters applied with the key ``objective``), for the approver to read; None otherwise.
            Not in ``repr()``, not bound by the hash (the decision binds the command).
        fully_shown: False when the client's redaction policy hid more of the input than a
            credential's value (a word shaped like an API key, a redaction pattern or filter of the
            client), or a value cannot be shown (a run's command Hermes sent as something other
            than a string): the approver cannot see what they would approve. An approval of such
            a request is refused (``reason == "not_fully_shown"``; a run's command is answered
            ``deny``) unless given with ``approve(..., blind=True)`` (a run's command that is not
            a string is answered ``deny`` even then).
        not_shown: what hid part of the input when ``fully_shown`` is False, else None.
    """

    id: str
    action_id: str
    capability_id: str
    input_snapshot: dict[str, object] = attrs.field(repr=False)  # the input itself: not for logs
    input_hash: str
    reason: Optional[str]
    requested_at: float
    expires_at: float
    principal_id: Optional[str] = None
    tenant_id: Optional[str] = None
    operation: str = ""
    identifiers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    objective: Optional[str] = attrs.field(default=None, repr=False)
    fully_shown: bool = True
    not_shown: Optional[str] = None

    def approve(self, *, approver: str, policy_decision_id: str, reason: Optional[str] = None,
                scope: Optional[str] = None, blind: bool = False) -> ApprovalDecision:
        """Approve this request: a decision bound to its input, valid for 15 minutes (never past the request).

        Args:
            approver: who approves (recorded with the result).
            policy_decision_id: the policy decision that allows the action (required evidence).
            reason: why; default the request's ``reason``.
            scope: for a run's approval request, ``session`` approves the pattern for the rest of
                the run (``always``: process-wide, only with ``allow_permanent_approvals``); None
                or ``once`` approves this command only.
            blind: approve a command that was not fully shown (:attr:`fully_shown` False) knowingly;
                without it such an approval is refused. Give it only for a policy that decides
                without reading the command.
        """
        return self._decide("approved", approver, reason, policy_decision_id, scope, blind=blind)

    def deny(self, *, approver: str, reason: Optional[str] = None) -> ApprovalDecision:
        """Deny this request; a call given this decision raises :class:`~hermes_sdk.ApprovalDeniedError`.

        Args:
            approver: who denies.
            reason: why it is denied; kept in the error's message and ``details["denial_reason"]``.
        """
        return self._decide("denied", approver, reason, None, keep_reason=True)

    def _decide(self, decision: str, approver: str, reason: Optional[str],
                policy_decision_id: Optional[str], scope: Optional[str] = None,
                keep_reason: bool = False, blind: bool = False) -> ApprovalDecision:
        # A denial keeps only the denier's own reason: the call's reason says why it was wanted.
        now = time.time()
        return ApprovalDecision(
            approval_id=f"apr_{uuid.uuid4().hex}", decision=decision, approver=approver, decided_at=now,
            expires_at=min(now + APPROVAL_TTL_SECONDS, self.expires_at), input_hash=self.input_hash,
            reason=reason if keep_reason else reason or self.reason, policy_decision_id=policy_decision_id,
            input_snapshot=self.input_snapshot, approval_request_id=self.id, scope=scope, blind=blind,
        )


#: What an approval provider answers: a decision, its AIP JSON shape (a mapping ``as_decision`` reads),
#: or None to leave the request undecided (an approval-gated call is then refused).
ProviderAnswer = Union[ApprovalDecision, Mapping[str, object], None]


class ApprovalCallback(Protocol):
    """An approval provider given as a function: ``provider(request) -> ApprovalDecision | None``."""

    def __call__(self, request: ApprovalRequest, /) -> ProviderAnswer:
        """Return a decision for ``request``, or None to leave it undecided."""


#: The former name of :class:`ApprovalCallback`.
ProviderFn = ApprovalCallback


class HasRequestApproval(Protocol):
    """An approval provider given as an object: anything with a ``request_approval`` method."""

    def request_approval(self, request: ApprovalRequest) -> ProviderAnswer:
        """Return a decision for ``request``, or None to leave it undecided (the call is then refused)."""


#: What ``HermesClient(approval_provider=...)``, ``chat_stream``, ``run``, ``client.runs.start`` and the
#: ``hermes_approval_provider`` hook take: a function of the :class:`ApprovalRequest` (an
#: :class:`ApprovalCallback`) or an object with ``request_approval(request)`` (:class:`HasRequestApproval`),
#: answering an :class:`ApprovalDecision`, its JSON shape, or None.
ApprovalProvider = Union[ApprovalCallback, HasRequestApproval]


def ask(provider: ApprovalProvider, request: ApprovalRequest) -> ProviderAnswer:
    """Call a provider given as a callable or as an object with ``request_approval``."""
    method = getattr(provider, "request_approval", None)
    if callable(method):
        answer: ProviderAnswer = method(request)
        return answer
    if callable(provider):
        return provider(request)
    raise TypeError("an approval provider must be callable or have request_approval()")


def check(decision: ApprovalDecision, request: ApprovalRequest, now: Optional[float] = None) -> ApprovalDecision:
    """Raise ApprovalDeniedError unless the decision approves this exact input, with evidence, in time.

    Returns the decision completed with the request's evidence (reason, redacted input snapshot,
    request id): the record kept with the action result.
    """
    now = time.time() if now is None else now
    details = {"approval_id": decision.approval_id, "decision": decision.decision}
    if decision.decision != "approved":
        raise denied_error(decision, details)
    if not (_timestamp(decision.decided_at) and _timestamp(decision.expires_at)):
        # Fail closed: a NaN compares false with everything, so it would never expire. (The
        # constructor refuses these; one changed behind its back, or a subclass's, lands here.)
        raise ApprovalDeniedError("approval timestamps are not finite epoch seconds",
                                  details={**details, "reason": "malformed_timestamps"})
    if decision.input_hash != request.input_hash:
        raise ApprovalDeniedError("approval is bound to a different input", details={**details,
                                                                                      "reason": "input_mismatch"})
    if not request.fully_shown and decision.blind is not True:
        # The approver was shown less than the command (a policy hid a word that is not a secret's value).
        raise ApprovalDeniedError(
            f"the command was not fully shown to the approver ({request.not_shown or 'part of it is hidden'}); "
            "an approval of it stands only with approve(..., blind=True)",
            details={**details, "reason": "not_fully_shown"})
    if now >= decision.expires_at or now - decision.decided_at >= APPROVAL_TTL_SECONDS:
        raise ApprovalDeniedError("approval expired (15-minute TTL)", details={**details, "reason": "expired"})
    if decision.decided_at > now + 60:
        raise ApprovalDeniedError("approval is dated in the future", details={**details, "reason": "clock"})
    missing = [name for name, value in (("reason", decision.reason or request.reason),
                                        ("policy_decision_id", decision.policy_decision_id),
                                        ("approver", decision.approver)) if not value]
    if missing:
        hints = {"reason": "reason= on the call or on request.approve(...)",
                 "policy_decision_id": "policy_decision_id= on request.approve(...)",
                 "approver": "approver= on request.approve(...)"}
        raise ApprovalDeniedError(
            "approval lacks required evidence: " + ", ".join(missing) + " (give "
            + "; ".join(hints[name] for name in missing) + ")",
            details={**details, "reason": "missing_evidence", "missing": missing})
    return attrs.evolve(decision, reason=decision.reason or request.reason,
                        input_snapshot=decision.input_snapshot or request.input_snapshot,
                        approval_request_id=decision.approval_request_id or request.id)


def denied_error(decision: ApprovalDecision, details: Mapping[str, object]) -> ApprovalDeniedError:
    """The ApprovalDeniedError of a decision that is not ``approved``: who decided, and their reason."""
    by = f" by {decision.approver}" if decision.approver else ""
    why = f": {decision.reason}" if decision.reason else " (no reason given)"
    return ApprovalDeniedError(f"approval was {decision.decision}{by}{why}; nothing was sent",
                               details={**details, "approver": decision.approver,
                                        "denial_reason": decision.reason})


def approval_required_message(operation: str) -> str:
    """The text of ``ApprovalRequiredError``: what is missing and every way to supply it."""
    return (f"{operation} needs an approved decision bound to this input; nothing was sent. Pass "
            f"approval=client.approval_request({operation!r}, input, reason=...).approve(approver=..., "
            "policy_decision_id=...), or build the client with HermesClient(approval_provider=...) (or install "
            "a plugin implementing hermes_approval_provider); from the shell, confirm at the prompt or pass "
            "--yes to the `hermes-sdk` command. See 'Approvals' in the hermes-sdk documentation")


class DenyAll:
    """The default: no approver is configured, so nothing destructive runs."""

    def request_approval(self, request: ApprovalRequest) -> Optional[ApprovalDecision]:
        """Decide nothing, so every approval-gated call raises :class:`~hermes_sdk.ApprovalRequiredError`."""
        return None


class CallbackProvider:
    """An approval provider that asks a function; handy for an interactive prompt or a ticketing system.

    Args:
        callback: ``callback(request) -> ApprovalDecision | None``.
    """

    def __init__(self, callback: ApprovalCallback) -> None:
        self._callback = callback

    def request_approval(self, request: ApprovalRequest) -> ProviderAnswer:
        """Return what the callback decides for ``request`` (None leaves it undecided)."""
        return self._callback(request)


def _names(value: Optional[Iterable[str]]) -> Optional[frozenset[str]]:
    if value is None:
        return None
    return frozenset([value]) if isinstance(value, str) else frozenset(value)


@attrs.frozen
class PolicyRule:
    """Approve when principal, tenant and capability match (None matches any); the rule names its policy decision.

    Attributes:
        policy_decision_id: recorded as the decision's ``policy_decision_id``.
        principals: allowed principal ids (a string or an iterable), or None for any.
        tenants: allowed tenant ids, or None for any.
        capabilities: allowed capability ids, or None for any.
    """

    policy_decision_id: str
    principals: Optional[frozenset[str]] = attrs.field(default=None, converter=_names)
    tenants: Optional[frozenset[str]] = attrs.field(default=None, converter=_names)
    capabilities: Optional[frozenset[str]] = attrs.field(default=None, converter=_names)

    def matches(self, request: ApprovalRequest) -> bool:
        """Whether the request's principal, tenant and capability are all allowed by this rule."""
        return all(allowed is None or value in allowed for allowed, value in (
            (self.principals, request.principal_id), (self.tenants, request.tenant_id),
            (self.capabilities, request.capability_id)))


class StaticPolicyProvider:
    """An approval provider that approves requests matching a rule (principal, tenant, capability).

    Args:
        rules: the :class:`~hermes_sdk.PolicyRule` objects, tried in order.
        approver: the approver named in its decisions.
        deny_unmatched: deny a request no rule matches (default); False leaves it undecided.
    """

    def __init__(self, rules: Iterable[PolicyRule], approver: str = "static-policy",
                 deny_unmatched: bool = True) -> None:
        self.rules = tuple(rules)
        self.approver = approver
        self.deny_unmatched = deny_unmatched

    def request_approval(self, request: ApprovalRequest) -> Optional[ApprovalDecision]:
        """Approve by the first matching rule; otherwise deny, or return None when ``deny_unmatched`` is False."""
        for rule in self.rules:
            if rule.matches(request):
                return request.approve(approver=self.approver, policy_decision_id=rule.policy_decision_id,
                                       reason=request.reason or "approved by static policy")
        if self.deny_unmatched:
            return request.deny(approver=self.approver, reason="no policy rule matched")
        return None
