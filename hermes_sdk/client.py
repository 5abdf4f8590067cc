"""HermesClient: the six capabilities, and the one path every call takes.

resolve capability → validate and map input → policy (tenant, key, approval) → idempotency
(replay, refuse, or reserve) → invocation hooks → HTTP attempt hooks (only ``response_get``
retries) → decode → ActionResult → durable record → observers.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import uuid
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import attrs
import requests

from . import convert
from ._constants import (
    DEFAULT_ENDPOINT_ID,
    DEFAULT_KEY_RETENTION_SECONDS,
    DEFAULT_MAX_EVENTS,
    DEFAULT_MODEL,
    DELETE_KEY_TTL_SECONDS,
    RETRY_MAX_ATTEMPTS,
)
from .approval import ApprovalDecision, ApprovalRequest, ask, check, input_hash
from .capabilities import CONTRACTS, Contract, capability_id, descriptor, parse_capability_id
from .endpoints import Deadline, Endpoint, ExecutionContext, deadline_epoch, normalize_endpoint_id
from .errors import (
    ApprovalRequiredError,
    DeadlineExceededError,
    HermesError,
    IdempotencyConflictError,
    InvalidInputError,
    OutcomeUnknownError,
    PluginError,
    TenantMismatchError,
)
from .execution import ExecutionMixin
from .idempotency import COMPLETED, IdempotencyRecord, IdempotencyStore, MemoryStore
from .invocation import Invocation
from .models import ActionResult, ChatCompletion, DeletionReceipt, Response, StreamResult
from .operations import ProviderRequest, build_request
from .operations.common import idempotency_value
from .plugins import build_manager, call_pipeline, notify, observed
from .redaction import Redactor, install_log_filters, register_secret
from .streaming import ChatStream, HermesStream, ResponseStream
from .transport import Transport

_UNSET: Any = object()
log = logging.getLogger("hermes_sdk")


class HermesClient(ExecutionMixin):
    """A synchronous client for the six Hermes capabilities. Safe to share between threads."""

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
    ) -> None:
        self._endpoints = self._build_endpoints(base_url, api_key, endpoint_id, tenant_id, endpoints)
        if context is not None and not isinstance(context, ExecutionContext):
            raise InvalidInputError("context must be an ExecutionContext", details={"field": "context"})
        self.context = context
        self.strict_idempotency = strict_idempotency
        self.key_retention = float(key_retention)
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InvalidInputError("max_attempts must be a positive integer", details={"field": "max_attempts"})
        self.max_attempts = max_attempts
        self._pm = build_manager(plugins, load_entrypoints)
        install_log_filters()
        for ep in self._endpoints.values():
            register_secret(ep.api_key)
        filters: list[Any] = []
        for group in call_pipeline(self._pm, "hermes_redaction_filters", client=self) or ():
            filters.extend(group if isinstance(group, (list, tuple)) else [group])
        self.redactor = Redactor(filters=filters, patterns=redaction_patterns)
        self._store = self._resolve_store(idempotency_store)
        self._approval_provider = approval_provider if approval_provider is not None else call_pipeline(
            self._pm, "hermes_approval_provider", client=self)
        self._transport = Transport(session)
        self._event_observers = bool(self._pm.hook.hermes_stream_event.get_hookimpls())
        self._closed = False
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- construction helpers

    @staticmethod
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

    def _resolve_store(self, value: Union[IdempotencyStore, str, None]) -> IdempotencyStore:
        if value is None:
            value = os.environ.get("HERMES_SDK_IDEMPOTENCY_STORE") or None
        if value is None:
            return MemoryStore()
        if isinstance(value, str):
            store = call_pipeline(self._pm, "hermes_idempotency_store", url=value, client=self)
            if store is None:
                raise InvalidInputError(f"no plugin claims the idempotency store URL scheme of {value.split(':')[0]!r}",
                                        details={"field": "idempotency_store"})
            return store  # type: ignore[no-any-return]
        for method in ("reserve", "complete", "get", "get_by_action", "forget"):
            if not callable(getattr(value, method, None)):
                raise InvalidInputError(f"idempotency_store lacks {method}()", details={"field": "idempotency_store"})
        return value

    # ---------------------------------------------------------------- public surface

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        return tuple(self._endpoints.values())

    @property
    def idempotency_store(self) -> IdempotencyStore:
        return self._store

    @property
    def plugin_manager(self) -> Any:
        return self._pm

    def __enter__(self) -> "HermesClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._transport.close()

    def __repr__(self) -> str:
        return f"HermesClient(endpoints={list(self._endpoints)!r})"

    def capabilities(self) -> list[dict[str, Any]]:
        """Every endpoint's six capability descriptors with their full published contract."""
        return [descriptor(ep_id, contract) for ep_id in self._endpoints for contract in CONTRACTS.values()]

    def action_result(self, action_id: str) -> Optional[ActionResult]:
        """The durable result recorded for ``action_id`` (step one of the safe recovery rule)."""
        record = self._store.get_by_action(action_id)
        if record is None or record.state != COMPLETED or record.result is None:
            return None
        return convert.action_result_from_json(record.result)

    def idempotency_record(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The raw record (pending or completed) for a capability-scoped key."""
        return self._store.get(capability_id, key)

    def resolve_pending(self, capability_id: str, key: str, *, status: str, output: Any = None,
                        error: Optional[HermesError] = None) -> ActionResult:
        """Operator reconciliation: record the outcome of an interrupted call you verified by hand."""
        record = self._store.get(capability_id, key)
        if record is None or record.state != "pending":
            raise InvalidInputError("no pending record for that key", details={"field": "idempotency_key"})
        if status not in ("completed", "failed", "cancelled"):
            raise InvalidInputError("status must be completed, failed or cancelled", details={"field": "status"})
        result = ActionResult(action_id=record.action_id, capability_id=capability_id, status=status,
                              output=output, error=error, idempotency_key=key, recorded_at=time.time())
        self._store.complete(capability_id, key, convert.action_result_to_json(result))
        return result

    def forget_idempotency_key(self, capability_id: str, key: str) -> bool:
        """Operator escape hatch: drop a record so the key can execute again. Use only after reconciling."""
        return self._store.forget(capability_id, key)

    def approval_request(self, operation_or_capability: str, input: Mapping[str, Any], *,
                         reason: Optional[str] = None, action_id: Optional[str] = None,
                         endpoint: Optional[str] = None) -> ApprovalRequest:
        """Build the ApprovalRequest for an input, e.g. to obtain an ``approval=`` decision up front."""
        if operation_or_capability in CONTRACTS:
            ep = self._endpoint(endpoint)
            cap = capability_id(ep.id, operation_or_capability)
        else:
            cap = operation_or_capability
            parse_capability_id(cap)
        return self._approval_request(cap, dict(input), reason, action_id or _new_action_id(), self.context)

    # ---------------------------------------------------------------- the six capabilities

    def chat(self, *, prompt: Optional[str] = None, query: Optional[str] = None,
             messages: Optional[list[Any]] = None, model: str = DEFAULT_MODEL, session_id: Optional[str] = None,
             session_key: Optional[str] = None, idempotency_key: Optional[str] = None,
             endpoint: Optional[str] = None, action_id: Optional[str] = None,
             context: Optional[ExecutionContext] = None, deadline: Deadline = None,
             **provider_fields: Any) -> ChatCompletion:
        data = _chat_input(prompt, query, messages, model, session_id, session_key, provider_fields)
        return self._typed("chat", data, endpoint, idempotency_key, action_id, context, deadline)  # type: ignore[no-any-return]

    def chat_stream(self, *, prompt: Optional[str] = None, query: Optional[str] = None,
                    messages: Optional[list[Any]] = None, model: str = DEFAULT_MODEL,
                    session_id: Optional[str] = None, session_key: Optional[str] = None,
                    idempotency_key: Optional[str] = None, max_events: int = DEFAULT_MAX_EVENTS,
                    keep_events: bool = True, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                    context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                    **provider_fields: Any) -> ChatStream:
        data = _chat_input(prompt, query, messages, model, session_id, session_key, provider_fields)
        data["max_events"] = max_events
        return self._typed("chat_stream", data, endpoint, idempotency_key, action_id, context,  # type: ignore[no-any-return]
                           deadline, keep_events=keep_events)

    def responses(self, body: Optional[Mapping[str, Any]] = None, *, session_key: Optional[str] = None,
                  idempotency_key: Optional[str] = None, endpoint: Optional[str] = None,
                  action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                  deadline: Deadline = None, **body_fields: Any) -> Response:
        data = _responses_input(body, session_key, body_fields)
        return self._typed("responses", data, endpoint, idempotency_key, action_id, context, deadline)  # type: ignore[no-any-return]

    def responses_stream(self, body: Optional[Mapping[str, Any]] = None, *, session_key: Optional[str] = None,
                         idempotency_key: Optional[str] = None, max_events: int = DEFAULT_MAX_EVENTS,
                         keep_events: bool = True, endpoint: Optional[str] = None,
                         action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                         deadline: Deadline = None, **body_fields: Any) -> ResponseStream:
        data = _responses_input(body, session_key, body_fields)
        data["max_events"] = max_events
        return self._typed("responses_stream", data, endpoint, idempotency_key, action_id, context,  # type: ignore[no-any-return]
                           deadline, keep_events=keep_events)

    def response_get(self, response_id: str, *, session_key: Optional[str] = None,
                     idempotency_key: Optional[str] = None, endpoint: Optional[str] = None,
                     action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                     deadline: Deadline = None) -> Response:
        data = _stored_input(response_id, session_key)
        return self._typed("response_get", data, endpoint, idempotency_key, action_id, context, deadline)  # type: ignore[no-any-return]

    def response_delete(self, response_id: str, *, idempotency_key: Optional[str] = _UNSET,
                        approval: Optional[ApprovalDecision] = None, reason: Optional[str] = None,
                        session_key: Optional[str] = None, endpoint: Optional[str] = None,
                        action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                        deadline: Deadline = None) -> DeletionReceipt:
        data = _stored_input(response_id, session_key)
        key = None if idempotency_key is _UNSET else idempotency_key
        return self._typed("response_delete", data, endpoint, key, action_id, context, deadline,  # type: ignore[no-any-return]
                           approval=approval, reason=reason)

    def invoke(self, capability_id: str, input: Mapping[str, Any], *, idempotency_key: Optional[str] = None,
               action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
               approval: Optional[ApprovalDecision] = None, deadline: Deadline = None,
               reason: Optional[str] = None) -> ActionResult:
        """The generic AIP path: failures come back as ``status="failed"`` results, not exceptions.

        Stream capabilities are read to the end; their output is the stream aggregate.
        """
        action_id = action_id or _new_action_id()
        try:
            endpoint_id, operation = parse_capability_id(capability_id)
            endpoint = self._endpoint(normalize_endpoint_id(endpoint_id))
            if endpoint.id != endpoint_id:
                raise InvalidInputError("capability id must use the normalised endpoint id",
                                        details={"field": "capability_id"})
            result, value = self._run(endpoint, operation, input, idempotency_key, action_id, context,
                                      deadline, approval, reason)
        except HermesError as exc:
            exc.action_id = exc.action_id or action_id
            exc.capability_id = exc.capability_id or (capability_id if isinstance(capability_id, str) else None)
            status = "pending_approval" if isinstance(exc, ApprovalRequiredError) else "failed"
            return ActionResult(action_id=action_id, capability_id=str(capability_id), status=status, error=exc,
                                idempotency_key=idempotency_key, recorded_at=time.time())
        if isinstance(value, (HermesStream,)):
            stream_result = value.result()
            settled: ActionResult = value.action_result  # type: ignore[attr-defined]
            if settled.output is None:
                settled.output = convert.stream_result_to_json(stream_result)
            return settled
        return result

    # ---------------------------------------------------------------- the pipeline

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

    def _typed(self, operation: str, data: dict[str, Any], endpoint: Optional[str], key: Optional[str],
               action_id: Optional[str], context: Optional[ExecutionContext], deadline: Deadline,
               approval: Optional[ApprovalDecision] = None, reason: Optional[str] = None,
               keep_events: bool = True) -> Any:
        action_id = action_id or _new_action_id()
        ep = self._endpoint(endpoint)
        result, value = self._run(ep, operation, data, key, action_id, context, deadline, approval, reason,
                                  keep_events=keep_events)
        if value is not None:
            return _stamped(value, action_id, False)
        # Replayed from the idempotency record.
        if result.status != "completed" and (not CONTRACTS[operation].streaming or result.output is None):
            assert result.error is not None
            result.error.details.setdefault("replayed", True)
            raise result.error
        return _stamped(_typed_from_record(operation, result), result.action_id, True)

    def _run(self, ep: Endpoint, operation: str, input: Mapping[str, Any], key: Optional[str], action_id: str,
             context: Optional[ExecutionContext], deadline: Deadline, approval: Optional[ApprovalDecision],
             reason: Optional[str], keep_events: bool = True) -> tuple[ActionResult, Any]:
        """Run one invocation; return (result, typed value) — value None when replayed."""
        contract = CONTRACTS[operation]
        cap = capability_id(ep.id, operation)
        try:
            if not isinstance(input, Mapping):
                raise InvalidInputError("input must be a JSON object", details={"field": "input"})
            key = idempotency_value(key if key is not None else input.get("idempotency_key"))
            clean = {k: v for k, v in input.items() if k != "idempotency_key"}
            request = build_request(operation, clean)
            ctx = context if context is not None else self.context
            if ctx is not None and not isinstance(ctx, ExecutionContext):
                raise InvalidInputError("context must be an ExecutionContext", details={"field": "context"})
            limit = deadline_epoch(deadline)
            if limit is None and ctx is not None:
                limit = ctx.deadline
            self._check_policy(ep, contract, key, ctx, limit)
            # A recorded outcome is returned before approval: replaying executes nothing, and the
            # 24-hour delete receipt must outlive the 15-minute approval. (Other calls learn it in reserve.)
            recorded = None
            if key is not None and contract.requires_approval:
                recorded = self._recorded(cap, key, action_id, clean)
            if recorded is None:
                decision = self._approve(cap, contract, clean, reason, action_id, ctx, approval)
                headers = self._headers(ep, request, key, ctx, limit)
        except HermesError as exc:
            exc.action_id, exc.capability_id = action_id, cap
            raise
        if recorded is not None:
            return self._replay(ep, cap, action_id, contract, recorded), None
        record_key = None
        if key is not None:
            replay = self._reserve(cap, key, action_id, clean, contract)
            if replay is not None:
                return self._replay(ep, cap, action_id, contract, replay), None
            record_key = key
        invocation = Invocation(cap, ep.id, action_id, contract,
                                lambda inv: self._execute(inv, ep, contract, request, headers, limit, keep_events,
                                                          record_key, decision),
                                key is not None)
        try:
            outcome = call_pipeline(self._pm, "hermes_invocation", invocation=invocation)
        except HermesError as exc:
            exc.action_id, exc.capability_id = action_id, cap
            failed = ActionResult(action_id=action_id, capability_id=cap, status="failed", error=exc,
                                  idempotency_key=key, http_status=exc.http_status,
                                  approval=decision.evidence() if decision else None, recorded_at=time.time())
            self._record(cap, record_key, failed, unsent=_never_sent(exc))
            self._observe(invocation, failed)
            raise
        if not isinstance(outcome, tuple) or len(outcome) != 2:
            raise PluginError("a hermes_invocation hook replaced the result with an unexpected value",
                              details={"hook": "hermes_invocation"}, action_id=action_id, capability_id=cap)
        if isinstance(outcome[1], HermesStream):
            return outcome  # type: ignore[no-any-return]
        result, value = outcome
        self._record(cap, record_key, result, unsent=False)
        self._observe(invocation, result)
        return result, value

    def _check_policy(self, ep: Endpoint, contract: Contract, key: Optional[str],
                      ctx: Optional[ExecutionContext], deadline: Optional[float]) -> None:
        if ep.tenant_id is not None:
            actual = ctx.tenant_id if ctx is not None else None
            if actual != ep.tenant_id:
                raise TenantMismatchError(f"endpoint {ep.id!r} belongs to another tenant",
                                          details={"endpoint_id": ep.id, "actual_tenant": actual or "none"})
        ep.require_key()
        if contract.key_requirement == "required" and key is None:
            raise InvalidInputError(f"{contract.operation} requires an idempotency key",
                                    details={"field": "idempotency_key"})
        if deadline is not None and time.time() >= deadline:
            raise DeadlineExceededError("the deadline passed before the call was sent",
                                        details={"operation": contract.operation, "sent": False})

    def _approval_request(self, cap: str, clean: dict[str, Any], reason: Optional[str], action_id: str,
                          ctx: Optional[ExecutionContext]) -> ApprovalRequest:
        now = time.time()
        return ApprovalRequest(
            id=f"aprq_{uuid.uuid4().hex}", action_id=action_id, capability_id=cap,
            input_snapshot=self.redactor.redact(clean), input_hash=input_hash(cap, clean), reason=reason,
            requested_at=now, expires_at=now + 900.0,
            principal_id=ctx.principal_id if ctx else None, tenant_id=ctx.tenant_id if ctx else None,
        )

    def _approve(self, cap: str, contract: Contract, clean: dict[str, Any], reason: Optional[str],
                 action_id: str, ctx: Optional[ExecutionContext],
                 approval: Optional[ApprovalDecision]) -> Optional[ApprovalDecision]:
        if not contract.requires_approval:
            return None
        request = self._approval_request(cap, clean, reason, action_id, ctx)
        decision = approval
        if decision is None and self._approval_provider is not None:
            try:
                decision = ask(self._approval_provider, request)
            except HermesError:
                raise
            except Exception as exc:
                raise PluginError(f"the approval provider failed: {type(exc).__name__}",
                                  details={"hook": "approval_provider"}) from exc
        if decision is None:
            raise ApprovalRequiredError(f"{contract.operation} needs an approved decision bound to this input",
                                        details={"input_hash": request.input_hash, "approval_request_id": request.id})
        if isinstance(decision, Mapping):  # the AIP JSON shape of a decision
            try:
                decision = ApprovalDecision(**decision)
            except (TypeError, ValueError) as exc:
                raise InvalidInputError(f"approval is not a valid decision: {exc}",
                                        details={"field": "approval"}) from None
        if not isinstance(decision, ApprovalDecision):
            raise InvalidInputError("approval must be an ApprovalDecision", details={"field": "approval"})
        return check(decision, request)  # the decision completed with its evidence

    def _headers(self, ep: Endpoint, request: ProviderRequest, key: Optional[str],
                 ctx: Optional[ExecutionContext], deadline: Optional[float]) -> dict[str, str]:
        headers = {"Authorization": f"Bearer {ep.require_key()}"}
        if ctx is not None:
            headers.update(ctx.headers(deadline))
        elif deadline is not None:
            headers["X-AIP-Deadline-Unix-Ms"] = str(int(deadline * 1000))
        headers.update(request.headers)
        headers.pop("Idempotency-Key", None)
        if key is not None:
            headers["Idempotency-Key"] = key  # the caller's key wins, unchanged on every attempt
        headers["Accept"] = "text/event-stream" if request.stream else "application/json"
        return headers

    def _reserve(self, cap: str, key: str, action_id: str, clean: dict[str, Any],
                 contract: Contract) -> Optional[ActionResult]:
        now = time.time()
        ttl = DELETE_KEY_TTL_SECONDS if contract.key_ttl_ms else self.key_retention
        digest = input_hash(cap, clean)
        record = IdempotencyRecord(capability_id=cap, key=key, action_id=action_id, input_hash=digest,
                                   state="pending", created_at=now, expires_at=now + ttl)
        try:
            existing = self._store.reserve(record)
        except HermesError:
            raise
        except Exception as exc:
            raise PluginError(f"the idempotency store failed to reserve: {type(exc).__name__}",
                              details={"hook": "idempotency_store"}, action_id=action_id, capability_id=cap) from exc
        if existing is None:
            return None
        return self._outcome_of(existing, digest, action_id, cap)

    def _recorded(self, cap: str, key: str, action_id: str, clean: dict[str, Any]) -> Optional[ActionResult]:
        """The outcome already recorded for this key, if any (a pending record raises)."""
        try:
            existing = self._store.get(cap, key)
        except Exception as exc:
            raise PluginError(f"the idempotency store failed to read: {type(exc).__name__}",
                              details={"hook": "idempotency_store"}, action_id=action_id, capability_id=cap) from exc
        if existing is None:
            return None
        return self._outcome_of(existing, input_hash(cap, clean), action_id, cap)

    def _replay(self, ep: Endpoint, cap: str, action_id: str, contract: Contract, replay: ActionResult) -> ActionResult:
        # Replays pass through the invocation hooks too, so tracers see them (marked replayed).
        replayed = Invocation(cap, ep.id, action_id, contract, lambda inv: (replay, None), True)
        replayed.set_attribute("replayed", True)
        call_pipeline(self._pm, "hermes_invocation", invocation=replayed)
        self._observe(replayed, replay)
        return replay

    def _outcome_of(self, existing: IdempotencyRecord, digest: str, action_id: str, cap: str) -> ActionResult:
        details = {"original_action_id": existing.action_id, "state": existing.state}
        if existing.state != COMPLETED or existing.result is None:
            raise OutcomeUnknownError(
                "an earlier call with this idempotency key has no recorded outcome; it will not run again. "
                "Reconcile with action_result(), resolve_pending() or forget_idempotency_key()",
                details=details, action_id=action_id, capability_id=cap)
        if self.strict_idempotency and existing.input_hash != digest:
            raise IdempotencyConflictError("this idempotency key was used for a different input",
                                           details=details, action_id=action_id, capability_id=cap)
        replay = convert.action_result_from_json(existing.result)
        replay.replayed = True
        return replay

    def _record(self, cap: str, key: Optional[str], result: ActionResult, unsent: bool) -> None:
        """Complete the record, failures included; a failure that never reached Hermes gives the key back."""
        if key is None:
            return
        try:
            if unsent and result.status == "failed":
                self._store.forget(cap, key)
            else:
                self._store.complete(cap, key, convert.action_result_to_json(result))
        except Exception as exc:  # the record stays pending: later calls refuse rather than replay
            log.warning(
                "hermes_sdk could not record an idempotency outcome (%s); the key stays pending",
                type(exc).__name__)

    def _observe(self, invocation: Invocation, result: ActionResult,
                 stream_result: Optional[StreamResult] = None) -> None:
        streaming = invocation.contract.streaming
        if not (streaming and invocation.settle_watched) and not observed(self._pm, "hermes_action_result"):
            # Nobody would see the redacted result: skip building it.
            if streaming:
                invocation.settle({})
            return
        if stream_result is not None:
            # Observers and tracers see the stream's outcome, not its events (each would redact anyway).
            summary = convert.stream_result_to_json(attrs.evolve(stream_result, events=[]))
            result = attrs.evolve(result, output=summary)
        redacted = self.redactor.redact(convert.action_result_to_json(result))
        if invocation.contract.streaming:
            invocation.settle(redacted)
        notify(self._pm, "hermes_action_result", invocation=invocation, result=redacted)


def _never_sent(exc: HermesError) -> bool:
    """Known not to have reached Hermes: no original result exists, so the key is given back."""
    return exc.details.get("sent") is False or (exc.http_status is None and not exc.uncertain_outcome)


_ids = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ids.seed)  # a forked child must not repeat its parent's ids


def _new_action_id() -> str:
    # uuid4() reads os.urandom, a syscall that releases the GIL: under threads, every release is a
    # wait to get it back. A per-process generator seeded from urandom (again after fork) is unique
    # enough for an id that is not a secret.
    return f"act_{_ids.getrandbits(128):032x}"


def _chat_input(prompt: Optional[str], query: Optional[str], messages: Optional[list[Any]], model: str,
                session_id: Optional[str], session_key: Optional[str],
                provider_fields: Mapping[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = dict(provider_fields)
    for name, value in (("prompt", prompt), ("query", query), ("messages", messages), ("model", model),
                        ("session_id", session_id), ("session_key", session_key)):
        if value is not None:
            data[name] = value
    return data


def _responses_input(body: Optional[Mapping[str, Any]], session_key: Optional[str],
                     body_fields: Mapping[str, Any]) -> dict[str, Any]:
    if body is not None and not isinstance(body, Mapping):
        raise InvalidInputError("body must be a JSON object", details={"field": "body"})
    clash = sorted(k for k in body_fields if body and k in body and body[k] != body_fields[k])
    if clash:
        # Neither value may be dropped silently: the caller says which one is meant.
        raise InvalidInputError(f"{clash[0]!r} is given in body and as a keyword with different values",
                                details={"field": clash[0]})
    merged = {**(body or {}), **body_fields}
    data: dict[str, Any] = {"body": merged}
    if session_key is not None:
        data["session_key"] = session_key
    return data


def _stored_input(response_id: str, session_key: Optional[str]) -> dict[str, Any]:
    data: dict[str, Any] = {"response_id": response_id}
    if session_key is not None:
        data["session_key"] = session_key
    return data


def _stamped(value: Any, action_id: Optional[str], replayed: bool) -> Any:
    """Tell a typed result which action it belongs to and whether it was replayed."""
    if isinstance(value, HermesStream):
        value.action_id = action_id
        return value
    return attrs.evolve(value, action_id=action_id, replayed=replayed)


def _typed_from_record(operation: str, result: ActionResult) -> Any:
    if CONTRACTS[operation].streaming:
        klass = ChatStream if operation == "chat_stream" else ResponseStream
        return klass.replay(convert.stream_result_from_json(result.output))
    if operation == "chat":
        return convert.chat_completion(result.output, result.session_id)
    if operation == "response_delete":
        return convert.deletion_receipt(result.output)
    return convert.response(result.output, result.session_id)
