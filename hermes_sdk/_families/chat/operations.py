"""chat / chat_stream: ``POST /v1/chat/completions``, as specs, and the chat methods' keywords packed
into the capability's input."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Optional

from hermes_sdk._families._shared import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_MODEL,
    MAX_MAX_EVENTS,
    MAX_SAFE_INTEGER,
    check_known,
    described,
    encode_body,
    merge_extra,
    model_contract,
    visible_text,
)
from hermes_sdk.errors import STREAM_FAILED, HermesError, StreamError
from hermes_sdk.plugin import (
    Accumulator,
    Aggregate,
    Anything,
    Field,
    Header,
    Input,
    Int,
    ListOf,
    Message,
    Never,
    Number,
    Object,
    OneOf,
    OperationSpec,
    RequestParts,
    Rule,
    StreamEvent,
    Text,
)
from hermes_sdk.plugin import invalid_input as bad

from .types import ChatCompletion, ChatStream, chat_completion

# Control fields travel as headers or steer the SDK; they never reach the provider JSON body (the
# idempotency key is taken off every input before a builder sees it: split_key).
CONTROL_FIELDS = ("session_id", "session_key", "max_events", "_aip", "stream")
HISTORY_ROLES = ("user", "assistant")


def _last_message_is_users(data: Mapping[str, object]) -> None:
    """Hermes takes the last user-or-assistant message as the user's input without checking its role."""
    value = data.get("messages")
    if not isinstance(value, list):
        return
    turns = [m for m in value if m.get("role") in HISTORY_ROLES]
    if not turns:
        raise bad("messages", "'messages' has no user message")
    last = turns[-1]
    if last.get("role") != "user":
        raise bad("messages", "the last user or assistant message must be a user message",
                  last_role=last.get("role"))
    if not visible_text(last.get("content")):
        raise bad("messages", "the last user message has no visible content")


_TEXT = Text(non_empty=True, message="'{field}' must be a non-empty string")
_FIELDS = (
    Field("prompt", _TEXT, doc="the user's text (one user message)"),
    Field("query", _TEXT, doc="the user's text, as prompt"),
    Field("messages", ListOf(Message(), non_empty=True,
                             message="'messages' must be a non-empty list of role/content objects"),
          doc="the conversation; its last user-or-assistant message is the user's"),
    Field("model", _TEXT, doc=f"the model (default {DEFAULT_MODEL!r})"),
    Field("temperature", Number()),
    Field("top_p", Number()),
    Field("max_tokens", Int(0, MAX_SAFE_INTEGER,
                            message="'max_tokens' must be a non-negative integer of at most 2**53")),
    Field("stop", OneOf((Text(), ListOf(Text())), "'{field}' must be a string or a list of strings")),
    Field("tools", OneOf((ListOf(Object()),), "'{field}' must be a list of tool objects")),
    Field("tool_choice", OneOf((Text(), Object()), "'{field}' must be a string or an object")),
    Field("response_format", Object()),
    Field("metadata", Object()),
    Field("user", Text()),
    Field("session_id", Header(), doc="sent as X-Hermes-Session-Id"),
    Field("session_key", Header(), doc="sent as X-Hermes-Session-Key"),
    Field("stream", Anything(), doc="set from the operation (chat: false, chat_stream: true)"),
)
_MESSAGES_RULE = Rule("last_message_is_users", _last_message_is_users,
                      "the last user-or-assistant message of 'messages' is a user message with visible content",
                      ("messages",))


def _input(max_events: Field) -> Input:
    return Input(_FIELDS + (max_events,), exactly_one=(("prompt", "query", "messages"),), extra="provider",
                 rules=(_MESSAGES_RULE,), numbers_skip=CONTROL_FIELDS,
                 doc="provider fields beside these are sent in the body as given (numbers finite, at most 2**53)")


CHAT_INPUT = _input(Field("max_events", Never("'max_events' applies only to chat_stream")))
CHAT_STREAM_INPUT = _input(Field("max_events", Int(1, MAX_MAX_EVENTS, message=f"max_events must be an integer from 1 "
                                                                                f"to {MAX_MAX_EVENTS}"),
                                 doc=f"the most events read (default {DEFAULT_MAX_EVENTS})"))


_HEADERS = (("session_id", "X-Hermes-Session-Id"), ("session_key", "X-Hermes-Session-Key"))


def build(operation: str, data: Mapping[str, object]) -> RequestParts:
    """Map a chat or chat_stream input (checked by its :class:`~hermes_sdk.plugin.Input`) to headers
    and the provider body (no I/O): the prompt or query is one user message, session values travel
    as headers, ``stream`` is set from the operation.

    Raises:
        PayloadTooLargeError: the body is over Hermes' 10,000,000-byte limit.
    """
    streaming = operation == "chat_stream"
    messages = data.get("messages")
    if messages is None:
        messages = [{"role": "user", "content": data.get("prompt") if data.get("prompt") is not None
                     else data.get("query")}]
    # Checked as Header kinds already: mapped, not checked again.
    headers = {header: str(data[name]) for name, header in _HEADERS if data.get(name) is not None}
    given = data.get("max_events")
    max_events = (given if isinstance(given, int) else DEFAULT_MAX_EVENTS) if streaming else 0
    body = {k: v for k, v in data.items()
            if k not in CONTROL_FIELDS and k not in ("prompt", "query", "messages") and v is not None}
    body["messages"] = list(messages) if isinstance(messages, list) else messages
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
    decode=chat_completion, describe=_describe_chat, input=CHAT_INPUT)

CHAT_STREAM: OperationSpec[ChatStream] = OperationSpec(
    model_contract("chat_stream", "/v1/chat/completions", True), build,
    stream_class=ChatStream, accumulator=ChatAccumulator, describe=_describe_chat, input=CHAT_STREAM_INPUT)

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
