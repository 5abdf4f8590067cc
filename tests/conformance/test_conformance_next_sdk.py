"""What changed after Hermes 0.19, through the SDK, on the emulator and the real server (issue 26).

Run on each release (``HERMES_PIP_SPEC``: 0.19.0, 0.20.1, 0.22.2; the emulator plays the same one):
the SDK learns what the server supports from the server itself and behaves right on each.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from conformance_helpers import SERVER_VERSION, Target
from runs_helpers import RunsTarget, uniq

from hermes_sdk import (
    ApprovalRequest,
    AuthenticationError,
    HermesClient,
    OutcomeUnknownError,
    StaleApprovalError,
    SteerNotAcceptedError,
    UnsupportedByServerError,
)
from hermes_sdk._core.idempotency import IdempotencyRecord, MemoryStore
from hermes_sdk.types import ApprovalRequested, RunCompleted, RunSteered

V19, V20, V22 = (SERVER_VERSION == v for v in ("0.19.0", "0.20.1", "0.22.2"))


def sdk(target: Any, **kwargs: Any) -> HermesClient:
    kwargs.setdefault("load_entrypoints", False)
    return HermesClient(target.base_url, target.api_key, **kwargs)


def deny(request: ApprovalRequest) -> Any:
    return request.deny(approver="conformance", reason="test")


def test_the_sdk_reads_what_the_server_supports(server: Target) -> None:
    with sdk(server) as client:
        features = client.server_features()
    assert features.version is not None and features.version.startswith(SERVER_VERSION)
    assert features.run_steer is (not V19) and features.runs_idempotency is V22 and features.exact_approvals is V22


def test_model_options(server: Target) -> None:
    with sdk(server) as client:
        if V19:
            with pytest.raises(UnsupportedByServerError):
                client.model_options()
            return
        options = client.model_options()
    assert isinstance(options["providers"], list) and options["providers"]
    assert {"slug", "models", "is_current"} <= set(options["providers"][0])


def test_a_refused_key_is_an_authentication_error_on_every_version(server: Target) -> None:
    with HermesClient(server.base_url, "not-the-key", load_entrypoints=False) as client, \
            pytest.raises(AuthenticationError) as info:
        client.models()
    assert info.value.details["provider_error"]["code"] == ("invalid_api_key" if V19 else "gateway_auth_failed")


def test_a_streamed_chat_approval_is_answered_by_the_provider(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    asked: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request)
        return deny(request)

    with sdk(runs_target, approval_provider=provider) as client:
        with client.chat_stream(prompt=f"TOOL:terminal:rm -rf {victim}") as stream:
            typed = list(stream.typed())
        text = stream.result().text
    requested = [e for e in typed if isinstance(e, ApprovalRequested)]
    if V22:  # asked on the stream, answered at /v1/runs/{chatcmpl id}/approval with its request_id
        assert len(asked) == 1 and len(requested) == 1 and requested[0].request_id
        assert requested[0].run_id and requested[0].run_id.startswith("chatcmpl-")
        # the denial applied, never Hermes' approval timeout ("timed out without user response")
        assert "BLOCKED" in text and "denied by user" in text
    else:  # the turn returns a pending_approval tool result at once; nobody can answer it
        assert asked == [] and requested == [] and "pending_approval" in text
    assert runs_target.exists(victim)


def test_run_approvals_name_the_request_when_the_server_gave_one(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    with sdk(runs_target, approval_provider=deny) as client:
        result = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k")).wait(timeout=30)
    requested = [e for e in result.events if isinstance(e, ApprovalRequested)]
    assert result.ok and len(requested) == 1 and runs_target.exists(victim)
    assert (requested[0].request_id is None) is V19
    assert requested[0].allow_session is (None if V19 else True)


def test_a_stale_answer_is_refused_by_name_where_the_server_resolves_by_id(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    with sdk(runs_target) as client:
        run = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k"))
        pending = next(e for e in run.events() if isinstance(e, ApprovalRequested))
        if V22:
            with pytest.raises(StaleApprovalError) as info:
                client.runs.approve(run.id, "once", request_id="f" * 32)
            assert info.value.request_id == "f" * 32 and not info.value.uncertain_outcome
            assert client.runs.approve(run.id, "deny", request_id=pending.request_id).resolved == 1
        else:  # 0.19/0.20 ignore the id and resolve the oldest request
            assert client.runs.approve(run.id, "deny", request_id="f" * 32).resolved == 1
        assert run.wait(timeout=30).ok
    assert runs_target.exists(victim)


def test_a_run_key_the_server_would_refuse_still_starts_one_run(runs_target: RunsTarget) -> None:
    prompt = uniq("key rule")
    with sdk(runs_target) as client:
        run = client.run(prompt, idempotency_key=f"with space and clé {uniq('k')}")
        assert run.wait(timeout=20).ok  # 0.22 answers 400 invalid_idempotency_key to the raw key


def test_a_start_whose_outcome_is_unknown_is_resolved_by_the_servers_replay(runs_target: RunsTarget) -> None:
    prompt, key = uniq("lost start"), uniq("k-lost")
    with sdk(runs_target) as first:
        run = first.run(prompt, idempotency_key=key)
    # A second process whose store holds the key pending (its first call crashed before the 202).
    store = MemoryStore()
    now = time.time()
    store.reserve(IdempotencyRecord(capability_id="cap:hermes_agent:default:run_start", key=key, action_id="act_x",
                                    input_hash="h", state="pending", created_at=now, expires_at=now + 60))
    with sdk(runs_target, idempotency_store=store) as client:
        if V22:
            again = client.run(prompt, idempotency_key=key)
            assert again.id == run.id and again.wait(timeout=20).ok
        else:  # the server ignores run keys: the SDK cannot know, and says so
            with pytest.raises(OutcomeUnknownError):
                client.run(prompt, idempotency_key=key)
    assert run.wait(timeout=20).ok


def test_steer(runs_target: RunsTarget) -> None:
    with sdk(runs_target) as client:
        run = client.run(f"SLOW:2 {uniq('steer')}", idempotency_key=uniq("k"))
        if V19:
            with pytest.raises(UnsupportedByServerError):
                run.steer("also this")
            assert run.wait(timeout=20).ok
            return
        end = time.monotonic() + 30  # a guard against a hang: the steer goes once the run is running
        while client.runs.get(run.id).status != "running" and time.monotonic() < end:
            time.sleep(0.02)
        assert run.steer("also this").accepted
        result = run.wait(timeout=20)
        with pytest.raises(SteerNotAcceptedError):
            client.runs.steer(run.id, "too late")
    assert result.ok and [e.accepted for e in result.events if isinstance(e, RunSteered)] == [True]
    ended = result.events[-1]
    assert isinstance(ended, RunCompleted) and ended.pending_steer == "also this"
    if V22:
        assert ended.completed is True and ended.partial is False and ended.runtime is not None
        assert [e.seq for e in result.events] == list(range(len(result.events)))


def test_messages_and_fork_behaviour(server: Target) -> None:
    with sdk(server) as client:
        parent = client.sessions.create(idempotency_key=uniq("k"))
        client.sessions.chat(parent.id, "one")
        client.sessions.chat(parent.id, "two")
        whole = client.sessions.messages(parent.id)
        child = client.sessions.fork(parent.id, idempotency_key=uniq("k"))
        client.sessions.chat(child.id, "three")
        after = client.sessions.messages(parent.id)
        flags = client.sessions.get(parent.id)
    assert [m.content for m in whole] == ["one", "ECHO: one", "two", "ECHO: two"] and whole.pages == 1
    assert after.fork_redirect is after.redirected is (not V22)  # 0.19 and 0.20 follow the newest fork
    assert len(after) == (4 if V22 else 6)
    assert (flags.pinned, flags.archived, flags.hidden) == ((None,) * 3 if V19 else (False,) * 3)


def test_message_pages_on_the_wire(server: Target) -> None:
    with sdk(server) as client:
        session = client.sessions.create(idempotency_key=uniq("k"))
        for text in ("a", "b", "c"):
            client.sessions.chat(session.id, text)
    pages = {}
    for query in ("", "?limit=2&order=oldest&offset=2", "?limit=2&order=latest", "?limit=2&order=latest&offset=2",
                  "?limit=501"):
        reply = server.http.get(f"{server.base_url}/api/sessions/{session.id}/messages{query}",
                                headers={"Authorization": f"Bearer {server.api_key}"}, timeout=10)
        data = reply.json()
        pages[query] = ([m["content"] for m in data["data"]], data.get("pagination"))
    if V19:  # no paging: every message, every time
        assert all(contents == ["a", "ECHO: a", "b", "ECHO: b", "c", "ECHO: c"] and p is None
                   for contents, p in pages.values())
        return
    assert pages[""] == (["a", "ECHO: a", "b", "ECHO: b", "c", "ECHO: c"],
                         {"limit": 500, "offset": 0, "order": "latest", "returned": 6})
    assert pages["?limit=2&order=oldest&offset=2"][0] == ["b", "ECHO: b"]
    assert pages["?limit=2&order=latest"][0] == ["c", "ECHO: c"]
    assert pages["?limit=2&order=latest&offset=2"][0] == ["b", "ECHO: b"]
    assert pages["?limit=501"][1] == {"limit": 500, "offset": 0, "order": "oldest", "returned": 6}
