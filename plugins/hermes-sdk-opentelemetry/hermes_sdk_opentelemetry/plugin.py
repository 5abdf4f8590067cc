"""OpenTelemetry GenAI and HTTP client conventions for hermes-sdk, from redacted hook data only.

* ``hermes_call`` (wrapper): one CLIENT span per call of a capability. Chat and Responses
  calls are GenAI inference spans (``chat {model}``); following a durable run (``run_events``) is an
  ``invoke_agent`` span; every other operation is a plain ``hermes {operation}`` span.
* ``hermes_http_attempt`` (wrapper): one CLIENT span per HTTP attempt (``{METHOD} {url.template}``).
* ``hermes_stream_event`` (observer): time to the first chunk, and for runs the ``execute_tool``
  child spans and the approval span events.
* ``hermes_call_result`` (observer) and the stream-settled callback: model, usage, finish reasons
  and the outcome; the span ends and the metrics are recorded there.

Everything read here was already redacted by the SDK: a string that still contains the SDK's
``[REDACTED]`` marker is never recorded. Tracing must never break a call: every OpenTelemetry call is
guarded, and a failure is logged on the ``hermes_sdk`` logger (type name only) instead of raised.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Generator, Mapping, Optional

from hermes_sdk import hookimpl
from hermes_sdk.plugin import REDACTED

from . import semconv as sc
from ._version import __version__

log = logging.getLogger("hermes_sdk")
SCOPE = "hermes_sdk_opentelemetry"

INFERENCE_OPERATIONS = frozenset({"chat", "chat_stream", "responses", "responses_stream"})
AGENT_OPERATIONS = frozenset({"run_events"})

if TYPE_CHECKING:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode

#: Where OpenTelemetry keeps its global providers: until one of these is imported, or a provider is
#: named by its environment variable, no provider can be set and a span would record nothing.
_GLOBAL_MODULES = ("opentelemetry.trace", "opentelemetry.metrics")
_PROVIDER_ENV = ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")


def _import_api() -> None:
    """Bind the OpenTelemetry API here on first need, so a process that never sets a provider never imports it."""
    global otel_context, metrics, trace, SpanKind, Status, StatusCode
    from opentelemetry import context as otel_context
    from opentelemetry import metrics, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode


def _guard(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        log.warning("hermes_sdk tracing failed (%s): %s", what, type(exc).__name__)
        return None


def _shown(value: Any) -> Optional[str]:
    """A string that came through the SDK's redaction whole, else None."""
    if isinstance(value, str) and value and REDACTED not in value:
        return value
    return None


def _int(value: Any) -> Optional[int]:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


class _Call:
    """What the plugin knows about one invocation between its start and its (possibly later) end."""

    __slots__ = ("invocation", "span", "token", "gen_op", "streaming", "replayed", "start_ns", "end_ns",
                 "metric_base", "outcome", "wrapper_done", "done", "first_event", "tools", "usage",
                 "terminal_error", "agent_output", "__weakref__")

    def __init__(self, invocation: Any, span: Any, gen_op: Optional[str], streaming: bool, replayed: bool,
                 metric_base: dict[str, Any]) -> None:
        self.invocation = invocation
        self.span = span
        self.token: Any = None
        self.gen_op = gen_op
        self.streaming = streaming
        self.replayed = replayed
        self.start_ns = time.time_ns()
        self.end_ns: Optional[int] = None
        self.metric_base = metric_base
        self.outcome: Optional[Mapping[str, Any]] = None
        self.wrapper_done = False
        self.done = False
        self.first_event = False
        self.tools: list[Any] = []  # open execute_tool spans, oldest first (Hermes runs tools serially)
        self.usage: Mapping[str, Any] = {}
        self.terminal_error: Optional[str] = None
        self.agent_output: Optional[str] = None


class OpenTelemetryPlugin:
    """Registered under the ``hermes_sdk`` entry-point group as ``hermes-sdk-opentelemetry``.

    GenAI semantic conventions v1.37.0 (``gen_ai.provider.name``) are emitted;
    ``gen_ai_conventions="1.36.0"`` emits v1.36.0 (``gen_ai.system``) instead, unless
    ``OTEL_SEMCONV_STABILITY_OPT_IN`` (or ``semconv_opt_in``, which overrides it) holds
    ``gen_ai_latest_experimental``. ``capture_content`` overrides
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``; ``record_identifiers`` overrides
    ``HERMES_SDK_OTEL_RECORD_IDENTIFIERS``. All are read once, here.
    """

    def __init__(self, tracer_provider: Optional[Any] = None, meter_provider: Optional[Any] = None, *,
                 semconv_opt_in: Optional[str] = None, capture_content: Optional[bool] = None,
                 record_identifiers: Optional[bool] = None, gen_ai_conventions: Optional[str] = None) -> None:
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._latest = sc.latest_gen_ai(semconv_opt_in, gen_ai_conventions)
        self._provider_key = sc.PROVIDER_NAME if self._latest else sc.SYSTEM
        self._capture_content = sc.flag(sc.ENV_CAPTURE_CONTENT) if capture_content is None else capture_content
        self._record_ids = sc.flag(sc.ENV_RECORD_IDS) if record_identifiers is None else record_identifiers
        self._tracer: Optional[Any] = None
        # A provider given here or named by environment (read once, as the other variables): traced
        # from the first call. Otherwise from the first call after the API was imported: see _tracing.
        self._wanted = (tracer_provider is not None or meter_provider is not None
                        or any(os.environ.get(name) for name in _PROVIDER_ENV))
        self._active = False  # once true, stays true
        self._instruments: Optional[tuple[Any, Any, Any]] = None
        self._lock = threading.Lock()
        # Open calls by invocation. Weak: what keeps a call alive is the wrapper's frame, then the
        # pending list (until the result arrives) or the invocation's stream-settled callback, so a
        # stream dropped without settling takes its call with it instead of leaking it here.
        self._live: "weakref.WeakValueDictionary[int, _Call]" = weakref.WeakValueDictionary()
        self._local = threading.local()

    # ------------------------------------------------------------------ providers (methods: pluggy
    # inspects every attribute when registering, so no properties)

    def _tracing(self) -> bool:
        """Whether a span or metric could be recorded: a provider given to this plugin or named by
        environment, or the API imported by the application (or its instrumentation), so a global
        provider may be set. Until then the wrappers only pass the call on and OpenTelemetry is not
        imported; checked per call (two dict lookups), so a provider set later is used from the next
        call on."""
        if not self._active:
            modules = sys.modules
            if not (self._wanted or _GLOBAL_MODULES[0] in modules or _GLOBAL_MODULES[1] in modules):
                return False
            _import_api()
            self._active = True
        return True

    def _get_tracer(self) -> Any:
        if self._tracer is None:
            self._tracer = trace.get_tracer(SCOPE, __version__, tracer_provider=self._tracer_provider,
                                            schema_url=sc.schema_url(self._latest))
        return self._tracer

    def _get_instruments(self) -> tuple[Any, Any, Any]:
        if self._instruments is None:
            provider = self._meter_provider if self._meter_provider is not None else metrics.get_meter_provider()
            meter = provider.get_meter(SCOPE, __version__, schema_url=sc.schema_url(self._latest))
            self._instruments = (
                _histogram(meter, sc.METRIC_OPERATION_DURATION, "s", "GenAI operation duration.",
                           sc.DURATION_BUCKETS),
                _histogram(meter, sc.METRIC_TOKEN_USAGE, "{token}", "Number of input and output tokens used.",
                           sc.TOKEN_BUCKETS),
                _histogram(meter, sc.METRIC_TIME_TO_FIRST_CHUNK, "s",
                           "Time to receive the first chunk in the response stream.", sc.DURATION_BUCKETS),
            )
        return self._instruments

    # ------------------------------------------------------------------ invocations

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Generator[None, Any, Any]:
        if not self._tracing():
            return (yield)
        view = call
        call = _guard("start invocation span", lambda: self._start(view))
        try:
            result = yield
        except BaseException as exc:
            if call is not None:
                _guard("end invocation span", self._raised, call, exc)
            raise
        if call is not None:
            _guard("end invocation span", self._returned, call)
        return result

    def _start(self, invocation: Any) -> _Call:
        self._flush_pending()
        a = invocation.attributes
        operation = str(a.get("operation") or getattr(invocation, "operation", ""))
        replayed = a.get("replayed") is True
        streaming = a.get("streaming") is True or bool(getattr(getattr(invocation, "contract", None),
                                                                "streaming", False))
        gen_op = sc.OP_CHAT if operation in INFERENCE_OPERATIONS else (
            sc.OP_INVOKE_AGENT if operation in AGENT_OPERATIONS else None)
        attrs: dict[str, Any] = {}
        metric_base: dict[str, Any] = {}
        model = _shown(a.get("request.model"))
        if gen_op is not None:
            metric_base[sc.OPERATION_NAME] = gen_op
            metric_base[self._provider_key] = sc.PROVIDER
            if model is not None:
                metric_base[sc.REQUEST_MODEL] = model
        for key, value in (("server.address", _shown(a.get("server.address"))),
                           ("server.port", _int(a.get("server.port")))):
            if value is not None:
                attrs[key] = value
                if gen_op is not None:
                    metric_base[key] = value
        attrs.update(metric_base)
        if gen_op is not None:
            for key, target, read in (("request.max_tokens", sc.REQUEST_MAX_TOKENS, _int),
                                      ("request.temperature", sc.REQUEST_TEMPERATURE, _num),
                                      ("request.top_p", sc.REQUEST_TOP_P, _num)):
                number = read(a.get(key))
                if number is not None:
                    attrs[target] = number
        if gen_op == sc.OP_CHAT:
            name = f"{gen_op} {model}" if model else gen_op
        elif gen_op == sc.OP_INVOKE_AGENT:
            agent = _shown(a.get("agent.name"))
            if agent is not None:
                attrs[sc.AGENT_NAME] = agent
            name = f"{gen_op} {agent}" if agent else gen_op
        else:
            name = f"hermes {operation}"
        attrs.update(_hermes_attributes(a, operation))
        start_ns = time.time_ns()
        span = self._get_tracer().start_span(name, kind=SpanKind.CLIENT, attributes=attrs, start_time=start_ns)
        call = _Call(invocation, span, gen_op, streaming, replayed, metric_base)
        call.start_ns = start_ns
        with self._lock:
            self._live[id(invocation)] = call
        call.token = _guard("attach context", lambda: otel_context.attach(trace.set_span_in_context(span)))
        return call

    def _detach(self, call: _Call) -> None:
        if call.token is not None:
            token, call.token = call.token, None
            _guard("detach context", otel_context.detach, token)

    def _raised(self, call: _Call, exc: BaseException) -> None:
        self._detach(call)
        call.wrapper_done = True
        call.end_ns = time.time_ns()
        self._finish(call, exc)

    def _returned(self, call: _Call) -> None:
        self._detach(call)
        call.wrapper_done = True
        invocation = call.invocation
        if call.streaming and not getattr(invocation, "stream_settled", False) and call.outcome is None:
            invocation.on_stream_settled(lambda outcome: _guard("end stream span", self._settled, call, outcome))
            return
        call.end_ns = time.time_ns()
        if call.outcome is not None:
            self._finish(call, None)
        else:
            # The redacted result arrives through hermes_action_result right after the wrapper returns.
            pending = getattr(self._local, "pending", None)
            if pending is None:
                pending = self._local.pending = []
            pending.append(call)

    def _settled(self, call: _Call, outcome: Mapping[str, Any]) -> None:
        if outcome:
            call.outcome = outcome
        call.end_ns = time.time_ns()
        self._finish(call, None)

    def _flush_pending(self) -> None:
        """End spans whose result never came (a failure between the wrapper and the observer)."""
        pending = getattr(self._local, "pending", None)
        while pending:
            self._finish(pending.pop(), None)

    @hookimpl
    def hermes_call_result(self, call: Any, result: dict[str, Any]) -> None:
        _guard("read action result", self._on_result, call, result)

    def _on_result(self, invocation: Any, result: Mapping[str, Any]) -> None:
        with self._lock:
            call = self._live.get(id(invocation))
        if call is None or call.invocation is not invocation or call.done:
            return
        call.outcome = result
        if call.wrapper_done and call.end_ns is not None:
            pending = getattr(self._local, "pending", None)
            if pending and call in pending:
                pending.remove(call)
            self._finish(call, None)

    # ------------------------------------------------------------------ ending a span

    def _finish(self, call: _Call, exc: Optional[BaseException]) -> None:
        with self._lock:
            if call.done:
                return
            call.done = True
            if self._live.get(id(call.invocation)) is call:
                del self._live[id(call.invocation)]
        end_ns = call.end_ns or time.time_ns()
        try:
            self._end_span(call, exc, end_ns)
        finally:
            for tool in call.tools:
                _guard("end tool span", _end_with_error, tool, "incomplete", end_ns)
            call.tools = []

    def _end_span(self, call: _Call, exc: Optional[BaseException], end_ns: int) -> None:
        span = call.span
        a = call.invocation.attributes
        attrs: dict[str, Any] = {}
        attempts = _int(a.get("attempts"))
        if attempts is not None:
            attrs[sc.H_ATTEMPTS] = attempts
        outcome = _map(call.outcome)
        error_type: Optional[str] = None
        status = _shown(outcome.get("status"))
        if exc is not None:
            error_type = _shown(getattr(exc, "code", None)) or type(exc).__qualname__
            for key, name in ((sc.H_UNCERTAIN, "uncertain_outcome"), (sc.H_RETRYABLE, "retryable")):
                value = getattr(exc, name, None)
                if isinstance(value, bool):
                    attrs[key] = value
            status = "failed"
        elif outcome:
            error = _map(outcome.get("error"))
            for key, name in ((sc.H_UNCERTAIN, "uncertain_outcome"), (sc.H_RETRYABLE, "retryable")):
                if isinstance(error.get(name), bool):
                    attrs[key] = error[name]
            # A stream the caller closed early is cancelled, not failed: no error.type.
            if status not in (None, "completed", "pending", "cancelled"):
                error_type = _shown(error.get("code")) or call.terminal_error or sc.ERROR_OTHER
        if error_type is None and call.terminal_error is not None and status != "completed":
            error_type = call.terminal_error
        if status is not None:
            attrs[sc.H_STATUS] = status
        decision = _shown(_map(outcome.get("approval")).get("decision"))  # e.g. response_delete's approval
        if decision is not None:
            attrs[sc.H_APPROVAL_DECISION] = decision
        metric = dict(call.metric_base)
        if call.gen_op is not None:
            self._read_output(call, outcome, attrs, metric)
        if error_type is not None:
            attrs[sc.ERROR_TYPE] = error_type
        span.set_attributes(attrs)
        if error_type is not None:
            span.set_status(Status(StatusCode.ERROR, error_type))
        span.end(end_time=end_ns)
        if call.gen_op is not None and not call.replayed:
            duration, tokens, _ = self._get_instruments()
            # A new dict per record: some SDK versions keep the attributes object they were given.
            duration.record(max(end_ns - call.start_ns, 0) / 1e9,
                            {**metric, sc.ERROR_TYPE: error_type} if error_type is not None else dict(metric))
            for token_type, key in (("input", sc.USAGE_INPUT_TOKENS), ("output", sc.USAGE_OUTPUT_TOKENS)):
                if key in attrs:
                    tokens.record(attrs[key], {**metric, sc.TOKEN_TYPE: token_type})

    def _read_output(self, call: _Call, outcome: Mapping[str, Any], attrs: dict[str, Any],
                     metric: dict[str, Any]) -> None:
        """Model, usage, finish reasons (and, opted in, ids and content) from the redacted result."""
        out = _map(outcome.get("output"))
        final = _map(out.get("final"))
        model = _shown(out.get("model")) or _shown(final.get("model"))
        if model is not None:
            attrs[sc.RESPONSE_MODEL] = metric[sc.RESPONSE_MODEL] = model
        usage = _map(out.get("usage")) or _map(final.get("usage")) or call.usage
        for target, names in ((sc.USAGE_INPUT_TOKENS, ("input_tokens", "prompt_tokens")),
                              (sc.USAGE_OUTPUT_TOKENS, ("output_tokens", "completion_tokens"))):
            for name in names:
                value = _int(usage.get(name))
                if value is not None:
                    attrs[target] = value
                    break
        choices = out.get("choices") if isinstance(out.get("choices"), list) else final.get("choices")
        reasons = [r for r in (_shown(_map(c).get("finish_reason")) for c in choices or ()) if r]
        if not reasons and _shown(out.get("finish_reason")):
            reasons = [out["finish_reason"]]
        if reasons:
            attrs[sc.RESPONSE_FINISH_REASONS] = tuple(reasons)
        if self._record_ids:
            response_id = _shown(out.get("id")) or _shown(final.get("id"))
            if response_id is not None and call.gen_op == sc.OP_CHAT:
                attrs[sc.RESPONSE_ID] = response_id
            conversation = _shown(outcome.get("session_id"))
            if conversation is not None:
                attrs[sc.CONVERSATION_ID] = conversation
        if self._capture_content and self._latest:
            messages = _output_messages(out, final, reasons, call.agent_output)
            if messages:
                attrs[sc.OUTPUT_MESSAGES] = json.dumps(messages, ensure_ascii=False)

    # ------------------------------------------------------------------ stream events and runs

    @hookimpl
    def hermes_stream_event(self, call: Any, event: dict[str, Any]) -> None:
        _guard("read stream event", self._on_event, call, event)

    def _on_event(self, invocation: Any, event: Mapping[str, Any]) -> None:
        call = self._live.get(id(invocation))
        if call is None or call.invocation is not invocation or call.done:
            return
        if not call.first_event:
            call.first_event = True
            if call.gen_op is not None and not call.replayed:
                _guard("record time to first chunk", self._first_chunk, call)
        if call.gen_op != sc.OP_INVOKE_AGENT:
            return
        data = _map(event.get("data"))
        name = _shown(event.get("event")) or _shown(data.get("event"))
        if name == "tool.started":
            self._tool_started(call, data)
        elif name == "tool.completed":
            self._tool_completed(call, data)
        elif name == "approval.request":
            attrs: dict[str, Any] = {}
            for key, target in (("pattern_key", sc.H_APPROVAL_PATTERN_KEY), ("command", sc.H_APPROVAL_COMMAND)):
                value = _shown(data.get(key))  # the command only if the redaction policy let it through
                if value is not None:
                    attrs[target] = value
            if isinstance(data.get("allow_permanent"), bool):
                attrs[sc.H_APPROVAL_ALLOW_PERMANENT] = data["allow_permanent"]
            self._approval_target(call).add_event(sc.EVENT_APPROVAL_REQUESTED, attrs)
        elif name == "approval.responded":
            attrs = {}
            decision = _shown(data.get("choice")) or _shown(data.get("decision"))
            if decision is not None:
                attrs[sc.H_APPROVAL_DECISION] = decision
            self._approval_target(call).add_event(sc.EVENT_APPROVAL_RESPONDED, attrs)
        elif name == "run.completed":
            call.usage = _map(data.get("usage"))
            call.agent_output = _shown(data.get("output"))
        elif name in ("run.failed", "run.cancelled"):
            call.terminal_error = name.replace(".", "_")  # run_failed | run_cancelled

    def _first_chunk(self, call: _Call) -> None:
        self._get_instruments()[2].record((time.time_ns() - call.start_ns) / 1e9, dict(call.metric_base))

    def _approval_target(self, call: _Call) -> Any:
        """An approval belongs to the tool that asked for it (Hermes asks between its start and end)."""
        return call.tools[-1] if call.tools else call.span

    def _tool_started(self, call: _Call, data: Mapping[str, Any], start_ns: Optional[int] = None) -> Any:
        tool = _shown(data.get("tool"))
        attrs: dict[str, Any] = {sc.OPERATION_NAME: sc.OP_EXECUTE_TOOL}
        if tool is not None:
            attrs[sc.TOOL_NAME] = tool
        span = self._get_tracer().start_span(
            f"{sc.OP_EXECUTE_TOOL} {tool}" if tool else sc.OP_EXECUTE_TOOL, kind=SpanKind.INTERNAL,
            context=trace.set_span_in_context(call.span), attributes=attrs, start_time=start_ns)
        call.tools.append(span)
        return span

    def _tool_completed(self, call: _Call, data: Mapping[str, Any]) -> None:
        now = time.time_ns()
        duration = _num(data.get("duration"))
        if call.tools:
            span = call.tools.pop(0)
        else:  # the start was not seen: place the span from the reported duration
            span = self._tool_started(call, data, start_ns=now - int((duration or 0.0) * 1e9))
            call.tools.remove(span)
        if duration is not None:
            span.set_attribute(sc.H_TOOL_DURATION, duration)
        if data.get("error") is True:
            _end_with_error(span, "tool_error", now)
        else:
            span.end(end_time=now)

    # ------------------------------------------------------------------ HTTP attempts

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Generator[None, Any, Any]:
        if not self._tracing():
            return (yield)
        span = _guard("start attempt span", lambda: self._start_attempt(attempt))
        try:
            reply = yield
        except BaseException as exc:
            if span is not None:
                _guard("end attempt span", _end_attempt, span, None, exc)
            raise
        if span is not None:
            _guard("end attempt span", _end_attempt, span, reply, None)
        return reply

    def _start_attempt(self, attempt: Any) -> Any:
        a = attempt.attributes
        method = str(a.get("method") or "").upper()
        known = method in sc.KNOWN_METHODS
        attrs: dict[str, Any] = {sc.HTTP_REQUEST_METHOD: method if known else "_OTHER"}
        template = _shown(a.get("path"))
        if template is not None:
            attrs[sc.URL_TEMPLATE] = template
        number = _int(a.get("attempt"))
        if number is not None and number > 1:
            attrs[sc.HTTP_REQUEST_RESEND_COUNT] = number - 1
        context = None
        invocation = getattr(attempt, "call", None)
        if invocation is not None:
            ia = invocation.attributes
            for key, value in (("server.address", _shown(ia.get("server.address"))),
                               ("server.port", _int(ia.get("server.port")))):
                if value is not None:
                    attrs[key] = value
            call = self._live.get(id(invocation))
            if call is not None and call.invocation is invocation:
                context = trace.set_span_in_context(call.span)
        name = (method if known else "HTTP") + (f" {template}" if template else "")
        return self._get_tracer().start_span(name, kind=SpanKind.CLIENT, context=context, attributes=attrs)


def _end_attempt(span: Any, reply: Any, exc: Optional[BaseException]) -> None:
    status = None
    if reply is not None:
        status = _int(getattr(reply, "status", None)) or _int(getattr(reply, "status_code", None))
    error_type: Optional[str] = None
    if exc is not None:
        status = _int(getattr(exc, "http_status", None))
        error_type = str(status) if status is not None else (
            _shown(getattr(exc, "code", None)) or type(exc).__qualname__)
    elif status is not None and status >= 400:
        error_type = str(status)
    if status is not None:
        span.set_attribute(sc.HTTP_RESPONSE_STATUS_CODE, status)
    if error_type is not None:
        span.set_attribute(sc.ERROR_TYPE, error_type)
        # No description when the status code tells the reason (HTTP span status rules).
        span.set_status(Status(StatusCode.ERROR, None if status is not None else error_type))
    span.end()


def _end_with_error(span: Any, error_type: str, end_ns: int) -> None:
    span.set_attribute(sc.ERROR_TYPE, error_type)
    span.set_status(Status(StatusCode.ERROR, error_type))
    span.end(end_time=end_ns)


def _hermes_attributes(a: Mapping[str, Any], operation: str) -> dict[str, Any]:
    """The SDK's own low-cardinality attributes (no ids, no content)."""
    attrs: dict[str, Any] = {sc.H_OPERATION: operation}
    for key, target in (("capability_id", sc.H_CAPABILITY_ID), ("endpoint_id", sc.H_ENDPOINT_ID)):
        value = _shown(a.get(key))
        if value is not None:
            attrs[target] = value
    replayed = a.get("replayed") is True
    attrs[sc.H_REPLAYED] = replayed
    keyed = a.get("idempotency")
    outcome = _shown(keyed) if isinstance(keyed, str) else (
        "replayed" if replayed else ("executed" if keyed is True else "none"))
    if outcome is not None:
        attrs[sc.H_IDEMPOTENCY] = outcome
    decision = _shown(a.get("approval.decision"))
    if decision is not None:
        attrs[sc.H_APPROVAL_DECISION] = decision
    return attrs


def _output_messages(out: Mapping[str, Any], final: Mapping[str, Any], reasons: list[str],
                     agent_output: Optional[str]) -> list[dict[str, Any]]:
    """``gen_ai.output.messages`` from text that the SDK's redaction let through (normally none)."""
    texts: list[Optional[str]] = []
    if agent_output is not None:
        texts.append(agent_output)
    elif "text" in out:  # a stream's summary: its text is the whole output
        texts.append(_shown(out.get("text")))
    elif out.get("choices"):
        for choice in out.get("choices") or ():
            texts.append(_shown(_map(_map(choice).get("message")).get("content")))
    else:
        for item in out.get("output") or final.get("output") or ():
            for part in _map(item).get("content") or ():
                texts.append(_shown(_map(part).get("text")))
    messages = []
    for i, text in enumerate(t for t in texts if t):
        message: dict[str, Any] = {"role": "assistant", "parts": [{"type": "text", "content": text}]}
        message["finish_reason"] = reasons[i] if i < len(reasons) else (reasons[0] if reasons else "stop")
        messages.append(message)
    return messages


def metric_views() -> list[Any]:
    """OpenTelemetry SDK views with the conventional bucket boundaries of the plugin's histograms.

    The plugin gives the boundaries as advice, which the OpenTelemetry SDK honours from 1.30; with an
    older SDK pass these to ``MeterProvider(views=...)``. Needs ``opentelemetry-sdk``.
    """
    from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

    return [View(instrument_name=name, aggregation=ExplicitBucketHistogramAggregation(list(buckets)))
            for name, buckets in ((sc.METRIC_OPERATION_DURATION, sc.DURATION_BUCKETS),
                                  (sc.METRIC_TOKEN_USAGE, sc.TOKEN_BUCKETS),
                                  (sc.METRIC_TIME_TO_FIRST_CHUNK, sc.DURATION_BUCKETS))]


def _histogram(meter: Any, name: str, unit: str, description: str, buckets: tuple[float, ...]) -> Any:
    try:  # opentelemetry-api >= 1.23 takes the conventional buckets as advice (the SDK honours it from 1.30)
        return meter.create_histogram(name, unit=unit, description=description,
                                      explicit_bucket_boundaries_advisory=list(buckets))
    except TypeError:
        return meter.create_histogram(name, unit=unit, description=description)
