"""responses / responses_stream (``POST /v1/responses``, the provider JSON in ``body``) and
response_get / response_delete (one stored Responses object by id), as specs, and the Responses
methods' keywords packed into each capability's input."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from hermes_sdk._families._shared import (
    CONFIDENTIAL,
    DEFAULT_MAX_EVENTS,
    DEFAULT_MODEL,
    MAX_MAX_EVENTS,
    check_known,
    control_headers,
    described,
    encode_body,
    max_events_value,
    merge_extra,
    model_contract,
    visible_text,
)
from hermes_sdk.errors import InvalidInputError
from hermes_sdk.plugin import (
    Accumulator,
    Aggregate,
    Bool,
    Contract,
    Field,
    Header,
    Input,
    Int,
    ListOf,
    Message,
    Never,
    Object,
    OneOf,
    OperationSpec,
    PathId,
    RequestParts,
    Rule,
    StreamEvent,
    Text,
    path_id,
    tool_event,
    typed_stream_event,
)
from hermes_sdk.plugin import invalid_input as bad

from .types import DeletionReceipt, Response, ResponseStream, deletion_receipt, response

CONTROL_FIELDS = ("session_key", "max_events", "_aip")  # the key is taken off before (split_key)


def _provider_body(data: Mapping[str, object]) -> dict[str, object]:
    """The provider body: ``body``, or without it every non-control field."""
    if "body" in data:
        body = data["body"]
        return dict(body) if isinstance(body, Mapping) else {}
    return {k: v for k, v in data.items() if k not in CONTROL_FIELDS}


def _only_control_beside_body(data: Mapping[str, object]) -> None:
    if "body" in data:
        extra = sorted(k for k in data if k != "body" and k not in CONTROL_FIELDS)
        if extra:
            raise bad(extra[0], f"'{extra[0]}' belongs inside 'body'; beside it only "
                                "session_key, idempotency_key, max_events are accepted", fields=extra)


def _last_input_is_users(body: Mapping[str, object]) -> None:
    """Hermes makes the last item the current input without checking its role."""
    value = body.get("input")
    if not isinstance(value, list):
        return
    last = value[-1]
    if isinstance(last, str):
        if not last.strip():
            raise bad("body.input", "the last input item is empty")
    elif last.get("role") != "user" or not visible_text(last.get("content")):
        raise bad("body.input", "the last input item must be a user message with visible content")


def _one_thread(body: Mapping[str, object]) -> None:
    if body.get("conversation") is not None and body.get("previous_response_id") is not None:
        raise bad("body.conversation", "'conversation' and 'previous_response_id' cannot be used together")


_NAMED = Text(non_empty=True, message="'{key}' must be a non-empty string")
_ITEMS = "'{key}' must be a string or a non-empty list of strings or messages"
#: The provider body (``body``, or the flat fields), checked with the field paths under ``body.``.
BODY_INPUT = Input((
    Field("input", OneOf((Text(non_empty=True, message="'{key}' must not be empty"),
                          ListOf(OneOf((Text(), Message()), "{field} must be an object with 'role' and 'content'",
                                       by_type=True), non_empty=True, message=_ITEMS)), _ITEMS, by_type=True),
          required=True, missing="'{key}' is required", doc="the input: a text, or strings and messages"),
    *(Field(name, _NAMED) for name in ("conversation", "previous_response_id", "instructions", "model",
                                        "truncation")),
    Field("conversation_history", ListOf(Message(), message="'{key}' must be a list of messages")),
    Field("store", Bool(message="'{key}' must be a boolean")),
), extra="provider", first=(Rule("one_thread", _one_thread, "not both conversation and previous_response_id",
                                                      ("conversation", "previous_response_id")),),
    rules=(Rule("last_input_is_users", _last_input_is_users,
                "the last input item is a user message (or a text) with visible content", ("input",)),),
    doc="provider fields beside these are sent as given (numbers finite, at most 2**53)")


def _check_body(data: Mapping[str, object]) -> None:
    BODY_INPUT.check(_provider_body(data), prefix="body.")


def _input(max_events: Field) -> Input:
    return Input((
        Field("body", Object(message="'body' must be a JSON object", input=BODY_INPUT),
              null="checked", doc="the provider body (or give its fields beside the control fields, without body)"),
        Field("session_key", Header(), doc="sent as X-Hermes-Session-Key"),
        max_events,
    ), extra="provider", numbers=False, first=(Rule("only_control_beside_body", _only_control_beside_body),),
        rules=(Rule("provider_body", _check_body, "the body's own schema (body.input required)"),))


RESPONSES_INPUT = _input(Field("max_events", Never("'max_events' applies only to responses_stream")))
RESPONSES_STREAM_INPUT = _input(Field("max_events", Int(1, MAX_MAX_EVENTS, message=(
    f"max_events must be an integer from 1 to {MAX_MAX_EVENTS}"))))


def build(operation: str, data: Mapping[str, object]) -> RequestParts:
    """Map a responses or responses_stream input (checked by its :class:`~hermes_sdk.plugin.Input`) to
    headers and the provider body (no I/O). The body is ``body``, or without it every non-control field.

    Raises:
        PayloadTooLargeError: the body is over Hermes' 10,000,000-byte limit.
    """
    streaming = operation == "responses_stream"
    body = _provider_body(data)
    headers = control_headers(data)
    max_events = max_events_value(data.get("max_events"), DEFAULT_MAX_EVENTS) if streaming else 0
    body.setdefault("model", DEFAULT_MODEL)
    body["stream"] = streaming
    return RequestParts(headers, encode_body(body), max_events)


# ------------------------------------------------------------------ the stream's accumulator

RESPONSES_TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete", "error", "done"})
RESPONSES_FAILED = frozenset({"response.failed", "response.incomplete", "error"})


class ResponsesAccumulator(Accumulator):
    """Responses events: ``response.output_text.delta`` is the text, finished function-call items
    are tools, the terminal envelope (``response.completed|failed|incomplete``) is ``final``."""

    terminal_names = RESPONSES_TERMINAL
    failed_names = RESPONSES_FAILED

    def fold(self, agg: Aggregate, name: Optional[str], data: dict[str, object]) -> Optional[str]:
        if name == "response.output_text.delta":
            piece = data.get("delta")
            return piece if isinstance(piece, str) and piece else None
        if name == "response.output_item.done":
            found = tool_event(name, data)
            if found is not None:
                agg.tools.append(found)
        elif name in RESPONSES_TERMINAL:
            envelope = data.get("response")
            if isinstance(envelope, dict):
                agg.final = envelope
                if isinstance(envelope.get("usage"), dict):
                    agg.usage = envelope["usage"]
        return None

    def typed(self, event: StreamEvent, piece: Optional[str]) -> object:
        return typed_stream_event(event, piece)


# ------------------------------------------------------------------ response_get / response_delete


def response_id_value(value: object) -> str:
    """A response id fit for one path segment: non-empty, at most 512 bytes, no control characters.

    ``.`` and ``..`` are refused: servers and proxies would resolve them away from ``/v1/responses/``.
    """
    return path_id("response_id", value)


def _requested(data: Mapping[str, object]) -> object:
    value = data.get("response_id")
    body = data.get("body")
    if value is None and isinstance(body, dict):
        value = body.get("response_id")
    return value


def _response_id_given(data: Mapping[str, object]) -> None:
    response_id_value(_requested(data))


#: ``response_id`` (or ``body.response_id``); other fields are ignored, as before.
STORED_INPUT = Input((
    Field("response_id", PathId(), doc="the stored response's id (or body.response_id)"),
    Field("session_key", Header(), doc="sent as X-Hermes-Session-Key"),
), extra="provider", numbers=False, first=(Rule("response_id_given", _response_id_given),))


def build_stored(operation: str, data: Mapping[str, object]) -> RequestParts:
    """Map a response_get or response_delete input: ``response_id`` (or ``body.response_id``) is the path."""
    return RequestParts(control_headers(data), path_params={"response_id": str(_requested(data))})


# ------------------------------------------------------------------ the specs


def _describe_responses(input: Mapping[str, object]) -> dict[str, object]:
    body = input.get("body")
    return described(body if isinstance(body, Mapping) else {})


RESPONSES: OperationSpec[Response] = OperationSpec(
    model_contract("responses", "/v1/responses", False), build,
    decode=response, describe=_describe_responses, input=RESPONSES_INPUT)

RESPONSES_STREAM: OperationSpec[ResponseStream] = OperationSpec(
    model_contract("responses_stream", "/v1/responses", True), build,
    stream_class=ResponseStream, accumulator=ResponsesAccumulator, describe=_describe_responses,
    input=RESPONSES_STREAM_INPUT)

# The generated contract calls response_get "internal" and PII-free; the seed page says that is too
# weak for stored model and tool output, so it is published here as confidential.
RESPONSE_GET: OperationSpec[Response] = OperationSpec(
    Contract(
        operation="response_get", method="GET", path="/v1/responses/{response_id}", risk="low",
        stability="experimental", requires_approval=False, key_requirement="optional", key_ttl_ms=None,
        retry_safe=True, streaming=False, side_effects=("read", "external_network"),
        data=dict(CONFIDENTIAL), expected_latency_ms=5_000, timeout_ms=60_000,
    ),
    build_stored, decode=response, reply_id="id", input=STORED_INPUT)

RESPONSE_DELETE: OperationSpec[DeletionReceipt] = OperationSpec(
    Contract(
        operation="response_delete", method="DELETE", path="/v1/responses/{response_id}", risk="high",
        stability="experimental", requires_approval=True, key_requirement="required", key_ttl_ms=86_400_000,
        retry_safe=False, streaming=False, side_effects=("read", "delete", "external_network"),
        data={"classification": "restricted", "contains_pii": True, "redaction_required": True},
        expected_latency_ms=5_000, timeout_ms=60_000,
    ),
    build_stored, decode=deletion_receipt, reply_id="id", input=STORED_INPUT)

#: The Responses operations, in the seed page's order.
SPECS = (RESPONSES, RESPONSES_STREAM, RESPONSE_GET, RESPONSE_DELETE)


# ------------------------------------------------------------------ the methods' keywords

#: The provider fields responses() models; anything else goes through ``extra_body=``.
RESPONSES_FIELDS = frozenset({"input", "instructions", "model", "previous_response_id", "conversation",
                              "conversation_history", "store", "truncation", "tools", "tool_choice", "metadata",
                              "temperature", "top_p", "max_output_tokens", "user", "parallel_tool_calls",
                              "reasoning", "text"})


def responses_input(body: Optional[Mapping[str, object]], session_key: Optional[str],
                    body_fields: Mapping[str, object],
                    extra_body: Optional[Mapping[str, object]] = None) -> dict[str, object]:
    """The responses capability input: ``body`` and the body keywords merged, under ``body``."""
    if isinstance(body, str):  # the openai habit, client.responses("hello")
        raise InvalidInputError('the first argument of responses() is the request body (a dict), not the text: '
                                'pass the text as input=, e.g. client.responses(input="hello")',
                                details={"field": "body", "suggestion": "input"})
    if body is not None and not isinstance(body, Mapping):
        raise InvalidInputError("body must be a JSON object", details={"field": "body"})
    check_known(body_fields, RESPONSES_FIELDS, "responses")
    clash = sorted(k for k in body_fields if body and k in body and body[k] != body_fields[k])
    if clash:
        # Neither value may be dropped silently: the caller says which one is meant.
        raise InvalidInputError(f"{clash[0]!r} is given in body and as a keyword with different values",
                                details={"field": clash[0]})
    merged = merge_extra({**(body or {}), **body_fields}, extra_body)
    data: dict[str, object] = {"body": merged}
    if session_key is not None:
        data["session_key"] = session_key
    return data


def stored_input(response_id: str, session_key: Optional[str]) -> dict[str, object]:
    """The response_get / response_delete capability input."""
    data: dict[str, object] = {"response_id": response_id}
    if session_key is not None:
        data["session_key"] = session_key
    return data


__all__ = ["RESPONSE_DELETE", "RESPONSE_GET", "RESPONSES", "RESPONSES_FIELDS", "RESPONSES_STREAM",
           "ResponsesAccumulator", "SPECS", "build", "build_stored", "response_id_value", "responses_input",
           "stored_input"]
