"""Result and record types. Provider objects keep every field in ``raw``; unknown fields are never lost."""

from __future__ import annotations

from typing import Any, Optional

import attrs

from .errors import HermesError


@attrs.frozen
class ChatMessage:
    role: str
    content: Any = None
    tool_calls: Optional[list[dict[str, Any]]] = None


@attrs.frozen
class Choice:
    index: int
    message: ChatMessage
    finish_reason: Optional[str] = None


@attrs.frozen
class ChatCompletion:
    """A non-streaming chat completion. Inspect ``finish_reason`` and ``hermes``, not only ``text``."""

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

    @property
    def text(self) -> Optional[str]:
        if not self.choices:
            return None
        content = self.choices[0].message.content
        if isinstance(content, list):
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return content if isinstance(content, str) else None

    @property
    def finish_reason(self) -> Optional[str]:
        return self.choices[0].finish_reason if self.choices else None

    @property
    def completed(self) -> bool:
        """True only for a clean ``stop`` finish with no Hermes partial/failed state."""
        return self.finish_reason == "stop" and not self.hermes


@attrs.frozen
class Response:
    """A Responses object (``POST /v1/responses`` or a stored one from ``response_get``)."""

    id: str
    status: Optional[str]
    model: Optional[str]
    created_at: Optional[int]
    output: list[dict[str, Any]]
    usage: Optional[dict[str, Any]]
    session_id: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    # The AIP action this result belongs to (the original one when replayed), and whether it came
    # from the idempotency record instead of executing.
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)

    @property
    def output_text(self) -> str:
        return output_text(self.output)

    @property
    def error(self) -> Optional[dict[str, Any]]:
        value = self.raw.get("error")
        return value if isinstance(value, dict) else None


def output_text(output: Any) -> str:
    """Join the ``output_text`` parts of every assistant message item."""
    parts: list[str] = []
    for item in output if isinstance(output, list) else ():
        if isinstance(item, dict) and item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "output_text":
                    parts.append(str(part.get("text", "")))
    return "".join(parts)


@attrs.frozen
class DeletionReceipt:
    id: str
    object: str
    deleted: bool
    # The AIP action this result belongs to (the original one when replayed), and whether it came
    # from the idempotency record instead of executing.
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)


@attrs.frozen
class StreamEvent:
    """One SSE event: ``data`` is parsed JSON, the string ``"[DONE]"``, a raw string, or None."""

    event: Optional[str]
    id: Optional[str]
    data: Any
    raw_data: str
    terminal: bool = False


@attrs.define
class StreamResult:
    """The aggregate of a stream, as the connector builds it, with its gaps fixed."""

    endpoint_id: str
    operation: str
    http_status: int
    events: list[StreamEvent]
    text: str
    terminal: bool
    truncated: bool
    status: str  # completed | failed | cancelled
    error: Optional[HermesError] = None
    session_id: Optional[str] = None
    event_count: int = 0
    finish_reason: Optional[str] = None
    usage: Optional[dict[str, Any]] = None
    final: Optional[dict[str, Any]] = None  # the terminal Responses envelope or the chat finish chunk
    #: Typed tool events in arrival order: ``ToolProgress`` (chat) or ``FunctionCall`` /
    #: ``FunctionCallOutput`` (Responses), from ``hermes_sdk.events``.
    tools: list[Any] = attrs.field(factory=list)


@attrs.define
class ActionResult:
    """The AIP action result: what was recorded durably for one governed invocation."""

    action_id: str
    capability_id: str
    status: str  # completed | failed | cancelled | pending_approval
    output: Any = None
    error: Optional[HermesError] = None
    replayed: bool = False
    idempotency_key: Optional[str] = None
    session_id: Optional[str] = None
    http_status: Optional[int] = None
    approval: Optional[dict[str, Any]] = None
    recorded_at: Optional[float] = None

    @property
    def ok(self) -> bool:
        return self.status == "completed"
