"""Shared by the plugin's tests: an in-memory tracer and meter provider, and a simulated invocation.

(A module of its own, not a conftest: conftest modules of different folders collide by name.)
"""

from __future__ import annotations

import json
from typing import Any, Optional

from hermes_sdk_opentelemetry import OpenTelemetryPlugin, metric_views
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]
TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]


def _sdk_version() -> tuple[int, ...]:
    from importlib.metadata import version

    return tuple(int(part) for part in version("opentelemetry-sdk").split(".")[:2])


class Telemetry:
    """One tracer provider and one meter provider, exported to memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        # The SDK honours the plugin's bucket advice from 1.30; older SDKs get the plugin's views.
        views = [] if _sdk_version() >= (1, 30) else metric_views()
        self.meter_provider = MeterProvider(metric_readers=[self.reader], views=views)
        # Every point collected so far, the latest of each: the points are cumulative, and an SDK
        # before 1.21 leaves a histogram with no new measurement out of the next collection.
        self._points: dict[tuple[str, str, tuple[Any, ...]], dict[str, Any]] = {}

    def plugin(self, **options: Any) -> OpenTelemetryPlugin:
        return OpenTelemetryPlugin(self.tracer_provider, self.meter_provider, **options)

    def spans(self) -> list[Any]:
        return list(self.exporter.get_finished_spans())

    def span(self, name: str) -> Any:
        found = [s for s in self.spans() if s.name == name]
        assert len(found) == 1, (name, [s.name for s in self.spans()])
        return found[0]

    def points(self, scope: Optional[str] = "hermes_sdk_opentelemetry") -> list[dict[str, Any]]:
        """Every histogram point of the plugin's meter (``scope=None``: of every meter, the SDK's own
        self-monitoring included): name, unit, attributes, count, sum and bucket boundaries."""
        data = self.reader.get_metrics_data()
        for rm in data.resource_metrics if data is not None else ():
            for sm in rm.scope_metrics:
                for metric in sm.metrics:
                    for dp in metric.data.data_points:
                        key = (sm.scope.name, metric.name, tuple(sorted(dp.attributes.items())))
                        self._points[key] = {"name": metric.name, "unit": metric.unit,
                                             "attributes": dict(dp.attributes), "count": dp.count,
                                             "sum": dp.sum, "bounds": list(dp.explicit_bounds)}
        return [p for key, p in self._points.items() if scope is None or key[0] == scope]

    def point(self, name: str, **attributes: Any) -> dict[str, Any]:
        found = [p for p in self.points() if p["name"] == name
                 and all(p["attributes"].get(k.replace("__", ".")) == v for k, v in attributes.items())]
        assert len(found) == 1, (name, attributes, self.points())
        return found[0]

    def everything(self) -> str:
        """Every exported item as text: span names, attributes, status, events, links, metric points."""
        items: list[Any] = []
        for s in self.spans():
            items.append({"name": s.name, "attributes": dict(s.attributes), "status": s.status.description,
                          "events": [{"name": e.name, "attributes": dict(e.attributes)} for e in s.events],
                          "resource": dict(s.resource.attributes)})
        items.append(self.points(scope=None))
        return json.dumps(items, default=str)


def children(telemetry: Telemetry, parent: Any) -> list[Any]:
    return [s for s in telemetry.spans() if s.parent is not None and s.parent.span_id == parent.context.span_id]


class FakeContract:
    def __init__(self, operation: str, streaming: bool) -> None:
        self.operation, self.streaming = operation, streaming


class FakeCall:
    """Just what the plugin reads of an invocation (for the runs family, driven by hand)."""

    def __init__(self, operation: str, streaming: bool = True, **attributes: Any) -> None:
        self.operation = operation
        self.contract = FakeContract(operation, streaming)
        self.attributes: dict[str, Any] = {
            "capability_id": f"cap:hermes_agent:default:{operation}", "endpoint_id": "default",
            "operation": operation, "streaming": streaming, "idempotency": False, **attributes}
        self.stream_settled = False
        self._callbacks: list[Any] = []

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def on_stream_settled(self, callback: Any) -> None:
        self._callbacks.append(callback)

    def settle(self, redacted: dict[str, Any]) -> None:
        self.stream_settled = True
        for callback in self._callbacks:
            callback(redacted)


class FakeAttempt:
    def __init__(self, call: Any, method: str, path: str, number: int = 1) -> None:
        self.call = call
        self.attributes = {"method": method, "path": path, "attempt": number}


class FakeReply:
    """Like the core's ``HttpReply``: ``.status`` and ``.headers``."""

    def __init__(self, status: int) -> None:
        self.status, self.headers = status, {}


def drive(gen: Any, value: Any = None, exc: Optional[BaseException] = None) -> None:
    """Run a wrapper hook generator to its end with the inner result (or exception)."""
    next(gen)
    try:
        if exc is not None:
            gen.throw(exc)
        else:
            gen.send(value)
    except StopIteration:
        return
    except BaseException as raised:
        if raised is not exc:
            raise
        return
    raise AssertionError("the wrapper yielded twice")
