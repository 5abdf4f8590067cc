"""The OpenTelemetry plugin against the emulator, exported with the OTel SDK's InMemorySpanExporter."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hermes_sdk_opentelemetry import OpenTelemetryPlugin
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from hermes_sdk import AuthenticationError, HermesClient, plugins


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def client(hermes_emulator: Any, exporter: InMemorySpanExporter) -> Iterator[HermesClient]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    c = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False,
                     plugins=[OpenTelemetryPlugin(tracer_provider=provider)])
    yield c
    c.close()


def _by_name(exporter: InMemorySpanExporter) -> dict[str, Any]:
    return {s.name: s for s in exporter.get_finished_spans()}


def test_a_span_per_invocation_and_a_child_per_attempt(client: HermesClient, exporter: Any) -> None:
    client.chat(prompt="secret prompt text", session_id="secret-session")
    spans = _by_name(exporter)
    inv, http = spans["hermes_sdk chat"], spans["hermes_sdk.http POST"]
    assert http.parent.span_id == inv.context.span_id and inv.parent is None
    assert inv.attributes["hermes_sdk.capability_id"] == "cap:hermes_agent:default:chat"
    assert inv.attributes["hermes_sdk.http_status"] == 200 and inv.attributes["hermes_sdk.attempts"] == 1
    assert http.attributes["hermes_sdk.path"] == "/v1/chat/completions"
    assert http.attributes["hermes_sdk.attempt"] == 1 and http.attributes["hermes_sdk.http_status"] == 200
    assert inv.status.status_code == StatusCode.UNSET
    dumped = json.dumps([dict(s.attributes) for s in spans.values()])
    assert "secret" not in dumped


def test_retries_are_sibling_attempt_spans(client: HermesClient, exporter: Any, hermes_emulator: Any) -> None:
    created = client.responses(input="keep", store=True)
    exporter.clear()
    hermes_emulator.drop_connection("before_response", path=f"/v1/responses/{created.id}", count=1)
    client.response_get(created.id)
    attempts = [s for s in exporter.get_finished_spans() if s.name == "hermes_sdk.http GET"]
    assert [s.attributes["hermes_sdk.attempt"] for s in attempts] == [1, 2]
    assert attempts[0].status.status_code == StatusCode.ERROR
    assert attempts[0].status.description == "connector.hermes_agent.transport"
    assert created.id not in json.dumps([dict(s.attributes) for s in exporter.get_finished_spans()])


def test_a_stream_span_ends_when_the_stream_settles(client: HermesClient, exporter: Any) -> None:
    stream = client.chat_stream(prompt="one two three four five")
    assert "hermes_sdk chat_stream" not in _by_name(exporter)  # headers arrived, stream still open
    assert "hermes_sdk.http POST" in _by_name(exporter)
    stream.result()
    span = _by_name(exporter)["hermes_sdk chat_stream"]
    assert span.attributes["hermes_sdk.status"] == "completed" and span.attributes["hermes_sdk.streaming"] is True


def test_errors_are_recorded_as_status_and_code_only(hermes_emulator: Any, exporter: Any) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    c = HermesClient(hermes_emulator.base_url, "wrong-key-123456", load_entrypoints=False,
                     plugins=[OpenTelemetryPlugin(tracer_provider=provider)])
    with pytest.raises(AuthenticationError):
        c.chat(prompt="hello")
    for span in exporter.get_finished_spans():
        assert span.status.status_code == StatusCode.ERROR
        assert span.status.description == "connector.hermes_agent.authentication"
        assert not span.events  # no exception event, so no provider message
        assert "wrong-key" not in json.dumps(dict(span.attributes))
    c.close()


class ExplodingProvider:
    def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("exporter misconfigured")


def test_tracing_failures_are_logged_never_raised(hermes_emulator: Any, caplog: pytest.LogCaptureFixture) -> None:
    c = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False,
                     plugins=[OpenTelemetryPlugin(tracer_provider=ExplodingProvider())])
    with caplog.at_level(logging.WARNING, logger="hermes_sdk"):
        assert c.chat(prompt="still works").text == "ECHO: still works"
        assert c.chat_stream(prompt="still streams").result().status == "completed"
    assert any("tracing failed" in r.getMessage() for r in caplog.records)
    c.close()


def test_registered_as_an_entry_point() -> None:
    names = {ep.name: ep.value for ep, _ in plugins._entry_points()}
    if "hermes-sdk-opentelemetry" not in names:
        pytest.skip("hermes-sdk-opentelemetry is not installed (pip install -e plugins/hermes-sdk-opentelemetry)")
    assert names["hermes-sdk-opentelemetry"] == "hermes_sdk_opentelemetry.plugin:OpenTelemetryPlugin"
    pm = plugins.build_manager()
    assert pm.get_plugin("hermes-sdk-opentelemetry") is not None
