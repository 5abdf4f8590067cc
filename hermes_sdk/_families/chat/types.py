"""The chat family's results: a chat completion (``POST /v1/chat/completions``) and its live stream."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import attrs

from hermes_sdk.errors import InvalidResponseError
from hermes_sdk.plugin import NO_CONTEXT, DecodeContext, HermesStream, json_object, object_copy


@attrs.frozen
class ChatMessage:
    """The message of one chat completion choice.

    Attributes:
        role: ``assistant`` for a model reply.
        content: a string, a list of content parts, or None (e.g. when only tools were called).
        tool_calls: the tool calls the model asked for, as Hermes sent them, or None.
    """

    role: str
    content: Any = None
    tool_calls: Optional[list[dict[str, Any]]] = None


@attrs.frozen
class Choice:
    """One choice of a chat completion (Hermes sends one).

    Attributes:
        index: its position in ``choices``.
        message: the reply.
        finish_reason: why generation stopped: ``stop`` when it finished cleanly; ``length``,
            ``tool_calls``, ``error`` or None otherwise.
    """

    index: int
    message: ChatMessage
    finish_reason: Optional[str] = None


@attrs.frozen
class ChatCompletion:
    """A non-streaming chat completion. Inspect ``finish_reason`` and ``hermes``, not only ``text``.

    Attributes:
        id: the completion id (``chatcmpl-...``).
        model: the model Hermes reports.
        created: creation time, epoch seconds.
        choices: the choices (Hermes sends one).
        usage: token usage as Hermes sent it, or None.
        hermes: Hermes' partial/failed state object when the turn did not finish cleanly, else None.
        session_id: the ``X-Hermes-Session-Id`` response header; pass it as ``session_id=`` to continue.
        raw: the provider JSON as received, unknown fields included.
        action_id: the AIP action of this result (the original one when replayed).
        replayed: True when returned from the idempotency record instead of executing.
    """

    id: str
    model: Optional[str]
    created: Optional[int]
    choices: list[Choice]
    usage: Optional[dict[str, Any]]
    hermes: Optional[dict[str, Any]] = None
    session_id: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    # The AIP action this result belongs to (the original one when replayed), and whether it came
    # from the idempotency record instead of executing.
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)
    #: Hermes' response headers (case-insensitive); empty when replayed from a record.
    headers: Mapping[str, str] = attrs.field(factory=dict, kw_only=True, eq=False, repr=False)

    @property
    def text(self) -> Optional[str]:
        """The first choice's content, text parts joined; None without a choice or textual content.

        Raises InvalidResponseError when a content part's ``text`` is neither a string nor null
        (the reply as sent stays in ``choices[0].message.content``)."""
        if not self.choices:
            return None
        content = self.choices[0].message.content
        if isinstance(content, list):
            return "".join(_part_text(i, p) for i, p in enumerate(content) if isinstance(p, dict))
        return content if isinstance(content, str) else None

    @property
    def finish_reason(self) -> Optional[str]:
        """The first choice's finish reason; anything but ``stop`` means the text may be partial."""
        return self.choices[0].finish_reason if self.choices else None

    @property
    def completed(self) -> bool:
        """Whether the turn finished cleanly (a ``stop`` finish with no Hermes partial/failed state)."""
        return self.finish_reason == "stop" and not self.hermes


def _part_text(index: int, part: Mapping[str, Any]) -> str:
    """A content part's text ("" for a part without one); a non-string text is a malformed reply."""
    text = part.get("text")
    if text is None or isinstance(text, str):
        return text or ""
    raise InvalidResponseError(f"malformed chat completion: content part {index}'s text is a "
                               f"{type(text).__name__}, not a string",
                               details={"field": f"choices[0].message.content[{index}].text"})


class ChatStream(HermesStream):
    """The live stream of a :meth:`~hermes_sdk.HermesClient.chat_stream` call (chat completion chunks)."""


def _optional(make: Any, value: object) -> Any:
    return None if value is None else make(value)


def _message(data: Any) -> ChatMessage:
    tool_calls = data["tool_calls"] if "tool_calls" in data else None
    return ChatMessage(
        str(data["role"]), data["content"] if "content" in data else None,
        None if tool_calls is None else [object_copy(call) for call in tool_calls])


def _choice(data: Any) -> Choice:
    return Choice(int(data["index"]), _message(data["message"]),
                  _optional(str, data["finish_reason"]) if "finish_reason" in data else None)


def chat_completion(data: object, ctx: DecodeContext = NO_CONTEXT) -> ChatCompletion:
    """A ChatCompletion from Hermes' JSON (InvalidResponseError if it is not one).

    Read by hand, not by cattrs: a chat is most often a process's first call, and importing cattrs
    and generating its structurers cost about 20 ms of it. Each field is read as the cattrs
    converter reads it (``str()``/``int()`` called on a leaf, an object copied, a list iterated),
    which ``benchmarks/test_fastpaths.py`` checks against cattrs over random replies.
    """
    obj = json_object(data, "a chat completion object")
    choices = obj.get("choices")
    if not isinstance(choices, list) or not isinstance(obj.get("id"), str):
        raise InvalidResponseError("malformed chat completion: no 'id' or 'choices'")
    where = "choices"
    try:
        read = [_choice(choice) for choice in choices]
        where = "fields"
        return ChatCompletion(
            str(obj["id"]), _optional(str, obj.get("model")), _optional(int, obj.get("created")), read,
            _optional(object_copy, obj.get("usage")), _optional(object_copy, obj.get("hermes")),
            _optional(str, ctx.session_id), dict(obj), action_id=_optional(str, ctx.action_id),
            replayed=bool(ctx.replayed), headers=ctx.headers)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError, OverflowError) as exc:
        raise InvalidResponseError(f"malformed chat completion: {where} ({type(exc).__name__})") from None


__all__ = ["ChatCompletion", "ChatMessage", "ChatStream", "Choice", "chat_completion"]
