"""Helpers shared by the plugin tests (a module of its own: conftest modules collide by name)."""

from __future__ import annotations

import copy
import threading
from typing import Any

from hermes_sdk import hookimpl


class RecordingTracer:
    """A tracer plugin that keeps every attribute and payload it is handed (for redaction canaries)."""

    name = "recording-tracer"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.invocations: list[dict[str, Any]] = []
        self.attempts: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.results: list[dict[str, Any]] = []
        self.settled: list[dict[str, Any]] = []
        self.order: list[str] = []

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        with self.lock:
            self.order.append("invocation:start")
        call.on_stream_settled(lambda result: self._keep(self.settled, result))
        try:
            return (yield)
        finally:
            with self.lock:
                self.invocations.append(copy.deepcopy(call.attributes))
                self.order.append("invocation:end")

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        with self.lock:
            self.order.append("attempt:start")
        try:
            return (yield)
        finally:
            with self.lock:
                self.attempts.append(copy.deepcopy(attempt.attributes))
                self.order.append("attempt:end")

    @hookimpl
    def hermes_stream_event(self, call: Any, event: dict[str, Any]) -> None:
        self._keep(self.events, {"attributes": call.attributes, "event": event})

    @hookimpl
    def hermes_call_result(self, call: Any, result: dict[str, Any]) -> None:
        self._keep(self.results, {"attributes": call.attributes, "result": result})

    def _keep(self, where: list[dict[str, Any]], item: dict[str, Any]) -> None:
        with self.lock:
            where.append(copy.deepcopy(item))

    def everything(self) -> list[Any]:
        return [self.invocations, self.attempts, self.events, self.results, self.settled]


def approve_all(request: Any) -> Any:
    return request.approve(approver="ops@example.test", policy_decision_id="pd-test-1", reason="test cleanup")
