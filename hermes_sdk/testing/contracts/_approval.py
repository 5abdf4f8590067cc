"""What every approval provider (:data:`hermes_sdk.plugin.ApprovalProvider`) must do."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Iterator, Mapping, Optional

import pytest

from hermes_sdk import ApprovalDecision, ApprovalDeniedError, ApprovalRequest, ApprovalRequiredError, input_hash
from hermes_sdk.plugin import ApprovalProvider, ProviderAnswer

DELETE = "cap:hermes_agent:default:response_delete"
#: How long a decision may count at most (the SDK refuses an older one).
DECISION_TTL = 15 * 60


class Asked:
    """What a provider did with one request: its answer, or the error it raised."""

    def __init__(self, answer: ProviderAnswer = None, error: Optional[BaseException] = None) -> None:
        self.answer = answer
        self.error = error

    def decision(self) -> Optional[ApprovalDecision]:
        if self.error is not None:
            assert isinstance(self.error, (ApprovalRequiredError, ApprovalDeniedError)), \
                "a provider leaves a request undecided (None, ApprovalRequiredError) or denies it; " \
                f"it raised {self.error!r}"
            return None
        if self.answer is None or isinstance(self.answer, ApprovalDecision):
            return self.answer
        assert isinstance(self.answer, Mapping), \
            f"a provider answers a decision, its JSON shape or None: {self.answer!r}"
        return ApprovalDecision(**self.answer)  # type: ignore[arg-type]  # its JSON shape: checked by attrs


def approves(decision: Optional[ApprovalDecision]) -> bool:
    return decision is not None and decision.decision == "approved"


class ApprovalProviderContract:
    """The tests every approval provider passes: subclass it and give :meth:`make_provider`.

    A provider answers an :class:`~hermes_sdk.ApprovalRequest` with an
    :class:`~hermes_sdk.ApprovalDecision` (or its JSON shape), None (undecided), or raises
    :class:`~hermes_sdk.ApprovalRequiredError` while a person has not decided. Covered: a decision
    is bound to the exact request (its input hash and id) and never outlives it; a denial never
    approves; an undecided request is never approved and is answered within
    :attr:`undecided_within` seconds; approving one input does not approve another; a request
    not fully shown (``fully_shown=False``) is approved only ``blind``; an expired request is never
    approved; concurrent requests each get their own decision.

    Hooks a subclass may give:

    * :meth:`make_provider` (required): the provider (an object with ``request_approval`` or a function).
    * :meth:`decide`: make the provider answer a request ``approved`` or ``denied``, as its person
      or policy would (a queue's provider: answer the queued entry). It may raise to refuse (e.g.
      approving a request not fully shown); the default skips the tests that need a decision.
    * :meth:`make_request`: the requests asked (default: a ``response_delete`` of a fresh response id).
    * :attr:`decides_per_request`: False for a policy that decides by who asks, not by input (then
      "approving one input does not approve another" is not tested).
    """

    #: Seconds a provider may take to answer a request nobody decides.
    undecided_within = 10.0
    #: Whether a decision concerns one request only (a person's), not a policy on every request.
    decides_per_request = True

    def make_provider(self) -> ApprovalProvider:
        """The provider under test (override)."""
        raise NotImplementedError(f"{type(self).__name__} must define make_provider(self)")

    def decide(self, provider: ApprovalProvider, request: ApprovalRequest, decision: str) -> None:
        """Arrange that ``provider`` answers ``request`` with ``decision`` (``approved`` or ``denied``)."""
        pytest.skip(f"{type(self).__name__} does not define decide(): no tests of decided requests")

    def make_request(self, **changes: object) -> ApprovalRequest:
        """A request as the SDK builds one; ``changes`` override its fields."""
        response_id = f"resp_{uuid.uuid4().hex}"
        payload: dict[str, object] = {"response_id": response_id}
        now = time.time()
        fields: dict[str, object] = {
            "id": f"aprq_{uuid.uuid4().hex}", "action_id": f"act_{uuid.uuid4().hex}", "capability_id": DELETE,
            "input_snapshot": {"response_id": "[REDACTED]"}, "input_hash": input_hash(DELETE, payload),
            "reason": "the kit's contract test", "requested_at": now, "expires_at": now + DECISION_TTL,
            "operation": "response_delete", "identifiers": {"response_id": response_id}}
        fields.update(changes)
        return ApprovalRequest(**fields)  # type: ignore[arg-type]  # the fields above, as their types

    def close_provider(self, provider: ApprovalProvider) -> None:
        close = getattr(provider, "close", None)
        if callable(close):
            close()

    @pytest.fixture
    def provider(self) -> Iterator[ApprovalProvider]:
        made = self.make_provider()
        try:
            yield made
        finally:
            self.close_provider(made)

    def ask(self, provider: ApprovalProvider, request: ApprovalRequest) -> Asked:
        """Ask on another thread: a provider that does not answer within :attr:`undecided_within` fails."""
        asked: list[Asked] = []

        def run() -> None:
            method = getattr(provider, "request_approval", None)
            try:
                asked.append(Asked(method(request) if callable(method) else provider(request)))  # type: ignore[operator]
            except BaseException as exc:
                asked.append(Asked(error=exc))

        started = time.monotonic()
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(self.undecided_within)
        assert asked, f"the provider did not answer within {self.undecided_within} s " \
                      f"({time.monotonic() - started:.1f} s): a waiting provider must give up"
        return asked[0]

    def _decide(self, provider: ApprovalProvider, request: ApprovalRequest, decision: str) -> bool:
        """Arrange a decision the provider may refuse to take; whether it took it."""
        try:
            self.decide(provider, request, decision)
        except pytest.skip.Exception:
            raise
        except Exception:
            return False
        return True

    def assert_bound(self, decision: ApprovalDecision, request: ApprovalRequest) -> None:
        assert decision.input_hash == request.input_hash, "a decision is bound to the input of the request it answers"
        assert decision.approval_request_id in (None, request.id), "a decision answers the request it was asked"
        assert decision.expires_at <= request.expires_at + 1e-6, "a decision never outlives its request"

    # ------------------------------------------------------------------ tests

    def test_it_is_an_approval_provider(self, provider: ApprovalProvider) -> None:
        assert callable(getattr(provider, "request_approval", None)) or callable(provider)

    def test_an_approval_is_bound_to_the_request(self, provider: ApprovalProvider) -> None:
        request = self.make_request()
        assert self._decide(provider, request, "approved"), "decide() refused to approve an ordinary request"
        decision = self.ask(provider, request).decision()
        assert decision is not None and decision.decision == "approved", f"the approval was answered {decision!r}"
        self.assert_bound(decision, request)
        now = time.time()
        assert decision.expires_at > now and decision.decided_at <= now + 60, "an approval is current"
        assert decision.approver and decision.policy_decision_id, "an approval names its approver and policy decision"
        assert decision.blind is False, "a fully shown request is not approved blind"

    def test_a_denial_never_approves(self, provider: ApprovalProvider) -> None:
        request = self.make_request()
        assert self._decide(provider, request, "denied"), "decide() refused to deny an ordinary request"
        decision = self.ask(provider, request).decision()
        assert not approves(decision), f"a denied request was answered {decision!r}"
        if decision is not None:
            self.assert_bound(decision, request)

    def test_an_undecided_request_is_not_approved_and_answered_in_time(self, provider: ApprovalProvider) -> None:
        request = self.make_request()
        decision = self.ask(provider, request).decision()
        assert not approves(decision), f"nobody decided, yet the request was answered {decision!r}"

    def test_approving_one_input_does_not_approve_another(self, provider: ApprovalProvider) -> None:
        if not self.decides_per_request:
            pytest.skip(f"{type(self).__name__}.decides_per_request is False")
        approved, other = self.make_request(), self.make_request()
        assert approved.input_hash != other.input_hash
        assert self._decide(provider, approved, "approved"), "decide() refused to approve an ordinary request"
        decision = self.ask(provider, other).decision()
        assert not approves(decision), f"another input was answered {decision!r}"

    def test_a_request_not_fully_shown_is_approved_only_blind(self, provider: ApprovalProvider) -> None:
        request = self.make_request(fully_shown=False, not_shown="a redaction pattern of the client hides part of it")
        self._decide(provider, request, "approved")  # the provider (or its person) may refuse outright
        decision = self.ask(provider, request).decision()
        if approves(decision):
            assert decision is not None and decision.blind is True, \
                "a request not fully shown was approved without blind=True (the SDK refuses such an approval)"
            self.assert_bound(decision, request)

    def test_an_expired_request_is_never_approved(self, provider: ApprovalProvider) -> None:
        now = time.time()
        request = self.make_request(requested_at=now - 2 * DECISION_TTL, expires_at=now - DECISION_TTL)
        self._decide(provider, request, "approved")
        decision = self.ask(provider, request).decision()
        if approves(decision):
            assert decision is not None and decision.expires_at <= time.time(), \
                "an approval of an expired request is still current"

    def test_concurrent_requests_each_get_their_own_decision(self, provider: ApprovalProvider) -> None:
        if not self.decides_per_request:
            pytest.skip(f"{type(self).__name__}.decides_per_request is False")
        requests = [self.make_request() for _ in range(8)]
        verdicts = ["approved" if i % 2 == 0 else "denied" for i in range(len(requests))]
        for request, verdict in zip(requests, verdicts):
            assert self._decide(provider, request, verdict), f"decide() refused to answer {verdict}"
        answers: dict[str, Optional[ApprovalDecision]] = {}
        errors: list[BaseException] = []
        barrier = threading.Barrier(len(requests))

        def run(request: ApprovalRequest) -> None:
            try:
                barrier.wait(60)
                answers[request.id] = self.ask(provider, request).decision()
            except BaseException as exc:  # reported on the test's own thread below
                errors.append(exc)

        threads = [threading.Thread(target=run, args=(r,), daemon=True) for r in requests]
        for t in threads:
            t.start()
        for t in threads:
            t.join(self.undecided_within + 60)
        assert not errors, errors[0]
        for request, verdict in zip(requests, verdicts):
            decision = answers.get(request.id)
            assert approves(decision) is (verdict == "approved"), f"{verdict} request answered {decision!r}"
            if decision is not None:
                self.assert_bound(decision, request)
