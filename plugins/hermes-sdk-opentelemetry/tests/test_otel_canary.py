"""Canary values through every capability, a failure, a replay and a run: none reaches an exported item.

Exported items: span names, attributes, status descriptions, span events and their attributes, and
every metric point. The plugin runs with content capture and identifier recording switched **on**:
both only ever record what the SDK's redaction let through, and the default policy lets none of it.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from otel_helpers import FakeAttempt, FakeCall, FakeReply, Telemetry, drive
from test_otel_runs import COMPLETED, TOOL_TURN, follow

from hermes_sdk import HermesClient, HermesError, NotFoundError, Redactor

CANARY = {
    "prompt": "canary-prompt-31415",
    "message": "canary-message-27182",
    "instructions": "canary-instructions-16180",
    "output": "canary-output-14142",
    "session_id": "canary-session-id-17320",
    "session_key": "canary-session-key-22360",
    "idempotency_key": "canary-idem-key-26457",
    "api_key": "canary-api-key-30000-abcdef",
    "reason": "canary-approval-reason-33166",
}


def _approve(request: Any) -> Any:
    return request.approve(approver="ops", policy_decision_id="pd-1")


def test_canary_every_capability_leaves_no_trace_in_spans_events_or_metrics(hermes_emulator_factory: Any) -> None:
    telemetry = Telemetry()
    emulator = hermes_emulator_factory(api_key=CANARY["api_key"])
    emulator.script(lambda info: f"{CANARY['output']} and more words here")
    plugin = telemetry.plugin(capture_content=True, record_identifiers=True)
    client = HermesClient(emulator.base_url, CANARY["api_key"], approval_provider=_approve, plugins=[plugin],
                          load_entrypoints=False, idempotency_store="memory:")
    seen: list[str] = []
    chat = client.chat(messages=[{"role": "system", "content": CANARY["message"]},
                                 {"role": "user", "content": CANARY["prompt"]}],
                       session_id=CANARY["session_id"], session_key=CANARY["session_key"],
                       idempotency_key=CANARY["idempotency_key"])
    seen += [chat.id, chat.session_id or ""]
    stream = client.chat_stream(prompt=CANARY["prompt"], session_id=CANARY["session_id"])
    assert CANARY["output"] in stream.result().text
    seen.append(stream.result().events[0].data["id"])
    created = client.responses(input=CANARY["prompt"], instructions=CANARY["instructions"], store=True,
                               session_key=CANARY["session_key"], idempotency_key=CANARY["idempotency_key"] + "r")
    seen.append(created.id)
    streamed = client.responses_stream(input=CANARY["prompt"], instructions=CANARY["instructions"], store=True)
    assert streamed.result().status == "completed"
    seen.append(streamed.result().final["id"])
    assert client.response_get(created.id, session_key=CANARY["session_key"]).id == created.id
    assert client.response_delete(created.id, idempotency_key=CANARY["idempotency_key"] + "d",
                                  reason=CANARY["reason"]).deleted
    assert client.chat(messages=[{"role": "system", "content": CANARY["message"]},  # the replay: same input
                                 {"role": "user", "content": CANARY["prompt"]}],
                       session_id=CANARY["session_id"], session_key=CANARY["session_key"],
                       idempotency_key=CANARY["idempotency_key"]).replayed
    with pytest.raises(NotFoundError):  # error path
        client.response_get(created.id)
    late = client.invoke("cap:hermes_agent:default:chat", {"prompt": CANARY["prompt"]},
                         idempotency_key=CANARY["idempotency_key"] + "x", deadline=1.0)  # deadline in the past
    assert isinstance(late.error, HermesError)
    client.close()

    # A run through the hooks, with the canary in every free-text field of its events.
    run_events = json.loads(json.dumps(TOOL_TURN).replace("rm -rf /scratch/hermes-x/victim", CANARY["prompt"])
                            .replace("the run output text", CANARY["output"]))
    follow(telemetry, plugin, Redactor(), run_events, {**COMPLETED, "session_id": CANARY["session_id"]})

    spans = telemetry.spans()
    assert {"chat hermes-agent", "hermes response_get", "hermes response_delete", "invoke_agent"} <= {
        s.name for s in spans}
    assert any(s.events for s in spans)  # span events were really exported
    assert {p["name"] for p in telemetry.points()} == {
        "gen_ai.client.operation.duration", "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk"}
    haystack = telemetry.everything()
    needles = dict(CANARY, **{f"id{i}": value for i, value in enumerate(seen) if value})
    for name, needle in needles.items():
        assert needle not in haystack, f"{name} leaked into the exported telemetry"
    assert "gen_ai.output.messages" not in haystack and "gen_ai.response.id" not in haystack
    assert "gen_ai.conversation.id" not in haystack


def test_content_and_ids_are_recorded_only_when_opted_in_and_let_through(hermes_emulator: Any) -> None:
    # The operator's redaction policy shows message content: opted in, the plugin records it.
    opened = Redactor(allowed_keys={"content", "text"})
    results: dict[tuple[bool, bool], Any] = {}
    for capture, latest in ((True, True), (False, True), (True, False)):
        telemetry = Telemetry()
        plugin = telemetry.plugin(capture_content=capture, gen_ai_conventions=None if latest else "1.36.0")
        client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, plugins=[plugin],
                              load_entrypoints=False)
        # Redactor keys cannot be opened through the constructor: swap the client's redactor in place.
        client._executor.runtime = attrs.evolve(client._executor.runtime, redactor=opened)
        client.chat(prompt="visible words")
        client.chat_stream(prompt="streamed words").result()
        client.close()
        results[capture, latest] = [s.attributes.get("gen_ai.output.messages") for s in telemetry.spans()
                                    if s.name == "chat hermes-agent"]
    assert [json.loads(m) for m in results[True, True]] == [
        [{"role": "assistant", "parts": [{"type": "text", "content": "ECHO: visible words"}],
          "finish_reason": "stop"}],
        [{"role": "assistant", "parts": [{"type": "text", "content": "ECHO: streamed words"}],
          "finish_reason": "stop"}]]
    assert results[False, True] == [None, None]  # not opted in
    assert results[True, False] == [None, None]  # v1.36.0 has no gen_ai.output.messages


def test_identifiers_only_when_opted_in_and_the_policy_shows_them() -> None:
    outcome = {"status": "completed", "session_id": "conv-visible-1",
               "output": {"id": "cmpl-visible-1", "model": "hermes-agent", "choices": []}}
    for record, expected in ((True, {"gen_ai.response.id": "cmpl-visible-1",
                                     "gen_ai.conversation.id": "conv-visible-1"}), (False, {})):
        telemetry = Telemetry()
        plugin = telemetry.plugin(record_identifiers=record)
        invocation = FakeCall("chat", streaming=False)
        gen = plugin.hermes_call(call=invocation)
        next(gen)
        drive(plugin.hermes_http_attempt(attempt=FakeAttempt(invocation, "POST", "/v1/chat/completions")),
              FakeReply(200))
        with pytest.raises(StopIteration):
            gen.send(("result", "value"))
        plugin.hermes_call_result(call=invocation, result=outcome)
        span = telemetry.span("chat")
        assert {k: v for k, v in span.attributes.items() if k in ("gen_ai.response.id", "gen_ai.conversation.id")} \
            == expected
    # What the SDK's redaction hides stays hidden even when opted in.
    telemetry = Telemetry()
    plugin = telemetry.plugin(record_identifiers=True)
    invocation = FakeCall("chat", streaming=False)
    drive(plugin.hermes_call(call=invocation), ("result", "value"))
    plugin.hermes_call_result(call=invocation, result=Redactor().redact(
        {**outcome, "output": {"id": "chatcmpl-abc123", "model": "m"}}))
    assert "gen_ai.response.id" not in telemetry.span("chat").attributes
