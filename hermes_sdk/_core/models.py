"""The kernel's result and record types: one SSE event, a stream's aggregate, an AIP action result.

Each family's own results live in its package (the types module of its family package)."""

from __future__ import annotations

from typing import Any, Optional

import attrs

from ..errors import HermesError


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
