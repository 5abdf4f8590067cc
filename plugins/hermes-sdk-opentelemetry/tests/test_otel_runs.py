"""Durable runs: an ``invoke_agent`` span, ``execute_tool`` children and approval span events.

The runs family is not in the SDK core on this branch yet, so the hooks are called here as the core
will call them, with events shaped as Hermes sends them (``shared/spec/hermes-runs.md``) and redacted
by the SDK's own ``Redactor``.
"""

from __future__ import annotations

from typing import Any, Optional

import pytest
from opentelemetry.trace import SpanKind, StatusCode
from otel_helpers import DURATION_BUCKETS, FakeAttempt, FakeCall, FakeReply, Telemetry, children, drive

from hermes_sdk import Redactor

RUN = "run_0123456789abcdef"
COMMAND = "rm -rf /scratch/hermes-x/victim"
OUTPUT = "the run output text"


def _event(name: str, terminal: bool = False, **data: Any) -> dict[str, Any]:
    return {"event": name, "terminal": terminal,
            "data": {**data, "event": name, "run_id": RUN, "timestamp": 1796082454.23}}


TOOL_TURN = [
    _event("message.delta", delta="Let me look."),
    _event("tool.started", tool="terminal", preview=COMMAND),
    _event("approval.request", command=COMMAND, pattern_key="delete in root path",
           pattern_keys=["delete in root path"], description="delete in root path", allow_permanent=True,
           choices=["once", "session", "always", "deny"]),
    _event("approval.responded", choice="once", resolved=1),
    _event("tool.completed", tool="terminal", duration=0.25, error=False),
    _event("tool.started", tool="read_file", preview="notes.txt"),
    _event("tool.completed", tool="read_file", duration=0.01, error=True),
    _event("message.delta", delta="\n\nDone."),
    _event("run.completed", terminal=True, output=OUTPUT,
           usage={"input_tokens": 300, "output_tokens": 20, "total_tokens": 320}),
]
COMPLETED = {"action_id": "act_1", "capability_id": "cap:hermes_agent:default:run_events", "status": "completed",
             "output": {"status": "completed", "event_count": 9, "text": OUTPUT}, "error": None,
             "session_id": "sess-secret-1", "http_status": 200}


def follow(telemetry: Telemetry, plugin: Any, redactor: Redactor, events: list[dict[str, Any]],
           outcome: dict[str, Any], **attributes: Any) -> FakeCall:
    """Call the hooks in the core's order for one ``run_events`` stream."""
    invocation = FakeCall("run_events", streaming=True, **attributes)
    gen = plugin.hermes_call(call=invocation)
    next(gen)
    drive(plugin.hermes_http_attempt(attempt=FakeAttempt(invocation, "GET", "/v1/runs/{run_id}/events")),
          FakeReply(200))
    invocation.set_attribute("attempts", 1)
    invocation.set_attribute("http_status", 200)
    with pytest.raises(StopIteration):
        gen.send(("pending", "stream"))  # headers arrived: the wrapper returns, the stream stays open
    for event in events:
        plugin.hermes_stream_event(call=invocation, event=redactor.redact(event))
    redacted = redactor.redact(outcome)
    invocation.settle(redacted)
    plugin.hermes_call_result(call=invocation, result=redacted)
    return invocation


def call(plugin: Any, operation: str, outcome: dict[str, Any], exc: Optional[BaseException] = None,
         **attributes: Any) -> None:
    """A non-streaming run operation (run_start, run_get, run_approval, run_stop)."""
    invocation = FakeCall(operation, streaming=False, **attributes)
    drive(plugin.hermes_call(call=invocation), ("result", "value"), exc)
    plugin.hermes_call_result(call=invocation, result=Redactor().redact(outcome))


# What the core's redaction policy will let through for runs: tool names, pattern keys, choices.
RUNS_POLICY = Redactor(allowed_keys={"tool", "pattern_key", "choice"})


def test_a_run_with_a_tool_and_an_approval(telemetry: Any) -> None:
    follow(telemetry, telemetry.plugin(), RUNS_POLICY, TOOL_TURN, COMPLETED)
    agent = telemetry.span("invoke_agent")
    http = telemetry.span("GET /v1/runs/{run_id}/events")
    terminal, read = telemetry.span("execute_tool terminal"), telemetry.span("execute_tool read_file")
    assert agent.kind == SpanKind.CLIENT and agent.parent is None
    assert children(telemetry, agent) == [http, terminal, read]
    assert dict(agent.attributes) == {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "hermes",
        "hermes.operation": "run_events", "hermes.capability_id": "cap:hermes_agent:default:run_events",
        "hermes.endpoint_id": "default", "hermes.replayed": False, "hermes.idempotency.outcome": "none",
        "hermes.attempts": 1, "hermes.status": "completed",
        "gen_ai.usage.input_tokens": 300, "gen_ai.usage.output_tokens": 20}
    assert agent.status.status_code == StatusCode.UNSET and not agent.events
    assert dict(http.attributes) == {"http.request.method": "GET", "url.template": "/v1/runs/{run_id}/events",
                                     "http.response.status_code": 200}

    assert terminal.kind == SpanKind.INTERNAL
    assert dict(terminal.attributes) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "terminal",
                                         "hermes.tool.duration": 0.25}
    assert terminal.status.status_code == StatusCode.UNSET
    assert [(e.name, dict(e.attributes)) for e in terminal.events] == [
        ("hermes.approval.requested", {"hermes.approval.pattern_key": "delete in root path",
                                       "hermes.approval.allow_permanent": True}),
        ("hermes.approval.responded", {"hermes.approval.decision": "once"})]
    assert dict(read.attributes) == {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read_file",
                                     "hermes.tool.duration": 0.01, "error.type": "tool_error"}
    assert (read.status.status_code, read.status.description) == (StatusCode.ERROR, "tool_error")
    assert agent.start_time <= terminal.start_time <= terminal.end_time <= read.start_time <= agent.end_time

    metric = {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "hermes"}
    duration = telemetry.point("gen_ai.client.operation.duration")
    assert (duration["attributes"], duration["count"]) == (metric, 1)
    assert abs(duration["sum"] - (agent.end_time - agent.start_time) / 1e9) < 1e-9
    first = telemetry.point("gen_ai.client.operation.time_to_first_chunk")
    assert (first["attributes"], first["count"], first["bounds"]) == (metric, 1, DURATION_BUCKETS)
    for token_type, value in (("input", 300), ("output", 20)):
        point = telemetry.point("gen_ai.client.token.usage", gen_ai__token__type=token_type)
        assert (point["attributes"], point["sum"]) == ({**metric, "gen_ai.token.type": token_type}, value)
    assert len(telemetry.points()) == 4
    text = telemetry.everything()
    for secret in (COMMAND, RUN, OUTPUT, "sess-secret-1", "notes.txt", "Let me look"):
        assert secret not in text


def test_with_the_default_policy_names_and_keys_show_but_commands_do_not(telemetry: Any) -> None:
    # What the core hands observers of run events by default: the run_events spec's observed_keys
    # (a tool's name, a pattern key, an approval choice: names Hermes itself defines) on top of the
    # allowlist; the command, its preview, the run id and the output stay out.
    from hermes_sdk._app.builtin import BUILTIN_SPECS as SPECS

    default = Redactor(allowed_keys=set(SPECS["run_events"].observed_keys))
    follow(telemetry, telemetry.plugin(), default, TOOL_TURN, COMPLETED)
    tools = [s for s in telemetry.spans() if s.name.startswith("execute_tool")]
    assert len(tools) == 2 and all(s.attributes.get("gen_ai.tool.name") for s in tools)
    requested = [e for e in tools[0].events if e.name == "hermes.approval.requested"]
    assert requested and requested[0].attributes.get("hermes.approval.pattern_key") == "delete in root path"
    assert "hermes.approval.command" not in requested[0].attributes
    for secret in (COMMAND, RUN, OUTPUT):
        assert secret not in telemetry.everything()


def test_the_command_only_when_the_redaction_policy_allows_it(telemetry: Any) -> None:
    policy = Redactor(allowed_keys={"tool", "pattern_key", "choice", "command"})
    follow(telemetry, telemetry.plugin(), policy, TOOL_TURN, COMPLETED)
    requested = telemetry.span("execute_tool terminal").events[0]
    assert requested.attributes["hermes.approval.command"] == COMMAND


def test_a_broken_event_stream_ends_the_open_tool_as_incomplete(telemetry: Any) -> None:
    events = TOOL_TURN[:3]  # the stream broke while the tool waited for its approval
    failed = {**COMPLETED, "status": "failed", "output": None,
              "error": {"code": "connector.hermes_agent.transport", "uncertain_outcome": True, "retryable": False,
                        "message": "connection reset"}}
    follow(telemetry, telemetry.plugin(), RUNS_POLICY, events, failed)
    agent, tool = telemetry.span("invoke_agent"), telemetry.span("execute_tool terminal")
    assert agent.attributes["error.type"] == "connector.hermes_agent.transport"
    assert agent.attributes["hermes.uncertain_outcome"] is True and agent.attributes["hermes.status"] == "failed"
    assert agent.status.status_code == StatusCode.ERROR
    assert tool.attributes["error.type"] == "incomplete" and tool.end_time == agent.end_time
    assert [e.name for e in tool.events] == ["hermes.approval.requested"]
    assert telemetry.point("gen_ai.client.operation.duration")["attributes"]["error.type"] == \
        "connector.hermes_agent.transport"
    assert [p for p in telemetry.points() if p["name"] == "gen_ai.client.token.usage"] == []


def test_a_failed_run(telemetry: Any) -> None:
    events = [_event("run.failed", terminal=True, error="upstream said no")]
    follow(telemetry, telemetry.plugin(), RUNS_POLICY, events, {**COMPLETED, "status": "failed", "output": None})
    agent = telemetry.span("invoke_agent")
    assert agent.attributes["error.type"] == "run_failed" and "upstream said no" not in telemetry.everything()


def test_a_tool_whose_start_was_not_seen_is_placed_from_its_duration(telemetry: Any) -> None:
    events = [_event("tool.completed", tool="terminal", duration=0.5, error=False),
              _event("run.completed", terminal=True, output=None, usage={})]
    follow(telemetry, telemetry.plugin(), RUNS_POLICY, events, COMPLETED)
    tool = telemetry.span("execute_tool terminal")
    assert abs((tool.end_time - tool.start_time) / 1e9 - 0.5) < 1e-3
    assert tool.parent.span_id == telemetry.span("invoke_agent").context.span_id


def test_the_other_run_operations_are_plain_spans(telemetry: Any) -> None:
    plugin = telemetry.plugin()
    call(plugin, "run_start", {"status": "completed", "output": {"run_id": RUN, "status": "started"}},
         idempotency=True)
    call(plugin, "run_approval", {"status": "completed"}, **{"approval.decision": "approved"})

    class Conflict(Exception):
        code, http_status, uncertain_outcome, retryable = "connector.hermes_agent.conflict", 409, False, False

    call(plugin, "run_stop", {"status": "failed", "error": {"code": "connector.hermes_agent.conflict"}},
         exc=Conflict())
    start, approval, stop = (telemetry.span(f"hermes {op}") for op in ("run_start", "run_approval", "run_stop"))
    assert start.kind == SpanKind.CLIENT
    assert start.attributes["hermes.idempotency.outcome"] == "executed"
    assert "gen_ai.operation.name" not in start.attributes
    assert approval.attributes["hermes.approval.decision"] == "approved"
    assert stop.attributes["error.type"] == "connector.hermes_agent.conflict"
    assert stop.attributes["hermes.status"] == "failed" and stop.status.status_code == StatusCode.ERROR
    assert telemetry.points() == []  # not GenAI operations
    assert RUN not in telemetry.everything()


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry()
