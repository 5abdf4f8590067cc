"""The Responses family's resource: create (or stream) a response, get or delete a stored one
(``client.responses()``, ``responses_stream()``, ``response_get()``, ``response_delete()``)."""

from __future__ import annotations

from typing import Mapping, Optional

from hermes_sdk._families._shared import DEFAULT_MAX_EVENTS
from hermes_sdk.plugin import (
    REQUIRED,
    ApprovalDecision,
    CallOptions,
    Deadline,
    ExecutionContext,
    FamilyExecutor,
    TimeoutLike,
)

from .operations import RESPONSE_DELETE, RESPONSE_GET, RESPONSES, RESPONSES_STREAM, responses_input, stored_input
from .types import DeletionReceipt, Response, ResponseStream


class Responses:
    """Responses (``/v1/responses``): the bodies of :meth:`~hermes_sdk.HermesClient.responses`,
    :meth:`~hermes_sdk.HermesClient.responses_stream`, :meth:`~hermes_sdk.HermesClient.response_get`
    and :meth:`~hermes_sdk.HermesClient.response_delete`, whose docstrings say what each keyword does."""

    def __init__(self, executor: FamilyExecutor) -> None:
        self._executor = executor

    def create(self, body: Optional[Mapping[str, object]] = None, *, session_key: Optional[str] = None,
               idempotency_key: Optional[str] = None, endpoint: Optional[str] = None,
               action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
               deadline: Deadline = None, timeout: TimeoutLike = None,
               extra_body: Optional[Mapping[str, object]] = None, **body_fields: object) -> Response:
        """Create a response: :meth:`client.responses() <hermes_sdk.HermesClient.responses>`."""
        data = responses_input(body, session_key, body_fields, extra_body)
        return self._executor.request(RESPONSES, data, CallOptions(endpoint, idempotency_key, action_id, context,
                                                                   deadline, timeout))

    def stream(self, body: Optional[Mapping[str, object]] = None, *, session_key: Optional[str] = None,
               idempotency_key: Optional[str] = None, max_events: int = DEFAULT_MAX_EVENTS,
               keep_events: bool = True, endpoint: Optional[str] = None,
               action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
               deadline: Deadline = None, timeout: TimeoutLike = None,
               idle_timeout: Optional[float] = None, extra_body: Optional[Mapping[str, object]] = None,
               **body_fields: object) -> ResponseStream:
        """A streamed response: :meth:`client.responses_stream() <hermes_sdk.HermesClient.responses_stream>`."""
        data = responses_input(body, session_key, body_fields, extra_body)
        data["max_events"] = max_events
        return self._executor.request(RESPONSES_STREAM, data, CallOptions(
            endpoint, idempotency_key, action_id, context, deadline, timeout, idle_timeout, keep_events=keep_events))

    def get(self, response_id: str, *, session_key: Optional[str] = None,
            idempotency_key: Optional[str] = None, endpoint: Optional[str] = None,
            action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
            deadline: Deadline = None, timeout: TimeoutLike = None) -> Response:
        """A stored response by id: :meth:`client.response_get() <hermes_sdk.HermesClient.response_get>`."""
        data = stored_input(response_id, session_key)
        return self._executor.request(RESPONSE_GET, data, CallOptions(endpoint, idempotency_key, action_id, context,
                                                                      deadline, timeout))

    def delete(self, response_id: str, *, idempotency_key: str = REQUIRED,
               approval: Optional[ApprovalDecision] = None, reason: Optional[str] = None,
               session_key: Optional[str] = None, endpoint: Optional[str] = None,
               action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
               deadline: Deadline = None, timeout: TimeoutLike = None) -> DeletionReceipt:
        """Delete a stored response (approval-gated, key required):
        :meth:`client.response_delete() <hermes_sdk.HermesClient.response_delete>`."""
        data = stored_input(response_id, session_key)
        key = None if idempotency_key is REQUIRED else idempotency_key
        return self._executor.request(RESPONSE_DELETE, data, CallOptions(
            endpoint, key, action_id, context, deadline, timeout, approval=approval, reason=reason))


__all__ = ["Responses"]
