"""Approval before deletion: deny by default, bound to the exact input, evidence kept, 15-minute TTL."""

from __future__ import annotations

import time
from typing import Any

import attrs
import pytest
from plugin_support import approve_all

from hermes_sdk import (
    ApprovalDecision,
    ApprovalDeniedError,
    ApprovalRequest,
    ApprovalRequiredError,
    CallbackProvider,
    DenyAll,
    PluginError,
    PolicyRule,
    StaticPolicyProvider,
    hookimpl,
)
from hermes_sdk._core.approval import input_hash
from hermes_sdk._core.endpoints import ExecutionContext

DELETE = "cap:hermes_agent:default:response_delete"


def _deletes(emulator: Any) -> int:
    return sum(1 for r in emulator.requests_seen if r.method == "DELETE")


@pytest.fixture
def stored(make_client: Any) -> str:
    return make_client().responses(input="a stored answer", store=True).id  # type: ignore[no-any-return]


@pytest.mark.parametrize("provider", [None, DenyAll()])
def test_deny_by_default_nothing_sent(make_client: Any, hermes_emulator: Any, stored: str, provider: Any) -> None:
    client = make_client(approval_provider=provider)
    with pytest.raises(ApprovalRequiredError) as info:
        client.response_delete(stored, idempotency_key="k1", reason="cleanup")
    assert info.value.code == "hermes_sdk.approval_required"
    assert info.value.details["input_hash"] == input_hash(DELETE, {"response_id": stored})
    assert _deletes(hermes_emulator) == 0 and hermes_emulator.stored_response(stored) is not None
    assert client.records.get(DELETE, "k1") is None  # the key was not consumed
    result = client.invoke(DELETE, {"response_id": stored}, idempotency_key="k1")
    assert result.status == "pending_approval" and isinstance(result.error, ApprovalRequiredError)


def test_an_up_front_decision_bound_to_the_input(make_client: Any, hermes_emulator: Any, stored: str) -> None:
    client = make_client()
    request = client.approval_request("response_delete", {"response_id": stored}, reason="GDPR erasure #42")
    # the approver is shown the input itself (issue 38 item 11: what is shown is what is approved)
    assert request.input_snapshot == {"response_id": stored} and request.fully_shown
    assert request.expires_at - request.requested_at == pytest.approx(900)
    decision = request.approve(approver="dpo@example.test", policy_decision_id="pol-7")
    assert decision.expires_at - decision.decided_at <= 900
    result = client.invoke(DELETE, {"response_id": stored}, idempotency_key="k2", approval=decision,
                           action_id="act_del")
    assert result.status == "completed" and result.output["deleted"] is True
    evidence = result.approval
    assert evidence["decision"] == "approved" and evidence["approval_id"] == decision.approval_id
    assert evidence["reason"] == "GDPR erasure #42" and evidence["policy_decision_id"] == "pol-7"
    assert evidence["input_hash"] == request.input_hash and evidence["input_snapshot"] == request.input_snapshot
    assert evidence["approver"] == "dpo@example.test" and evidence["approval_request_id"] == request.id
    # ... and kept with the durable record (the audit trail)
    assert client.action_result("act_del").approval == evidence
    assert _deletes(hermes_emulator) == 1


def test_a_decision_for_another_input_is_refused(make_client: Any, hermes_emulator: Any, stored: str) -> None:
    client = make_client()
    other = client.approval_request("response_delete", {"response_id": "resp_somethingelse"}, reason="x")
    with pytest.raises(ApprovalDeniedError) as info:
        client.response_delete(stored, idempotency_key="k3",
                               approval=other.approve(approver="a", policy_decision_id="p"))
    assert info.value.details["reason"] == "input_mismatch" and _deletes(hermes_emulator) == 0


def _request(client: Any, response_id: str, reason: str = "cleanup") -> ApprovalRequest:
    return client.approval_request("response_delete", {"response_id": response_id}, reason=reason)  # type: ignore


def test_expired_denied_revoked_and_incomplete_decisions(make_client: Any, hermes_emulator: Any,
                                                         stored: str) -> None:
    client = make_client()
    good = _request(client, stored).approve(approver="a", policy_decision_id="p")
    stale = attrs.evolve(good, decided_at=time.time() - 901, expires_at=time.time() + 100)
    past = attrs.evolve(good, expires_at=time.time() - 1)
    cases = {
        "expired": stale, "expires_at": past,
        "denied": _request(client, stored).deny(approver="a", reason="no"),
        "revoked": attrs.evolve(good, decision="revoked"),
        "no policy decision": attrs.evolve(good, policy_decision_id=None),
        "no reason": attrs.evolve(_request(client, stored, reason="").approve(approver="a", policy_decision_id="p"),
                                  reason=None),
    }
    for label, decision in cases.items():
        with pytest.raises(ApprovalDeniedError) as info:
            client.response_delete(stored, idempotency_key=f"k-{label}", approval=decision)
        assert info.value.code == "hermes_sdk.approval_denied", label
    assert _deletes(hermes_emulator) == 0


def test_callback_provider_sees_a_redacted_request(make_client: Any, stored: str) -> None:
    seen: list[ApprovalRequest] = []

    def callback(request: ApprovalRequest) -> ApprovalDecision:
        seen.append(request)
        return request.approve(approver="oncall", policy_decision_id="pd-cb")

    client = make_client(approval_provider=CallbackProvider(callback))
    receipt = client.response_delete(stored, idempotency_key="k-cb", reason="ticket OPS-1", action_id="act_cb")
    assert receipt.deleted is True
    (request,) = seen
    assert request.action_id == "act_cb" and request.capability_id == DELETE and request.reason == "ticket OPS-1"
    assert request.input_snapshot == {"response_id": stored}  # what is approved, shown
    assert stored not in repr(request)  # but not in repr(), which reaches logs
    # a plain callable works too
    assert make_client(approval_provider=approve_all)


def test_static_policy_on_principal_and_tenant(hermes_emulator: Any, make_client: Any) -> None:
    provider = StaticPolicyProvider([PolicyRule("pd-ops", principals=["alice"], tenants="t1")])
    alice = ExecutionContext(principal_id="alice", tenant_id="t1")
    client = make_client(approval_provider=provider, context=alice)
    first = client.responses(input="one", store=True).id
    result = client.invoke(DELETE, {"response_id": first}, idempotency_key="k-alice", reason="cleanup")
    assert result.status == "completed" and result.approval["policy_decision_id"] == "pd-ops"
    assert result.approval["approver"] == "static-policy"
    second = client.responses(input="two", store=True).id
    for ctx in (ExecutionContext(principal_id="bob", tenant_id="t1"),
                ExecutionContext(principal_id="alice", tenant_id="t2")):
        with pytest.raises(ApprovalDeniedError):
            client.response_delete(second, idempotency_key="k-other", reason="cleanup", context=ctx)
    assert hermes_emulator.stored_response(second) is not None


def test_provider_from_a_plugin_and_the_argument_wins(make_client: Any, stored: str) -> None:
    class Approver:
        name = "approver-plugin"

        @hookimpl
        def hermes_approval_provider(self, client: Any) -> Any:
            return lambda request: request.approve(approver="plugin", policy_decision_id="pd-plugin")

    client = make_client(plugins=[Approver()])
    result = client.invoke(DELETE, {"response_id": stored}, idempotency_key="k-pl", reason="cleanup")
    assert result.approval["approver"] == "plugin"
    explicit = make_client(plugins=[Approver()], approval_provider=DenyAll())
    with pytest.raises(ApprovalRequiredError):
        explicit.response_delete("resp_x", idempotency_key="k-pl2", reason="cleanup")


def test_a_failing_provider_is_a_typed_error_and_nothing_is_sent(make_client: Any, hermes_emulator: Any,
                                                                 stored: str) -> None:
    def broken(request: ApprovalRequest) -> Any:
        raise ConnectionError("ticket system down")

    client = make_client(approval_provider=broken)
    with pytest.raises(PluginError):
        client.response_delete(stored, idempotency_key="k-br", reason="cleanup")
    assert _deletes(hermes_emulator) == 0


def test_input_hash_is_canonical() -> None:
    a = input_hash(DELETE, {"response_id": "r", "session_key": "s"})
    assert a == input_hash(DELETE, {"session_key": "s", "response_id": "r", "idempotency_key": "ignored"})
    assert a != input_hash(DELETE, {"response_id": "r2", "session_key": "s"})
    assert a != input_hash("cap:hermes_agent:other:response_delete", {"response_id": "r", "session_key": "s"})
    assert len(a) == 64


def test_an_approval_in_its_json_shape_is_accepted(make_client: Any, hermes_emulator: Any) -> None:
    from hermes_sdk import input_hash

    client = make_client()
    created = client.responses(input="json-shaped approval", store=True)
    cap = "cap:hermes_agent:default:response_delete"
    now = time.time()
    decision = {"approval_id": "apr-json", "decision": "approved", "approver": "ops", "decided_at": now,
                "expires_at": now + 600, "input_hash": input_hash(cap, {"response_id": created.id}),
                "reason": "retention", "policy_decision_id": "pol-1"}
    result = client.invoke(cap, {"response_id": created.id}, idempotency_key="json-1", approval=decision)
    assert result.status == "completed" and result.approval["approval_id"] == "apr-json"
    bad = client.invoke(cap, {"response_id": created.id}, idempotency_key="json-2", approval={"decision": "yes"})
    assert bad.status == "failed" and bad.error.details["field"] == "approval"


# ------------------------------------------------ what a provider can reason about (operation, identifiers)


def test_a_delete_request_names_its_operation_and_the_response_id_in_clear(make_client: Any,
                                                                           stored: str) -> None:
    seen: list[ApprovalRequest] = []

    def allowlist(request: ApprovalRequest) -> Any:
        seen.append(request)
        if request.operation == "response_delete" and request.identifiers.get("response_id") == stored:
            return request.approve(approver="allowlist", policy_decision_id="ALLOW-1")
        return request.deny(approver="allowlist", reason="not on the list")

    client = make_client(approval_provider=allowlist)
    assert client.response_delete(stored, idempotency_key="k-allow", reason="retention").deleted
    (request,) = seen
    assert request.operation == "response_delete" and request.identifiers == {"response_id": stored}
    assert request.input_snapshot == {"response_id": stored}  # the approver's view shows it
    assert stored not in repr(request)  # repr() does not show the ids
    with pytest.raises(ApprovalDeniedError) as info:
        client.response_delete("resp_notonthelist", idempotency_key="k-other", reason="retention")
    assert info.value.details["denial_reason"] == "not on the list"


def test_identifiers_hold_ids_only_and_prompts_stay_out_of_repr(make_client: Any) -> None:
    client = make_client()
    request = client.approval_request("responses", {"input": "my secret prompt", "previous_response_id": "resp_1",
                                                    "conversation": "c"})
    assert request.operation == "responses" and request.identifiers == {}
    assert request.input_snapshot["input"] == "my secret prompt"  # the approver reads what is approved
    assert "my secret prompt" not in repr(request)  # logs do not
    by_cap = client.approval_request(DELETE, {"response_id": "resp_9"})
    assert by_cap.operation == "response_delete" and by_cap.identifiers == {"response_id": "resp_9"}


def test_a_denials_reason_is_kept_in_the_error(make_client: Any, hermes_emulator: Any, stored: str) -> None:
    client = make_client(approval_provider=lambda r: r.deny(approver="ops-bot", reason="not during the freeze"))
    with pytest.raises(ApprovalDeniedError) as info:
        client.response_delete(stored, idempotency_key="k-freeze", reason="cleanup")
    err = info.value
    assert err.message == "approval was denied by ops-bot: not during the freeze; nothing was sent"
    assert err.details["denial_reason"] == "not during the freeze" and err.details["approver"] == "ops-bot"
    assert "not during the freeze" in str(err) and _deletes(hermes_emulator) == 0
    # a denial without a reason says so, and does not borrow the call's reason (why it was wanted)
    silent = _request(client, stored, reason="cleanup").deny(approver="ops-bot")
    assert silent.reason is None
    with pytest.raises(ApprovalDeniedError) as info:
        client.response_delete(stored, idempotency_key="k-silent", reason="cleanup", approval=silent)
    assert info.value.message == "approval was denied by ops-bot (no reason given); nothing was sent"
    assert info.value.details["denial_reason"] is None


def test_a_runs_command_request_says_run_approval_with_the_run_id_and_pattern_key(
        hermes_emulator_factory: Any) -> None:
    from hermes_sdk.testing import TOOLSETS
    from hermes_sdk.types import ApprovalRequested

    emulator = hermes_emulator_factory(toolsets=TOOLSETS)
    seen: list[ApprovalRequest] = []

    def deletions_only(request: ApprovalRequest) -> Any:
        seen.append(request)
        if request.operation == "run_approval":
            return request.deny(approver="ops-bot", reason="deletion approvals only")
        return request.approve(approver="ops-bot", policy_decision_id="OPS-1")

    with emulator.client(approval_provider=deletions_only, load_entrypoints=False) as client:
        run = client.run("TOOL:terminal:rm -rf build", idempotency_key="run-ident")
        result = run.wait(timeout=30)
    (request,) = seen
    assert request.operation == "run_approval"
    assert request.identifiers == {"run_id": run.id, "pattern_key": "recursive delete",
                                   "session_id": run.id}  # Hermes' default session is the run id
    assert request.input_snapshot == {"run_id": run.id, "command": "rm -rf build"} and run.id not in repr(request)
    (asked,) = [e for e in result.events if isinstance(e, ApprovalRequested)]
    assert asked.pattern_key == "recursive delete"
    assert result.status == "completed" and "BLOCKED" in (result.output or "")  # denied: the command never ran
