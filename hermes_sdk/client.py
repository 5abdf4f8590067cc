"""HermesClient: construction and the public methods. Every call runs the stages in ``stages/``."""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Mapping
from typing import Any, Iterable, Optional, Sequence, TypeVar, Union
from urllib.parse import urlsplit

import attrs
import requests

from . import convert, stages
from ._constants import (
    DEFAULT_ENDPOINT_ID,
    DEFAULT_KEY_RETENTION_SECONDS,
    DEFAULT_MAX_EVENTS,
    DEFAULT_MODEL,
    RETRY_MAX_ATTEMPTS,
)
from ._logging import configure_from_env
from .approval import ApprovalDecision, ApprovalRequest
from .call import Call
from .capabilities import CONTRACTS, capability_id, descriptor, parse_capability_id
from .deadline import Timeout, TimeoutLike, as_timeout, effective
from .discovery import Health, ModelInfo, ServerCapabilities, Toolset
from .endpoints import Deadline, Endpoint, ExecutionContext, deadline_epoch, normalize_endpoint_id
from .errors import ApprovalRequiredError, HermesError, InvalidInputError
from .idempotency import COMPLETED, IdempotencyRecord, IdempotencyStore
from .models import ActionResult, ChatCompletion, DeletionReceipt, Response
from .operations import SPECS, OperationSpec, keywords
from .operations.catalog import CHAT, CHAT_STREAM, RESPONSE_DELETE, RESPONSE_GET, RESPONSES, RESPONSES_STREAM
from .operations.common import idempotency_value
from .operations.keywords import CHAT_FIELDS, RESPONSES_FIELDS  # noqa: F401  (published here too)
from .operations.runs import (
    HEALTH,
    MODELS,
    RUN_APPROVAL,
    RUN_EVENTS,
    RUN_EVENTS_READ_TIMEOUT,
    RUN_GET,
    RUN_START,
    RUN_STOP,
    SERVER_CAPABILITIES,
    TOOLSETS,
)
from .plugins import build_manager, call_pipeline
from .redaction import Redactor, install_log_filters, register_secret
from .runs import ApprovalAnswer, Run, RunStarted, RunStatus
from .runtime import Runtime
from .stages.approval import request_for
from .streaming import ChatStream, HermesStream, ResponseStream
from .transport import Transport

T = TypeVar("T")
log = logging.getLogger("hermes_sdk")


class _Required:
    """The default of a keyword that must be given (``help()`` shows ``<required>``)."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


class _Unchanged:
    """The default of a ``with_options`` keyword left as it is (``help()`` shows ``<unchanged>``)."""

    def __repr__(self) -> str:
        return "<unchanged>"


UNCHANGED: Any = _Unchanged()


class HermesClient:
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
        approval_provider: decides approval-gated calls (``response_delete``); a callable
            ``provider(request) -> ApprovalDecision | None`` or an object with ``request_approval``.
        plugins: extra pluggy plugin objects for this client only.
        load_entrypoints: load installed plugins from the ``hermes_sdk`` entry-point group.
        session: a ``requests.Session`` to reuse (its headers, proxies, verify and cert apply).
        strict_idempotency: refuse a key reused with a different input (IdempotencyConflictError).
        key_retention: seconds a keyed model call's record is kept (delete receipts: 24 hours).
        max_attempts: attempts of a retry-safe call (only ``response_get``); at least 1.
        redaction_patterns: extra regular expressions whose matches are redacted from logs and traces.
        timeout: the default relative bound of every call in seconds, or a :class:`Timeout`; without
            one, each capability's published ``sla.timeout_ms`` bounds it (60 s, streams 300 s).
        allow_permanent_approvals: allow the run approval choice ``always`` (Hermes then allows the
            command pattern process-wide and rewrites its own config.yaml); refused by default.
    """

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
        approval_provider: Any = None,
        plugins: Sequence[Any] = (),
        load_entrypoints: bool = True,
        session: Optional[requests.Session] = None,
        strict_idempotency: bool = False,
        key_retention: float = DEFAULT_KEY_RETENTION_SECONDS,
        max_attempts: int = RETRY_MAX_ATTEMPTS,
        redaction_patterns: Iterable[str] = (),
        timeout: TimeoutLike = None,
        allow_permanent_approvals: bool = False,
    ) -> None:
        self._endpoints = _build_endpoints(base_url, api_key, endpoint_id, tenant_id, endpoints)
        if context is not None and not isinstance(context, ExecutionContext):
            raise InvalidInputError("context must be an ExecutionContext", details={"field": "context"})
        self.context = context
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InvalidInputError("max_attempts must be a positive integer", details={"field": "max_attempts"})
        pm = build_manager(plugins, load_entrypoints)
        install_log_filters()
        configure_from_env()  # HERMES_SDK_LOG=debug|info
        for ep in self._endpoints.values():
            register_secret(ep.api_key)
            if not ep.api_key:  # said now, not first at the first call (which refuses with missing_credential)
                log.warning("hermes_sdk endpoint %r has no API key: set HERMES_API_KEY or pass api_key=; "
                            "calls will fail with missing_credential", ep.id)
        filters: list[Any] = []
        for group in call_pipeline(pm, "hermes_redaction_filters", client=self) or ():
            filters.extend(group if isinstance(group, (list, tuple)) else [group])
        redactor = Redactor(filters=filters, patterns=redaction_patterns)
        store = _resolve_store(pm, self, idempotency_store)
        provider = approval_provider if approval_provider is not None else call_pipeline(
            pm, "hermes_approval_provider", client=self)
        self._rt = Runtime(pm=pm, store=store, transport=Transport(session), redactor=redactor,
                           approval_provider=provider, max_attempts=max_attempts,
                           strict_idempotency=strict_idempotency, key_retention=float(key_retention),
                           timeout=as_timeout(timeout),
                           allow_permanent_approvals=bool(allow_permanent_approvals))
        self._closed = False
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- the client itself

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        """The configured endpoints."""
        return tuple(self._endpoints.values())

    @property
    def idempotency_store(self) -> IdempotencyStore:
        """The idempotency store every keyed call of this client uses."""
        return self._rt.store

    @property
    def plugin_manager(self) -> Any:
        """This client's pluggy ``PluginManager``."""
        return self._rt.pm

    @property
    def redactor(self) -> Redactor:
        """The redactor applied to everything logged, traced or shown to an approver."""
        return self._rt.redactor

    @property
    def strict_idempotency(self) -> bool:
        """Whether a key reused with a different input is refused."""
        return self._rt.strict_idempotency

    @property
    def key_retention(self) -> float:
        """Seconds a keyed model call's record is kept."""
        return self._rt.key_retention

    @property
    def max_attempts(self) -> int:
        """Attempts of a retry-safe call."""
        return self._rt.max_attempts

    def with_options(self, *, timeout: TimeoutLike = UNCHANGED, max_attempts: int = UNCHANGED) -> "HermesClient":
        """A copy of this client with other call settings, sharing its connection pool, store and plugins.

        ``client.with_options(timeout=5).chat(...)``; closing the copy does not close the pool.
        """
        changes: dict[str, Any] = {}
        if timeout is not UNCHANGED:
            changes["timeout"] = as_timeout(timeout)
        if max_attempts is not UNCHANGED:
            if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
                raise InvalidInputError("max_attempts must be a positive integer", details={"field": "max_attempts"})
            changes["max_attempts"] = max_attempts
        copy = object.__new__(HermesClient)
        copy._endpoints = self._endpoints
        copy.context = self.context
        copy._rt = attrs.evolve(self._rt, **changes)
        copy._closed = True  # the pool belongs to the client it was copied from
        copy._lock = self._lock
        return copy

    @property
    def timeout(self) -> Optional[Timeout]:
        """The default time limits of every call (None: each capability's published timeout)."""
        return self._rt.timeout

    @property
    def allow_permanent_approvals(self) -> bool:
        """Whether the run approval choice ``always`` may be sent."""
        return self._rt.allow_permanent_approvals

    def __enter__(self) -> "HermesClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool (a caller's own session is left open). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for stream in list(self._rt.open_streams):  # cancelled (and recorded so), not left to the GC
            try:
                if not stream.closed:
                    stream.abort()  # wakes a thread blocked reading it, so close() never waits on a read
                    stream.close()
            except Exception:
                pass
        self._rt.transport.close()

    def __repr__(self) -> str:
        return f"HermesClient(endpoints={list(self._endpoints)!r})"

    def capabilities(self) -> list[dict[str, Any]]:
        """Every endpoint's capability descriptors, with their full published contract."""
        return [descriptor(ep_id, spec.contract) for ep_id in self._endpoints for spec in SPECS.values()]

    # ---------------------------------------------------------------- recovery and operator tools

    def action_result(self, action_id: str) -> Optional[ActionResult]:
        """The durable result recorded for ``action_id`` (step one of the safe recovery rule), or None.

        Only calls made with an idempotency key leave a durable record.
        """
        record = self._rt.store.get_by_action(action_id)
        if record is None or record.state != COMPLETED or record.result is None:
            return None
        return convert.action_result_from_json(record.result)

    def idempotency_record(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The raw record (pending or completed) for a capability-scoped key, or None."""
        return self._rt.store.get(capability_id, key)

    def resolve_pending(self, capability_id: str, key: str, *, status: str, output: Any = None,
                        error: Optional[HermesError] = None) -> ActionResult:
        """Operator reconciliation: record the outcome of an interrupted call you verified by hand.

        Raises InvalidInputError unless the key has a pending record and ``status`` is
        ``completed``, ``failed`` or ``cancelled``.
        """
        record = self._rt.store.get(capability_id, key)
        if record is None or record.state != "pending":
            raise InvalidInputError("no pending record for that key", details={"field": "idempotency_key"})
        if status not in ("completed", "failed", "cancelled"):
            raise InvalidInputError("status must be completed, failed or cancelled", details={"field": "status"})
        result = ActionResult(action_id=record.action_id, capability_id=capability_id, status=status,
                              output=output, error=error, idempotency_key=key, recorded_at=time.time())
        self._rt.store.complete(capability_id, key, convert.action_result_to_json(result))
        return result

    def forget_idempotency_key(self, capability_id: str, key: str) -> bool:
        """Operator escape hatch: drop a record so the key can execute again. Use only after reconciling."""
        return self._rt.store.forget(capability_id, key)

    def approval_request(self, operation_or_capability: str, input: Mapping[str, Any], *,
                         reason: Optional[str] = None, action_id: Optional[str] = None,
                         endpoint: Optional[str] = None) -> ApprovalRequest:
        """Build the ApprovalRequest for an input, to obtain an ``approval=`` decision up front.

        ``operation_or_capability`` is an operation name (``response_delete``) or a capability id;
        ``input`` is the capability input (``{"response_id": ...}``).
        """
        if operation_or_capability in CONTRACTS:
            cap = capability_id(self._endpoint(endpoint).id, operation_or_capability)
        else:
            cap = operation_or_capability
            parse_capability_id(cap)
        return request_for(cap, dict(input), reason, action_id or _new_action_id(), self.context,
                           self._rt.redactor)

    # ---------------------------------------------------------------- the six capabilities

    def chat(self, *, prompt: Optional[str] = None, query: Optional[str] = None,
             messages: Optional[list[Any]] = None, model: str = DEFAULT_MODEL, session_id: Optional[str] = None,
             session_key: Optional[str] = None, idempotency_key: Optional[str] = None,
             endpoint: Optional[str] = None, action_id: Optional[str] = None,
             context: Optional[ExecutionContext] = None, deadline: Deadline = None,
             timeout: TimeoutLike = None, extra_body: Optional[Mapping[str, Any]] = None,
             **provider_fields: Any) -> ChatCompletion:
        """One chat turn (``POST /v1/chat/completions``); give exactly one of prompt, query or messages.

        ``session_id`` continues a Hermes session (``X-Hermes-Session-Id``); ``session_key`` scopes
        its memory. Other keywords (``temperature``, ``max_tokens``, ``tools``, ...) go into the
        provider body. Inspect ``finish_reason`` and ``hermes`` of the result, not only ``text``.
        Not retried: a failure after sending says ``uncertain_outcome=True``.
        """
        data = keywords.chat_input(prompt, query, messages, model, session_id, session_key, provider_fields, extra_body)
        return self._call(CHAT, data, endpoint, idempotency_key, action_id, context, deadline, timeout=timeout)

    def chat_stream(self, *, prompt: Optional[str] = None, query: Optional[str] = None,
                    messages: Optional[list[Any]] = None, model: str = DEFAULT_MODEL,
                    session_id: Optional[str] = None, session_key: Optional[str] = None,
                    idempotency_key: Optional[str] = None, max_events: int = DEFAULT_MAX_EVENTS,
                    keep_events: bool = True, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                    context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                    timeout: TimeoutLike = None, idle_timeout: Optional[float] = None,
                    extra_body: Optional[Mapping[str, Any]] = None, **provider_fields: Any) -> ChatStream:
        """A streamed chat turn: returns once the headers arrived; iterate the ChatStream for events.

        ``max_events`` stops collection before a terminal event (``stream_truncated``);
        ``keep_events=False`` keeps only the aggregate. Closing the stream early cancels the turn.
        """
        data = keywords.chat_input(prompt, query, messages, model, session_id, session_key, provider_fields, extra_body)
        data["max_events"] = max_events
        return self._call(CHAT_STREAM, data, endpoint, idempotency_key, action_id, context, deadline,
                          keep_events=keep_events, timeout=timeout, idle_timeout=idle_timeout)

    def responses(self, body: Optional[Mapping[str, Any]] = None, *, session_key: Optional[str] = None,
                  idempotency_key: Optional[str] = None, endpoint: Optional[str] = None,
                  action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                  deadline: Deadline = None, timeout: TimeoutLike = None,
                  extra_body: Optional[Mapping[str, Any]] = None, **body_fields: Any) -> Response:
        """Create a response (``POST /v1/responses``) from ``body`` and/or keyword body fields.

        ``input`` is required; ``previous_response_id`` or ``conversation`` continue earlier turns
        (not both); ``store=False`` keeps it out of storage. A field given both in ``body`` and as a
        keyword with different values is an InvalidInputError.
        """
        data = keywords.responses_input(body, session_key, body_fields, extra_body)
        return self._call(RESPONSES, data, endpoint, idempotency_key, action_id, context, deadline, timeout=timeout)

    def responses_stream(self, body: Optional[Mapping[str, Any]] = None, *, session_key: Optional[str] = None,
                         idempotency_key: Optional[str] = None, max_events: int = DEFAULT_MAX_EVENTS,
                         keep_events: bool = True, endpoint: Optional[str] = None,
                         action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                         deadline: Deadline = None, timeout: TimeoutLike = None,
                         idle_timeout: Optional[float] = None, extra_body: Optional[Mapping[str, Any]] = None,
                         **body_fields: Any) -> ResponseStream:
        """A streamed response: iterate the ResponseStream; ``result().final`` is the terminal envelope."""
        data = keywords.responses_input(body, session_key, body_fields, extra_body)
        data["max_events"] = max_events
        return self._call(RESPONSES_STREAM, data, endpoint, idempotency_key, action_id, context, deadline,
                          keep_events=keep_events, timeout=timeout, idle_timeout=idle_timeout)

    def response_get(self, response_id: str, *, session_key: Optional[str] = None,
                     idempotency_key: Optional[str] = None, endpoint: Optional[str] = None,
                     action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                     deadline: Deadline = None, timeout: TimeoutLike = None) -> Response:
        """A stored response by id (``GET /v1/responses/{response_id}``).

        The one capability retried automatically (bounded, jittered, honouring ``Retry-After``).
        :class:`~hermes_sdk.NotFoundError` for an unknown or deleted id.
        """
        data = keywords.stored_input(response_id, session_key)
        return self._call(RESPONSE_GET, data, endpoint, idempotency_key, action_id, context, deadline,
                          timeout=timeout)

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
        data = keywords.stored_input(response_id, session_key)
        key = None if idempotency_key is REQUIRED else idempotency_key
        return self._call(RESPONSE_DELETE, data, endpoint, key, action_id, context, deadline,
                          approval=approval, reason=reason, timeout=timeout)

    # ---------------------------------------------------------------- durable runs

    def run(self, input: Any = REQUIRED, *, idempotency_key: str = REQUIRED, instructions: Optional[str] = None,
            session_id: Optional[str] = None, session_key: Optional[str] = None,
            conversation_history: Optional[list[Any]] = None, previous_response_id: Optional[str] = None,
            model: Optional[str] = None, approval_provider: Any = None, endpoint: Optional[str] = None,
            action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
            deadline: Deadline = None, timeout: TimeoutLike = None) -> Run:
        """Start a durable run (``POST /v1/runs``) and subscribe to its events at once.

        Hermes ignores ``Idempotency-Key`` on runs, so the key is required and the SDK's own store
        makes it one run per key: a replay returns the same run (``run.replayed``, nothing sent,
        followed by polling); a key whose first call never recorded its 202 (a crash) raises
        OutcomeUnknownError. Follow with ``run.events()`` or ``run.wait()``; approval requests go
        to ``approval_provider`` (default: the client's).

        Args:
            input: the user message (a string) or a list of ``{role, content}`` messages.
            idempotency_key: required; one run per key for 24 hours.
            instructions: appended to Hermes' system prompt for this run.
            session_id: the run's session id (default: the run id).
            session_key: scopes long-term memory (``X-Hermes-Session-Key``).
            conversation_history: earlier turns (wins over ``previous_response_id``).
            previous_response_id: continue a stored response's conversation.
            model: echoed in the run object (default ``hermes-agent``).
            approval_provider: answers this run's approval requests (see docs/runs.md).
            deadline: bounds the start call and, by default, ``run.wait()`` and ``run.events()``
                (the context's deadline when not given).
            timeout: bounds the start call only (seconds or a :class:`Timeout`).
        """
        data: dict[str, Any] = {"input": None if input is REQUIRED else input}
        for name, value in (("instructions", instructions), ("session_id", session_id),
                            ("session_key", session_key), ("conversation_history", conversation_history),
                            ("previous_response_id", previous_response_id), ("model", model)):
            if value is not None:
                data[name] = value
        key = None if idempotency_key is REQUIRED else idempotency_key
        started: RunStarted = self._call(RUN_START, data, endpoint, key, action_id, context, deadline,
                                         timeout=timeout)
        provider = approval_provider if approval_provider is not None else self._rt.approval_provider
        limit = deadline_epoch(deadline)
        ctx = context if context is not None else self.context
        if limit is None and ctx is not None:
            limit = ctx.deadline
        run = Run(self, started, endpoint=endpoint, approval_provider=provider, deadline=limit, context=context)
        run._subscribe()  # early: Hermes sweeps an unsubscribed buffer 300 s after the run was created
        return run

    def run_get(self, run_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                timeout: TimeoutLike = None) -> RunStatus:
        """The run object (``GET /v1/runs/{run_id}``); retried like ``response_get``.

        RunNotFoundError for an unknown id (or one Hermes dropped: finished runs live one hour,
        and none survive a restart).
        """
        return self._call(RUN_GET, {"run_id": run_id}, endpoint, None, action_id, context, deadline, timeout=timeout)

    def run_stop(self, run_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                 context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                 timeout: TimeoutLike = None) -> RunStatus:
        """Stop a run (``POST /v1/runs/{run_id}/stop``): status ``stopping``, then ``cancelled``.

        From this call on, this client sends no approval for the run (RunStoppedError): Hermes
        executed a command approved right after a stop. A finished run answers RunNotFoundError.
        """
        return self._call(RUN_STOP, {"run_id": run_id}, endpoint, None, action_id, context, deadline,
                          timeout=timeout)

    def run_approval(self, run_id: str, choice: str, *, resolve_all: bool = False, endpoint: Optional[str] = None,
                     action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                     deadline: Deadline = None, timeout: TimeoutLike = None) -> ApprovalAnswer:
        """Answer a run's oldest pending approval (``POST /v1/runs/{run_id}/approval``).

        Args:
            choice: ``once``, ``session`` (this run), ``deny``, or ``always`` (only with
                ``allow_permanent_approvals=True``).
            resolve_all: answer every request queued for the run.

        Raises:
            RunStoppedError: this client stopped the run (nothing sent).
            InvalidApprovalChoiceError, ApprovalNotPendingError, ApprovalNotActiveError: Hermes'
                400 ``invalid_approval_choice`` and 409 ``approval_not_pending`` / ``approval_not_active``.
        """
        data: dict[str, Any] = {"run_id": run_id, "choice": choice}
        if resolve_all:
            data["all"] = True
        return self._call(RUN_APPROVAL, data, endpoint, None, action_id, context, deadline, timeout=timeout)

    def run_approval_request(self, run_id: str, command: str, *, reason: Optional[str] = None,
                             endpoint: Optional[str] = None) -> ApprovalRequest:
        """The ApprovalRequest a run's approval request becomes: capability ``run_approval``, input
        ``{run_id, command}`` (bound by its hash), with the same evidence and TTL rules as deletes.

        The approver must see what it approves: the snapshot keeps the command, scrubbed of
        credentials and ids by the client's redactor (the run id itself is redacted).
        """
        cap = capability_id(self._endpoint(endpoint).id, RUN_APPROVAL.name)
        redactor = self._rt.redactor
        request = request_for(cap, {"run_id": run_id, "command": command},
                              reason or "the agent asked to run a command", _new_action_id(), self.context, redactor)
        return attrs.evolve(request, input_snapshot={**request.input_snapshot,
                                                     "command": redactor.text(command, "command")})

    def _mark_stopped(self, run_id: str) -> None:
        """Refuse every later approval for the run (as ``run_stop`` does before it sends)."""
        self._rt.stopped_runs.add(run_id)

    def _stopped(self, run_id: str) -> bool:
        """Whether this client asked to stop the run (no approval is sent to it from then on)."""
        return run_id in self._rt.stopped_runs

    def _run_events(self, run_id: str, endpoint: Optional[str], context: Optional[ExecutionContext],
                    deadline: Optional[float] = None) -> Any:
        """Open a run's one events subscription (only :class:`Run` calls this, once per run).

        It lives until the run ends or ``deadline`` (else the contract's 24 hours); a read waits at
        most ``RUN_EVENTS_READ_TIMEOUT`` seconds, well above Hermes' 30 s keepalive, so a silent
        connection is found broken and the run is polled instead.
        """
        return self._call(RUN_EVENTS, {"run_id": run_id}, endpoint, None, None, context, deadline,
                          keep_events=False, timeout=Timeout(read=RUN_EVENTS_READ_TIMEOUT))

    # ---------------------------------------------------------------- discovery

    def health(self, *, endpoint: Optional[str] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> Health:
        """``GET /health``: Hermes serves it without authentication, so a client without an API key
        may call it (a readiness probe); a client with one sends it, as on every route."""
        return self._call(HEALTH, {}, endpoint, None, None, None, deadline, timeout=timeout)

    def models(self, *, endpoint: Optional[str] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> list[ModelInfo]:
        """``GET /v1/models``."""
        return self._call(MODELS, {}, endpoint, None, None, None, deadline, timeout=timeout)

    def server_capabilities(self, *, endpoint: Optional[str] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> ServerCapabilities:
        """``GET /v1/capabilities``: Hermes' static feature flags (not the SDK's ``capabilities()``)."""
        return self._call(SERVER_CAPABILITIES, {}, endpoint, None, None, None, deadline, timeout=timeout)

    def toolsets(self, *, endpoint: Optional[str] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> list[Toolset]:
        """``GET /v1/toolsets``: which toolsets the API server offers (``enabled``)."""
        return self._call(TOOLSETS, {}, endpoint, None, None, None, deadline, timeout=timeout)

    # ---------------------------------------------------------------- the generic AIP path

    def invoke(self, capability_id: str, input: Mapping[str, Any], *, idempotency_key: Optional[str] = None,
               action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
               approval: Optional[ApprovalDecision] = None, deadline: Deadline = None,
               reason: Optional[str] = None, timeout: TimeoutLike = None) -> ActionResult:
        """The generic AIP path: failures come back as ``status="failed"`` results, not exceptions.

        ``capability_id`` is ``cap:hermes_agent:<endpoint_id>:<operation>``; ``input`` the
        capability's published input. Stream capabilities are read to the end; their output is
        the stream aggregate. A missing approval gives ``status="pending_approval"``.
        """
        action_id = action_id or _new_action_id()
        try:
            endpoint_id, operation = parse_capability_id(capability_id)
            endpoint = self._endpoint(normalize_endpoint_id(endpoint_id))
            if endpoint.id != endpoint_id:
                raise InvalidInputError("capability id must use the normalised endpoint id",
                                        details={"field": "capability_id"})
            call = self._new_call(SPECS[operation], endpoint, input, idempotency_key, action_id, context,
                                  deadline, approval, reason, True, timeout)
            result = stages.run(call)
        except HermesError as exc:
            exc.action_id = exc.action_id or action_id
            exc.capability_id = exc.capability_id or (capability_id if isinstance(capability_id, str) else None)
            status = "pending_approval" if isinstance(exc, ApprovalRequiredError) else "failed"
            return ActionResult(action_id=action_id, capability_id=str(capability_id), status=status, error=exc,
                                idempotency_key=idempotency_key, recorded_at=time.time())
        stream = call.value
        if isinstance(stream, HermesStream):
            stream_result = stream.result()
            settled = stream.action_result
            assert settled is not None
            if settled.output is None or not settled.output.get("events") and stream_result.events:
                settled.output = convert.stream_result_to_json(stream_result)
            return settled
        return result

    # ---------------------------------------------------------------- building a call

    def _call(self, spec: OperationSpec[T], data: Mapping[str, Any], endpoint: Optional[str], key: Optional[str],
              action_id: Optional[str], context: Optional[ExecutionContext], deadline: Deadline,
              approval: Optional[ApprovalDecision] = None, reason: Optional[str] = None,
              keep_events: bool = True, timeout: TimeoutLike = None, idle_timeout: Optional[float] = None) -> T:
        """Run one typed call: the typed value, or the recorded one when replayed (its failure raised)."""
        action_id = action_id or _new_action_id()
        call = self._new_call(spec, self._endpoint(endpoint), data, key, action_id, context, deadline, approval,
                              reason, keep_events, timeout, idle_timeout)
        result = stages.run(call)
        if call.replay_of is None:
            return call.value  # type: ignore[no-any-return]
        if result.status != "completed" and (not spec.streaming or result.output is None):
            assert result.error is not None
            result.error.details.setdefault("replayed", True)
            raise result.error
        return spec.typed_from_record(result.output, result.session_id, result.action_id)

    def _new_call(self, spec: OperationSpec[Any], endpoint: Endpoint, input: Any, key: Optional[str],
                  action_id: str, context: Optional[ExecutionContext], deadline: Deadline, approval: Any,
                  reason: Optional[str], keep_events: bool, timeout: TimeoutLike = None,
                  idle_timeout: Optional[float] = None) -> Call:
        """Validate everything the caller gave and build the Call; nothing is sent here."""
        cap = capability_id(endpoint.id, spec.name)
        now = time.time()
        try:
            limits = effective(as_timeout(timeout), self._rt.timeout)
            if idle_timeout is not None:
                as_timeout(idle_timeout, "idle_timeout")
            if not isinstance(input, Mapping):
                raise InvalidInputError("input must be a JSON object", details={"field": "input"})
            key = idempotency_value(key if key is not None else input.get("idempotency_key"))
            clean = {k: v for k, v in input.items() if k != "idempotency_key"}
            request = spec.request(clean)
            ctx = context if context is not None else self.context
            if ctx is not None and not isinstance(ctx, ExecutionContext):
                raise InvalidInputError("context must be an ExecutionContext", details={"field": "context"})
            limit = deadline_epoch(deadline)
            if limit is None and ctx is not None:
                limit = ctx.deadline
            if limits.total is not None:  # a caller's relative timeout is a deadline too; the earlier wins
                limit = now + limits.total if limit is None else min(limit, now + limits.total)
        except HermesError as exc:
            exc.action_id, exc.capability_id = action_id, cap
            raise
        # Without a deadline, the published contract timeout bounds the call in wall-clock time.
        ends_at = now + spec.timeout if limit is None else limit
        call = Call(endpoint=endpoint, spec=spec, input=clean, request=request, action_id=action_id,
                    capability_id=cap, runtime=self._rt, key=key, context=ctx, deadline=limit, ends_at=ends_at,
                    read_timeout=limits.read, connect_timeout=limits.connect, idle_timeout=idle_timeout,
                    approval=approval, reason=reason, keep_events=keep_events)
        call.attributes.update(_server_attributes(endpoint))
        if spec.describe is not None:
            call.attributes.update(spec.describe(clean))
        return call

    def _endpoint(self, endpoint: Optional[str]) -> Endpoint:
        if endpoint is None:
            if len(self._endpoints) == 1:
                return next(iter(self._endpoints.values()))
            if DEFAULT_ENDPOINT_ID in self._endpoints:
                return self._endpoints[DEFAULT_ENDPOINT_ID]
            raise InvalidInputError("several endpoints are configured: pass endpoint=",
                                    details={"field": "endpoint"})
        key = normalize_endpoint_id(endpoint)
        found = self._endpoints.get(key)
        if found is None:
            raise InvalidInputError(f"unknown endpoint {key!r}", details={"field": "endpoint"})
        return found


def _build_endpoints(base_url: Optional[str], api_key: Optional[str], endpoint_id: Optional[str],
                     tenant_id: Optional[str], endpoints: Iterable[Endpoint]) -> dict[str, Endpoint]:
    out: dict[str, Endpoint] = {}
    for ep in endpoints:
        if not isinstance(ep, Endpoint):
            raise InvalidInputError("endpoints must be Endpoint objects", details={"field": "endpoints"})
        if ep.id in out:
            raise InvalidInputError(f"duplicate endpoint id {ep.id!r}", details={"field": "endpoints"})
        out[ep.id] = ep
    base_url = base_url if base_url is not None else (os.environ.get("HERMES_BASE_URL") if not out else None)
    if base_url is not None or not out:
        ep = Endpoint(
            id=endpoint_id or os.environ.get("HERMES_ENDPOINT_ID") or DEFAULT_ENDPOINT_ID,
            base_url=base_url,  # type: ignore[arg-type]
            api_key=api_key if api_key is not None else os.environ.get("HERMES_API_KEY"),
            tenant_id=tenant_id,
        )
        if ep.id in out:
            raise InvalidInputError(f"duplicate endpoint id {ep.id!r}", details={"field": "endpoint_id"})
        out[ep.id] = ep
    return out


def _resolve_store(pm: Any, client: HermesClient, value: Union[IdempotencyStore, str, None]) -> IdempotencyStore:
    """A store object as given, or the one a plugin (the built-ins included) makes for a URL."""
    if value is None:
        value = os.environ.get("HERMES_SDK_IDEMPOTENCY_STORE") or "memory:"
    if isinstance(value, str):
        store = call_pipeline(pm, "hermes_idempotency_store", url=value, client=client)
        if store is None:
            raise InvalidInputError(f"no plugin claims the idempotency store URL scheme of {value.split(':')[0]!r}",
                                    details={"field": "idempotency_store"})
        return store  # type: ignore[no-any-return]
    for method in ("reserve", "complete", "get", "get_by_action", "forget"):
        if not callable(getattr(value, method, None)):
            raise InvalidInputError(f"idempotency_store lacks {method}()", details={"field": "idempotency_store"})
    return value


_servers: dict[str, dict[str, Any]] = {}


def _server_attributes(endpoint: Endpoint) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of an endpoint (parsed once per origin)."""
    found = _servers.get(endpoint.base_url)
    if found is None:
        parts = urlsplit(endpoint.base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        found = _servers[endpoint.base_url] = {"server.address": parts.hostname or "", "server.port": port}
    return found


_ids = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ids.seed)  # a forked child must not repeat its parent's ids


def _new_action_id() -> str:
    # uuid4() reads os.urandom, a syscall that releases the GIL: under threads, every release is a
    # wait to get it back. A per-process generator seeded from urandom (again after fork) is unique
    # enough for an id that is not a secret.
    return f"act_{_ids.getrandbits(128):032x}"
