"""The plugin against the emulator: GenAI inference spans, HTTP attempt spans, and the GenAI metrics.

Exported with the OpenTelemetry SDK's InMemorySpanExporter and InMemoryMetricReader. Unless a test
says otherwise the plugin emits its default, the latest GenAI conventions (v1.37.0).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, Callable

import pytest
from hermes_sdk_opentelemetry import OpenTelemetryPlugin
from opentelemetry.trace import SpanKind, StatusCode
from otel_helpers import DURATION_BUCKETS, TOKEN_BUCKETS, Telemetry, children

from hermes_sdk import AuthenticationError, HermesClient, HermesError
from hermes_sdk._core import _plugin_manager as plugins


@pytest.fixture
def telemetry() -> Telemetry:
    return Telemetry()


@pytest.fixture
def client(hermes_emulator: Any, telemetry: Telemetry) -> Iterator[HermesClient]:
    c = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False,
                     plugins=[telemetry.plugin()], idempotency_store="memory:")
    yield c
    c.close()


def _hermes(operation: str, **extra: Any) -> dict[str, Any]:
    return {"hermes.operation": operation, "hermes.capability_id": f"cap:hermes_agent:default:{operation}",
            "hermes.endpoint_id": "default", "hermes.replayed": False, "hermes.idempotency.outcome": "none",
            "hermes.attempts": 1, "hermes.status": "completed", **extra}


def _server(emulator: Any) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of the emulator, as the core sets them on every call."""
    return {"server.address": "127.0.0.1", "server.port": emulator.port}


# The core sends (and reports as request.model) the default model when the caller names none, so an
# inference span is named "{gen_ai.operation.name} {gen_ai.request.model}".
CHAT_SPAN = "chat hermes-agent"
MODEL = {"gen_ai.request.model": "hermes-agent"}


def _usage(result: Any) -> tuple[int, int]:
    usage = result.usage
    return (usage.get("input_tokens", usage.get("prompt_tokens")),
            usage.get("output_tokens", usage.get("completion_tokens")))


INFERENCE: dict[str, tuple[Callable[[HermesClient], Any], str, tuple[str, ...]]] = {
    "chat": (lambda c: c.chat(prompt="one two"), "/v1/chat/completions", ("stop",)),
    "chat_stream": (lambda c: c.chat_stream(prompt="one two three four").result(), "/v1/chat/completions",
                    ("stop",)),
    "responses": (lambda c: c.responses(input="one two"), "/v1/responses", ()),
    "responses_stream": (lambda c: c.responses_stream(input="one two three four").result(), "/v1/responses", ()),
}


@pytest.mark.parametrize("operation", sorted(INFERENCE))
def test_an_inference_span_per_call_with_an_http_child_and_the_metrics(
        operation: str, client: HermesClient, telemetry: Telemetry, hermes_emulator: Any) -> None:
    call, path, reasons = INFERENCE[operation]
    result = call(client)
    input_tokens, output_tokens = _usage(result)
    server = _server(hermes_emulator)
    inference, http = telemetry.span(CHAT_SPAN), telemetry.span(f"POST {path}")
    assert inference.kind == SpanKind.CLIENT and http.kind == SpanKind.CLIENT
    assert inference.parent is None and children(telemetry, inference) == [http]
    expected = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "hermes", **MODEL, **server,
                "gen_ai.response.model": "hermes-agent", "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens, **_hermes(operation)}
    if reasons:
        expected["gen_ai.response.finish_reasons"] = reasons
    assert dict(inference.attributes) == expected
    assert inference.status.status_code == StatusCode.UNSET
    assert dict(http.attributes) == {"http.request.method": "POST", "url.template": path,
                                     "http.response.status_code": 200, **server}
    assert http.status.status_code == StatusCode.UNSET
    # The inference span covers the whole logical operation (for streams: until the stream settled).
    assert inference.start_time <= http.start_time and http.end_time <= inference.end_time

    first_chunk = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "hermes", **MODEL, **server}
    metric = {**first_chunk, "gen_ai.response.model": "hermes-agent"}
    duration = telemetry.point("gen_ai.client.operation.duration")
    assert duration["attributes"] == metric and duration["count"] == 1 and duration["unit"] == "s"
    assert duration["bounds"] == DURATION_BUCKETS
    assert abs(duration["sum"] - (inference.end_time - inference.start_time) / 1e9) < 1e-6
    for token_type, value in (("input", input_tokens), ("output", output_tokens)):
        point = telemetry.point("gen_ai.client.token.usage", gen_ai__token__type=token_type)
        assert point["attributes"] == {**metric, "gen_ai.token.type": token_type}
        assert (point["count"], point["sum"], point["unit"]) == (1, value, "{token}")
        assert point["bounds"] == TOKEN_BUCKETS
    first = [p for p in telemetry.points() if p["name"] == "gen_ai.client.operation.time_to_first_chunk"]
    if operation.endswith("_stream"):
        assert len(first) == 1 and first[0]["count"] == 1 and first[0]["bounds"] == DURATION_BUCKETS
        assert first[0]["attributes"] == first_chunk  # the response model is not known yet
        assert 0 < first[0]["sum"] <= duration["sum"]
    else:
        assert first == []  # "SHOULD NOT be reported" for calls that do not stream
    assert len(telemetry.points()) == 3 + len(first)


def test_a_stream_span_ends_when_the_stream_settles(client: HermesClient, telemetry: Telemetry) -> None:
    stream = client.chat_stream(prompt="one two three four five")
    assert [s.name for s in telemetry.spans()] == ["POST /v1/chat/completions"]  # headers in, stream open
    assert [p["name"] for p in telemetry.points()] == []
    stream.result()
    assert telemetry.span(CHAT_SPAN).attributes["hermes.status"] == "completed"
    assert {p["name"] for p in telemetry.points()} == {
        "gen_ai.client.operation.duration", "gen_ai.client.token.usage",
        "gen_ai.client.operation.time_to_first_chunk"}


def test_a_closed_stream_is_cancelled_not_an_error(client: HermesClient, telemetry: Telemetry) -> None:
    stream = client.chat_stream(prompt="one two three four five six seven eight nine")
    next(iter(stream))
    stream.close()
    span = telemetry.span(CHAT_SPAN)
    assert span.attributes["hermes.status"] == "cancelled" and "error.type" not in span.attributes
    assert span.attributes["hermes.uncertain_outcome"] is True  # the agent may still be working
    assert span.status.status_code == StatusCode.UNSET


def test_the_request_and_server_attributes_the_core_provides(client: HermesClient, hermes_emulator: Any,
                                                             telemetry: Telemetry) -> None:
    result = client.chat_stream(prompt="one two three", model="hermes-4-70b", max_tokens=64, temperature=0.2,
                                top_p=0.9).result()
    input_tokens, output_tokens = _usage(result)
    server = _server(hermes_emulator)
    span, http = telemetry.span("chat hermes-4-70b"), telemetry.span("POST /v1/chat/completions")
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "hermes", "gen_ai.request.model": "hermes-4-70b",
        "gen_ai.request.max_tokens": 64, "gen_ai.request.temperature": 0.2, "gen_ai.request.top_p": 0.9,
        **server, "gen_ai.response.model": "hermes-4-70b", "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens, "gen_ai.response.finish_reasons": ("stop",),
        **_hermes("chat_stream")}
    assert dict(http.attributes) == {"http.request.method": "POST", "url.template": "/v1/chat/completions",
                                     "http.response.status_code": 200, **server}
    # The sampling controls are span attributes only; the metrics keep the conventional dimensions.
    metric = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "hermes",
              "gen_ai.request.model": "hermes-4-70b", **server}
    assert telemetry.point("gen_ai.client.operation.duration")["attributes"] == {
        **metric, "gen_ai.response.model": "hermes-4-70b"}
    assert telemetry.point("gen_ai.client.operation.time_to_first_chunk")["attributes"] == metric


def _approve(request: Any) -> Any:
    return request.approve(approver="ops@example.test", policy_decision_id="pd-1")


def test_response_get_and_delete_are_plain_spans_without_ids(hermes_emulator: Any, telemetry: Telemetry) -> None:
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False,
                          plugins=[telemetry.plugin()], approval_provider=_approve)
    created = client.responses(input="keep", store=True)
    telemetry.exporter.clear()
    client.response_get(created.id)
    client.response_delete(created.id, idempotency_key="del-1", reason="test cleanup")
    client.close()
    # Not GenAI operations: plain CLIENT spans, still with the (general, stable) server attributes.
    server = _server(hermes_emulator)
    for operation, method in (("response_get", "GET"), ("response_delete", "DELETE")):
        span, http = telemetry.span(f"hermes {operation}"), telemetry.span(f"{method} /v1/responses/{{response_id}}")
        assert span.kind == SpanKind.CLIENT and children(telemetry, span) == [http]
        extra = {"hermes.idempotency.outcome": "executed", "hermes.approval.decision": "approved"} \
            if operation == "response_delete" else {}
        assert dict(span.attributes) == {**server, **_hermes(operation, **extra)}
        assert dict(http.attributes) == {"http.request.method": method,
                                         "url.template": "/v1/responses/{response_id}",
                                         "http.response.status_code": 200, **server}
    assert created.id not in telemetry.everything()
    # Only GenAI operations feed the GenAI metrics: one duration point, the one of responses().
    assert telemetry.point("gen_ai.client.operation.duration")["count"] == 1


def test_a_failed_call(hermes_emulator: Any, telemetry: Telemetry) -> None:
    c = HermesClient(hermes_emulator.base_url, "wrong-key-123456", load_entrypoints=False,
                     plugins=[telemetry.plugin()])
    with pytest.raises(AuthenticationError):
        c.chat(prompt="hello")
    c.close()
    server = _server(hermes_emulator)
    span, http = telemetry.span(CHAT_SPAN), telemetry.span("POST /v1/chat/completions")
    code = "connector.hermes_agent.authentication"
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "hermes", **MODEL, **server, "error.type": code,
        "hermes.uncertain_outcome": False, "hermes.retryable": False,
        **_hermes("chat", **{"hermes.status": "failed"})}
    assert (span.status.status_code, span.status.description) == (StatusCode.ERROR, code)
    assert dict(http.attributes) == {"http.request.method": "POST", "url.template": "/v1/chat/completions",
                                     "http.response.status_code": 401, "error.type": "401", **server}
    assert (http.status.status_code, http.status.description) == (StatusCode.ERROR, None)
    assert not span.events and not http.events  # no exception event, so no provider message
    duration = telemetry.point("gen_ai.client.operation.duration")
    assert duration["attributes"] == {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "hermes",
                                      **MODEL, **server, "error.type": code}
    assert [p["name"] for p in telemetry.points()] == ["gen_ai.client.operation.duration"]  # no usage


def test_an_upstream_failure_inside_a_stream(client: HermesClient, hermes_emulator: Any,
                                             telemetry: Telemetry) -> None:
    hermes_emulator.fail_next(1, status=500)
    try:
        result = client.chat_stream(prompt="one two").result()
        failed = result.status != "completed"
    except HermesError:
        failed = True
    assert failed
    span = telemetry.span(CHAT_SPAN)
    assert span.status.status_code == StatusCode.ERROR
    assert span.attributes["error.type"].startswith("connector.hermes_agent.")
    assert telemetry.point("gen_ai.client.operation.duration")["attributes"]["error.type"] == \
        span.attributes["error.type"]


def test_retries_are_sibling_attempt_spans(client: HermesClient, telemetry: Telemetry, hermes_emulator: Any) -> None:
    created = client.responses(input="keep", store=True)
    telemetry.exporter.clear()
    hermes_emulator.drop_connection("before_response", path=f"/v1/responses/{created.id}", count=1)
    client.response_get(created.id)
    parent = telemetry.span("hermes response_get")
    attempts = children(telemetry, parent)
    server = _server(hermes_emulator)
    assert [s.name for s in attempts] == ["GET /v1/responses/{response_id}"] * 2
    assert dict(attempts[0].attributes) == {"http.request.method": "GET",
                                            "url.template": "/v1/responses/{response_id}",
                                            "error.type": "connector.hermes_agent.transport", **server}
    assert (attempts[0].status.status_code, attempts[0].status.description) == (
        StatusCode.ERROR, "connector.hermes_agent.transport")
    assert dict(attempts[1].attributes) == {"http.request.method": "GET",
                                            "url.template": "/v1/responses/{response_id}",
                                            "http.response.status_code": 200, "http.request.resend_count": 1,
                                            **server}
    assert parent.attributes["hermes.attempts"] == 2
    assert created.id not in telemetry.everything()


def test_a_replayed_call_has_no_http_child_and_no_metrics(client: HermesClient, telemetry: Telemetry,
                                                          hermes_emulator: Any) -> None:
    first = client.chat(prompt="once", idempotency_key="idem-1")
    points = telemetry.points()
    telemetry.exporter.clear()
    again = client.chat(prompt="once", idempotency_key="idem-1")
    assert again.replayed and again.id == first.id
    (span,) = telemetry.spans()
    input_tokens, output_tokens = _usage(first)
    assert span.name == CHAT_SPAN and span.kind == SpanKind.CLIENT
    expected = {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "hermes", **MODEL, **_server(hermes_emulator),
        "gen_ai.response.model": "hermes-agent",
        "gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens,
        "gen_ai.response.finish_reasons": ("stop",),
        **_hermes("chat", **{"hermes.replayed": True, "hermes.idempotency.outcome": "replayed"})}
    del expected["hermes.attempts"]  # a replay makes no attempt
    assert dict(span.attributes) == expected
    # Nothing ran again: the GenAI metrics do not count a replay.
    assert telemetry.points() == points


def test_a_replayed_stream(client: HermesClient, telemetry: Telemetry) -> None:
    client.chat_stream(prompt="one two three", idempotency_key="idem-s").result()
    points = telemetry.points()
    telemetry.exporter.clear()
    again = client.chat_stream(prompt="one two three", idempotency_key="idem-s")
    assert again.result().status == "completed"
    (span,) = telemetry.spans()
    assert span.name == CHAT_SPAN and span.attributes["hermes.replayed"] is True
    assert span.attributes["hermes.operation"] == "chat_stream" and span.attributes["hermes.status"] == "completed"
    assert telemetry.points() == points


def test_a_dropped_stream_leaves_nothing_behind(client: HermesClient, telemetry: Telemetry) -> None:
    import gc

    plugin = next(p for p in client.plugin_manager.get_plugins() if isinstance(p, OpenTelemetryPlugin))
    stream = client.chat_stream(prompt="one two three four five six")
    next(iter(stream))
    assert len(plugin._live) == 1
    del stream
    gc.collect()
    assert len(plugin._live) == 0


def test_keyed_calls_say_executed(client: HermesClient, telemetry: Telemetry) -> None:
    client.responses(input="x", idempotency_key="idem-2")
    assert telemetry.span(CHAT_SPAN).attributes["hermes.idempotency.outcome"] == "executed"


def test_default_conventions_are_the_latest_and_v1_36_is_on_request(hermes_emulator: Any, telemetry: Telemetry,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN", raising=False)
    old_plugin = OpenTelemetryPlugin(telemetry.tracer_provider, telemetry.meter_provider, gen_ai_conventions="1.36.0")
    default = OpenTelemetryPlugin(telemetry.tracer_provider, telemetry.meter_provider)
    for plugin in (old_plugin, default):
        c = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False, plugins=[plugin])
        c.chat(prompt="x")
        c.close()
    old, new = [s for s in telemetry.spans() if s.name == CHAT_SPAN]
    assert old.attributes["gen_ai.system"] == "hermes" and "gen_ai.provider.name" not in old.attributes
    assert new.attributes["gen_ai.provider.name"] == "hermes" and "gen_ai.system" not in new.attributes
    assert old.instrumentation_scope.schema_url == "https://opentelemetry.io/schemas/1.36.0"
    assert new.instrumentation_scope.schema_url == "https://opentelemetry.io/schemas/1.37.0"
    assert old.instrumentation_scope.name == "hermes_sdk_opentelemetry"
    keys = [frozenset(p["attributes"]) for p in telemetry.points() if p["name"] == "gen_ai.client.operation.duration"]
    assert sorted(map(sorted, keys)) == [
        ["gen_ai.operation.name", "gen_ai.provider.name", "gen_ai.request.model", "gen_ai.response.model",
         "server.address", "server.port"],
        ["gen_ai.operation.name", "gen_ai.request.model", "gen_ai.response.model", "gen_ai.system",
         "server.address", "server.port"]]


def test_the_opt_in_overrides_a_request_for_v1_36(monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_sdk_opentelemetry import semconv

    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http, gen_ai_latest_experimental")
    assert semconv.latest_gen_ai(None, "1.36.0") is True
    assert semconv.latest_gen_ai("http", "1.36.0") is False  # the argument overrides the variable
    monkeypatch.delenv("OTEL_SEMCONV_STABILITY_OPT_IN")
    assert semconv.latest_gen_ai() is True and semconv.latest_gen_ai(None, "latest") is True
    assert semconv.latest_gen_ai(None, "1.36.0") is False
    with pytest.raises(ValueError):
        semconv.latest_gen_ai(None, "1.35.0")


class ExplodingProvider:
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("exporter misconfigured")

    def get_meter(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("exporter misconfigured")


def test_tracing_failures_are_logged_never_raised(hermes_emulator: Any, caplog: pytest.LogCaptureFixture) -> None:
    broken = ExplodingProvider()
    c = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False,
                     plugins=[OpenTelemetryPlugin(tracer_provider=broken, meter_provider=broken)])
    with caplog.at_level(logging.WARNING, logger="hermes_sdk"):
        assert c.chat(prompt="still works").text == "ECHO: still works"
        assert c.chat_stream(prompt="still streams").result().status == "completed"
    assert any("tracing failed" in r.getMessage() for r in caplog.records)
    c.close()


def test_a_broken_meter_alone_keeps_the_spans(hermes_emulator: Any, telemetry: Telemetry,
                                              caplog: pytest.LogCaptureFixture) -> None:
    plugin = OpenTelemetryPlugin(telemetry.tracer_provider, ExplodingProvider())
    c = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False, plugins=[plugin])
    with caplog.at_level(logging.WARNING, logger="hermes_sdk"):
        assert c.chat(prompt="x").text == "ECHO: x"
    c.close()
    assert {s.name for s in telemetry.spans()} == {CHAT_SPAN, "POST /v1/chat/completions"}
    assert any("tracing failed" in r.getMessage() for r in caplog.records)


def test_registered_as_an_entry_point() -> None:
    names = {ep.name: ep.value for ep, _ in plugins._entry_points()}
    if "hermes-sdk-opentelemetry" not in names:
        pytest.skip("hermes-sdk-opentelemetry is not installed (pip install -e plugins/hermes-sdk-opentelemetry)")
    assert names["hermes-sdk-opentelemetry"] == "hermes_sdk_opentelemetry.plugin:OpenTelemetryPlugin"
    pm = plugins.build_manager()
    assert pm.get_plugin("hermes-sdk-opentelemetry") is not None
