"""client.jobs, health_detailed and skills against the emulator (raw servers for the error shapes)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from core_support import RawServer, approve_all, json_response, raw_client

from hermes_sdk import (
    ApprovalRequiredError,
    HermesClient,
    InvalidInputError,
    Job,
    JobDeleted,
    NotFoundError,
    RemoteRejectedError,
    ServerError,
    Skill,
)
from hermes_sdk.testing import HermesEmulator


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def jobs_requests(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.path.startswith("/api/jobs")]


def make(client: HermesClient, **fields: Any) -> Job:
    fields.setdefault("name", uniq("job"))
    fields.setdefault("schedule", "every 30m")
    return client.jobs.create(idempotency_key=uniq("k"), **fields)


def test_create_get_list_update(emu: HermesEmulator, client: HermesClient) -> None:
    job = make(client, prompt="say hello", skills=[" a ", "a", "b"], repeat=3, deliver="local")
    assert isinstance(job, Job) and len(job.id) == 12 and job.enabled and job.state == "scheduled"
    assert job.schedule == {"kind": "interval", "minutes": 30, "display": "every 30m"}
    assert job.schedule_display == "every 30m" and job.skills == ("a", "b") and job.prompt == "say hello"
    assert job.repeat == {"times": 3, "completed": 0} and job.next_run_at and job.last_run_at is None
    assert job.raw["origin"]["platform"] == "api_server"
    assert client.jobs.get(job.id) == job
    assert job.id in [j.id for j in client.jobs.list()]
    updated = client.jobs.update(job.id, name="renamed", schedule="every 2h", idempotency_key=uniq("k"))
    assert updated.name == "renamed" and updated.schedule_display == "every 120m"
    assert updated.prompt == "say hello"  # left out: unchanged
    patch = [r for r in jobs_requests(emu) if r.method == "PATCH"][-1]
    assert patch.body == {"name": "renamed", "schedule": "every 2h"}


def test_list_include_disabled(emu: HermesEmulator, client: HermesClient) -> None:
    job = make(client)
    client.jobs.update(job.id, enabled=False, idempotency_key=uniq("k"))
    assert job.id not in [j.id for j in client.jobs.list()]
    assert job.id in [j.id for j in client.jobs.list(include_disabled=True)]
    lists = [r for r in jobs_requests(emu) if r.method == "GET"]
    assert lists[-1].raw_body == b"" and lists[-1].body is None


def test_pause_resume_run_delete(emu: HermesEmulator, client: HermesClient) -> None:
    job = make(client, prompt="tick me")
    paused = client.jobs.pause(job.id, idempotency_key=uniq("k"))
    assert paused.paused and not paused.enabled and paused.raw["paused_at"]
    resumed = client.jobs.resume(job.id, idempotency_key=uniq("k"))
    assert resumed.state == "scheduled" and resumed.enabled
    triggered = client.jobs.run(job.id, idempotency_key=uniq("k"))
    assert triggered.last_run_at is None  # only due now: the scheduler runs it on its next tick
    assert emu.tick_jobs() == [job.id]
    after = client.jobs.get(job.id)
    assert after.last_run_at is not None and after.last_status == "ok"
    deleted = client.jobs.delete(job.id, idempotency_key=uniq("k"))
    assert isinstance(deleted, JobDeleted) and deleted.id == job.id and deleted.deleted
    with pytest.raises(NotFoundError):
        client.jobs.get(job.id)


def test_pause_resume_run_send_no_body(emu: HermesEmulator, client: HermesClient) -> None:
    job = make(client)
    client.jobs.pause(job.id, idempotency_key=uniq("k"))
    request = jobs_requests(emu)[-1]
    assert request.path.endswith("/pause") and request.raw_body == b""


@pytest.mark.parametrize("bad", ["ABCDEF123456", "abc", "abcdef1234567", "my job", "", None, "g" * 12])
def test_a_malformed_job_id_is_refused_before_io(emu: HermesEmulator, client: HermesClient, bad: Any) -> None:
    before = len(emu.requests_seen)
    calls = [lambda: client.jobs.get(bad), lambda: client.jobs.delete(bad, idempotency_key="k"),
             lambda: client.jobs.pause(bad, idempotency_key="k"), lambda: client.jobs.resume(bad, idempotency_key="k"),
             lambda: client.jobs.run(bad, idempotency_key="k"),
             lambda: client.jobs.update(bad, name="x", idempotency_key="k")]
    for call in calls:
        with pytest.raises(InvalidInputError) as info:
            call()
        assert info.value.details["field"] == "job_id"
    assert len(emu.requests_seen) == before


@pytest.mark.parametrize("fields", [
    {"name": ""}, {"name": "n" * 201}, {"schedule": ""}, {"prompt": "p" * 5001}, {"repeat": 0}, {"repeat": True},
    {"repeat": "2"}, {"skills": "a"}, {"skills": [""]}, {"deliver": 5},
])
def test_create_input_is_checked_before_io(emu: HermesEmulator, client: HermesClient, fields: Any) -> None:
    before = len(emu.requests_seen)
    with pytest.raises(InvalidInputError):
        make(client, **fields)
    assert len(emu.requests_seen) == before


def test_update_needs_a_field(emu: HermesEmulator, client: HermesClient) -> None:
    job = make(client)
    with pytest.raises(InvalidInputError):
        client.jobs.update(job.id, idempotency_key=uniq("k"))
    with pytest.raises(InvalidInputError):
        client.jobs.update(job.id, enabled="yes", idempotency_key=uniq("k"))  # type: ignore[arg-type]


@pytest.mark.parametrize("schedule", ["whenever", "every 5s", "99 99 * * *", "2020-01-01T00:00:00Z"])
def test_a_500_refusal_is_permanent_with_the_servers_message(emu: HermesEmulator, client: HermesClient,
                                                            schedule: str) -> None:
    before = set(emu.job_ids())
    with pytest.raises(RemoteRejectedError) as info:
        make(client, schedule=schedule)
    error = info.value
    assert error.http_status == 500 and not error.retryable and not error.uncertain_outcome
    assert error.category == "permanent" and error.details["stored"] is False
    assert error.details["provider_message"] in error.message
    assert set(emu.job_ids()) == before
    job = make(client)
    with pytest.raises(RemoteRejectedError):
        client.jobs.update(job.id, schedule=schedule, idempotency_key=uniq("k"))


def test_a_plain_500_stays_an_uncertain_server_error(raw_server: Any) -> None:
    def handler(sock: Any, req: Any, srv: Any) -> None:
        body = b"500 Internal Server Error\n\nServer got itself in trouble"
        sock.sendall(f"HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n"
                     f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
        sock.close()

    server: RawServer = raw_server(handler)
    with raw_client(server, approval_provider=approve_all) as client:
        with pytest.raises(ServerError) as info:
            client.jobs.create(name="n", schedule="every 5m", idempotency_key="k")
    assert info.value.uncertain_outcome and not info.value.retryable
    assert len(server.requests) == 1  # a mutation is never retried


def test_errors_in_the_jobs_shape(raw_server: Any) -> None:
    replies = iter([(400, {"error": "Name is required"}), (404, {"error": "Job not found"})])

    def handler(sock: Any, req: Any, srv: Any) -> None:
        status, body = next(replies)
        sock.sendall(json_response(status, json.dumps(body).encode()))

    server: RawServer = raw_server(handler)
    with raw_client(server, approval_provider=approve_all) as client:
        with pytest.raises(RemoteRejectedError) as info:
            client.jobs.create(name="n", schedule="every 5m", idempotency_key="k1")
        assert "Name is required" in info.value.message and info.value.http_status == 400
        with pytest.raises(NotFoundError):
            client.jobs.get("0123456789ab")


def test_reads_are_retried_mutations_are_not(raw_server: Any) -> None:
    calls = {"n": 0}

    def handler(sock: Any, req: Any, srv: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            sock.sendall(json_response(503, b'{"error": "busy"}', reason="Service Unavailable"))
        else:
            sock.sendall(json_response(200, b'{"jobs": []}'))

    server: RawServer = raw_server(handler)
    with raw_client(server) as client:
        assert client.jobs.list() == []
    assert calls["n"] == 2
    assert server.requests[0].target == "/api/jobs?include_disabled=false"


def test_every_mutation_needs_an_approval_and_a_key(emu: HermesEmulator) -> None:
    with emu.client(load_entrypoints=False) as client:
        before = len(emu.requests_seen)
        with pytest.raises(ApprovalRequiredError):
            client.jobs.create(name="n", schedule="every 5m", idempotency_key="k")
        with pytest.raises(InvalidInputError) as info:
            client.jobs.create(name="n", schedule="every 5m")
        assert info.value.details["field"] == "idempotency_key"
        for method in ("pause", "resume", "run", "delete"):
            with pytest.raises(ApprovalRequiredError):
                getattr(client.jobs, method)("0123456789ab", idempotency_key="k")
        assert len(emu.requests_seen) == before
        inp = {"name": "approved", "schedule": "every 5m"}
        decision = client.approval_request("job_create", inp, reason="r").approve(
            approver="a", policy_decision_id="pd", reason="r")
        job = client.jobs.create(**inp, idempotency_key="k-ok", approval=decision)
        again = client.jobs.create(**inp, idempotency_key="k-ok")  # replayed without asking again
        assert again == job and len(emu.job_ids()) >= 1


def test_invoke_and_contracts(client: HermesClient) -> None:
    created = client.invoke("cap:hermes_agent:default:job_create", {"name": "inv", "schedule": "every 5m"},
                            idempotency_key=uniq("k"))
    assert created.status == "completed" and len(created.output["job"]["id"]) == 12
    listed = client.invoke("cap:hermes_agent:default:jobs_list", {"include_disabled": True})
    assert listed.status == "completed" and isinstance(listed.output["jobs"], list)
    bad = client.invoke("cap:hermes_agent:default:job_get", {"job_id": "nope"})
    assert bad.status == "failed" and isinstance(bad.error, InvalidInputError)
    caps = {d["operation"]: d for d in client.capabilities()}
    for op in ("job_create", "job_update", "job_delete", "job_pause", "job_resume", "job_run"):
        assert caps[op]["approval"]["required"] and caps[op]["idempotency"]["requirement"] == "required"
        assert caps[op]["idempotency"]["ttl_ms"] == 86_400_000 and not caps[op]["retry"]["supports_retry"]
    assert caps["job_run"]["risk"] == "high" and caps["job_run"]["kind"] == "agent"
    assert caps["job_delete"]["risk"] == "high" and caps["job_pause"]["data"]["classification"] == "internal"
    assert caps["jobs_list"]["retry"]["supports_retry"] and caps["job_get"]["risk"] == "low"
    assert caps["skills"]["stability"] == "experimental" and caps["health_detailed"]["stability"] == "stable"
    assert caps["skills"]["data"]["redaction_required"] is False


def test_health_detailed_and_skills(emu: HermesEmulator, client: HermesClient) -> None:
    detailed = client.health_detailed()
    assert detailed["status"] == "ok" and isinstance(detailed["pid"], int) and "readiness" in detailed
    emu.add_skill("zeta", "last one", category="b")
    emu.add_skill("alpha", "first one")
    skills = client.skills()
    assert all(isinstance(s, Skill) for s in skills)
    assert [(s.name, s.category) for s in skills][:2] == [("alpha", None), ("zeta", "b")]
    assert skills[0].description == "first one" and skills[0].raw["name"] == "alpha"
    refused = client.invoke("cap:hermes_agent:default:skills", {"x": 1})
    assert refused.status == "failed" and isinstance(refused.error, InvalidInputError)
