"""Durable runs: specs, typed events on every stream kind, approvals through the provider hook,
stop, idempotent start, and the broken-stream fallback (against the emulator and scripted servers)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import attrs
import pytest
from core_support import RawRequest, RawServer, approve_all, wait_for

from hermes_sdk import (
    ApprovalRequest,
    HermesClient,
    InvalidInputError,
    OutcomeUnknownError,
)
from hermes_sdk._core.events import FunctionCall, FunctionCallOutput, MessageDelta, RunEvent, ToolProgress
from hermes_sdk._families.runs.events import (
    ApprovalRequested,
    ApprovalResponded,
    ReasoningAvailable,
    RunCancelled,
    RunCompleted,
    RunFailed,
    ToolCompleted,
    ToolStarted,
    parse_run_event,
)
from hermes_sdk._families.runs.operations import refine_run_error
from hermes_sdk._families.runs.run import Run
from hermes_sdk._families.runs.types import RunResult, RunStatus
from hermes_sdk.errors import (
    ApprovalNotActiveError,
    ApprovalNotPendingError,
    BadRequestError,
    HermesError,
    InvalidApprovalChoiceError,
    RateLimitedError,
    RunNotFoundError,
    RunStoppedError,
)
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

VICTIM = "/scratch/victim"
DANGEROUS = f"TOOL:terminal:rm -rf {VICTIM}"


@pytest.fixture
def tools_emu(emu: HermesEmulator) -> HermesEmulator:
    emu.toolsets = TOOLSETS
    emu.files[f"{VICTIM}/keep.txt"] = "precious"
    return emu


def runs_seen(emu: HermesEmulator, suffix: str = "") -> list[Any]:
    return [r for r in emu.requests_seen if r.path.startswith("/v1/runs") and r.path.endswith(suffix)]


def approvals_sent(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.path.endswith("/approval")]


def client_for(emu: HermesEmulator, **kwargs: Any) -> HermesClient:
    kwargs.setdefault("load_entrypoints", False)
    return emu.client(**kwargs)


def stop_until_404(client: HermesClient, run_id: str) -> RunNotFoundError:
    """``/stop`` once the run's task ended (it ends just after its terminal event): 404."""
    deadline = time.time() + 30  # a guard against a hang, not a bound: a busy machine is slow
    stops = 0
    while True:
        try:
            client.runs.stop(run_id)
            stops += 1
        except RunNotFoundError as exc:
            exc.details["after_stops"] = stops
            return exc
        assert time.time() < deadline
        time.sleep(0.05)


def hold_model(emu: HermesEmulator, marker: str) -> threading.Event:
    """The emulator's model holds each run whose prompt has ``marker`` until the returned event is
    set: the run is still going for as long as the test needs, however busy the machine."""
    release = threading.Event()

    def hold(info: Any) -> None:
        if marker in info.prompt:
            release.wait(60)

    emu.script(responder=hold)
    return release


def deny_all(request: ApprovalRequest) -> Any:
    return request.deny(approver="test-approver", reason="not on my watch")


def approve_session(request: ApprovalRequest) -> Any:
    return request.approve(approver="test-approver", policy_decision_id="pd-1", reason="ok", scope="session")


# --------------------------------------------------------------------------- specs and contracts


def test_contracts_are_published(client: HermesClient) -> None:
    by = {d["operation"]: d for d in client.capabilities()}
    start = by["run_start"]
    assert start["capability_id"] == "cap:hermes_agent:default:run_start"
    assert start["provider_request"] == {"method": "POST", "path": "/v1/runs", "streaming": False}
    assert start["risk"] == "medium" and start["retry"] == {"safety": "unsafe", "supports_retry": False}
    assert start["idempotency"]["requirement"] == "required" and start["idempotency"]["ttl_ms"] == 86_400_000
    assert by["run_get"]["retry"]["safety"] == "safe" and by["run_get"]["risk"] == "low"
    assert by["run_events"]["provider_request"] == {"method": "GET", "path": "/v1/runs/{run_id}/events",
                                                    "streaming": True}
    assert by["run_events"]["retry"]["supports_retry"] is False  # one subscriber, no resume
    assert by["run_approval"]["provider_request"]["path"] == "/v1/runs/{run_id}/approval"
    assert by["run_approval"]["risk"] == "high"
    assert by["run_stop"]["provider_request"] == {"method": "POST", "path": "/v1/runs/{run_id}/stop",
                                                  "streaming": False}
    for op in ("health", "models", "server_capabilities", "toolsets"):
        assert by[op]["retry"]["safety"] == "safe" and by[op]["provider_request"]["method"] == "GET"


@pytest.mark.parametrize("bad_input,field", [
    (["a", "b"], "input[0]"),                      # Hermes: text/plain 500
    ([{"role": "user", "content": "a"}, "b"], "input[1]"),  # a string last item: text/plain 500
    ("", "input"), ("   ", "input"), ([], "input"), (42, "input"), (True, "input"), ({"a": 1}, "input"),
    ([{"role": "user", "content": ""}], "input"), ([{"role": "user"}], "input[0]"),
])
def test_run_start_refuses_bad_input_locally(emu: HermesEmulator, client: HermesClient, bad_input: Any,
                                             field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        client.run(bad_input, idempotency_key="k-bad")
    assert info.value.details["field"] == field
    assert runs_seen(emu) == [] and client.records.get("cap:hermes_agent:default:run_start", "k-bad") is None


def test_run_start_other_local_checks(emu: HermesEmulator, client: HermesClient) -> None:
    with pytest.raises(InvalidInputError) as info:
        client.run("x")
    assert info.value.details["field"] == "idempotency_key"
    with pytest.raises(InvalidInputError) as info:
        client.run("x", idempotency_key="k", session_key="s" * 257)
    assert info.value.details["field"] == "session_key"
    with pytest.raises(InvalidInputError) as info:
        client.run("x", idempotency_key="k", conversation_history=[{"role": "user"}])
    assert info.value.details["field"] == "conversation_history[0]"
    result = client.invoke("cap:hermes_agent:default:run_start", {"input": "x", "stream": True},
                           idempotency_key="k")
    assert result.status == "failed" and result.error.details["field"] == "stream"
    assert runs_seen(emu) == []


def test_run_start_body_and_headers(emu: HermesEmulator, client: HermesClient) -> None:
    run = client.run([{"role": "user", "content": "earlier"}, {"role": "user", "content": "now"}],
                     idempotency_key="k-fields", instructions="Be terse.", session_key="sk-1", model="m-1")
    assert run.wait(timeout=10).ok
    post = runs_seen(emu)[0]
    assert post.method == "POST" and post.path == "/v1/runs"
    assert post.body == {"input": [{"role": "user", "content": "earlier"}, {"role": "user", "content": "now"}],
                         "instructions": "Be terse.", "model": "m-1"}
    assert post.header("X-Hermes-Session-Key") == "sk-1" and post.header("Idempotency-Key") == "k-fields"
    assert client.runs.get(run.id).model == "m-1"


@pytest.mark.parametrize("run_id", ["", ".", "..", "a\nb", "x" * 600, 5])
def test_run_ids_are_checked(emu: HermesEmulator, client: HermesClient, run_id: Any) -> None:
    for call in (client.runs.get, client.runs.stop, lambda r: client.runs.approve(r, "once")):
        with pytest.raises(InvalidInputError) as info:
            call(run_id)
        assert info.value.details["field"] == "run_id"
    assert runs_seen(emu) == []


def test_run_approval_choice_checked_locally(emu: HermesEmulator, client: HermesClient) -> None:
    for choice in ("approve", "ONCE", "", None, "maybe"):
        with pytest.raises(InvalidInputError) as info:
            client.runs.approve("run_x", choice)  # type: ignore[arg-type]
        assert info.value.details["field"] == "choice"
    assert runs_seen(emu) == []


def test_run_path_ids_are_one_segment(emu: HermesEmulator, client: HermesClient) -> None:
    with pytest.raises(RunNotFoundError) as info:
        client.runs.get("a/b c")
    assert [r.path for r in runs_seen(emu)] == ["/v1/runs/a%2Fb%20c"]
    assert info.value.http_status == 404 and not info.value.uncertain_outcome


def test_typed_run_errors(emu: HermesEmulator, client: HermesClient) -> None:
    run = client.run("SLOW:1 hello", idempotency_key="k-errs")
    with pytest.raises(ApprovalNotPendingError) as pending:
        client.runs.approve(run.id, "once")
    assert pending.value.http_status == 409 and not pending.value.retryable
    assert not pending.value.uncertain_outcome and pending.value.code == "connector.hermes_agent.remote_rejected"
    assert run.wait(timeout=10).status == "completed"
    with pytest.raises(ApprovalNotActiveError) as active:
        client.runs.approve(run.id, "deny")
    assert active.value.http_status == 409 and not active.value.uncertain_outcome
    stop = stop_until_404(client, run.id)  # finished: 404 although GET still has it
    assert stop.http_status == 404 and not stop.uncertain_outcome
    # A /stop that landed between the terminal event and the end of the run's task (a busy machine
    # widens that window) is accepted and reads back as "stopping", as Hermes 0.19 does.
    assert client.runs.get(run.id).status in (("completed", "stopping") if stop.details.get("after_stops")
                                              else ("completed",))
    with pytest.raises(RunNotFoundError):
        client.runs.get("run_unknown")


def test_invalid_choice_error_is_typed() -> None:
    err = BadRequestError("Hermes returned HTTP 400", http_status=400,
                          details={"provider_error": {"code": "invalid_approval_choice"}})
    typed = refine_run_error(err)
    assert isinstance(typed, InvalidApprovalChoiceError) and isinstance(typed, BadRequestError)
    assert typed.http_status == 400 and not typed.retryable and not typed.uncertain_outcome


def test_discovery(tools_emu: HermesEmulator, client: HermesClient) -> None:
    health = client.health()
    assert health.ok and health.platform == "hermes-agent"
    assert [m.id for m in client.models()] == ["hermes-agent"]
    caps = client.server_capabilities()
    assert caps.supports("run_submission") and caps.supports("approval_events")
    assert caps.endpoints["run_events"]["path"] == "/v1/runs/{run_id}/events"
    enabled = {t.name for t in client.toolsets() if t.enabled}
    assert enabled == {"terminal", "file", "todo"}
    result = client.invoke("cap:hermes_agent:default:toolsets", {})
    assert result.ok and isinstance(result.output["data"], list)


def test_health_needs_no_api_key_and_the_other_routes_do(tools_emu: HermesEmulator, monkeypatch: Any) -> None:
    # Hermes serves /health without authentication: a readiness probe needs no key.
    from hermes_sdk import MissingCredentialError

    monkeypatch.delenv("HERMES_API_KEY", raising=False)
    seen = len(tools_emu.requests_seen)
    with HermesClient(tools_emu.base_url, load_entrypoints=False) as keyless:
        assert keyless.health().ok
        with pytest.raises(MissingCredentialError):
            keyless.models()
    sent = tools_emu.requests_seen[seen:]
    assert [r.path for r in sent] == ["/health"] and sent[0].header("Authorization") is None


# --------------------------------------------------------------------------- typed events


def test_parse_run_event_types() -> None:
    base = {"run_id": "run_1", "timestamp": 1.5}
    assert parse_run_event({"event": "message.delta", "delta": "hi", **base}) == MessageDelta(
        event="message.delta", run_id="run_1", timestamp=1.5, delta="hi")
    assert isinstance(parse_run_event({"event": "tool.started", "tool": "terminal", "preview": "ls"}), ToolStarted)
    done = parse_run_event({"event": "tool.completed", "tool": "terminal", "duration": 0.25, "error": True})
    assert isinstance(done, ToolCompleted) and done.error and done.duration == 0.25
    req = parse_run_event({"command": "rm -rf /x", "pattern_key": "delete in root path",
                           "pattern_keys": ["delete in root path"], "description": "delete in root path",
                           "allow_permanent": True, "event": "approval.request",
                           "choices": ["once", "session", "always", "deny"]})
    assert isinstance(req, ApprovalRequested) and req.choices == ("once", "session", "always", "deny")
    assert req.allow_permanent and req.pattern_keys == ("delete in root path",) and not req.smart_denied
    assert parse_run_event({"event": "approval.responded", "choice": "once", "resolved": 1}) == ApprovalResponded(
        event="approval.responded", choice="once", resolved=1)
    completed = parse_run_event({"event": "run.completed", "output": None, "usage": {"total_tokens": 0}})
    assert isinstance(completed, RunCompleted) and completed.terminal and completed.output is None
    assert isinstance(parse_run_event({"event": "run.failed", "error": "HTTP 400"}), RunFailed)
    assert parse_run_event({"event": "run.cancelled"}).terminal
    unknown = parse_run_event({"event": "run.future_thing", "x": 1})
    assert type(unknown) is RunEvent and unknown.raw == {"event": "run.future_thing", "x": 1}
    assert not unknown.terminal


def test_run_events_typed_with_tools(tools_emu: HermesEmulator, client: HermesClient) -> None:
    run = client.run("PREAMBLE TOOL:terminal:echo run-tool", idempotency_key="k-tools")
    events = list(run.events())
    kinds = [type(e) for e in events]
    assert kinds[0] is MessageDelta and events[0].delta == "Calling tools now."
    assert ReasoningAvailable in kinds and kinds[-1] is RunCompleted
    started = next(e for e in events if isinstance(e, ToolStarted))
    completed = next(e for e in events if isinstance(e, ToolCompleted))
    assert (started.tool, started.preview) == ("terminal", "echo run-tool")
    assert completed.tool == "terminal" and completed.error is False and completed.duration is not None
    deltas_after = [e for e in events[kinds.index(ToolCompleted):] if isinstance(e, MessageDelta)]
    assert deltas_after[0].delta.startswith("\n\n")
    result = run.wait()
    assert result.events_complete and result.status == "completed"
    assert not result.output.startswith("\n\n") and "DONE:" in result.output
    assert result.text.startswith("Calling tools now.\n\nDONE:")  # deltas only: reasoning.available left out
    reasoning = [e.text for e in events if isinstance(e, ReasoningAvailable)]
    assert "Calling tools now." in reasoning  # the preamble is content, duplicated as "reasoning"
    assert result.text.count("Calling tools now.") == 1
    assert [type(t) for t in result.tools] == [ToolStarted, ToolCompleted]
    assert run.status == "completed" and run.result is result


def test_chat_stream_typed_tool_progress(tools_emu: HermesEmulator, client: HermesClient) -> None:
    stream = client.chat_stream(prompt="TOOL:terminal:echo chat-tool")
    typed = list(stream.typed())
    progress = [t for t in typed if isinstance(t, ToolProgress)]
    assert [(p.tool, p.status) for p in progress] == [("terminal", "running"), ("terminal", "completed")]
    assert progress[0].label == "echo chat-tool" and progress[0].tool_call_id == progress[1].tool_call_id
    assert progress[0].tool_call_id
    deltas = [t for t in typed if isinstance(t, MessageDelta)]
    assert deltas[0].delta.startswith("\n\n")
    result = stream.result()
    assert result.tools == progress and result.status == "completed"


def test_responses_stream_typed_items(tools_emu: HermesEmulator, client: HermesClient) -> None:
    stream = client.responses_stream(input="PREAMBLE TOOL:terminal:echo resp-tool")
    typed = list(stream.typed())
    call = next(t for t in typed if isinstance(t, FunctionCall))
    output = next(t for t in typed if isinstance(t, FunctionCallOutput))
    assert call.name == "terminal" and json.loads(call.arguments or "{}") == {"command": "echo resp-tool"}
    assert output.call_id == call.call_id and "resp-tool" in output.output
    result = stream.result()
    assert result.tools == [call, output]
    final = result.final["output"]
    final_index = next(i for i, item in enumerate(final) if item.get("type") == "function_call")
    message_index = next(i for i, item in enumerate(final) if item.get("type") == "message")
    assert call.output_index == 1 and final_index == 0 and message_index == len(final) - 1
    assert output.raw["output"][0]["type"] == "input_text"


def test_stream_tools_survive_the_idempotency_record(tools_emu: HermesEmulator, client: HermesClient) -> None:
    first = client.chat_stream(prompt="TOOL:terminal:echo keyed", idempotency_key="k-stream-tools")
    tools = first.result().tools
    replay = client.chat_stream(prompt="TOOL:terminal:echo keyed", idempotency_key="k-stream-tools")
    assert replay.replayed and replay.result().tools == tools and all(isinstance(t, ToolProgress) for t in tools)


# --------------------------------------------------------------------------- approvals


def test_provider_approves_once(tools_emu: HermesEmulator) -> None:
    seen: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        seen.append(request)
        return approve_all(request)

    with client_for(tools_emu, approval_provider=provider) as c:
        run = c.run(DANGEROUS, idempotency_key="k-once")
        result = run.wait(timeout=15)
    assert result.status == "completed" and result.events_complete
    request = seen[0]
    assert request.capability_id == "cap:hermes_agent:default:run_approval"
    # shown to approve: the input itself, its id too (issue 38 item 11: the approver's view is not a log)
    assert request.input_snapshot == {"run_id": run.id, "command": f"rm -rf {VICTIM}"}
    assert request.reason == "delete in root path"
    assert request.input_hash == c.runs.approval_request(run.id, f"rm -rf {VICTIM}").input_hash
    assert json.loads(approvals_sent(tools_emu)[0].raw_body) == {"choice": "once"}
    responded = [e for e in result.events if isinstance(e, ApprovalResponded)]
    assert responded and responded[0].choice == "once"
    assert not any(p.startswith(VICTIM) for p in tools_emu.files)  # the approved command ran


def test_provider_denies_and_the_file_survives(tools_emu: HermesEmulator) -> None:
    with client_for(tools_emu, approval_provider=deny_all) as c:
        result = c.run(DANGEROUS, idempotency_key="k-deny").wait(timeout=15)
    assert result.status == "completed"  # a denied command still completes
    assert json.loads(approvals_sent(tools_emu)[0].raw_body) == {"choice": "deny"}
    assert next(e for e in result.events if isinstance(e, ToolCompleted)).error is True
    assert tools_emu.files[f"{VICTIM}/keep.txt"] == "precious"


def test_provider_session_scope_covers_the_second_command(tools_emu: HermesEmulator) -> None:
    asked: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request)
        return approve_session(request)

    prompt = f"TOOL:terminal:rm -rf {VICTIM}/a||TOOL:terminal:rm -rf {VICTIM}/b"
    with client_for(tools_emu, approval_provider=provider) as c:
        result = c.run(prompt, idempotency_key="k-session").wait(timeout=15)
    assert result.status == "completed"
    assert len(asked) == 1 and [json.loads(r.raw_body) for r in approvals_sent(tools_emu)] == [{"choice": "session"}]
    assert len([e for e in result.events if isinstance(e, ApprovalRequested)]) == 1


def test_provider_none_leaves_it_pending_for_the_caller(tools_emu: HermesEmulator) -> None:
    with client_for(tools_emu, approval_provider=lambda request: None) as c:
        run = c.run(DANGEROUS, idempotency_key="k-none")
        for event in run.events():
            if isinstance(event, ApprovalRequested):
                break
        assert approvals_sent(tools_emu) == [] and run.status == "waiting_for_approval"
        assert run.pending_approval is not None and run.pending_approval.command == f"rm -rf {VICTIM}"
        assert c.runs.get(run.id).status == "waiting_for_approval"
        answer = run.approve("deny")
        assert (answer.choice, answer.resolved) == ("deny", 1) and run.pending_approval is None
        result = run.wait(timeout=15)
    assert result.status == "completed" and result.events_complete
    assert tools_emu.files[f"{VICTIM}/keep.txt"] == "precious"


def test_run_provider_overrides_the_clients(tools_emu: HermesEmulator, client: HermesClient) -> None:
    result = client.run(DANGEROUS, idempotency_key="k-own", approval_provider=deny_all).wait(timeout=15)
    assert result.ok and json.loads(approvals_sent(tools_emu)[0].raw_body) == {"choice": "deny"}


def test_the_snapshot_scrubs_credentials_in_the_command(client: HermesClient) -> None:
    command = "curl -H 'Authorization: Bearer abc123def456ghi789' x | sh"
    request = client.runs.approval_request("run_0123456789abcdef", command)
    assert "abc123def456ghi789" not in request.input_snapshot["command"] and "curl" in request.input_snapshot["command"]
    assert not request.fully_shown  # (a token after a space could be an argument: the approver is told)
    assert request.input_hash == client.runs.approval_request("run_0123456789abcdef", command).input_hash


def test_a_decision_for_another_input_is_answered_deny(tools_emu: HermesEmulator) -> None:
    def wrong(request: ApprovalRequest) -> Any:
        decision = request.approve(approver="a", policy_decision_id="pd", reason="r")
        return attrs.evolve(decision, input_hash="0" * 64)  # bound to another input

    with client_for(tools_emu, approval_provider=wrong) as c:
        result = c.run(DANGEROUS, idempotency_key="k-wrong").wait(timeout=15)
    assert json.loads(approvals_sent(tools_emu)[0].raw_body) == {"choice": "deny"}
    assert result.ok and tools_emu.files[f"{VICTIM}/keep.txt"] == "precious"


def test_always_is_refused_by_default(tools_emu: HermesEmulator) -> None:
    def always(request: ApprovalRequest) -> Any:
        return request.approve(approver="a", policy_decision_id="pd", reason="r", scope="always")

    with client_for(tools_emu, approval_provider=always) as c:
        run = c.run(DANGEROUS, idempotency_key="k-always")
        with pytest.raises(InvalidInputError) as info:
            run.wait(timeout=15)
        assert info.value.details["field"] == "scope" and approvals_sent(tools_emu) == []
        with pytest.raises(InvalidInputError) as direct:
            c.runs.approve(run.id, "always")
        assert direct.value.details["field"] == "choice" and approvals_sent(tools_emu) == []
        run.approve("deny")
        assert run.wait(timeout=15).ok
    assert tools_emu.command_allowlist == set()


def test_always_with_permission(tools_emu: HermesEmulator) -> None:
    def always(request: ApprovalRequest) -> Any:
        return request.approve(approver="a", policy_decision_id="pd", reason="r", scope="always")

    with client_for(tools_emu, approval_provider=always, allow_permanent_approvals=True) as c:
        assert c.run(DANGEROUS, idempotency_key="k-always-ok").wait(timeout=15).ok
    assert json.loads(approvals_sent(tools_emu)[0].raw_body) == {"choice": "always"}
    assert tools_emu.command_allowlist == {"delete in root path"}


# --------------------------------------------------------------------------- stop


def test_never_an_approval_after_stop(tools_emu: HermesEmulator) -> None:
    with client_for(tools_emu, approval_provider=lambda request: None) as c:
        run = c.run(DANGEROUS, idempotency_key="k-stop")
        for event in run.events():
            if isinstance(event, ApprovalRequested):
                break
        status = run.stop()
        assert status.status == "stopping"
        with pytest.raises(RunStoppedError) as info:
            run.approve("once")
        assert info.value.details["sent"] is False and info.value.code == "hermes_sdk.run_stopped"
        with pytest.raises(RunStoppedError):
            c.runs.approve(run.id, "once")  # the client remembers, whichever handle asks
        result = run.wait(timeout=15)
    assert approvals_sent(tools_emu) == []
    assert result.status == "cancelled" and isinstance(result.events[-1], RunCancelled)
    assert tools_emu.files[f"{VICTIM}/keep.txt"] == "precious"


def test_provider_is_not_asked_after_stop(tools_emu: HermesEmulator) -> None:
    asked: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request)
        return approve_all(request)

    with client_for(tools_emu, approval_provider=provider) as c:
        run = c.run(DANGEROUS, idempotency_key="k-stop-early")
        deadline = time.time() + 10
        while not tools_emu.pending_approvals(run.id) and time.time() < deadline:
            time.sleep(0.02)
        c.runs.stop(run.id)  # before this handle read the approval request
        result = run.wait(timeout=15)
    assert any(isinstance(e, ApprovalRequested) for e in result.events)
    assert result.status == "cancelled" and asked == [] and approvals_sent(tools_emu) == []
    assert tools_emu.files[f"{VICTIM}/keep.txt"] == "precious"


def test_stop_a_running_run_and_a_finished_one(emu: HermesEmulator, client: HermesClient) -> None:
    run = client.run("SLOW:5 long", idempotency_key="k-stop-run")
    assert run.stop().status == "stopping"
    result = run.wait(timeout=15)
    assert result.status == "cancelled" and result.output is None
    assert run.stop().status == "cancelled"  # 404 on a finished run: its final status instead


# --------------------------------------------------------------------------- idempotency


def test_one_run_per_key(emu: HermesEmulator, client: HermesClient) -> None:
    # (a run an earlier test left active survives the emulator's reset: count the runs this test made)
    before = set(emu.run_ids())
    first = client.run("hello", idempotency_key="job-7")
    again = client.run("hello", idempotency_key="job-7")
    assert again.id == first.id and again.replayed and not first.replayed
    assert len([r for r in runs_seen(emu) if r.path == "/v1/runs"]) == 1
    assert set(emu.run_ids()) - before == {first.id}
    assert first.wait(timeout=10).events_complete
    replayed = again.wait(timeout=10)  # followed by polling: the first handle holds the events
    assert replayed.status == "completed" and replayed.output == "ECHO: hello" and not replayed.events_complete
    assert len(runs_seen(emu, "/events")) == 1  # never a second subscription


def test_rate_limited_start_gives_the_key_back(emu: HermesEmulator, hermes_emulator_factory: Any) -> None:
    small = hermes_emulator_factory(max_concurrent_runs=1, toolsets=TOOLSETS)
    with small.client(load_entrypoints=False) as c:
        holder = c.run(DANGEROUS, idempotency_key="k-hold")
        for event in holder.events():
            if isinstance(event, ApprovalRequested):
                break
        with pytest.raises(RateLimitedError) as info:
            c.run("second", idempotency_key="k-429")
        assert info.value.retryable and not info.value.uncertain_outcome and info.value.details["started"] is False
        assert c.records.get("cap:hermes_agent:default:run_start", "k-429") is None
        holder.approve("deny")
        assert holder.wait(timeout=15).ok
        started: list[Run] = []

        def start() -> bool:  # the slot is released just after the terminal event
            try:
                started.append(c.run("second", idempotency_key="k-429"))  # the same key starts it now
            except RateLimitedError:
                return False
            return True

        assert wait_for(start, 30)
        assert started[0].wait(timeout=10).ok


def test_crash_between_post_and_record_is_outcome_unknown(emu: HermesEmulator, client: HermesClient) -> None:
    cap = "cap:hermes_agent:default:run_start"
    from hermes_sdk._core.idempotency import IdempotencyRecord

    now = time.time()
    client.idempotency_store.reserve(IdempotencyRecord(capability_id=cap, key="k-crash", action_id="act_1",
                                                       input_hash="h", state="pending", created_at=now,
                                                       expires_at=now + 60))
    with pytest.raises(OutcomeUnknownError):
        client.run("hello", idempotency_key="k-crash")
    assert runs_seen(emu) == []


_CHILD = textwrap.dedent("""
    import sys
    from hermes_sdk import HermesClient, OutcomeUnknownError
    base_url, db = sys.argv[1], sys.argv[2]
    client = HermesClient(base_url, "test-key", idempotency_store="sqlite:///" + db, load_entrypoints=False)
    try:
        run = client.run("important job", idempotency_key="job-kill")
    except OutcomeUnknownError as exc:
        print("OUTCOME_UNKNOWN", exc.details.get("state"))
        sys.exit(3)
    print("STARTED", run.id)
""")


def test_sigkill_between_post_and_record_does_not_start_a_second_run(tmp_path: Path) -> None:
    posts: list[RawRequest] = []
    received = threading.Event()
    release = threading.Event()

    def handler(sock: socket.socket, request: RawRequest, server: RawServer) -> None:
        if request.target == "/v1/runs":
            posts.append(request)
            received.set()
            release.wait(30)  # the 202 is delayed: the client is killed while it waits
            body = b'{"run_id": "run_slow", "status": "started"}'
            sock.sendall(b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
        else:
            sock.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    server = RawServer(handler)
    db = tmp_path / "keys.db"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    try:
        child = subprocess.Popen([sys.executable, str(script), server.base_url, str(db)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert received.wait(30), child.communicate(timeout=5)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        assert child.returncode == -signal.SIGKILL
        restarted = subprocess.run([sys.executable, str(script), server.base_url, str(db)], env=env,
                                   capture_output=True, text=True, timeout=60)
        assert restarted.returncode == 3, restarted.stderr
        assert "OUTCOME_UNKNOWN pending" in restarted.stdout
        assert len(posts) == 1  # the restarted process sent nothing
    finally:
        release.set()
        server.close()


# --------------------------------------------------------------------------- broken stream, deadlines


def test_broken_stream_falls_back_to_polling(emu: HermesEmulator, client: HermesClient) -> None:
    emu.drop_connection("mid_stream", path="/v1/runs/", after_events=1)
    run = client.run("SLOW:1 follow me", idempotency_key="k-broken")
    result = run.wait(timeout=20)
    assert result.status == "completed" and result.output == "ECHO: SLOW:1 follow me"
    assert not result.events_complete and run.stream_error is not None
    assert len(runs_seen(emu, "/events")) == 1  # never re-subscribed
    assert len([r for r in runs_seen(emu) if r.method == "GET" and r.path == f"/v1/runs/{run.id}"]) >= 1


def test_wait_ends_within_its_timeout(emu: HermesEmulator, client: HermesClient) -> None:
    release = hold_model(emu, "slow one")  # the run goes on until the partial wait returned
    try:
        run = client.run("slow one", idempotency_key="k-deadline")
        partial = run.wait(timeout=0.5)
        assert not partial.done and partial.status in ("started", "running") and not partial.events_complete
    finally:
        release.set()
    assert run.wait(timeout=15).status == "completed"


def test_polling_respects_the_deadline(emu: HermesEmulator, client: HermesClient) -> None:
    emu.drop_connection("before_response", path="/v1/runs/", after_execution=False)  # no subscription
    release = hold_model(emu, "never seen live")
    try:
        run = client.run("never seen live", idempotency_key="k-poll-deadline")
        partial = run.wait(timeout=1.0)
        assert not partial.done and not partial.events_complete and run.stream_error is not None
    finally:
        release.set()
    final = run.wait(timeout=15)
    assert final.status == "completed" and not final.events_complete


def test_failed_run(emu: HermesEmulator, client: HermesClient) -> None:
    result = client.run("FAIL400", idempotency_key="k-fail").wait(timeout=10)
    assert result.status == "failed" and result.error and isinstance(result.events[-1], RunFailed)
    status = client.runs.get(result.run_id)
    assert isinstance(status, RunStatus) and status.terminal and status.error == result.error


def test_run_result_type(emu: HermesEmulator, client: HermesClient) -> None:
    run = client.run("plain", idempotency_key="k-plain")
    assert isinstance(run, Run) and run.status == "started"
    result = run.wait()
    assert isinstance(result, RunResult) and result.ok and result.done and result.usage
    assert result.text == "ECHO: plain" == result.output


def test_invoke_run_get(emu: HermesEmulator, client: HermesClient) -> None:
    run = client.run("invoke me", idempotency_key="k-invoke")
    run.wait(timeout=10)
    result = client.invoke("cap:hermes_agent:default:run_get", {"run_id": run.id})
    assert result.ok and result.output["status"] == "completed"
    failed = client.invoke("cap:hermes_agent:default:run_approval", {"run_id": run.id, "choice": "once"})
    assert failed.status == "failed" and isinstance(failed.error, ApprovalNotActiveError)


# --------------------------------------------------------------------------- decoders (per spec)


def test_decoders() -> None:
    from hermes_sdk._families.discovery import types as discovery
    from hermes_sdk._families.runs.types import approval_answer, run_started, run_status
    from hermes_sdk.errors import InvalidResponseError
    from hermes_sdk.plugin import DecodeContext

    started = run_started({"run_id": "run_1", "status": "started"}, DecodeContext("run_start", None, "act_1"))
    assert (started.run_id, started.status, started.action_id, started.replayed) == ("run_1", "started", "act_1",
                                                                                     False)
    assert run_started({"run_id": "run_1"}, DecodeContext("run_start", None, "act_1", True)).replayed
    keyed = run_started({"run_id": "run_1"}, DecodeContext(headers={"X-Hermes-Session-Key": "k"}))
    assert keyed.session_key == "k"  # the reply's own session_key first, else its header
    status = run_status({"object": "hermes.run", "run_id": "run_1", "status": "cancelled", "created_at": 1,
                         "updated_at": 2.5})
    assert status.terminal and status.output is None and status.last_event is None and status.created_at == 1.0
    done = run_status({"run_id": "r", "status": "completed", "output": None, "usage": {"total_tokens": 0},
                       "last_event": "run.completed"})
    assert done.terminal and done.output is None and done.usage == {"total_tokens": 0}
    assert not run_status({"run_id": "r", "status": "waiting_for_approval"}).terminal
    assert approval_answer({"object": "hermes.run.approval_response", "run_id": "r", "choice": "deny",
                            "resolved": 2}).resolved == 2
    for bad in ([], {"status": "x"}, {"run_id": 5, "status": "x"}, {"run_id": ""}):
        with pytest.raises(InvalidResponseError):
            run_started(bad)
        with pytest.raises(InvalidResponseError):
            run_status(bad)
    with pytest.raises(InvalidResponseError):
        discovery.models({"object": "list"})
    with pytest.raises(InvalidResponseError):
        discovery.health([])
    sets = discovery.toolsets({"data": [{"name": "web", "enabled": False, "tools": ["a", 1]}, "junk"]})
    assert [(t.name, t.enabled, t.tools) for t in sets] == [("web", False, ("a",))]
    caps = discovery.server_capabilities({"features": {"run_stop": True, "cors": False}})
    assert caps.supports("run_stop") and not caps.supports("cors") and not caps.supports("missing")


def test_run_start_replays_a_recorded_failure(emu: HermesEmulator, client: HermesClient) -> None:
    emu.drop_connection("before_response", path="/v1/runs", after_execution=False)
    with pytest.raises(HermesError) as first:
        client.run("lost 202", idempotency_key="k-lost")
    assert first.value.uncertain_outcome  # the POST may have started a run: never sent again
    with pytest.raises(HermesError) as again:
        client.run("lost 202", idempotency_key="k-lost")
    assert again.value.details.get("replayed") is True
    assert len([r for r in runs_seen(emu) if r.path == "/v1/runs"]) == 1


def test_close_switches_to_polling_without_waiting_for_the_server(tools_emu: HermesEmulator) -> None:
    tools_emu.run_events_keepalive_seconds = 60  # a silent stream: only the close can end the wait
    with client_for(tools_emu, approval_provider=lambda request: None) as c:
        run = c.run(DANGEROUS, idempotency_key="k-close")
        request = next(e for e in run.events() if isinstance(e, ApprovalRequested))
        run.close()
        assert list(run.events()) == []  # the stream is gone; events() ends, wait() polls
        run.approve("deny")
        result = run.wait(timeout=15)  # waiting on the stream, it would end at 15 s still running
    assert result.status == "completed" and not result.events_complete
    assert result.events[-1] == request and run.stream_error is not None
    assert len(runs_seen(tools_emu, "/events")) == 1


def test_keepalives_do_not_break_the_stream(emu: HermesEmulator, client: HermesClient) -> None:
    emu.run_events_keepalive_seconds = 0.1
    result = client.run("SLOW:1 quiet", idempotency_key="k-keepalive").wait(timeout=15)
    assert result.status == "completed" and result.events_complete


def test_a_waiting_run_holds_the_shared_slot(hermes_emulator_factory: Any) -> None:
    small = hermes_emulator_factory(max_concurrent_runs=1, toolsets=TOOLSETS)
    with small.client(load_entrypoints=False) as c:
        run = c.run(DANGEROUS, idempotency_key="k-slot")
        next(e for e in run.events() if isinstance(e, ApprovalRequested))
        with pytest.raises(RateLimitedError) as info:
            c.chat(prompt="meanwhile")
        assert info.value.http_status == 429 and info.value.details["before_agent_work"] is True
        run.approve("deny")
        assert run.wait(timeout=15).ok


def test_the_context_deadline_bounds_wait(emu: HermesEmulator, client: HermesClient) -> None:
    from hermes_sdk import ExecutionContext

    release = hold_model(emu, "bounded")  # the run goes on until wait() returned
    try:
        run = client.run("bounded", idempotency_key="k-ctx", context=ExecutionContext(deadline=time.time() + 1))
        assert not run.wait().done
    finally:
        release.set()


def test_observers_see_run_events_redacted(tools_emu: HermesEmulator) -> None:
    from hermes_sdk import hookimpl

    seen: list[dict[str, Any]] = []

    class Observer:
        @hookimpl
        def hermes_stream_event(self, call: Any, event: dict[str, Any]) -> None:
            seen.append(event)

    with client_for(tools_emu, approval_provider=approve_all, plugins=[Observer()]) as c:
        c.run(DANGEROUS, idempotency_key="k-observed").wait(timeout=15)
    names = [e["data"]["event"] for e in seen]
    assert names[:4] == ["tool.started", "approval.request", "approval.responded", "tool.completed"]
    started, request, responded = seen[0]["data"], seen[1]["data"], seen[2]["data"]
    assert started["tool"] == "terminal" and started["preview"] == "[REDACTED]"
    assert request["pattern_key"] == "delete in root path" and request["command"] == "[REDACTED]"
    assert responded["choice"] == "once"
    assert all(VICTIM not in json.dumps(e) and not re.search(r"run_[0-9a-f]{8}", json.dumps(e)) for e in seen)


def test_a_run_longer_than_a_read_timeout_keeps_its_one_stream(emu: HermesEmulator, client: HermesClient,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes_sdk._families.runs.resource as client_module

    monkeypatch.setattr(client_module, "RUN_EVENTS_READ_TIMEOUT", 1.0)
    emu.run_events_keepalive_seconds = 0.3  # keepalives keep a 1 s read timeout from firing
    result = client.run("SLOW:2.5 long enough", idempotency_key="k-long").wait(timeout=15)
    assert result.status == "completed" and result.events_complete


def test_a_silent_stream_is_found_broken_by_its_read_timeout(emu: HermesEmulator, client: HermesClient,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import hermes_sdk._families.runs.resource as client_module

    monkeypatch.setattr(client_module, "RUN_EVENTS_READ_TIMEOUT", 0.5)
    emu.run_events_keepalive_seconds = 30  # nothing arrives for 2 s: the read times out, then polling
    run = client.run("SLOW:2 silent", idempotency_key="k-silent")
    result = run.wait(timeout=15)
    assert result.status == "completed" and not result.events_complete and run.stream_error is not None


def test_every_run_method_takes_a_timeout(emu: HermesEmulator, client: HermesClient) -> None:
    run = client.run("t", idempotency_key="k-timeout", timeout=10)
    assert client.runs.get(run.id, timeout=5).run_id == run.id
    assert client.health(timeout=5).ok and client.models(timeout=5)
    assert client.server_capabilities(timeout=5).features and client.toolsets(timeout=5)
    with pytest.raises(InvalidInputError):
        client.runs.get(run.id, timeout=-1)
    run.wait(timeout=10)


def test_the_provider_is_told_the_runs_objective_session_tenant_and_principal(
        tools_emu: HermesEmulator) -> None:
    # An approver decides on a command knowing the run's objective (through the redactor), its
    # session and whose run it is (the run's own context, not only the client's).
    from hermes_sdk import ExecutionContext

    seen: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        seen.append(request)
        return None

    asked = [{"role": "user", "content": "earlier turn"}, {"role": "assistant", "content": "ok"},
             {"role": "user", "content": f"{DANGEROUS} with key sk-abcdefghijkl0123"}]
    with client_for(tools_emu, approval_provider=provider, context=ExecutionContext(tenant_id="acme")) as c:
        run = c.run(asked, idempotency_key="k-objective", session_id="sess-9",
                    context=ExecutionContext(tenant_id="acme", principal_id="user-7"))
        for event in run.events():
            if isinstance(event, ApprovalRequested):
                break
        run.approve("deny")
        run.wait(timeout=15)
    request = seen[0]
    assert request.objective == f"{DANGEROUS} with key [REDACTED]"
    assert request.identifiers["session_id"] == "sess-9" and request.identifiers["run_id"] == run.id
    assert (request.tenant_id, request.principal_id) == ("acme", "user-7")
    assert "objective" not in repr(request) and "sk-abcdefghijkl0123" not in repr(request)
def test_a_run_and_its_result_answer_to_both_spellings_of_the_id(client: Any) -> None:
    run = client.run("hello", idempotency_key="both-spellings")
    result = run.wait(timeout=30)
    status = client.runs.get(run.run_id)
    assert run.id == run.run_id == result.run_id == result.id == status.run_id == status.id
    assert run.run_id.startswith("run_")
