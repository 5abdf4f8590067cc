"""client.operate: the governed operator run, against the emulator, with a resume from another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from core_support import approve_all, uniq

from hermes_sdk import (
    ApprovalRequest,
    ApprovalRequiredError,
    HermesClient,
    IdempotencyRecord,
    InvalidInputError,
    OperatorResult,
)
from hermes_sdk._families.operator.resource import Operator
from hermes_sdk.plugin import CallOptions, CompositeContext
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

ROOT = Path(__file__).resolve().parents[2]
VICTIM = "/scratch/operator-victim"
DANGEROUS = f"TOOL:terminal:rm -rf {VICTIM}"


def approval_for(client: HermesClient, data: dict[str, Any]) -> Any:
    return client.approval_request("operator", data, reason="test").approve(
        approver="tester", policy_decision_id="pd-op", reason="test")


def run_posts(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.method == "POST" and r.path == "/v1/runs"]


@pytest.fixture
def tools_emu(emu: HermesEmulator) -> HermesEmulator:
    emu.toolsets = TOOLSETS
    emu.files[f"{VICTIM}/keep.txt"] = "precious"
    return emu


def test_a_plain_objective_completes(emu: HermesEmulator) -> None:
    with emu.client(load_entrypoints=False) as client:
        data = {"objective": "summarise the day", "constraints": {"max_steps": 3}}
        result = client.operate(data["objective"], constraints=data["constraints"], idempotency_key=uniq("k"),
                                approval=approval_for(client, data), reason="test")
    assert isinstance(result, OperatorResult) and result.status == "completed" and result.ok
    assert result.run_id and result.action_id.startswith("act_") and result.error is None
    assert result.session_id == f"aip-operator-{result.action_id}"
    body = run_posts(emu)[-1].body
    assert body["session_id"] == result.session_id and body["instructions"]
    sent = json.loads(body["input"])
    assert sent["kind"] == "aip_operator_objective" and sent["objective"] == "summarise the day"
    assert sent["constraints"] == {"max_steps": 3} and sent["execution_contract"]["forbid_operator_action_id_reuse"]
    assert "summarise the day" in (result.output or "")


def test_starting_needs_an_approval_and_a_key(emu: HermesEmulator) -> None:
    with emu.client(load_entrypoints=False) as client:
        with pytest.raises(ApprovalRequiredError):
            client.operate("do it", idempotency_key=uniq("k"))
        with pytest.raises(InvalidInputError) as info:
            client.operate("do it", approval=approval_for(client, {"objective": "do it"}))
        assert info.value.details["field"] == "idempotency_key"
        with pytest.raises(InvalidInputError):
            client.operate(idempotency_key="k")  # neither objective nor resume
        with pytest.raises(InvalidInputError):
            client.operate("   ", idempotency_key="k")
        with pytest.raises(InvalidInputError):
            client.operate("x", choice="once", idempotency_key="k")
    assert run_posts(emu) == []


def test_a_replayed_key_returns_the_outcome_without_a_second_run(emu: HermesEmulator) -> None:
    with emu.client(load_entrypoints=False, approval_provider=approve_all) as client:
        key = uniq("k")
        first = client.operate("once only", idempotency_key=key)
        second = client.operate("once only", idempotency_key=key)
    assert first.status == second.status == "completed" and second.replayed
    assert second.action_id == first.action_id and second.run_id == first.run_id
    assert len(run_posts(emu)) == 1


def test_requires_human_then_resume_in_the_same_process(tools_emu: HermesEmulator) -> None:
    with tools_emu.client(load_entrypoints=False) as client:
        data = {"objective": DANGEROUS}
        waiting = client.operate(DANGEROUS, idempotency_key=uniq("k"), approval=approval_for(client, data),
                                 reason="test")
        assert waiting.status == "requires_human" and waiting.run_id
        assert VICTIM in waiting.pending_approval["command"] and "once" in waiting.pending_approval["choices"]
        assert tools_emu.pending_approvals(waiting.run_id)  # the agent waits; nothing blocked here
        resume = {"resume": {"source_action_id": waiting.action_id, "choice": "deny", "resolve_all": False}}
        with pytest.raises(ApprovalRequiredError):
            client.operate(resume=waiting.action_id, choice="deny", idempotency_key=uniq("k"))
        done = client.operate(resume=waiting.action_id, choice="deny", idempotency_key=uniq("k"),
                              approval=approval_for(client, resume), reason="test")
        assert done.status == "completed" and done.action_id == waiting.action_id
        assert tools_emu.files.get(f"{VICTIM}/keep.txt") == "precious"  # denied: not run
        assert client.operate(resume=waiting.action_id).status == "completed"  # follow-only: the saved end


def test_a_provider_that_answers_keeps_it_running(tools_emu: HermesEmulator) -> None:
    asked: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request)
        return approve_all(request)

    with tools_emu.client(load_entrypoints=False, approval_provider=provider) as client:
        result = client.operate(DANGEROUS, idempotency_key=uniq("k"))
    assert result.status == "completed" and result.pending_approval is None
    assert [r.capability_id.rsplit(":", 1)[1] for r in asked] == ["operator", "run_approval"]
    # the run's command names the operator action it belongs to (a later decision can resume it)
    assert asked[1].identifiers["operator_action_id"] == result.action_id
    assert asked[1].identifiers["run_id"] == result.run_id and asked[1].identifiers["pattern_key"]
    assert "operator_action_id" not in asked[0].identifiers


def test_resume_from_another_process_with_a_sqlite_store(tools_emu: HermesEmulator, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'operator.db'}"
    with tools_emu.client(load_entrypoints=False, idempotency_store=store) as client:
        data = {"objective": DANGEROUS}
        waiting = client.operate(DANGEROUS, idempotency_key=uniq("k"), approval=approval_for(client, data),
                                 reason="web request")
    assert waiting.status == "requires_human"
    worker = textwrap.dedent(f"""
        import json
        from hermes_sdk import HermesClient
        client = HermesClient({tools_emu.base_url!r}, {tools_emu.api_key!r}, load_entrypoints=False,
                              idempotency_store={store!r})
        resume = {{"resume": {{"source_action_id": {waiting.action_id!r}, "choice": "once", "resolve_all": False}}}}
        decision = client.approval_request("operator", resume, reason="worker").approve(
            approver="ops", policy_decision_id="pd-worker", reason="worker")
        result = client.operate(resume={waiting.action_id!r}, choice="once", idempotency_key="resume-1",
                                approval=decision, reason="worker")
        print(json.dumps(result.to_json()))
    """)
    out = subprocess.run([sys.executable, "-c", worker], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-3000:]
    finished = json.loads(out.stdout.strip().splitlines()[-1])
    assert finished["status"] == "completed" and finished["run_id"] == waiting.run_id
    assert finished["action_id"] == waiting.action_id
    approvals = [r for r in tools_emu.requests_seen if r.path.endswith("/approval")]
    assert [r.body for r in approvals] == [{"choice": "once"}]
    with tools_emu.client(load_entrypoints=False, idempotency_store=store) as client:
        seen = client.operate(resume=waiting.action_id)  # the first process sees the worker's outcome
    assert seen.status == "completed" and seen.replayed


def test_an_unknown_start_is_never_replayed(emu: HermesEmulator, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'op.db'}"
    with emu.client(load_entrypoints=False, idempotency_store=store, approval_provider=approve_all) as client:
        cap = "cap:hermes_agent:default:operator"
        # A process that saved its action's first state, reserved the key and died before recording the run id.
        operator = Operator(CompositeContext(client._executor, None, {}, CallOptions()))
        operator.save(OperatorResult("starting", "act_crashed"))
        client._executor.runtime.store.reserve(IdempotencyRecord(
            capability_id=cap, key="crashed", action_id="act_crashed", input_hash="h", state="pending",
            created_at=0.0, expires_at=None))
        result = client.operate("again", idempotency_key="crashed")
        assert result.status == "outcome_unknown" and result.action_id == "act_crashed"
        assert client.operate(resume="act_crashed").status == "outcome_unknown"
    assert run_posts(emu) == []


def test_a_transport_failure_after_sending_is_outcome_unknown(emu: HermesEmulator) -> None:
    emu.drop_connection("before_response", path="/v1/runs")
    with emu.client(load_entrypoints=False, approval_provider=approve_all) as client:
        key = uniq("k")
        first = client.operate("lost reply", idempotency_key=key)
        assert first.status == "outcome_unknown" and first.error is not None and first.error.uncertain_outcome
        again = client.operate("lost reply", idempotency_key=key)
        assert again.status == "outcome_unknown"
    assert len(run_posts(emu)) == 1


def test_invoke_runs_the_lifecycle(emu: HermesEmulator) -> None:
    with emu.client(load_entrypoints=False, approval_provider=approve_all) as client:
        result = client.invoke("cap:hermes_agent:default:operator", {"objective": "via invoke"},
                               idempotency_key=uniq("k"))
        assert result.status == "completed" and result.output["run_id"] and result.output["status"] == "completed"
        bad = client.invoke("cap:hermes_agent:default:operator", {"objective": "x", "extra": 1},
                            idempotency_key=uniq("k"))
        assert bad.status == "failed" and isinstance(bad.error, InvalidInputError)
        caps = {d["operation"]: d for d in client.capabilities()}
    op = caps["operator"]
    assert op["risk"] == "high" and op["approval"]["required"] and "code_execution" in op["side_effects"]
    assert op["idempotency"] == {"requirement": "required", "ttl_ms": 86_400_000, "key_scope": "capability",
                                 "collision_behavior": "return_original_result"}
    assert op["sla"]["timeout_ms"] == 900_000 and op["execution"]["supports_streaming"]
    assert op["execution"]["async_expected"] and not op["retry"]["supports_retry"]


@pytest.mark.parametrize("key", [5, "", "bad\nkey", ["k"]])
def test_invoke_checks_the_operator_key_before_anything_is_recorded(emu: HermesEmulator, key: object) -> None:
    """A key in the input is checked as every call's is: nothing sent, no operator state left to resume."""
    with emu.client(load_entrypoints=False, approval_provider=approve_all) as client:
        bad = client.invoke("cap:hermes_agent:default:operator", {"objective": "x", "idempotency_key": key})
        assert bad.status == "failed" and isinstance(bad.error, InvalidInputError)
        assert bad.error.details["field"] == "idempotency_key"
        with pytest.raises(InvalidInputError) as found:
            client.operate(resume=bad.action_id)
        assert found.value.details["reason"] == "not_found"
        key = uniq("k")
        good = client.invoke("cap:hermes_agent:default:operator", {"objective": "via input", "idempotency_key": key})
        assert good.status == "completed" and good.idempotency_key == key
    assert len(run_posts(emu)) == 1


def test_invoke_refuses_a_bad_operator_input_before_anything_is_saved_or_sent(emu: HermesEmulator) -> None:
    """The kernel checks the composite's declared input before its lifecycle starts (issue 40): a
    bad objective leaves no "starting" state behind and sends nothing."""
    with emu.client(load_entrypoints=False) as client:
        result = client.invoke("cap:hermes_agent:default:operator", {"objective": " "},
                               idempotency_key=uniq("k"), action_id="act_badinput1")
        assert result.status == "failed" and isinstance(result.error, InvalidInputError)
        assert result.error.details["field"] == "objective"
        operator = Operator(CompositeContext(client._executor, None, {}, CallOptions()))
        assert operator.load("act_badinput1") is None
    assert run_posts(emu) == []
