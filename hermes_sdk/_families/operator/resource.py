"""``client.operate``: the connector's governed operator run on ``/v1/runs`` (spec section 9.4).

An operator action starts a run (approval-gated, key required), follows it, and ends in one of
``completed``, ``failed``, ``cancelled``, ``requires_human`` or ``outcome_unknown``. Its state
(action id → run id, status, the pending approval) is kept in the client's idempotency store
under its own namespace, so ``operate(resume=<action_id>, choice=...)`` works from any process
that shares the store (a SQLite file, Redis...). A start that may have reached Hermes without a
recorded run id is never sent again.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Optional, cast

import attrs

from hermes_sdk._families.runs import Run, Runs
from hermes_sdk._families.runs.events import ApprovalRequested
from hermes_sdk._families.runs.state import OPERATOR_STATE_NAMESPACE, mark_operator_run, scope_digest
from hermes_sdk._families.runs.types import RunResult, RunStarted, RunStatus
from hermes_sdk.errors import (
    STREAM_FAILED,
    ApprovalNotActiveError,
    ApprovalNotPendingError,
    DeadlineExceededError,
    HermesError,
    IdempotencyConflictError,
    InvalidInputError,
    OutcomeUnknownError,
    PluginError,
    RunNotFoundError,
    StreamError,
)
from hermes_sdk.plugin import (
    COMPLETED,
    DELETE_KEY_TTL_SECONDS,
    REQUIRED,
    ActionResult,
    ApprovalDecision,
    ApprovalProvider,
    ApprovalRequest,
    CallOptions,
    CompositeContext,
    Deadline,
    ExecutionContext,
    Family,
    FamilyExecutor,
    IdempotencyRecord,
    ProviderAnswer,
    TimeoutLike,
    as_timeout,
    capability_id,
    deadline_epoch,
    new_action_id,
    recorded_result,
)
from hermes_sdk.plugin import ask_approval as ask

from .operations import OPERATOR, OPERATOR_RESUME, OPERATOR_START
from .types import OperatorResult

POLL_FIRST = 0.25
POLL_MAX = 2.0
_FINAL = ("completed", "failed", "cancelled")
#: The state of an action whose start was not answered yet (what scopes its start record).
_STARTING = "starting"


class Operator:
    """The operator lifecycle over one executor (``client.operate`` and ``invoke()`` use it).

    Its state lives in the store under a namespace scoped to the endpoint (its id and Hermes' URL)
    and the tenant of the call's context: an action id is found only under the scope it was
    started in; from another it is "not found", never resumed.
    """

    def __init__(self, ctx: CompositeContext) -> None:
        self._ctx = ctx
        self._runs = ctx.resource(Runs).operator_gated()
        context = ctx.options.context if ctx.options.context is not None else ctx.context
        self._tenant = context.tenant_id if context is not None else None

    def _state_key(self) -> str:
        ctx = self._ctx
        tenant = self._tenant if self._tenant is not None else ctx.tenant_id
        return f"{OPERATOR_STATE_NAMESPACE}:{ctx.endpoint_id}:{scope_digest(ctx.base_url, tenant)}"

    # ------------------------------------------------------------ state in the store

    def load(self, action_id: str) -> Optional[dict[str, object]]:
        """The saved state of an operator action in this scope, or None."""
        try:
            record = self._ctx.store.get(self._state_key(), action_id)
        except Exception as exc:
            raise PluginError(f"the idempotency store failed to read: {type(exc).__name__}",
                              details={"hook": "idempotency_store"}) from exc
        return dict(record.result) if record is not None and record.result is not None else None

    def save(self, result: OperatorResult, input_hash: str = "") -> None:
        """Write the action's state (action id → run id, status, pending approval)."""
        store, ns, now = self._ctx.store, self._state_key(), time.time()
        if result.run_id is not None:
            mark_operator_run(store, result.run_id)
        record = IdempotencyRecord(capability_id=ns, key=result.action_id, action_id=f"opst_{result.action_id}",
                                   input_hash=input_hash, state="pending", created_at=now,
                                   expires_at=now + DELETE_KEY_TTL_SECONDS)
        try:
            store.reserve(record)
            store.complete(ns, result.action_id, result.to_json())
        except Exception as exc:
            raise PluginError(f"the idempotency store failed to record the operator state: {type(exc).__name__}",
                              details={"hook": "idempotency_store"}) from exc

    # ------------------------------------------------------------ start

    def start(self, data: Mapping[str, object], options: CallOptions, provider: Optional[ApprovalProvider],
              until: float) -> OperatorResult:
        action_id = options.action_id or new_action_id()
        options = attrs.evolve(options, action_id=action_id)
        # Saved first: a crash after the start is sent leaves its start record findable in this scope only.
        self.save(OperatorResult(_STARTING, action_id))
        try:
            started: RunStarted = self._ctx.request(OPERATOR_START, {**data, "_aip": {"action_id": action_id}},
                                                   options)
        except OutcomeUnknownError as exc:
            original = str(exc.details.get("original_action_id") or action_id)
            return OperatorResult("outcome_unknown", original, error=exc, replayed=True)
        except HermesError as exc:
            if exc.uncertain_outcome:  # it may have started a run whose id nobody recorded: never again
                found = OperatorResult("outcome_unknown", action_id, error=exc,
                                       replayed=bool(exc.details.get("replayed")))
                if not exc.details.get("replayed"):
                    self.save(found)
                return found
            if exc.http_status is not None:  # Hermes refused the start: no run exists
                exc.details.setdefault("reason", "operator_start_rejected")
                return OperatorResult("failed", action_id, error=exc)
            raise
        original = started.action_id or action_id
        if started.replayed:
            saved = self.load(original)
            if saved is None:  # the key's first action was started under another endpoint or tenant
                raise IdempotencyConflictError(
                    "this idempotency key started an operator action under another endpoint or tenant; nothing "
                    "was sent. Use a new key", details={"field": "idempotency_key", "reason": "another_scope"})
            known = OperatorResult.from_json(saved, replayed=True)
            if known.status == _STARTING:
                known = OperatorResult("running", original, run_id=started.run_id,
                                       session_id=f"aip-operator-{original}", replayed=True)
                self.save(known)
            if known.status in _FINAL or known.status == "outcome_unknown":
                return known
            return self.poll(known, until, options.context)
        state = OperatorResult("running", original, run_id=started.run_id, session_id=f"aip-operator-{original}")
        self.save(state)
        objective = data.get("objective")  # a non-empty string (checked when the start was built)
        run = Run(self._runs, started, endpoint=self._ctx.endpoint_id,
                  approval_provider=_OperatorProvider.of(provider, original),
                  deadline=until, context=options.context, objective=objective if isinstance(objective, str) else None,
                  session_id=state.session_id)
        run._subscribe()
        try:
            for event in run.events():
                if isinstance(event, ApprovalRequested) and run.pending_approval is not None:
                    waiting = attrs.evolve(state, status="requires_human",
                                           pending_approval=_pending_of(run.pending_approval))
                    self.save(waiting)
                    return waiting
            if run.result is not None:
                return self.finish(state, run.result)
        finally:
            run.close()  # the run goes on at Hermes; whoever resumes follows it by polling
        return self.poll(state, until, options.context)

    # ------------------------------------------------------------ resume

    def resume(self, action_id: str, choice: Optional[str], resolve_all: bool, options: CallOptions,
               until: float) -> OperatorResult:
        state = self.load(action_id)
        if state is None:
            raise InvalidInputError("no operator action with that id for this endpoint and tenant in this client's "
                                    "idempotency store", details={"field": "resume", "reason": "not_found"})
        known = OperatorResult.from_json(state, replayed=True)
        if known.status == _STARTING:
            known = self._from_start_record(action_id)
            if known.run_id is not None:
                self.save(known)
        if known.status in _FINAL or known.status == "outcome_unknown" or known.run_id is None:
            return known
        if choice is not None:
            data = {"resume": {"source_action_id": action_id, "choice": choice, "resolve_all": bool(resolve_all)},
                    "_aip": {"run_id": known.run_id}}
            try:
                self._ctx.request(OPERATOR_RESUME, data, options)
            except (ApprovalNotPendingError, ApprovalNotActiveError):
                pass  # answered elsewhere, or the run moved on / ended: follow it to see
            except RunNotFoundError as exc:
                return self._lost(known, exc)
            known = attrs.evolve(known, status="running", pending_approval=None, replayed=False)
            self.save(known)
        return self.poll(attrs.evolve(known, replayed=False), until, options.context)

    def _from_start_record(self, action_id: str) -> OperatorResult:
        """The state of an action of this scope whose start's answer was never saved, from its start record."""
        record = self._ctx.store.get_by_action(action_id)
        if record is None or record.capability_id != capability_id(self._ctx.endpoint_id, "operator"):
            return OperatorResult("failed", action_id, replayed=True, error=InvalidInputError(
                "the operator start was refused before it was sent", details={"field": "resume",
                                                                              "reason": "never_started"}))
        if record.state != COMPLETED or record.result is None:
            return OperatorResult("outcome_unknown", action_id, replayed=True, error=OutcomeUnknownError(
                "the operator start has no recorded outcome; it is never sent again",
                details={"original_action_id": action_id, "state": record.state}))
        result = recorded_result(record.result)
        output = result.output if isinstance(result.output, Mapping) else {}
        if result.status != "completed" or not isinstance(output.get("run_id"), str):
            uncertain = result.error is not None and result.error.uncertain_outcome
            return OperatorResult("outcome_unknown" if uncertain else "failed", action_id, error=result.error,
                                  replayed=True)
        return OperatorResult("running", action_id, run_id=output["run_id"], session_id=f"aip-operator-{action_id}")

    # ------------------------------------------------------------ following

    def poll(self, state: OperatorResult, until: float,
             context: Optional[ExecutionContext]) -> OperatorResult:
        """Follow the run by its status until it ends, waits for approval, or ``until`` passes."""
        assert state.run_id is not None
        interval = POLL_FIRST
        while True:
            try:
                status: Optional[RunStatus] = self._runs.get(state.run_id, endpoint=self._ctx.endpoint_id,
                                                             context=context,
                                                             deadline=until)
            except RunNotFoundError as exc:
                return self._lost(state, exc)
            except HermesError as exc:
                if time.time() >= until or not (exc.retryable or exc.category in ("temporary", "transport")):
                    return self._lost(state, exc)
                status = None
            if status is not None and status.terminal:
                return self.finish(state, RunResult(run_id=status.run_id, status=status.status,
                                                              output=status.output, error=status.error))
            if status is not None and status.status == "waiting_for_approval":
                pending = state.pending_approval or {"run_id": state.run_id, "status": status.status,
                                                     "last_event": status.last_event}
                waiting = attrs.evolve(state, status="requires_human", pending_approval=pending)
                self.save(waiting)
                return waiting
            delay = min(interval, until - time.time())
            if delay <= 0:
                return self._lost(state, DeadlineExceededError(
                    "the operator's deadline passed while the run went on; operate(resume=action_id) follows "
                    "it again", details={"run_id": state.run_id, "operation": "operator"}), save=False)
            time.sleep(delay)
            interval = min(interval * 2, POLL_MAX)

    def finish(self, state: OperatorResult, result: RunResult) -> OperatorResult:
        error = None
        if result.status == "failed":
            error = StreamError(f"the operator run failed: {result.error or 'no reason given'}", code=STREAM_FAILED,
                                details={"run_id": result.run_id, "run_error": result.error,
                                         "operation": "operator"})
        output = result.output if result.output is not None else (result.text or None)
        final = attrs.evolve(state, status=result.status, output=output if result.status == "completed" else None,
                             pending_approval=None, error=error, replayed=False)
        self.save(final)
        return final

    def _lost(self, state: OperatorResult, error: HermesError,
              save: bool = True) -> OperatorResult:
        """The run's end is unknown to this client (gone from Hermes, unreachable, or still going)."""
        found = attrs.evolve(state, status="outcome_unknown", error=error, replayed=False)
        if save and isinstance(error, RunNotFoundError):
            self.save(found)
        return found


class _OperatorProvider:
    """The run's approval provider, its requests naming the operator action they belong to
    (``identifiers["operator_action_id"]``), so a provider that leaves one undecided can have a
    person's later decision resume the action (``operate(resume=...)``, e.g. hermes-sdk-inbox)."""

    def __init__(self, provider: ApprovalProvider, action_id: str) -> None:
        self._provider = provider
        self._action_id = action_id

    @classmethod
    def of(cls, provider: Optional[ApprovalProvider], action_id: str) -> Optional[_OperatorProvider]:
        return None if provider is None else cls(provider, action_id)

    def request_approval(self, request: ApprovalRequest) -> ProviderAnswer:
        tagged = attrs.evolve(request, identifiers={**request.identifiers, "operator_action_id": self._action_id})
        return ask(self._provider, tagged)


def _pending_of(event: ApprovalRequested) -> dict[str, object]:
    return {"run_id": event.run_id, "command": event.command, "description": event.description,
            "pattern_key": event.pattern_key, "choices": list(event.choices), "event": dict(event.raw)}


def _until(deadline: Deadline, timeout: TimeoutLike, context: Optional[ExecutionContext]) -> float:
    limit = deadline_epoch(deadline)
    if limit is None and context is not None:
        limit = context.deadline
    bound = as_timeout(timeout)
    total = bound.total if bound is not None else None
    end = time.time() + (total if total is not None else OPERATOR.timeout)
    return end if limit is None else min(limit, end)


def _input(objective: Optional[str], context: object, constraints: Optional[Mapping[str, object]],
           candidates: Optional[Sequence[str]]) -> dict[str, object]:
    data: dict[str, object] = {"objective": objective}
    for name, value in (("context", context), ("constraints", constraints), ("candidate_capabilities", candidates)):
        if value is not None:
            data[name] = value
    return data


def invoke_operator(ctx: CompositeContext) -> ActionResult:
    """``invoke("cap:hermes_agent:<ep>:operator", input)``: the whole governed lifecycle, as an ActionResult
    (``requires_human`` and ``outcome_unknown`` are statuses of their own). ``invoke()`` took the key
    off the input (``ctx.options.idempotency_key``) and set the action id and the endpoint."""
    operator = Operator(ctx)
    options = ctx.options
    until = _until(options.deadline, options.timeout, options.context)
    data = {k: v for k, v in ctx.input.items() if k != "_aip"}
    if "resume" in data:
        OPERATOR.check_input(data)  # validated before anything is read or sent
        resume = cast(Mapping[str, object], data["resume"])  # an object whose id and choice are strings (checked)
        result = operator.resume(str(resume["source_action_id"]), str(resume["choice"]),
                                 bool(resume.get("resolve_all")), options, until)
    else:
        result = operator.start(data, options, ctx.approval_provider, until)
    return ActionResult(action_id=result.action_id, capability_id=f"cap:hermes_agent:{ctx.endpoint_id}:operator",
                        status=result.status, output=result.to_json(), error=result.error, replayed=result.replayed,
                        idempotency_key=options.idempotency_key, session_id=result.session_id,
                        recorded_at=time.time())


def operate(ex: FamilyExecutor, objective: Optional[str] = None, *, resume: Optional[str] = None,
            choice: Optional[str] = None, context: object = None, constraints: Optional[Mapping[str, object]] = None,
            candidate_capabilities: Optional[list[str]] = None, resolve_all: bool = False,
            idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
            reason: Optional[str] = None, approval_provider: Optional[ApprovalProvider] = None,
            endpoint: Optional[str] = None, action_id: Optional[str] = None,
            execution_context: Optional[ExecutionContext] = None,
            deadline: Deadline = None, timeout: TimeoutLike = None) -> OperatorResult:
    """``client.operate(...)`` (:class:`~.methods.OperatorMethods`), run on ``ex``."""
    if (objective is None) == (resume is None):
        raise InvalidInputError("give objective= to start an operator action or resume= to continue one",
                                details={"field": "objective"})
    ctx = execution_context if execution_context is not None else ex.context
    until = _until(deadline, timeout, ctx)
    key = None if idempotency_key is REQUIRED else idempotency_key
    options = CallOptions(endpoint=endpoint, idempotency_key=key, action_id=action_id,
                          context=execution_context, deadline=deadline, approval=approval, reason=reason)
    operator = Operator(ex.composite(endpoint, {}, options))
    if resume is not None:
        if objective is not None or constraints is not None or context is not None:
            raise InvalidInputError("a resume takes only resume=, choice= and resolve_all=",
                                    details={"field": "resume"})
        if choice is not None:
            OPERATOR.check_input({"resume": {"source_action_id": resume, "choice": choice,
                                                   "resolve_all": resolve_all}})
        elif not isinstance(resume, str) or not resume:
            raise InvalidInputError("resume must be an operator action id", details={"field": "resume"})
        return operator.resume(resume, choice, resolve_all, options, until)
    if choice is not None:
        raise InvalidInputError("choice= answers a pending approval: pass it with resume=",
                                details={"field": "choice"})
    data = _input(objective, context, constraints, candidate_capabilities)
    OPERATOR.check_input(data)
    provider = approval_provider if approval_provider is not None else ex.approval_provider
    return operator.start(data, options, provider, until)


FAMILY: Family[None] = Family("operator", (attrs.evolve(OPERATOR, composite=invoke_operator),))
