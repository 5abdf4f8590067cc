"""Durable runs (``/v1/runs``), as specs.

Inputs Hermes answers with a text/plain 500 (an ``input`` array ending in a string, a body that
is not an object) are refused here, before anything is sent; so are the ones it answers 400.
"""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Optional

import attrs

from hermes_sdk.errors import (
    ApprovalNotActiveError,
    ApprovalNotPendingError,
    HermesError,
    InvalidApprovalChoiceError,
    InvalidInputError,
    InvalidResponseError,
    OperatorRunError,
    RunNotFoundError,
    RunStoppedError,
    StaleApprovalError,
    SteerNotAcceptedError,
)
from hermes_sdk.plugin import (
    CONFIDENTIAL,
    MODEL_SIDE_EFFECTS,
    Accumulator,
    AdmitContext,
    Aggregate,
    Bool,
    Contract,
    Field,
    Header,
    Input,
    ListOf,
    Message,
    OneOf,
    OperationSpec,
    PathId,
    RequestParts,
    Rule,
    StreamEvent,
    Text,
    control_headers,
    invalid_input,
    path_id,
    visible_text,
)

from .._shared import encode_body
from .events import RunEvent, parse_run_event
from .state import RunsState, is_operator_run
from .types import (
    ApprovalAnswer,
    RunEventStream,
    RunStarted,
    RunStatus,
    SteerAnswer,
    approval_answer,
    run_started,
    run_status,
    steer_answer,
)

START_FIELDS = ("input", "instructions", "session_id", "session_key", "conversation_history",
                "previous_response_id", "model", "_aip")
APPROVAL_CHOICES = ("once", "session", "always", "deny")
RUN_EVENTS_MAX = 100_000
#: Seconds one read of a run's events stream may wait: Hermes sends a keepalive every 30 s.
RUN_EVENTS_READ_TIMEOUT = 120.0


def _last_input_visible(data: Mapping[str, object]) -> None:
    value = data.get("input")
    if isinstance(value, list) and not visible_text(value[-1].get("content")):
        raise invalid_input("input", "the last input message has no visible content")


_NON_EMPTY = Text(non_empty=True, message="'{field}' must be a non-empty string")
_RUN_ID = Field("run_id", PathId(), required=True, null="checked", doc="the run's id")
#: An ``input`` array ending in a string (or holding one) is a text/plain 500 from Hermes.
_START_INPUT = OneOf((Text(non_empty=True, message="'{field}' must not be empty"),
                      ListOf(Message(), non_empty=True,
                             message="'{field}' must be a non-empty string or a non-empty list of messages")),
                     "'{field}' must be a non-empty string or a non-empty list of messages", by_type=True)
START_INPUT = Input((
    Field("input", _START_INPUT, required=True, doc="the run's input: a text or messages"),
    Field("instructions", _NON_EMPTY),
    Field("session_id", Header(), doc="the session the run belongs to"),
    Field("session_key", Header(), doc="sent as X-Hermes-Session-Key"),
    Field("conversation_history", ListOf(Message(), message="'{field}' must be a list of messages")),
    Field("previous_response_id", _NON_EMPTY),
    Field("model", _NON_EMPTY),
), rules=(Rule("last_input_visible", _last_input_visible, "the last input message has visible content",
                   ("input",)),),
    control=("_aip",))


def build_start(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``POST /v1/runs``: the run's input and options; ``session_key`` travels as a header."""
    headers = control_headers(data)
    body = {k: v for k, v in data.items() if k not in ("session_key", "_aip") and v is not None}
    return RequestParts(headers, encode_body(body))


def _run_id(data: Mapping[str, object]) -> str:
    return path_id("run_id", data.get("run_id"))


def _event_id_is_decimal(data: Mapping[str, object]) -> None:
    last = data.get("last_event_id")
    if isinstance(last, str) and not last.isdigit():
        raise invalid_input("last_event_id", _LAST_EVENT_ID)


_LAST_EVENT_ID = "'last_event_id' must be the decimal id of an event of the run"
RUN_INPUT = Input((_RUN_ID,), control=("_aip",))
EVENTS_INPUT = Input((_RUN_ID, Field("last_event_id", Text(20, message=_LAST_EVENT_ID, too_long=_LAST_EVENT_ID),
                                     doc="resume after this event (Hermes 0.21+)")),
                     rules=(Rule("event_id_is_decimal", _event_id_is_decimal, "last_event_id is decimal digits",
                                 ("last_event_id",)),),
                     control=("_aip",))


def build_run(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``GET /v1/runs/{run_id}``, ``…/events`` and ``POST …/stop``: the run id; the events route also
    takes ``last_event_id`` (sent as ``Last-Event-ID``: 0.21+ resumes after that event)."""
    events = operation == "run_events"
    last = data.get("last_event_id")
    headers = {"Last-Event-ID": str(last)} if last is not None else {}
    return RequestParts(headers, None, RUN_EVENTS_MAX if events else 0, path_params={"run_id": str(data["run_id"])})


#: Hermes 0.21+ refuses an approval ``request_id`` that is empty or longer than this (400).
REQUEST_ID_MAX = 256
#: Hermes 0.21+ refuses a steer text it cannot take; this bound keeps one well inside its body limit.
STEER_TEXT_MAX = 100_000
_REQUEST_ID = f"'request_id' must be a non-blank string of at most {REQUEST_ID_MAX} characters"


#: The prefix of a digested run key: reserved, so a caller's key spelled like a digest is digested too.
DIGEST_PREFIX = "sha256-"


def wire_run_key(key: str) -> str:
    """The ``Idempotency-Key`` a run start sends for the caller's key; distinct keys never share one.

    Hermes 0.21+ refuses a run key that is not 1-255 visible ASCII characters (400
    ``invalid_idempotency_key``). Such a key becomes ``sha256-`` plus the hex digest of its UTF-8
    bytes (71 characters): the same caller key always gives the same header, so the server's
    replay still matches. The SDK's own records keep the caller's key.

    A conforming key is sent unchanged, so a retry after an upgrade still finds the run an older
    release started with it, unless it starts with the reserved ``sha256-``: that one is digested
    too, else the caller key ``sha256-<hex of "order 42">`` would send the same header as the
    caller key ``order 42`` and be answered with that caller's run. Unchanged keys never start
    with the prefix and digested ones always do, so the mapping is one-to-one (barring a SHA-256
    collision); the price is that a ``sha256-…`` key of an older release's run is not found again.
    """
    if 1 <= len(key) <= 255 and all("\x21" <= ch <= "\x7e" for ch in key) and not key.startswith(DIGEST_PREFIX):
        return key
    return DIGEST_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


APPROVAL_INPUT = Input((
    _RUN_ID,
    Field("choice", Text(one_of=APPROVAL_CHOICES, echo=True), required=True, null="checked"),
    Field("all", Bool(), doc="answer every queued request of the run"),
    Field("request_id", Text(REQUEST_ID_MAX, non_empty=True, message=_REQUEST_ID, too_long=_REQUEST_ID),
          doc="the request answered (Hermes 0.21+)"),
), control=("_aip",))
STEER_INPUT = Input((
    _RUN_ID,
    Field("input", Text(STEER_TEXT_MAX, non_empty=True, message="'{field}' must be a non-empty string",
                        too_long="'{field}' must be at most {limit} characters"),
          required=True, null="checked", doc="a message for the running agent"),
), control=("_aip",))


def build_approval(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``POST /v1/runs/{run_id}/approval``: ``choice``, optionally ``all`` (every queued request) and
    ``request_id`` (the request answered: 0.21+ resolves exactly it, 0.19/0.20 ignore it)."""
    body = {k: data[k] for k in ("choice", "all", "request_id") if data.get(k) is not None}
    return RequestParts({}, encode_body(body), path_params={"run_id": str(data["run_id"])})


def build_steer(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``POST /v1/runs/{run_id}/steer``: ``{"input": text}``, a message for the running agent."""
    return RequestParts({}, encode_body({"input": data["input"]}), path_params={"run_id": str(data["run_id"])})


# ------------------------------------------------------------------ local admission rules


def admit_approval(ctx: AdmitContext[RunsState]) -> None:
    """Never an approval after this client asked to stop the run; ``always`` only when allowed;
    never for a run an operator action started (its commands are answered only through
    ``operate(resume=..., choice=..., approval=...)``, the operator's approval gate)."""
    admit_answer(ctx)
    if is_operator_run(ctx.records, ctx.base_url, _run_id(ctx.input)):
        raise OperatorRunError(
            "this run was started by client.operate(): its commands are answered only through the operator's "
            "approval gate, operate(resume=<operator action id>, choice=..., approval=...); nothing was sent",
            details={"field": "run_id", "reason": "operator_run", "sent": False})


def admit_answer(ctx: AdmitContext[RunsState]) -> None:
    """Never an approval after this client asked to stop the run; ``always`` only when allowed."""
    if ctx.input.get("run_id") in ctx.state.stopped:
        raise RunStoppedError("this client stopped the run: an approval sent now could still execute the command",
                              details={"sent": False, "field": "run_id"})
    if ctx.input.get("choice") == "always" and not ctx.allow_permanent_approvals:
        raise InvalidInputError(
            "'always' makes Hermes allow the pattern process-wide and rewrite its config; build the client "
            "with allow_permanent_approvals=True to send it", details={"field": "choice", "sent": False})


def admit_events(ctx: AdmitContext[RunsState]) -> None:
    """Never a second subscription on a run a ``Run`` of this client is following: Hermes splits a
    run's events between its subscribers, so the ``Run`` would miss some (its approval requests,
    its end) and the second subscriber would see the rest."""
    run = ctx.state.followed.get(_run_id(ctx.input))
    if run is not None and run._following():
        raise InvalidInputError(
            "a Run of this client is following this run's events, and Hermes splits a run's events between "
            "its subscribers: read them from that Run (run.events() or run.wait()), or run.close() it first",
            details={"field": "run_id", "reason": "already_subscribed", "sent": False})


def admit_stop(ctx: AdmitContext[RunsState]) -> None:
    """Mark the run stopped before ``/stop`` is sent, so no approval can race behind it."""
    ctx.state.stopped.add(_run_id(ctx.input))


# ------------------------------------------------------------------ the events stream's accumulator

RUN_TERMINAL = frozenset({"run.completed", "run.failed", "run.cancelled", "run.interrupted", "error", "done"})
RUN_FAILED = frozenset({"run.failed", "error"})


class RunEventsAccumulator(Accumulator):
    """A run's events: ``message.delta`` is the text, ``run.completed`` the final object with usage;
    ``run.failed`` fails the stream, ``run.cancelled`` cancels it."""

    terminal_names = RUN_TERMINAL
    failed_names = RUN_FAILED
    cancelled_names = frozenset({"run.cancelled"})
    run_id: object = None

    def bind(self, input: Mapping[str, object]) -> None:
        self.run_id = input.get("run_id")

    def fold(self, agg: Aggregate, name: Optional[str], data: dict[str, object]) -> Optional[str]:
        named = data.get("run_id")
        if named is not None and self.run_id is not None and named != self.run_id:
            # Above all a terminal event about another run: never taken as this run's end.
            self.rejected = InvalidResponseError("the run's events stream sent an event about another run",
                                                 uncertain_outcome=True, http_status=agg.http_status,
                                                 details={"operation": agg.operation, "reason": "another_object"})
            return None
        if name == "message.delta":
            piece = data.get("delta")
            return piece if isinstance(piece, str) and piece else None
        if name == "run.completed":
            agg.final = dict(data)
            usage = data.get("usage")
            if isinstance(usage, dict):
                agg.usage = usage
        return None

    def typed(self, event: StreamEvent, piece: Optional[str]) -> Optional[RunEvent]:
        return parse_run_event(event.data) if isinstance(event.data, dict) else None


# ------------------------------------------------------------------ typed errors


def _retype(error: HermesError, klass: type[HermesError], uncertain_outcome: Optional[bool] = None) -> HermesError:
    return klass(error.message, code=error.code, category=error.category, retryable=error.retryable,
                 retry_after_ms=error.retry_after_ms, http_status=error.http_status, details=error.details,
                 uncertain_outcome=error.uncertain_outcome if uncertain_outcome is None else uncertain_outcome)


def _provider_code(error: HermesError) -> object:
    provider = error.details.get("provider_error")
    return provider.get("code") if isinstance(provider, dict) else None


def refine_run_error(error: HermesError) -> HermesError:
    """404 ``run_not_found`` and the approval route's 400/409 codes as their own classes."""
    code = _provider_code(error)
    if error.http_status == 404:
        return _retype(error, RunNotFoundError)
    if error.http_status == 400 and code == "invalid_approval_choice":
        return _retype(error, InvalidApprovalChoiceError)
    if error.http_status == 409 and code == "approval_not_active":
        return _retype(error, ApprovalNotActiveError, uncertain_outcome=False)
    if error.http_status == 409 and code == "approval_not_pending":
        if error.details.get("request_id"):
            return _retype(error, StaleApprovalError, uncertain_outcome=False)
        return _retype(error, ApprovalNotPendingError, uncertain_outcome=False)
    if error.http_status == 409 and code in ("run_not_accepting_steer", "steer_not_accepted"):
        return _retype(error, SteerNotAcceptedError, uncertain_outcome=False)
    return error


def refine_start_error(error: HermesError) -> HermesError:
    """A 4xx from ``POST /v1/runs`` started no run (the cap is checked before the body is read):
    not uncertain, ``details.started`` False, and the idempotency key is given back (the retry
    policy then calls a 429 retryable: nothing started)."""
    status = error.http_status
    if status is not None and 400 <= status < 500:
        error.uncertain_outcome = False
        error.details["started"] = False
    return error


# ------------------------------------------------------------------ contracts


def _contract(operation: str, method: str, path: str, **overrides: Any) -> Contract:
    base = Contract(
        operation=operation, method=method, path=path, risk="low", stability="experimental",
        requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=True, streaming=False,
        side_effects=("read", "external_network"), data=dict(CONFIDENTIAL), expected_latency_ms=1_000,
        timeout_ms=30_000,
    )
    return attrs.evolve(base, **overrides)


RUN_START: OperationSpec[RunStarted] = OperationSpec(
    _contract("run_start", "POST", "/v1/runs", risk="medium", key_requirement="required", key_ttl_ms=86_400_000,
              retry_safe=False, side_effects=MODEL_SIDE_EFFECTS + ("execute",), expected_latency_ms=2_000,
              timeout_ms=60_000, supports_async=True, supports_cancel=True, async_expected=True),
    build_start, decode=run_started, refine_error=refine_start_error, wire_key=wire_run_key, input=START_INPUT)

RUN_GET: OperationSpec[RunStatus] = OperationSpec(
    _contract("run_get", "GET", "/v1/runs/{run_id}"), build_run, decode=run_status, refine_error=refine_run_error,
    reply_id="run_id", input=RUN_INPUT)

# One subscriber per run and no resume: published as not retry-safe, so nothing re-subscribes.
# It follows the whole run: 24 hours at most (the key's lifetime); Run reads it with a 120 s read
# timeout (Hermes sends a keepalive every 30 s).
RUN_EVENTS: OperationSpec[RunEventStream] = OperationSpec(
    _contract("run_events", "GET", "/v1/runs/{run_id}/events", retry_safe=False, streaming=True,
              side_effects=("read", "external_network"), expected_latency_ms=30_000, timeout_ms=86_400_000),
    build_run, stream_class=RunEventStream, accumulator=RunEventsAccumulator, refine_error=refine_run_error,
    admit=admit_events, input=EVENTS_INPUT,
    # Observers (tracing) see which tool ran and which pattern was approved how; never the
    # command, its preview, the output or the run id.
    observed_keys=("tool", "pattern_key", "choice"))

RUN_APPROVAL: OperationSpec[ApprovalAnswer] = OperationSpec(
    _contract("run_approval", "POST", "/v1/runs/{run_id}/approval", risk="high", retry_safe=False,
              side_effects=("write", "execute", "external_network")),
    build_approval, decode=approval_answer, admit=admit_approval, refine_error=refine_run_error,
    reply_id="run_id", error_input_keys=("request_id",), input=APPROVAL_INPUT)
#: The same request, sent by an operator action's own run follower when the operator's approval
#: provider decided (its gate): never registered, so ``invoke()`` cannot reach it.
RUN_APPROVAL_OF_OPERATOR: OperationSpec[ApprovalAnswer] = attrs.evolve(RUN_APPROVAL, admit=admit_answer)

RUN_STEER: OperationSpec[SteerAnswer] = OperationSpec(
    _contract("run_steer", "POST", "/v1/runs/{run_id}/steer", risk="medium", retry_safe=False,
              side_effects=("write", "send_message", "external_network"), expected_latency_ms=1_000),
    build_steer, decode=steer_answer, refine_error=refine_run_error, reply_id="run_id",
    server_feature="run_steer", input=STEER_INPUT)

RUN_STOP: OperationSpec[RunStatus] = OperationSpec(
    _contract("run_stop", "POST", "/v1/runs/{run_id}/stop", risk="medium", retry_safe=False,
              side_effects=("write", "external_network")),
    build_run, decode=run_status, admit=admit_stop, refine_error=refine_run_error, reply_id="run_id",
    input=RUN_INPUT)

RUN_SPECS = (RUN_START, RUN_GET, RUN_EVENTS, RUN_APPROVAL, RUN_STEER, RUN_STOP)
