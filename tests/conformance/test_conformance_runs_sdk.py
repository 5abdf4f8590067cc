"""Durable runs through the SDK (``client.run`` and ``Run``), on the emulator and the real Hermes.

The raw-wire behaviour is pinned by ``test_conformance_runs.py``; these cases check what the SDK
builds on it, on both servers: typed events, approvals through the provider hook (once, session,
deny, None, timeout), never an approval after a stop, one run per key from the SDK's own store,
the broken-stream fallback to polling, typed errors, and tool events on every stream kind.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from conformance_helpers import SERVER_VERSION
from runs_helpers import APPROVAL_TIMEOUT, RunsTarget, uniq

from hermes_sdk import (
    ApprovalNotActiveError,
    ApprovalNotPendingError,
    ApprovalRequest,
    HermesClient,
    InvalidInputError,
    RunNotFoundError,
    RunStoppedError,
)
from hermes_sdk.types import (
    ApprovalRequested,
    ApprovalResponded,
    FunctionCall,
    FunctionCallOutput,
    MessageDelta,
    ReasoningAvailable,
    RunCancelled,
    RunCompleted,
    ToolCompleted,
    ToolProgress,
    ToolStarted,
)

ROOT_PATTERN = "delete in root path"


def sdk(target: RunsTarget, **kwargs: Any) -> HermesClient:
    kwargs.setdefault("load_entrypoints", False)
    return HermesClient(target.base_url, target.api_key, **kwargs)


def approve_once(request: ApprovalRequest) -> Any:
    return request.approve(approver="conformance", policy_decision_id="pd-runs", reason="test")


def approve_session(request: ApprovalRequest) -> Any:
    return request.approve(approver="conformance", policy_decision_id="pd-runs", reason="test", scope="session")


def deny(request: ApprovalRequest) -> Any:
    return request.deny(approver="conformance", reason="test")


def starts(target: RunsTarget, prompt: str) -> int:
    """How many runs the server started for ``prompt``."""
    if target.emulator is not None:
        return len([r for r in target.emulator.requests_seen if r.method == "POST" and r.path == "/v1/runs"
                    and isinstance(r.body, dict) and r.body.get("input") == prompt])
    return len([c for c in target.live.upstream_calls() if prompt in str(c.get("last_user") or "")])


def test_run_follows_typed_events_to_completion(runs_target: RunsTarget) -> None:
    prompt = uniq("sdk plain")
    with sdk(runs_target) as client:
        run = client.run(prompt, idempotency_key=uniq("k"))
        events = list(run.events())
        result = run.wait(timeout=20)
    assert isinstance(events[0], MessageDelta) and isinstance(events[-1], RunCompleted)
    assert ReasoningAvailable in [type(e) for e in events]
    assert result.status == "completed" and result.events_complete and result.output == f"ECHO: {prompt}"
    assert result.text == result.output and result.usage and result.usage["total_tokens"] > 0
    assert client.runs.get(run.id).status == "completed"


def test_tool_events_on_runs_chat_and_responses(runs_target: RunsTarget) -> None:
    word = uniq("tools")
    with sdk(runs_target) as client:
        result = client.run(f"TOOL:terminal:echo {word}", idempotency_key=uniq("k")).wait(timeout=30)
        started, completed = [e for e in result.events if isinstance(e, (ToolStarted, ToolCompleted))]
        assert (started.tool, started.preview) == ("terminal", f"echo {word}") and completed.error is False
        after = result.events[result.events.index(completed) + 1:]
        first_delta = next(e for e in after if isinstance(e, MessageDelta))
        assert first_delta.delta.startswith("\n\n") and not result.output.startswith("\n\n")

        chat = client.chat_stream(prompt=f"TOOL:terminal:echo {word}")
        progress = [t for t in chat.typed() if isinstance(t, ToolProgress)]
        assert [p.status for p in progress] == ["running", "completed"]
        assert progress[0].tool == "terminal" and progress[0].label == f"echo {word}"
        assert progress[0].tool_call_id and progress[0].tool_call_id == progress[1].tool_call_id
        assert chat.result().tools == progress

        stream = client.responses_stream(input=f"PREAMBLE TOOL:terminal:echo {word}")
        typed = list(stream.typed())
        call = next(t for t in typed if isinstance(t, FunctionCall))
        output = next(t for t in typed if isinstance(t, FunctionCallOutput))
        assert call.name == "terminal" and json.loads(call.arguments or "") == {"command": f"echo {word}"}
        assert output.call_id == call.call_id and word in output.output
        final = stream.result().final["output"]
        position = next(i for i, item in enumerate(final) if item.get("type") == "function_call")
        assert call.output_index != position  # the streamed index is not the final position


def test_provider_approves_once_and_the_command_runs(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    asked: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request)
        return approve_once(request)

    with sdk(runs_target, approval_provider=provider) as client:
        run = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k"))
        result = run.wait(timeout=30)
    assert len(asked) == 1 and asked[0].capability_id == "cap:hermes_agent:default:run_approval"
    assert asked[0].input_snapshot["command"] == f"rm -rf {victim}" and asked[0].reason == ROOT_PATTERN
    responded = next(e for e in result.events if isinstance(e, ApprovalResponded))
    assert responded.choice == "once" and result.status == "completed"
    assert not runs_target.exists(victim)


def test_provider_denies_and_the_file_survives(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    with sdk(runs_target, approval_provider=deny) as client:
        result = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k")).wait(timeout=30)
    assert result.status == "completed"  # a denied command still completes
    assert next(e for e in result.events if isinstance(e, ToolCompleted)).error is True
    assert next(e for e in result.events if isinstance(e, ApprovalResponded)).choice == "deny"
    assert "BLOCKED" in (result.output or "")
    assert runs_target.exists(victim)


def test_provider_session_scope_covers_the_run(runs_target: RunsTarget) -> None:
    first, second = runs_target.victim(), runs_target.victim()
    asked: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request)
        return approve_session(request)

    with sdk(runs_target, approval_provider=provider) as client:
        prompt = f"TOOL:terminal:rm -rf {first} || TOOL:terminal:rm -rf {second}"
        result = client.run(prompt, idempotency_key=uniq("k")).wait(timeout=30)
    assert len(asked) == 1 and result.status == "completed"
    assert len([e for e in result.events if isinstance(e, ApprovalRequested)]) == 1
    assert not runs_target.exists(first) and not runs_target.exists(second)


def test_provider_none_leaves_it_to_the_caller(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    with sdk(runs_target, approval_provider=lambda request: None) as client:
        run = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k"))
        request = next(e for e in run.events() if isinstance(e, ApprovalRequested))
        assert request.command == f"rm -rf {victim}" and request.choices == ("once", "session", "always", "deny")
        assert run.pending_approval == request and run.status == "waiting_for_approval"
        assert client.runs.get(run.id).status == "waiting_for_approval"
        assert runs_target.exists(victim)
        assert run.approve("deny").resolved == 1
        with pytest.raises(ApprovalNotPendingError):
            run.approve("deny")
        result = run.wait(timeout=30)
        with pytest.raises(ApprovalNotActiveError):
            run.approve("once")
    assert result.status == "completed" and runs_target.exists(victim)


def test_an_unanswered_request_times_out_blocked(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    with sdk(runs_target, approval_provider=lambda request: None) as client:
        run = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k"))
        result = run.wait(timeout=APPROVAL_TIMEOUT + 20)
    assert result.status == "completed" and run.pending_approval is None
    assert next(e for e in result.events if isinstance(e, ToolCompleted)).error is True
    assert not any(isinstance(e, ApprovalResponded) for e in result.events)
    assert runs_target.exists(victim)


def test_always_is_refused_without_permission(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    with sdk(runs_target, approval_provider=lambda request: None) as client:
        run = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k"))
        next(e for e in run.events() if isinstance(e, ApprovalRequested))
        with pytest.raises(InvalidInputError):
            run.approve("always")
        run.approve("deny")
        assert run.wait(timeout=30).status == "completed"
    assert runs_target.exists(victim)


def test_stop_while_waiting_refuses_approvals_and_the_file_survives(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    with sdk(runs_target, approval_provider=lambda request: None) as client:
        run = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k"))
        next(e for e in run.events() if isinstance(e, ApprovalRequested))
        assert run.stop().status == "stopping"
        with pytest.raises(RunStoppedError):
            run.approve("once")  # Hermes would still execute it: never sent
        result = run.wait(timeout=30)
    assert result.status == "cancelled" and isinstance(result.events[-1], RunCancelled)
    assert runs_target.exists(victim)


def test_stop_while_running(runs_target: RunsTarget) -> None:
    with sdk(runs_target) as client:
        run = client.run(f"SLOW:6 {uniq('stop me')}", idempotency_key=uniq("k"))
        end = time.monotonic() + 30  # a guard against a hang: stopped once it is running, not after a sleep
        while client.runs.get(run.id).status != "running" and time.monotonic() < end:
            time.sleep(0.02)
        assert run.stop().status == "stopping"
        result = run.wait(timeout=30)
        assert result.status == "cancelled" and result.output is None
        assert run.stop().status == "cancelled"  # seen ending: its status, no stop sent
        if SERVER_VERSION == "0.22.2":  # 0.21+: a finished run's /stop answers its object
            assert client.runs.stop(run.id).status == "cancelled"
            return
        deadline = time.time() + 30  # a guard against a hang, not a bound
        while True:  # the task ends just after its terminal event; then /stop is 404
            try:
                client.runs.stop(run.id)
            except RunNotFoundError:
                break
            assert time.time() < deadline
            time.sleep(0.05)


def test_one_run_per_key(runs_target: RunsTarget) -> None:
    prompt = uniq("once only")
    key = uniq("job")
    with sdk(runs_target) as client:
        first = client.run(prompt, idempotency_key=key)
        second = client.run(prompt, idempotency_key=key)
        assert second.id == first.id and second.replayed and not first.replayed
        assert first.wait(timeout=20).status == "completed"
        replayed = second.wait(timeout=20)
    assert replayed.status == "completed" and replayed.output == f"ECHO: {prompt}" and not replayed.events_complete
    assert starts(runs_target, prompt) == 1


def test_a_broken_stream_is_never_resubscribed_the_status_is_polled(runs_target: RunsTarget) -> None:
    prompt = f"SLOW:2 {uniq('broken stream')}"
    with sdk(runs_target) as client:
        run = client.run(prompt, idempotency_key=uniq("k"))
        run.close()  # the subscription drops; Hermes cannot resume it
        result = run.wait(timeout=30)  # completed: found by polling (the stream is gone)
    assert result.status == "completed" and result.output == f"ECHO: {prompt}"
    assert not result.events_complete


def test_inputs_hermes_answers_with_a_500_are_refused_locally(runs_target: RunsTarget) -> None:
    marker = uniq("never sent")
    with sdk(runs_target) as client:
        with pytest.raises(InvalidInputError):
            client.run([marker, "b"], idempotency_key=uniq("k"))
    assert starts(runs_target, marker) == 0


def test_discovery(runs_target: RunsTarget) -> None:
    with sdk(runs_target) as client:
        assert client.health().ok
        assert [m.id for m in client.models()] == ["hermes-agent"]
        assert client.server_capabilities().supports("run_approval_response")
        enabled = {t.name for t in client.toolsets() if t.enabled}
    assert {"terminal", "file", "todo"} <= enabled


def test_a_smart_denied_request_gets_once_for_a_session_decision(runs_target_smart: RunsTarget) -> None:
    target = runs_target_smart
    victim = f"{target.victim()}/smart-deny"
    target.make_file(f"{victim}/file.txt")
    asked: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request)
        return approve_session(request)

    with sdk(target, approval_provider=provider) as client:
        result = client.run(f"TOOL:terminal:rm -rf {victim}", idempotency_key=uniq("k")).wait(timeout=30)
    request = next(e for e in result.events if isinstance(e, ApprovalRequested))
    assert request.smart_denied and request.choices == ("once", "deny") and not request.allow_permanent
    assert len(asked) == 1
    assert next(e for e in result.events if isinstance(e, ApprovalResponded)).choice == "once"  # session not offered
    assert result.status == "completed" and not target.exists(victim)
