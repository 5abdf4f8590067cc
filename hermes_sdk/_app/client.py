"""HermesClient: construction, the six seed capabilities, ``invoke()`` and the families, over one Executor."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional, Sequence, TypeVar, Union, cast

import attrs
import requests

from .._core._constants import DEFAULT_KEY_RETENTION_SECONDS, DEFAULT_MAX_EVENTS, DEFAULT_MODEL, RETRY_MAX_ATTEMPTS
from .._core._plugin_manager import Plugin
from .._core._sentinels import REQUIRED, UNCHANGED
from .._core.approval import ApprovalDecision, ApprovalProvider, ApprovalRequest
from .._core.capabilities import descriptor
from .._core.config import ClientSettings, build_endpoints, build_runtime, max_attempts_value
from .._core.deadline import TimeoutLike, as_timeout
from .._core.endpoints import Deadline, Endpoint, ExecutionContext
from .._core.executor import Executor
from .._core.family_loading import load
from .._core.idempotency import IdempotencyStore
from .._core.models import ActionResult
from .._core.options import CallOptions
from .._core.resources.records import Records
from .._core.retry import RetryPolicy
from .._families.discovery.resource import DiscoveryMethods
from .._families.operator.methods import OperatorMethods
from ..errors import InvalidInputError
from .aliases import DeprecatedAliases
from .attributes import FamilyResources

if TYPE_CHECKING:  # each family is imported by the first call of it (a first chat loads no run)
    from .._families.chat import ChatCompletion, ChatStream
    from .._families.responses import DeletionReceipt, ResponseStream
    from .._families.responses.types import Response
    from .._families.runs import Run, RunInput

log = logging.getLogger("hermes_sdk")
R = TypeVar("R")
__all__ = ["HermesClient", "REQUIRED", "UNCHANGED"]


class HermesClient(ClientSettings, DiscoveryMethods, FamilyResources, OperatorMethods, DeprecatedAliases):
    """A synchronous client for the Hermes Agent capabilities. Safe to share between threads.

    Args:
        base_url: Hermes' bare origin (``http://127.0.0.1:8642``); default ``HERMES_BASE_URL``.
        api_key: the Bearer key; default ``HERMES_API_KEY``.
        endpoint_id: the endpoint's id in capability ids; default ``HERMES_ENDPOINT_ID`` or ``default``.
        tenant_id: the tenant that owns this endpoint; calls must carry it in their context.
        endpoints: several :class:`Endpoint` objects instead of the three arguments above.
        context: the default :class:`ExecutionContext` of every call.
        idempotency_store: an :class:`IdempotencyStore`, or a URL (``memory:``, ``sqlite:///path.db``,
            or a scheme a plugin claims such as ``redis://``); default ``HERMES_SDK_IDEMPOTENCY_STORE``,
            else in memory, per client.
        approval_provider: decides approval-gated calls and a run's commands (an :data:`ApprovalProvider`).
        plugins: extra plugins for this client only (:class:`~hermes_sdk.plugin.Plugin`: ``@hookimpl`` methods).
        load_entrypoints: load installed plugins from the ``hermes_sdk`` entry-point group.
        session: a ``requests.Session`` to reuse (its headers, proxies, verify and cert apply).
        strict_idempotency: refuse a key reused with another input (default); False replays the first result.
        key_retention: seconds a keyed model call's record is kept (delete receipts: 24 hours).
        max_attempts: attempts of a retry-safe call (only read-only operations); at least 1.
        redaction_patterns: extra regular expressions redacted from logs and traces.
        timeout: the default relative bound of every call in seconds, or a :class:`CallTimeout`; without
            one, each capability's published ``sla.timeout_ms`` bounds it (60 s, streams 300 s).
        allow_permanent_approvals: allow the run approval choice ``always`` (Hermes then allows the
            command pattern process-wide and rewrites its own config.yaml); refused by default.
    """

    records: Records  #: durable records and the recovery tools

    def __init__(
        self,
        base_url: Optional[str] = None,
        api_key: Optional[str] = None,
        *,
        endpoint_id: Optional[str] = None,
        tenant_id: Optional[str] = None,
        endpoints: Iterable[Endpoint] = (),
        context: Optional[ExecutionContext] = None,
        idempotency_store: Union[IdempotencyStore, str, None] = None,
        approval_provider: Optional[ApprovalProvider] = None,
        plugins: Sequence[Plugin] = (),
        load_entrypoints: bool = True,
        session: Optional[requests.Session] = None,
        strict_idempotency: bool = True,
        key_retention: float = DEFAULT_KEY_RETENTION_SECONDS,
        max_attempts: int = RETRY_MAX_ATTEMPTS,
        redaction_patterns: Iterable[str] = (),
        timeout: TimeoutLike = None,
        allow_permanent_approvals: bool = False,
    ) -> None:
        found = build_endpoints(base_url, api_key, endpoint_id, tenant_id, endpoints)
        if context is not None and not isinstance(context, ExecutionContext):
            raise InvalidInputError("context must be an ExecutionContext", details={"field": "context"})
        runtime = build_runtime(found, plugins=plugins, load_entrypoints=load_entrypoints, session=session,
                                idempotency_store=idempotency_store, approval_provider=approval_provider,
                                strict_idempotency=strict_idempotency, key_retention=key_retention,
                                max_attempts=max_attempts, redaction_patterns=redaction_patterns, timeout=timeout,
                                allow_permanent_approvals=allow_permanent_approvals)
        self._setup(Executor(found, context, runtime), owns_pool=True, lock=threading.Lock())

    def _setup(self, executor: Executor, owns_pool: bool, lock: threading.Lock) -> None:
        self._executor = executor
        self._closed = not owns_pool  # a with_options copy does not close the pool it shares
        self._lock = lock
        self.records = Records(executor)
        self._extra: dict[str, object] = {}

    def resource(self, resource: Callable[..., R]) -> R:
        """The resource of a family this client knows, built once: ``client.resource(Memory).recall(...)``.

        ``resource`` is the resource class a :class:`~hermes_sdk.plugin.Family` names; the built-in
        ones are also attributes (``client.runs``, ``client.sessions``, ``client.jobs``).
        """
        family = self._executor.runtime.registry.family_of(resource)  # KeyError: no family of this client
        with self._lock:
            if family.name not in self._extra:
                self._extra[family.name] = resource(self._executor.given_to(family.name))
            return cast(R, self._extra[family.name])  # made by resource() above

    @property
    def context(self) -> Optional[ExecutionContext]:
        """The default :class:`ExecutionContext` of every call."""
        return self._executor.context

    def with_options(self, *, timeout: TimeoutLike = UNCHANGED, max_attempts: int = UNCHANGED) -> "HermesClient":
        """A copy of this client with other call settings, sharing its connection pool, store and plugins.

        ``client.with_options(timeout=5).chat(...)``; closing the copy does not close the pool.
        """
        runtime = self._executor.runtime
        if timeout is not UNCHANGED:
            runtime = attrs.evolve(runtime, timeout=as_timeout(timeout))
        if max_attempts is not UNCHANGED:
            runtime = attrs.evolve(runtime, retry=RetryPolicy(max_attempts_value(max_attempts)))
        copy = object.__new__(HermesClient)
        copy._setup(self._executor.evolve(runtime), owns_pool=False, lock=self._lock)
        return copy

    def __enter__(self) -> "HermesClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the pool (not a caller's session), the store built from a URL (not one passed in), and
        open streams. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        runtime = self._executor.runtime
        for stream in list(runtime.open_streams):  # cancelled (and recorded so), not left to the GC
            with contextlib.suppress(Exception):
                if not stream.closed:
                    stream.abort()  # wakes a thread blocked reading it, so close() never waits on a read
                    stream.close()
        runtime.transport.close()
        runtime.redactor.retire()  # its plugin families' routes, patterns and filters go with it
        runtime.close_owned_store()

    def __repr__(self) -> str:
        return f"HermesClient(endpoints={list(self._executor.endpoints)!r})"

    def capabilities(self) -> list[dict[str, Any]]:
        """Every endpoint's capability descriptors, with their full published contract."""
        specs = self._executor.runtime.registry.specs.values()
        return [descriptor(ep_id, spec.contract, spec.input_schema) for ep_id in self._executor.endpoints
                for spec in specs]

    def action_result(self, action_id: str) -> Optional[ActionResult]:
        """The durable result recorded for ``action_id`` (the recovery rule's first step), or None."""
        return self.records.action_result(action_id)

    def approval_request(self, operation_or_capability: str, input: Mapping[str, object], *,
                         reason: Optional[str] = None, action_id: Optional[str] = None,
                         endpoint: Optional[str] = None) -> ApprovalRequest:
        """Build the ApprovalRequest for an input, to obtain an ``approval=`` decision up front.

        ``operation_or_capability`` is an operation name (``response_delete``) or a capability id;
        ``input`` is the capability input (``{"response_id": ...}``).
        """
        return self._executor.approval_request(operation_or_capability, input, reason=reason,
                                               action_id=action_id, endpoint=endpoint)

    # ---------------------------------------------------------------- the six capabilities

    def chat(self, *, prompt: Optional[str] = None, query: Optional[str] = None,
             messages: Optional[list[Any]] = None, model: str = DEFAULT_MODEL, session_id: Optional[str] = None,
             session_key: Optional[str] = None, idempotency_key: Optional[str] = None,
             endpoint: Optional[str] = None, action_id: Optional[str] = None,
             context: Optional[ExecutionContext] = None, deadline: Deadline = None,
             timeout: TimeoutLike = None, extra_body: Optional[Mapping[str, object]] = None,
             **provider_fields: object) -> ChatCompletion:
        """One chat turn (``POST /v1/chat/completions``); give exactly one of prompt, query or messages.

        ``session_id`` continues a Hermes session (``X-Hermes-Session-Id``); ``session_key`` scopes
        its memory. Other keywords (``temperature``, ``max_tokens``, ``tools``, ...) go into the
        provider body. Inspect ``finish_reason`` and ``hermes`` of the result, not only ``text``.
        Not retried: a failure after sending says ``uncertain_outcome=True``.
        """
        return self._chat().create(
            prompt=prompt, query=query, messages=messages, model=model, session_id=session_id, session_key=session_key,
            idempotency_key=idempotency_key, endpoint=endpoint, action_id=action_id, context=context,
            deadline=deadline, timeout=timeout, extra_body=extra_body, **provider_fields)

    def chat_stream(self, *, prompt: Optional[str] = None, query: Optional[str] = None,
                    messages: Optional[list[Any]] = None, model: str = DEFAULT_MODEL,
                    session_id: Optional[str] = None, session_key: Optional[str] = None,
                    idempotency_key: Optional[str] = None, max_events: int = DEFAULT_MAX_EVENTS,
                    keep_events: bool = True, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                    context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                    timeout: TimeoutLike = None, idle_timeout: Optional[float] = None,
                    extra_body: Optional[Mapping[str, object]] = None,
                    approval_provider: Optional[ApprovalProvider] = None, **provider_fields: object) -> ChatStream:
        """A streamed chat turn: returns once the headers arrived; iterate the ChatStream for events.

        ``max_events`` stops collection before a terminal event (``stream_truncated``);
        ``keep_events=False`` keeps only the aggregate. Closing the stream early cancels the turn.
        An ``approval.request`` on the stream (Hermes 0.21+) goes to ``approval_provider`` (default: the
        client's) as it is read; the answer goes to ``/v1/runs/{completion id}/approval`` with its ``request_id``.
        """
        answer_approvals = cast("Callable[..., ChatStream]",  # under the family import lock
                                load("hermes_sdk._families.runs.stream_approvals:answer_approvals"))
        stream = self._chat().stream(
            prompt=prompt, query=query, messages=messages, model=model, session_id=session_id, session_key=session_key,
            idempotency_key=idempotency_key, max_events=max_events, keep_events=keep_events, endpoint=endpoint,
            action_id=action_id, context=context, deadline=deadline, timeout=timeout, idle_timeout=idle_timeout,
            extra_body=extra_body, **provider_fields)
        return answer_approvals(stream, self.runs, approval_provider, endpoint, context, deadline)

    def responses(self, body: Optional[Mapping[str, object]] = None, *, session_key: Optional[str] = None,
                  idempotency_key: Optional[str] = None, endpoint: Optional[str] = None,
                  action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                  deadline: Deadline = None, timeout: TimeoutLike = None,
                  extra_body: Optional[Mapping[str, object]] = None, **body_fields: object) -> Response:
        """Create a response (``POST /v1/responses``) from ``body`` and/or keyword body fields.

        ``input`` is required; ``previous_response_id`` or ``conversation`` continue earlier turns
        (not both); ``store=False`` keeps it out of storage. A field given both in ``body`` and as a
        keyword with different values is an InvalidInputError.
        """
        return self._responses().create(
            body, session_key=session_key, idempotency_key=idempotency_key, endpoint=endpoint, action_id=action_id,
            context=context, deadline=deadline, timeout=timeout, extra_body=extra_body, **body_fields)

    def responses_stream(self, body: Optional[Mapping[str, object]] = None, *, session_key: Optional[str] = None,
                         idempotency_key: Optional[str] = None, max_events: int = DEFAULT_MAX_EVENTS,
                         keep_events: bool = True, endpoint: Optional[str] = None,
                         action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                         deadline: Deadline = None, timeout: TimeoutLike = None,
                         idle_timeout: Optional[float] = None, extra_body: Optional[Mapping[str, object]] = None,
                         **body_fields: object) -> ResponseStream:
        """A streamed response: iterate the ResponseStream; ``result().final`` is the terminal envelope."""
        return self._responses().stream(
            body, session_key=session_key, idempotency_key=idempotency_key, max_events=max_events,
            keep_events=keep_events, endpoint=endpoint, action_id=action_id, context=context, deadline=deadline,
            timeout=timeout, idle_timeout=idle_timeout, extra_body=extra_body, **body_fields)

    def response_get(self, response_id: str, *, session_key: Optional[str] = None,
                     idempotency_key: Optional[str] = None, endpoint: Optional[str] = None,
                     action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                     deadline: Deadline = None, timeout: TimeoutLike = None) -> Response:
        """A stored response by id (``GET /v1/responses/{response_id}``).

        The one capability retried automatically (bounded, jittered, honouring ``Retry-After``).
        :class:`~hermes_sdk.NotFoundError` for an unknown or deleted id.
        """
        return self._responses().get(
            response_id, session_key=session_key, idempotency_key=idempotency_key, endpoint=endpoint,
            action_id=action_id, context=context, deadline=deadline, timeout=timeout)

    def response_delete(self, response_id: str, *, idempotency_key: str = REQUIRED,
                        approval: Optional[ApprovalDecision] = None, reason: Optional[str] = None,
                        session_key: Optional[str] = None, endpoint: Optional[str] = None,
                        action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                        deadline: Deadline = None, timeout: TimeoutLike = None) -> DeletionReceipt:
        """Delete a stored response: needs ``idempotency_key`` and an approved decision bound to this input.

        The decision comes from ``approval=`` or the client's approval provider; without one,
        nothing is sent and ApprovalRequiredError is raised. A replay of the same key returns the
        recorded receipt without asking again.
        """
        return self._responses().delete(
            response_id, idempotency_key=idempotency_key, approval=approval, reason=reason, session_key=session_key,
            endpoint=endpoint, action_id=action_id, context=context, deadline=deadline, timeout=timeout)

    def run(self, input: RunInput = REQUIRED, *, idempotency_key: str = REQUIRED, instructions: Optional[str] = None,
            session_id: Optional[str] = None, session_key: Optional[str] = None, model: Optional[str] = None,
            conversation_history: Optional[Sequence[Mapping[str, object]]] = None,
            previous_response_id: Optional[str] = None, approval_provider: Optional[ApprovalProvider] = None,
            endpoint: Optional[str] = None, action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
            deadline: Deadline = None, timeout: TimeoutLike = None) -> Run:
        """Start a durable run: the shortcut of :meth:`client.runs.start <hermes_sdk.types.Runs.start>`."""
        return self.runs.start(input, idempotency_key=idempotency_key, instructions=instructions,
                               session_id=session_id, session_key=session_key,
                               conversation_history=conversation_history, previous_response_id=previous_response_id,
                               model=model, approval_provider=approval_provider, endpoint=endpoint,
                               action_id=action_id, context=context, deadline=deadline, timeout=timeout)

    # ---------------------------------------------------------------- the generic AIP path

    def invoke(self, capability_id: str, input: Mapping[str, object], *, idempotency_key: Optional[str] = None,
               action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
               approval: Optional[ApprovalDecision] = None, deadline: Deadline = None,
               reason: Optional[str] = None, timeout: TimeoutLike = None) -> ActionResult:
        """The generic AIP path: failures come back as ``status="failed"`` results, not exceptions.

        ``capability_id`` is ``cap:hermes_agent:<endpoint_id>:<operation>``; ``input`` the
        capability's published input. Stream capabilities are read to the end; their output is
        the stream aggregate. A missing approval gives ``status="pending_approval"``.
        """
        return self._executor.invoke(capability_id, input, CallOptions(
            idempotency_key=idempotency_key, action_id=action_id, context=context, deadline=deadline,
            timeout=timeout, approval=approval, reason=reason))
