"""The synchronous path with the families' approval-gated calls: job mutations and sessions.delete.

Each call raises ApprovalRequiredError naming its inbox entry (nothing sent); a person decides; the
same call with the same key then proceeds, or is denied with the operator's reason.
"""

from __future__ import annotations

import pytest
from hermes_sdk_inbox import InboxProvider

from hermes_sdk import ApprovalDeniedError, ApprovalRequiredError, HermesClient
from hermes_sdk.testing import HermesEmulator


def client_for(emulator: HermesEmulator, provider: InboxProvider) -> HermesClient:
    return HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False, plugins=[provider])


def sent(emulator: HermesEmulator, method: str, path: str) -> int:
    return sum(1 for r in emulator.requests_seen if r.method == method and r.path == path)


def test_a_job_mutation_waits_for_the_inbox_then_proceeds_or_is_denied(hermes_emulator: HermesEmulator) -> None:
    provider = InboxProvider("memory:")
    client = client_for(hermes_emulator, provider)
    inbox = provider.inbox
    fields = {"name": "nightly digest", "schedule": "every 1d", "prompt": "summarise the day"}

    # job_create: queued, approved in the inbox, then the same call creates the job once
    with pytest.raises(ApprovalRequiredError) as info:
        client.jobs.create(**fields, idempotency_key="job-create-1", reason="ticket OPS-1")
    created_entry = inbox.get(info.value.details["inbox_entry_id"])
    assert created_entry["operation"] == "job_create" and created_entry["kind"] == "call"
    assert created_entry["id"] in str(info.value) and sent(hermes_emulator, "POST", "/api/jobs") == 0
    # what is approved is shown: the job's name, schedule and prompt (issue 38 item 11)
    assert created_entry["input_snapshot"] == fields and created_entry["fully_shown"] is True
    inbox.decide(created_entry["id"], decision="approved", approver="alice", reason="digest agreed",
                 input_hash=created_entry["input_hash"])
    job = client.jobs.create(**fields, idempotency_key="job-create-1", reason="ticket OPS-1")
    assert hermes_emulator.job(job.id) is not None and sent(hermes_emulator, "POST", "/api/jobs") == 1

    # job_pause: the entry carries the job id in clear; the operator denies it with a reason
    with pytest.raises(ApprovalRequiredError) as info:
        client.jobs.pause(job.id, idempotency_key="job-pause-1", reason="maintenance window")
    entry = inbox.get(info.value.details["inbox_entry_id"])
    assert entry["operation"] == "job_pause" and entry["identifiers"] == {"job_id": job.id}
    assert [e["id"] for e in inbox.entries(operation="job_pause", identifier=job.id)] == [entry["id"]]
    inbox.decide(entry["id"], decision="denied", approver="bob", reason="the digest must keep running",
                 input_hash=entry["input_hash"])
    with pytest.raises(ApprovalDeniedError) as denied:
        client.jobs.pause(job.id, idempotency_key="job-pause-1", reason="maintenance window")
    assert "the digest must keep running" in str(denied.value) and "bob" in str(denied.value)
    assert denied.value.details["denial_reason"] == "the digest must keep running"
    assert hermes_emulator.job(job.id)["state"] != "paused"
    assert sent(hermes_emulator, "POST", f"/api/jobs/{job.id}/pause") == 0

    # job_delete: approved, then deleted; the decision is used once
    with pytest.raises(ApprovalRequiredError) as info:
        client.jobs.delete(job.id, idempotency_key="job-delete-1", reason="retired")
    entry = inbox.get(info.value.details["inbox_entry_id"])
    inbox.decide(entry["id"], decision="approved", approver="carol", reason="retired per OPS-2",
                 input_hash=entry["input_hash"])
    deleted = client.jobs.delete(job.id, idempotency_key="job-delete-1", reason="retired")
    assert deleted.id == job.id and hermes_emulator.job(job.id) is None
    assert inbox.get(entry["id"])["used"]["action_id"] and inbox.get(entry["id"])["open_key"] is None
    client.close()


def test_sessions_delete_waits_for_the_inbox_then_proceeds_or_is_denied(hermes_emulator: HermesEmulator) -> None:
    provider = InboxProvider("memory:")
    client = client_for(hermes_emulator, provider)
    inbox = provider.inbox
    keep = client.sessions.create("support-case-41", title="keep", idempotency_key="s-create-1")
    drop = client.sessions.create("support-case-42", title="drop", idempotency_key="s-create-2")

    with pytest.raises(ApprovalRequiredError) as info:
        client.sessions.delete(keep.id, idempotency_key="s-del-41", reason="customer asked")
    entry = inbox.get(info.value.details["inbox_entry_id"])
    assert entry["operation"] == "session_delete" and entry["identifiers"] == {"session_id": keep.id}
    assert info.value.details["inbox_entry_id"] in str(info.value)
    inbox.decide(entry["id"], decision="denied", approver="dana", reason="legal hold on case 41",
                 input_hash=entry["input_hash"])
    with pytest.raises(ApprovalDeniedError) as denied:
        client.sessions.delete(keep.id, idempotency_key="s-del-41", reason="customer asked")
    assert "legal hold on case 41" in str(denied.value)
    assert hermes_emulator.session(keep.id) is not None

    with pytest.raises(ApprovalRequiredError) as info:
        client.sessions.delete(drop.id, idempotency_key="s-del-42", reason="customer asked")
    entry = inbox.get(info.value.details["inbox_entry_id"])
    assert sent(hermes_emulator, "DELETE", f"/api/sessions/{drop.id}") == 0
    inbox.decide(entry["id"], decision="approved", approver="erin", reason="verified the request",
                 input_hash=entry["input_hash"])
    receipt = client.sessions.delete(drop.id, idempotency_key="s-del-42", reason="customer asked")
    assert hermes_emulator.session(drop.id) is None and receipt is not None
    assert sent(hermes_emulator, "DELETE", f"/api/sessions/{drop.id}") == 1
    # the audit trail keeps both, each with who, why and the input hash decided on
    audit = {e["identifiers"]["session_id"]: e for e in inbox.entries(state=None, operation="session_delete")}
    assert audit[keep.id]["decision"]["approver"] == "dana" and audit[drop.id]["decision"]["approver"] == "erin"
    assert all(e["decision"]["input_hash"] == e["input_hash"] for e in audit.values())
    client.close()
