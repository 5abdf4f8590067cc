"""The chat family's resource: one chat turn, or a streamed one (``client.chat()``, ``client.chat_stream()``)."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from hermes_sdk._families._shared import DEFAULT_MAX_EVENTS, DEFAULT_MODEL
from hermes_sdk.plugin import CallOptions, Deadline, ExecutionContext, FamilyExecutor, TimeoutLike

from .operations import CHAT, CHAT_STREAM, chat_input
from .types import ChatCompletion, ChatStream


class Chat:
    """Chat completions (``POST /v1/chat/completions``): the bodies of :meth:`~hermes_sdk.HermesClient.chat`
    and :meth:`~hermes_sdk.HermesClient.chat_stream`, whose docstrings say what each keyword does."""

    def __init__(self, executor: FamilyExecutor) -> None:
        self._executor = executor

    def create(self, *, prompt: Optional[str] = None, query: Optional[str] = None,
               messages: Optional[list[Any]] = None, model: str = DEFAULT_MODEL, session_id: Optional[str] = None,
               session_key: Optional[str] = None, idempotency_key: Optional[str] = None,
               endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None, extra_body: Optional[Mapping[str, object]] = None,
               **provider_fields: object) -> ChatCompletion:
        """One chat turn: :meth:`client.chat() <hermes_sdk.HermesClient.chat>`."""
        data = chat_input(prompt, query, messages, model, session_id, session_key, provider_fields, extra_body)
        return self._executor.request(CHAT, data, CallOptions(endpoint, idempotency_key, action_id, context, deadline,
                                                             timeout))

    def stream(self, *, prompt: Optional[str] = None, query: Optional[str] = None,
               messages: Optional[list[Any]] = None, model: str = DEFAULT_MODEL,
               session_id: Optional[str] = None, session_key: Optional[str] = None,
               idempotency_key: Optional[str] = None, max_events: int = DEFAULT_MAX_EVENTS,
               keep_events: bool = True, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None, idle_timeout: Optional[float] = None,
               extra_body: Optional[Mapping[str, object]] = None, **provider_fields: object) -> ChatStream:
        """A streamed chat turn: :meth:`client.chat_stream() <hermes_sdk.HermesClient.chat_stream>`.

        Its approval requests (Hermes 0.21+) belong to the runs family (``POST /v1/runs/{completion
        id}/approval``): the client hands the stream to it, so this family never names runs.
        """
        data = chat_input(prompt, query, messages, model, session_id, session_key, provider_fields, extra_body)
        data["max_events"] = max_events
        stream: ChatStream = self._executor.request(CHAT_STREAM, data, CallOptions(
            endpoint, idempotency_key, action_id, context, deadline, timeout, idle_timeout, keep_events=keep_events))
        return stream


__all__ = ["Chat"]
