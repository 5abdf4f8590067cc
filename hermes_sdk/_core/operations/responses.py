"""responses / responses_stream: POST /v1/responses, with the provider JSON in ``body``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Optional

from .._constants import DEFAULT_MAX_EVENTS, DEFAULT_MODEL
from ..aggregate import Accumulator, Aggregate
from ..events import tool_event, typed_stream_event
from ..models import StreamEvent
from .common import (
    RequestParts,
    bad,
    check_message,
    check_numbers,
    control_headers,
    encode_body,
    max_events_value,
    require_input,
    visible_text,
)

CONTROL_FIELDS = ("session_key", "idempotency_key", "max_events", "_aip")


def _split(data: Mapping[str, object]) -> tuple[dict[str, object], Mapping[str, object]]:
    """Return (provider body, control fields). Without ``body``, the non-control fields are the body."""
    if "body" in data:
        extra = sorted(k for k in data if k != "body" and k not in CONTROL_FIELDS)
        if extra:
            raise bad(extra[0], f"'{extra[0]}' belongs inside 'body'; beside it only "
                                f"{', '.join(CONTROL_FIELDS[:3])} are accepted", fields=extra)
        body = data["body"]
        if not isinstance(body, Mapping):
            raise bad("body", "'body' must be a JSON object")
        return dict(body), data
    return {k: v for k, v in data.items() if k not in CONTROL_FIELDS}, data


def _check_input(value: object) -> None:
    if value is None:
        raise bad("body.input", "'input' is required")
    if isinstance(value, str):
        if not value.strip():
            raise bad("body.input", "'input' must not be empty")
        return
    if not isinstance(value, list) or not value:
        raise bad("body.input", "'input' must be a string or a non-empty list of strings or messages")
    for i, item in enumerate(value):
        if not isinstance(item, str):
            check_message(f"body.input[{i}]", item)
    last = value[-1]
    # Hermes makes the last item the current input without checking its role.
    if isinstance(last, str):
        if not last.strip():
            raise bad("body.input", "the last input item is empty")
    elif last.get("role") != "user" or not visible_text(last.get("content")):
        raise bad("body.input", "the last input item must be a user message with visible content")


def _check_body(body: Mapping[str, object]) -> None:
    _check_input(body.get("input"))
    if body.get("conversation") is not None and body.get("previous_response_id") is not None:
        raise bad("body.conversation", "'conversation' and 'previous_response_id' cannot be used together")
    for name in ("conversation", "previous_response_id", "instructions", "model", "truncation"):
        value = body.get(name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise bad(f"body.{name}", f"'{name}' must be a non-empty string")
    history = body.get("conversation_history")
    if history is not None:
        if not isinstance(history, list):
            raise bad("body.conversation_history", "'conversation_history' must be a list of messages")
        for i, item in enumerate(history):
            check_message(f"body.conversation_history[{i}]", item)
    if body.get("store") is not None and not isinstance(body["store"], bool):
        raise bad("body.store", "'store' must be a boolean")
    check_numbers(body, "body.")


def build(operation: str, raw: object) -> RequestParts:
    """Validate a responses or responses_stream input and map it to headers and the provider body (no I/O).

    The body is ``body``, or without it every non-control field. ``input`` is required and its last
    item must be the user's; ``conversation`` and ``previous_response_id`` exclude each other.

    Raises:
        InvalidInputError: a field is missing or invalid (``details["field"]`` names it).
        PayloadTooLargeError: the body is over Hermes' 10,000,000-byte limit.
    """
    data = require_input(raw)
    streaming = operation == "responses_stream"
    body, control = _split(data)
    _check_body(body)
    headers = control_headers(control)
    if not streaming and control.get("max_events") is not None:
        raise bad("max_events", "'max_events' applies only to responses_stream")
    max_events = max_events_value(control.get("max_events"), DEFAULT_MAX_EVENTS) if streaming else 0
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
