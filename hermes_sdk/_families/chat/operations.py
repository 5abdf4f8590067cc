"""chat / chat_stream: ``POST /v1/chat/completions``, as specs, and the chat methods' keywords packed
into the capability's input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

from hermes_sdk._families._shared import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_MODEL,
    MAX_SAFE_INTEGER,
    check_known,
    check_message,
    check_numbers,
    control_headers,
    described,
    encode_body,
    is_number,
    max_events_value,
    merge_extra,
    model_contract,
    require_input,
    visible_text,
)
from hermes_sdk.errors import STREAM_FAILED, HermesError, StreamError
from hermes_sdk.plugin import Accumulator, Aggregate, OperationSpec, RequestParts, StreamEvent
from hermes_sdk.plugin import invalid_input as bad

from .types import ChatCompletion, ChatStream, chat_completion

# Control fields travel as headers or steer the SDK; they never reach the provider JSON body (the
# idempotency key is taken off every input before a builder sees it: split_key).
CONTROL_FIELDS = ("session_id", "session_key", "max_events", "_aip", "stream")
HISTORY_ROLES = ("user", "assistant")


def _branch(data: Mapping[str, object]) -> list[object]:
    given = [name for name in ("prompt", "query", "messages") if data.get(name) is not None]
    if len(given) != 1:
        raise bad("input", "give exactly one of 'prompt', 'query' or 'messages'", given=given)
    name = given[0]
    value = data[name]
    if name != "messages":
        if not isinstance(value, str) or not value.strip():
            raise bad(name, f"'{name}' must be a non-empty string")
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise bad("messages", "'messages' must be a non-empty list of role/content objects")
    for i, message in enumerate(value):
        check_message(f"messages[{i}]", message)
    turns = [m for m in value if m.get("role") in HISTORY_ROLES]
    if not turns:
        raise bad("messages", "'messages' has no user message")
    last = turns[-1]
    # Hermes takes the last user-or-assistant message as the user's input without checking its role.
    if last.get("role") != "user":
        raise bad("messages", "the last user or assistant message must be a user message",
                  last_role=last.get("role"))
    if not visible_text(last.get("content")):
        raise bad("messages", "the last user message has no visible content")
    return list(value)


def _check_fields(data: Mapping[str, object]) -> None:
    model = data.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise bad("model", "'model' must be a non-empty string")
    for name in ("temperature", "top_p"):
        if data.get(name) is not None and not is_number(data[name]):
            raise bad(name, f"'{name}' must be a finite number")
    max_tokens = data.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                   or not 0 <= max_tokens <= MAX_SAFE_INTEGER):
        raise bad("max_tokens", "'max_tokens' must be a non-negative integer of at most 2**53")
    check_numbers(data, skip=CONTROL_FIELDS)
    stop = data.get("stop")
    if stop is not None and not isinstance(stop, str) and not (
            isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
        raise bad("stop", "'stop' must be a string or a list of strings")
    tools = data.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, Mapping) for t in tools)):
        raise bad("tools", "'tools' must be a list of tool objects")
    choice = data.get("tool_choice")
    if choice is not None and not isinstance(choice, (str, Mapping)):
        raise bad("tool_choice", "'tool_choice' must be a string or an object")
    for name in ("response_format", "metadata"):
        if data.get(name) is not None and not isinstance(data[name], Mapping):
            raise bad(name, f"'{name}' must be an object")
    if data.get("user") is not None and not isinstance(data["user"], str):
        raise bad("user", "'user' must be a string")


def build(operation: str, raw: object) -> RequestParts:
    """Validate a chat or chat_stream input and map it to headers and the provider body (no I/O).

    Exactly one of ``prompt``, ``query`` or ``messages``; the last user-or-assistant message must be
    the user's, since Hermes takes it as the input without checking. Session values and the key travel
    as headers; ``stream`` is set from the operation.

    Raises:
        InvalidInputError: a field is missing or invalid (``details["field"]`` names it).
        PayloadTooLargeError: the body is over Hermes' 10,000,000-byte limit.
    """
    data = require_input(raw)
    streaming = operation == "chat_stream"
    messages = _branch(data)
    _check_fields(data)
    headers = control_headers(data, with_session_id=True)
    max_events = max_events_value(data.get("max_events"), DEFAULT_MAX_EVENTS) if streaming else 0
    if not streaming and data.get("max_events") is not None:
        raise bad("max_events", "'max_events' applies only to chat_stream")
    body = {k: v for k, v in data.items()
            if k not in CONTROL_FIELDS and k not in ("prompt", "query", "messages") and v is not None}
    body["messages"] = messages
    body.setdefault("model", DEFAULT_MODEL)
    body["stream"] = streaming
    return RequestParts(headers, encode_body(body), max_events)


# ------------------------------------------------------------------ the stream's accumulator

#: The names that end a chat completions stream (besides ``[DONE]``), and those that mean failure.
CHAT_TERMINAL = frozenset({"done", "error"})
CHAT_FAILED = frozenset({"error"})


class ChatAccumulator(Accumulator):
    """Chat completion chunks: content deltas are the text (reasoning never), the chunk with a
    ``finish_reason`` is the final one, ``hermes.tool.progress`` events are tools.

    A stream that ends with ``finish_reason`` ``error`` or ``length`` (or an ``error`` object) is
    failed, though the connector calls it completed.
    """

    terminal_names = CHAT_TERMINAL
    failed_names = CHAT_FAILED

    def __init__(self) -> None:
        # The typed events load with a process's first stream, not with its first chat.
        from hermes_sdk.plugin import tool_event, typed_stream_event

        self.error: object = None
        self.hermes: object = None
        self._tool_event = tool_event
        self._typed = typed_stream_event

    def fold(self, agg: Aggregate, name: Optional[str], data: dict[str, object]) -> Optional[str]:
        choices = data.get("choices")
        if isinstance(choices, list):
            first = choices[0] if choices and isinstance(choices[0], dict) else {}
            delta = first.get("delta")
            if first.get("finish_reason"):
                agg.finish_reason = first["finish_reason"]
                agg.final = data
            usage = data.get("usage")
            if usage is not None and isinstance(usage, dict):  # `is not None` first: most chunks have none
                agg.usage = usage
            if data.get("error") is not None:
                self.error = data["error"]
            if data.get("hermes") is not None:
                self.hermes = data["hermes"]
            content = delta.get("content") if isinstance(delta, dict) else None
            return content if isinstance(content, str) and content else None
        if name == "hermes.tool.progress":
            found = self._tool_event(name, data)
            if found is not None:
                agg.tools.append(found)
        return None

    def failure(self, agg: Aggregate) -> Optional[HermesError]:
        if agg.finish_reason in ("error", "length") or self.error is not None:
            return StreamError(f"the chat stream finished with finish_reason {agg.finish_reason!r}",
                               code=STREAM_FAILED, uncertain_outcome=True,
                               details={"operation": agg.operation, "finish_reason": agg.finish_reason,
                                        "error": self.error, "hermes": self.hermes})
        return None

    def typed(self, event: StreamEvent, piece: Optional[str]) -> object:
        return self._typed(event, piece)


# ------------------------------------------------------------------ the specs


def _describe_chat(input: Mapping[str, object]) -> dict[str, object]:
    return described(input)


CHAT: OperationSpec[ChatCompletion] = OperationSpec(
    model_contract("chat", "/v1/chat/completions", False), build,
    decode=chat_completion, describe=_describe_chat)

CHAT_STREAM: OperationSpec[ChatStream] = OperationSpec(
    model_contract("chat_stream", "/v1/chat/completions", True), build,
    stream_class=ChatStream, accumulator=ChatAccumulator, describe=_describe_chat)

#: The chat operations, in the seed page's order.
SPECS = (CHAT, CHAT_STREAM)


# ------------------------------------------------------------------ the methods' keywords

#: The provider fields chat() models; anything else goes through ``extra_body=``.
CHAT_FIELDS = frozenset({"temperature", "top_p", "max_tokens", "stop", "tools", "tool_choice", "response_format",
                         "user", "metadata", "stream_options", "n", "seed", "presence_penalty", "frequency_penalty",
                         "logprobs", "top_logprobs", "logit_bias", "parallel_tool_calls", "max_completion_tokens"})


def chat_input(prompt: Optional[str], query: Optional[str], messages: Optional[Sequence[object]], model: str,
               session_id: Optional[str], session_key: Optional[str], provider_fields: Mapping[str, object],
               extra_body: Optional[Mapping[str, object]] = None) -> dict[str, object]:
    """The chat capability input from ``chat()``'s keywords."""
    check_known(provider_fields, CHAT_FIELDS, "chat")
    data = merge_extra(dict(provider_fields), extra_body)
    for name, value in (("prompt", prompt), ("query", query), ("messages", messages), ("model", model),
                        ("session_id", session_id), ("session_key", session_key)):
        if value is not None:
            data[name] = value
    return data


__all__ = ["CHAT", "CHAT_FIELDS", "CHAT_STREAM", "ChatAccumulator", "SPECS", "build", "chat_input"]
