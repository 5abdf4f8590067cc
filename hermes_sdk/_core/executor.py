"""Executor: builds the internal call from a spec, an input and :class:`CallOptions`, and runs the stages.

The client's typed methods, every resource and ``invoke()`` come through here; nothing else
builds a :class:`~hermes_sdk._core.call.Call`.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping
from typing import Callable, Optional, TypeVar
from urllib.parse import urlsplit

import attrs

from ..errors import ApprovalRequiredError, HermesError, InvalidInputError, OutcomeUnknownError
from . import convert, server_features, stages
from ._constants import DEFAULT_ENDPOINT_ID
from ._detach import detach
from .admission import CompositeContext
from .approval import ApprovalRequest
from .call import Call
from .capabilities import capability_id, parse_capability_id
from .deadline import Timeout, as_timeout, effective
from .endpoints import Endpoint, ExecutionContext, deadline_epoch, normalize_endpoint_id, seconds_value
from .families import FamilyExecutor, family_executor
from .models import ActionResult, StreamResult
from .operations import OperationSpec
from .operations.common import split_key
from .options import CallOptions
from .runtime import Runtime
from .stages.approval import request_for
from .streaming import HermesStream
from .view import CallView

S = TypeVar("S")
T = TypeVar("T")
DEFAULT_OPTIONS = CallOptions()


class Executor:
    """One client's endpoints, default context and runtime; ``request()`` runs one typed call."""

    __slots__ = ("endpoints", "context", "runtime")

    def __init__(self, endpoints: Mapping[str, Endpoint], context: Optional[ExecutionContext],
                 runtime: Runtime) -> None:
        self.endpoints = endpoints
        self.context = context
        self.runtime = runtime

    def evolve(self, runtime: Runtime) -> "Executor":
        """The same endpoints and context over another runtime (``with_options``)."""
        return Executor(self.endpoints, self.context, runtime)

    def request(self, spec: OperationSpec[T], data: Mapping[str, object], options: CallOptions = DEFAULT_OPTIONS) -> T:
        """Run one typed call: the typed value, or the recorded one when replayed (its failure raised).

        A failure leaves from this frame, which holds no Call: see :mod:`hermes_sdk._core._detach`."""
        try:
            return self._request(spec, data, options)
        except HermesError as exc:
            raise detach(exc)  # noqa: B904 (the same error again: its own cause stays)

    def state(self, kind: Callable[[], S]) -> S:
        """This client's state of the family declared with ``Family(state=kind)``."""
        return self.runtime.registry.state(kind)

    def given_to(self, family: str = "") -> FamilyExecutor:
        """What the family ``family``'s resource (or composite) is given, built-in or plugin family alike:
        a :class:`FamilyExecutor`, from which nothing leads to the endpoints and their keys."""
        return family_executor(self)

    def composite(self, endpoint: Optional[str], input: Mapping[str, object], options: CallOptions,
                  calls: FamilyExecutor) -> CompositeContext:
        """The context a composite operation is given, its calls through ``calls``."""
        return CompositeContext(self, endpoint, input, options, calls)

    def _request(self, spec: OperationSpec[T], data: Mapping[str, object], options: CallOptions) -> T:
        call = self.build(spec, self.endpoint(options.endpoint), data, options)
        server_features.require(self, call)
        result = stages.run(call)
        if call.replay_of is None:
            return call.value  # type: ignore[no-any-return]
        if result.status != "completed" and (not spec.streaming or result.output is None):
            error = result.error if result.error is not None else OutcomeUnknownError(
                "the recorded outcome under this idempotency key is a failure without its error",
                details={"original_action_id": result.action_id, "state": result.status})
            error.details.setdefault("replayed", True)
            raise error
        return spec.typed_from_record(result.output, result.session_id, result.action_id)

    def invoke(self, capability: str, input: Mapping[str, object], options: CallOptions) -> ActionResult:
        """The generic AIP path: failures come back as ``status="failed"`` results, not exceptions."""
        action_id = options.action_id or new_action_id()
        try:
            endpoint_id, operation = parse_capability_id(capability, self.runtime.registry.operations)
            endpoint = self.endpoint(normalize_endpoint_id(endpoint_id))
            if endpoint.id != endpoint_id:
                raise InvalidInputError("capability id must use the normalised endpoint id",
                                        details={"field": "capability_id"})
            registry = self.runtime.registry
            spec = registry.spec(operation, self.load_deadline(options))
            if spec.composite is not None:  # several calls under one capability (the operator)
                key, clean = split_key(input, options.idempotency_key)
                spec.check_input(clean)  # its declared input, before its lifecycle saves or sends anything
                given = attrs.evolve(options, action_id=action_id, endpoint=endpoint.id, idempotency_key=key)
                calls = self.given_to(registry.family_of_operation(operation))
                composite: ActionResult = spec.composite(CompositeContext(self, endpoint.id, clean, given, calls))
                return composite
            call = self.build(spec, endpoint, input, _with_action(options, action_id))
            server_features.require(self, call)
            result = stages.run(call)
        except HermesError as exc:
            exc.action_id = exc.action_id or action_id
            exc.capability_id = exc.capability_id or (capability if isinstance(capability, str) else None)
            status = "pending_approval" if isinstance(exc, ApprovalRequiredError) else "failed"
            return ActionResult(action_id=action_id, capability_id=str(capability), status=status, error=detach(exc),
                                idempotency_key=options.idempotency_key, recorded_at=time.time())
        stream = call.value
        if isinstance(stream, HermesStream):
            failure: Optional[HermesError] = None
            stream_result: Optional[StreamResult] = None
            try:
                stream_result = stream.result()
            except HermesError as exc:  # ended on the SDK's side (an approval it could not answer)
                failure = detach(exc)
            settled = stream.action_result
            if settled is None or stream_result is None:  # settled as failed, or (never) not settled
                return settled if settled is not None else ActionResult(
                    action_id=action_id, capability_id=str(capability), status="failed", error=failure,
                    idempotency_key=options.idempotency_key, recorded_at=time.time())
            if settled.output is None or not settled.output.get("events") and stream_result.events:
                settled.output = convert.stream_result_to_json(stream_result)
            return settled
        return result

    def load_deadline(self, options: CallOptions) -> Optional[float]:
        """How long a call may wait for another thread's load of its family: its deadline (or its
        context's), else now plus its total timeout; None when it has neither."""
        ctx = options.context if options.context is not None else self.context
        limit = deadline_epoch(options.deadline)
        if limit is None and isinstance(ctx, ExecutionContext):
            limit = ctx.deadline
        total = effective(as_timeout(options.timeout), self.runtime.timeout).total
        if total is not None and (limit is None or time.time() + total < limit):
            limit = time.time() + total
        return limit

    def build(self, spec: OperationSpec[T], endpoint: Endpoint, input: object, options: CallOptions) -> Call:
        """Validate everything the caller gave and build the Call; nothing is sent here."""
        action_id = options.action_id or new_action_id()
        cap = capability_id(endpoint.id, spec.name)
        now = time.time()
        try:
            limits = effective(as_timeout(options.timeout), self.runtime.timeout)
            idle = None if options.idle_timeout is None else seconds_value(options.idle_timeout, "idle_timeout",
                                                                           positive=True)
            key, clean = split_key(input, options.idempotency_key)
            request = spec.request(clean)
            ctx = options.context if options.context is not None else self.context
            if ctx is not None and not isinstance(ctx, ExecutionContext):
                raise InvalidInputError("context must be an ExecutionContext", details={"field": "context"})
            limit, ends_at, bound = resolve_deadline(spec.name, spec.timeout, options, ctx, limits, now)
        except HermesError as exc:
            exc.action_id, exc.capability_id = action_id, cap
            raise
        contract = spec.contract
        attributes: dict[str, object] = {
            "capability_id": cap, "endpoint_id": endpoint.id, "operation": contract.operation,
            "streaming": contract.streaming, "idempotency": key is not None, **server_attributes(endpoint)}
        if spec.describe is not None:
            attributes.update(spec.describe(clean))
        view = CallView(spec.name, cap, action_id, contract, attributes)
        return Call(endpoint=endpoint, spec=spec, input=clean, request=request, action_id=action_id,
                    capability_id=cap, runtime=self.runtime, view=view, key=key, context=ctx, deadline=limit,
                    ends_at=ends_at, read_timeout=limits.read, connect_timeout=limits.connect,
                    idle_timeout=idle, approval=options.approval, reason=options.reason,
                    keep_events=options.keep_events, bound=bound)

    def endpoint(self, endpoint: Optional[str]) -> Endpoint:
        """The endpoint a call names, or the only (else the ``default``) one."""
        if endpoint is None:
            if len(self.endpoints) == 1:
                return next(iter(self.endpoints.values()))
            if DEFAULT_ENDPOINT_ID in self.endpoints:
                return self.endpoints[DEFAULT_ENDPOINT_ID]
            raise InvalidInputError("several endpoints are configured: pass endpoint=",
                                    details={"field": "endpoint"})
        key = normalize_endpoint_id(endpoint)
        found = self.endpoints.get(key)
        if found is None:
            raise InvalidInputError(f"unknown endpoint {key!r}", details={"field": "endpoint"})
        return found

    def approval_request(self, operation_or_capability: str, input: Mapping[str, object], *,
                         reason: Optional[str] = None, action_id: Optional[str] = None,
                         endpoint: Optional[str] = None, context: Optional[ExecutionContext] = None,
                         identifiers: Optional[Mapping[str, str]] = None) -> ApprovalRequest:
        """The ApprovalRequest an approval-gated call with this input would ask for (``context``: the
        principal and tenant it names, the client's by default; ``identifiers``: shown besides the ids)."""
        if operation_or_capability in self.runtime.registry.operations:
            cap = capability_id(self.endpoint(endpoint).id, operation_or_capability)
        else:
            cap = operation_or_capability
            parse_capability_id(cap, self.runtime.registry.operations)
        return request_for(cap, dict(input), reason, action_id or new_action_id(),
                           context if context is not None else self.context, self.runtime.redactor,
                           identifiers=identifiers)


_DEADLINE = ("deadline", "the call's deadline=", "pass a later deadline=")
_CONTEXT = ("context", "the context's deadline (ExecutionContext(deadline=...))",
            "give the context a later deadline, or the call its own deadline=")


Bound = tuple[str, str, str]  # which bound ends a call, and how to change it: (source, what, fix)


def resolve_deadline(operation: str, contract_timeout: float, options: CallOptions,
                     ctx: Optional[ExecutionContext], limits: Timeout,
                     now: float) -> tuple[Optional[float], float, Bound]:
    """``(deadline, ends_at, bound)`` of a call: the earliest of its ``deadline=`` (else its context's)
    and now plus its total timeout; without either, the operation's published contract timeout
    bounds the call in wall-clock time (``ends_at``) and no deadline is sent."""
    limit = deadline_epoch(options.deadline)
    bound = _DEADLINE if limit is not None else None
    if limit is None and ctx is not None and ctx.deadline is not None:
        limit, bound = ctx.deadline, _CONTEXT
    if limits.total is not None and (limit is None or now + limits.total < limit):
        # A caller's relative timeout is a deadline too; the earlier wins.
        own = as_timeout(options.timeout)
        limit, bound = now + limits.total, _timeout_bound(limits.total, own is not None and own.total is not None)
    if limit is None or bound is None:
        return None, now + contract_timeout, (
            "default", f"the published default of {contract_timeout:g} s for {operation} (sla.timeout_ms)",
            "pass timeout= or deadline= on the call, or build the client with HermesClient(timeout=...)")
    return limit, limit, bound


def _timeout_bound(total: float, own: bool) -> Bound:
    if own:
        return ("timeout", f"the call's timeout={total:g} s", "pass a larger timeout= (or a deadline=)")
    return ("client_timeout", f"the client's timeout={total:g} s (HermesClient(timeout=...))",
            "raise it with HermesClient(timeout=...) or client.with_options(timeout=...), or pass timeout= "
            "on the call")


def _with_action(options: CallOptions, action_id: str) -> CallOptions:
    return attrs.evolve(options, action_id=action_id)


#: ``server.address`` / ``server.port`` per origin, parsed once (bounded: one entry per endpoint URL
#: a process uses, and dropped past a few hundred, so a process that builds endpoints per tenant
#: does not grow it forever).
_servers: dict[str, dict[str, object]] = {}
_SERVERS_MAX = 256


def server_attributes(endpoint: Endpoint) -> dict[str, object]:
    """``server.address`` and ``server.port`` of an endpoint (parsed once per origin)."""
    found = _servers.get(endpoint.base_url)
    if found is None:
        parts = urlsplit(endpoint.base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if len(_servers) >= _SERVERS_MAX:
            _servers.clear()
        found = _servers[endpoint.base_url] = {"server.address": parts.hostname or "", "server.port": port}
    return found


_ids = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ids.seed)  # a forked child must not repeat its parent's ids


def new_action_id() -> str:
    """A new AIP action id.

    uuid4() reads os.urandom, a syscall that releases the GIL: under threads, every release is a
    wait to get it back. A per-process generator seeded from urandom (again after fork) is unique
    enough for an id that is not a secret.
    """
    return f"act_{_ids.getrandbits(128):032x}"
