"""Spans around each invocation and each HTTP attempt, from redacted attributes only.

Tracing must never break a call: every OpenTelemetry call is guarded, and a failure is logged
on the ``hermes_sdk`` logger (type name only) instead of raised.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Generator, Mapping, Optional

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from hermes_sdk import hookimpl

log = logging.getLogger("hermes_sdk")
PREFIX = "hermes_sdk."
_PRIMITIVES = (str, bool, int, float)


def _attrs(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Only scalar values from an SDK-redacted attribute dict, under the ``hermes_sdk.`` prefix."""
    return {PREFIX + str(k): v for k, v in attributes.items() if isinstance(v, _PRIMITIVES)}


def _guard(what: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as exc:
        log.warning("hermes_sdk tracing failed (%s): %s", what, type(exc).__name__)
        return None


def _fail(span: Any, exc: BaseException) -> None:
    code = getattr(exc, "code", None) or type(exc).__name__
    span.set_attribute(PREFIX + "error.code", code)
    span.set_status(Status(StatusCode.ERROR, code))


class OpenTelemetryPlugin:
    """Registered under the ``hermes_sdk`` entry-point group as ``hermes-sdk-opentelemetry``."""

    def __init__(self, tracer_provider: Optional[Any] = None) -> None:
        self._provider = tracer_provider
        self._tracer: Optional[Any] = None

    def _get_tracer(self) -> Any:
        # A method, not a property: pluggy inspects every attribute when registering.
        if self._tracer is None:
            self._tracer = trace.get_tracer("hermes_sdk", tracer_provider=self._provider)
        return self._tracer

    @hookimpl(wrapper=True)
    def hermes_invocation(self, invocation: Any) -> Generator[None, Any, Any]:
        span = _guard("start invocation span", lambda: self._get_tracer().start_span(
            f"hermes_sdk {invocation.operation}", kind=SpanKind.CLIENT, attributes=_attrs(invocation.attributes)))
        token = _guard("attach context", lambda: otel_context.attach(trace.set_span_in_context(span))) \
            if span is not None else None
        try:
            result = yield
        except BaseException as exc:
            if span is not None:
                _guard("end invocation span", _ender(span, exc, _attrs(invocation.attributes)))
            raise
        finally:
            if token is not None:
                _guard("detach context", lambda: otel_context.detach(token))
        if span is not None:
            if invocation.contract.streaming and not invocation.stream_settled:
                _guard("watch stream", lambda: invocation.on_stream_settled(
                    lambda outcome: self._end(span, invocation, outcome)))
            else:
                self._end(span, invocation, None)
        return result

    def _end(self, span: Any, invocation: Any, outcome: Optional[Mapping[str, Any]]) -> None:
        def finish() -> None:
            span.set_attributes(_attrs(invocation.attributes))
            if outcome is not None:
                status = outcome.get("status")
                if isinstance(status, str):
                    span.set_attribute(PREFIX + "status", status)
                error = outcome.get("error")
                if status != "completed" and isinstance(error, Mapping):
                    _fail(span, _Coded(error.get("code")))
            span.end()
        _guard("end invocation span", finish)

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Generator[None, Any, Any]:
        span = _guard("start attempt span", lambda: self._get_tracer().start_span(
            f"hermes_sdk.http {attempt.attributes.get('method', '')}".rstrip(), kind=SpanKind.CLIENT,
            attributes=_attrs(attempt.attributes)))
        try:
            result = yield
        except BaseException as exc:
            if span is not None:
                _guard("end attempt span", _ender(span, exc, {}))
            raise
        if span is not None:
            status = getattr(result, "status_code", None)
            _guard("end attempt span", _ender(span, None, {PREFIX + "http_status": status}
                                              if isinstance(status, int) else {}))
        return result


def _ender(span: Any, exc: Optional[BaseException], attributes: Mapping[str, Any]) -> Callable[[], None]:
    def end() -> None:
        if attributes:
            span.set_attributes(dict(attributes))
        if exc is not None:
            _fail(span, exc)
        span.end()
    return end


class _Coded(Exception):
    def __init__(self, code: Any) -> None:
        super().__init__()
        self.code = code if isinstance(code, str) else "hermes_sdk.error"
