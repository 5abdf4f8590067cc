"""Result and record types. Provider objects keep every field in ``raw``; unknown fields are never lost."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import attrs

from ..errors import HermesError


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
        """The first choice's content, text parts joined; None without a choice or textual content."""
        if not self.choices:
            return None
        content = self.choices[0].message.content
        if isinstance(content, list):
            return "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return content if isinstance(content, str) else None

    @property
    def finish_reason(self) -> Optional[str]:
        """The first choice's finish reason; anything but ``stop`` means the text may be partial."""
        return self.choices[0].finish_reason if self.choices else None

    @property
    def completed(self) -> bool:
        """Whether the turn finished cleanly (a ``stop`` finish with no Hermes partial/failed state)."""
        return self.finish_reason == "stop" and not self.hermes


@attrs.frozen
class HermesResponse:
    """A Responses object (``POST /v1/responses`` or a stored one from ``response_get``).

    Attributes:
        id: the response id (``resp_...``); continue with ``previous_response_id=`` or fetch it.
        status: Hermes' status (``completed``, ``failed``, ``incomplete``, ...).
        model: the model Hermes reports.
        created_at: creation time, epoch seconds.
        output: the output items (messages, function calls and their outputs) as JSON.
        usage: token usage as Hermes sent it, or None.
        session_id: the ``X-Hermes-Session-Id`` response header, or None.
        raw: the provider JSON as received, unknown fields included.
        action_id: the AIP action of this result (the original one when replayed).
        replayed: True when returned from the idempotency record instead of executing.
    """

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
    #: Hermes' response headers (case-insensitive); empty when replayed from a record.
    headers: Mapping[str, str] = attrs.field(factory=dict, kw_only=True, eq=False, repr=False)

    @property
    def output_text(self) -> str:
        """The text of every assistant message in ``output``, joined (empty when there is none)."""
        return output_text(self.output)

    @property
    def error(self) -> Optional[dict[str, Any]]:
        """The ``error`` object of a failed or incomplete response (from ``raw``), or None."""
        value = self.raw.get("error")
        return value if isinstance(value, dict) else None


Response = HermesResponse  # the former name (it collides with requests'); hermes_sdk.Response warns


def output_text(output: object) -> str:
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
    """Hermes' confirmation that a stored response was deleted (``response_delete``).

    Attributes:
        id: the deleted response's id.
        object: the kind of object deleted (``response``).
        deleted: always True; any other receipt raises :class:`~hermes_sdk.InvalidResponseError`.
        action_id: the AIP action of the deletion (the original one when replayed).
        replayed: True when returned from the idempotency record: nothing was deleted this time.
    """

    id: str
    object: str
    deleted: bool
    # The AIP action this result belongs to (the original one when replayed), and whether it came
    # from the idempotency record instead of executing.
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)
    #: Hermes' response headers (case-insensitive); empty when replayed from a record.
    headers: Mapping[str, str] = attrs.field(factory=dict, kw_only=True, eq=False, repr=False)


@attrs.frozen
class StreamEvent:
    """One SSE event: ``data`` is parsed JSON, the string ``"[DONE]"``, a raw string, or None.

    Attributes:
        event: the SSE ``event:`` name, or None when the frame had none.
        id: the SSE ``id:``, or None.
        data: the parsed data: JSON, ``"[DONE]"``, the raw string if not JSON, None if blank.
        raw_data: the data exactly as received.
        terminal: whether this event ends the stream (``[DONE]``, ``response.completed``, ...).
    """

    event: Optional[str]
    id: Optional[str]
    data: Any
    raw_data: str
    terminal: bool = False


@attrs.define
class StreamResult:
    """The aggregate of a stream, as the connector builds it, with its gaps fixed.

    Attributes:
        endpoint_id: the endpoint the stream came from.
        operation: ``chat_stream`` or ``responses_stream``.
        http_status: the HTTP status of the stream's response.
        events: the events received; empty with ``keep_events=False`` and in a durable record.
        text: the visible text, joined (reasoning never included).
        terminal: whether a terminal event arrived.
        truncated: whether ``max_events`` stopped collection before a terminal event.
        status: ``completed``, ``failed`` or ``cancelled``.
        error: why the stream did not complete (:class:`~hermes_sdk.StreamError`,
            :class:`~hermes_sdk.StreamCancelledError`, or the error that broke it), else None.
        session_id: the ``X-Hermes-Session-Id`` response header, or None.
        event_count: the number of events received, kept or not.
        finish_reason: the chat finish reason from the final chunk, or None.
        usage: token usage from the final chunk or envelope, or None.
        final: the terminal Responses envelope, or the chat chunk that carried the finish reason.
    """

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
    """The AIP action result: what was recorded durably for one governed invocation.

    Returned by :meth:`~hermes_sdk.HermesClient.invoke` and
    :meth:`~hermes_sdk.HermesClient.action_result`; failures are results here, not exceptions.

    Attributes:
        action_id: the action's id (the original one when replayed).
        capability_id: ``cap:hermes_agent:<endpoint_id>:<operation>``.
        status: ``completed``, ``failed``, ``cancelled`` or ``pending_approval`` (``pending`` only
            while a stream is open).
        output: the provider JSON of a completed call; a stream's aggregate as JSON.
        error: the :class:`~hermes_sdk.HermesError` of a call that did not complete, else None.
        replayed: True when returned from the idempotency record instead of executing.
        idempotency_key: the key the call was made with, or None.
        session_id: the ``X-Hermes-Session-Id`` response header, or None.
        http_status: Hermes' HTTP status, or None when no response arrived.
        approval: the approval decision and its evidence, for an approval-gated call.
        recorded_at: when the outcome was recorded, epoch seconds.
    """

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
        """Whether the action completed (``status == "completed"``)."""
        return self.status == "completed"
