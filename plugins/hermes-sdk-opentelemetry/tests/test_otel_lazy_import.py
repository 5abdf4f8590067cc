"""Installed, the plugin imports OpenTelemetry only once a provider can exist (issue: plugins import
their backend only when used): until the application imports the OpenTelemetry API (to set a global
provider, or through its instrumentation) or names a provider by environment, no span could record
anything, and the hooks only pass the call on. Measured in a fresh process: which modules a client
and its first call loaded, not how long they took. Given providers, it traces as before:
test_otel_tracing.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from hermes_sdk._core import _plugin_manager as plugins

CHILD = r'''
import json, sys
from hermes_sdk import HermesClient

seen = {}
client = HermesClient(sys.argv[1], sys.argv[2])
client.chat(prompt="first call")
seen["loaded"] = client.plugin_manager.get_plugin("hermes-sdk-opentelemetry") is not None
seen["untraced"] = sorted(sys.modules)

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
client.chat(prompt="traced")  # the same client: global providers set after it was built are used
seen["spans"] = sorted(span.name for span in exporter.get_finished_spans())
data = reader.get_metrics_data()
seen["metrics"] = sorted(m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
                         if sm.scope.name == "hermes_sdk_opentelemetry")
print(json.dumps(seen))
'''


def test_no_opentelemetry_import_until_a_provider_can_exist(hermes_emulator: Any) -> None:
    if "hermes-sdk-opentelemetry" not in {ep.name for ep, _ in plugins._entry_points()}:
        pytest.skip("hermes-sdk-opentelemetry is not installed (pip install -e plugins/hermes-sdk-opentelemetry)")
    pytest.importorskip("opentelemetry.sdk.trace")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_SDK_", "OTEL_"))}
    out = subprocess.run([sys.executable, "-c", CHILD, hermes_emulator.base_url, hermes_emulator.api_key],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    assert seen["loaded"]  # the entry point is registered with the client...
    assert [m for m in seen["untraced"] if m.split(".")[0] == "opentelemetry"] == []  # ...and imported no OTel
    assert seen["spans"] == ["POST /v1/chat/completions", "chat hermes-agent"]
    assert "gen_ai.client.operation.duration" in seen["metrics"]


ENV_CHILD = r'''
import json, sys
from hermes_sdk import HermesClient

HermesClient(sys.argv[1], sys.argv[2]).chat(prompt="first call")
trace = sys.modules.get("opentelemetry.trace")
print(json.dumps(type(trace.get_tracer_provider()).__module__ if trace else None))
'''


def test_a_provider_named_by_environment_is_used(hermes_emulator: Any) -> None:
    if "hermes-sdk-opentelemetry" not in {ep.name for ep, _ in plugins._entry_points()}:
        pytest.skip("hermes-sdk-opentelemetry is not installed (pip install -e plugins/hermes-sdk-opentelemetry)")
    pytest.importorskip("opentelemetry.sdk.trace")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_SDK_", "OTEL_"))}
    env["OTEL_PYTHON_TRACER_PROVIDER"] = "sdk_tracer_provider"  # the SDK's entry point: no import needed
    out = subprocess.run([sys.executable, "-c", ENV_CHILD, hermes_emulator.base_url, hermes_emulator.api_key],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout) == "opentelemetry.sdk.trace"  # the plugin asked for it on the first call
