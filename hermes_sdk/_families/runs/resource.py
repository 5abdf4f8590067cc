"""``client.runs``: durable agent runs (``/v1/runs``): start, follow, approve, stop."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Optional, Union

import attrs

from hermes_sdk.errors import HermesError, OutcomeUnknownError
from hermes_sdk.plugin import (
    REQUIRED,
    ApprovalProvider,
    ApprovalRequest,
    CallOptions,
    CallTimeout,
    Deadline,
    ExecutionContext,
    FamilyExecutor,
    OperationSpec,
    TimeoutLike,
    deadline_epoch,
    visible,
)

from .operations import (
    RUN_APPROVAL,
    RUN_APPROVAL_OF_OPERATOR,
    RUN_EVENTS,
    RUN_EVENTS_READ_TIMEOUT,
    RUN_GET,
    RUN_START,
    RUN_STEER,
    RUN_STOP,
)
from .run import Run, command_unknown, objective_of
from .state import RunsState
from .types import ApprovalAnswer, RunEventStream, RunStarted, RunStatus, SteerAnswer

START_FIELDS = ("instructions", "session_id", "session_key", "conversation_history", "previous_response_id",
                "model")
#: A run's ``input``: the user message, or a list of ``{role, content}`` messages.
RunInput = Union[str, Sequence[Mapping[str, object]]]


class Runs:
    """Durable runs: the agent runs tools, stops for approval and survives a client disconnect."""

    _approval_spec: OperationSpec[ApprovalAnswer] = RUN_APPROVAL

    def __init__(self, executor: FamilyExecutor) -> None:
        self._executor = executor
        self._state = executor.state(RunsState)

    def operator_gated(self) -> "Runs":
        """These runs as an operator action's own follower sees them: its approval provider is the
        operator's gate, so its answers go out (``client.runs.approve`` refuses an operator's run)."""
        gated = Runs(self._executor)
        gated._approval_spec = RUN_APPROVAL_OF_OPERATOR
        return gated

    @property
    def allow_permanent_approvals(self) -> bool:
        """Whether the run approval choice ``always`` may be sent."""
        return self._executor.allow_permanent_approvals

    @property
    def approval_provider(self) -> Optional[ApprovalProvider]:
        """The client's approval provider (what a run's or a chat stream's requests go to by default)."""
        return self._executor.approval_provider

    def start(self, input: RunInput = REQUIRED, *, idempotency_key: str = REQUIRED,
              instructions: Optional[str] = None, session_id: Optional[str] = None, session_key: Optional[str] = None,
              conversation_history: Optional[Sequence[Mapping[str, object]]] = None,
              previous_response_id: Optional[str] = None, model: Optional[str] = None,
              approval_provider: Optional[ApprovalProvider] = None, endpoint: Optional[str] = None,
              action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
              deadline: Deadline = None, timeout: TimeoutLike = None) -> Run:
        """Start a durable run (``POST /v1/runs``) and subscribe to its events at once.

        The key is required and the SDK's own store makes it one run per key: a replay returns the
        same run (``run.replayed``, nothing sent, followed by polling). Hermes 0.19 and 0.20 ignore
        ``Idempotency-Key`` on runs, so there a key whose first call lost its 202 (a broken
        connection, a crash) raises OutcomeUnknownError. Hermes 0.21+ keeps run keys itself for
        24 hours (``/v1/capabilities`` lists ``runs_idempotency``): there the start is sent again
        with the same key and the server answers with the run it already started
        (``started.server_replayed``), or starts it if the first never arrived: one run either way.
        The header carries the key unchanged when it is 1-255 visible ASCII characters (the
        server's rule), else ``sha256-<hex of its UTF-8>``. Follow with ``run.events()`` or
        ``run.wait()``; approval requests go to ``approval_provider`` (default: the client's).

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
            timeout: bounds the start call only (seconds or a :class:`CallTimeout`).
        """
        data: dict[str, object] = {"input": None if input is REQUIRED else input}
        given = dict(zip(START_FIELDS, (instructions, session_id, session_key, conversation_history,
                                        previous_response_id, model)))
        data.update({name: value for name, value in given.items() if value is not None})
        key = None if idempotency_key is REQUIRED else idempotency_key
        options = CallOptions(endpoint=endpoint, idempotency_key=key, action_id=action_id, context=context,
                              deadline=deadline, timeout=timeout)
        try:
            started: RunStarted = self._executor.request(RUN_START, data, options)
        except HermesError as exc:
            if key is None or not self._server_replays(exc, endpoint):
                raise
            # The server keeps the key: resend it, and the server answers with the run it started.
            self._executor.forget(RUN_START.name, key, endpoint)
            started = self._executor.request(RUN_START, data, options)
        provider = approval_provider if approval_provider is not None else self._executor.approval_provider
        limit = deadline_epoch(deadline)
        ctx = context if context is not None else self._executor.context
        if limit is None and ctx is not None:
            limit = ctx.deadline
        run = Run(self, started, endpoint=endpoint, approval_provider=provider, deadline=limit, context=context,
                  objective=objective_of(input), session_id=session_id)
        run._subscribe()  # early: Hermes sweeps an unsubscribed buffer 300 s after the run was created
        return run

    def _server_replays(self, exc: HermesError, endpoint: Optional[str]) -> bool:
        """Whether a start whose outcome is unknown (lost 202, or a pending record) may be resent
        because the server itself dedupes run keys (0.21+); asking the server may fail: then no."""
        if not isinstance(exc, OutcomeUnknownError) and not exc.uncertain_outcome:
            return False
        if exc.details.get("started") is False or exc.details.get("before_agent_work") is True:
            return False  # refused before any work: nothing to ask the server for, the key is free
        try:
            return self._executor.server_features(endpoint).runs_idempotency
        except HermesError:
            return False

    def steer(self, run_id: str, text: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
              context: Optional[ExecutionContext] = None, deadline: Deadline = None,
              timeout: TimeoutLike = None) -> SteerAnswer:
        """Send a message to a running agent (``POST /v1/runs/{run_id}/steer``, Hermes 0.20+).

        The agent takes it in at its next step and the run's events show ``run.steered``. Not
        retried (it is a message to the agent). A server whose ``/v1/capabilities`` does not list
        ``run_steer`` (0.19) is refused before anything is sent.

        Raises:
            UnsupportedByServerError: the server has no steer route (nothing sent).
            SteerNotAcceptedError: 409: the run is not running or its agent did not take it.
            RunNotFoundError: an unknown or finished run.
            InvalidInputError: ``text`` is empty or not a string (nothing sent).
        """
        answer: SteerAnswer = self._executor.request(RUN_STEER, {"run_id": run_id, "input": text}, CallOptions(
            endpoint=endpoint, action_id=action_id, context=context, deadline=deadline, timeout=timeout))
        return answer if answer.run_id else attrs.evolve(answer, run_id=run_id)

    def get(self, run_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
            context: Optional[ExecutionContext] = None, deadline: Deadline = None,
            timeout: TimeoutLike = None) -> RunStatus:
        """The run object (``GET /v1/runs/{run_id}``); retried like ``response_get``.

        RunNotFoundError for an unknown id (or one Hermes dropped: finished runs live one hour,
        and none survive a restart).
        """
        return self._executor.request(RUN_GET, {"run_id": run_id}, CallOptions(
            endpoint=endpoint, action_id=action_id, context=context, deadline=deadline, timeout=timeout))

    def stop(self, run_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
             context: Optional[ExecutionContext] = None, deadline: Deadline = None,
             timeout: TimeoutLike = None) -> RunStatus:
        """Stop a run (``POST /v1/runs/{run_id}/stop``): status ``stopping``, then ``cancelled``.

        From this call on, this client sends no approval for the run (RunStoppedError): Hermes
        executed a command approved right after a stop. A finished run answers RunNotFoundError.
        """
        return self._executor.request(RUN_STOP, {"run_id": run_id}, CallOptions(
            endpoint=endpoint, action_id=action_id, context=context, deadline=deadline, timeout=timeout))

    def approve(self, run_id: str, choice: str, *, resolve_all: bool = False, request_id: Optional[str] = None,
                endpoint: Optional[str] = None, action_id: Optional[str] = None,
                context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                timeout: TimeoutLike = None) -> ApprovalAnswer:
        """Answer a run's pending approval (``POST /v1/runs/{run_id}/approval``).

        Args:
            choice: ``once``, ``session`` (this run), ``deny``, or ``always`` (only with
                ``allow_permanent_approvals=True``).
            resolve_all: answer every request queued for the run.
            request_id: the ``approval.request``'s ``request_id`` (0.20+): Hermes 0.21+ resolves
                exactly that request; 0.19 and 0.20 ignore it and resolve the oldest.

        Raises:
            RunStoppedError: this client stopped the run (nothing sent).
            OperatorRunError: ``client.operate`` started the run: answer it with
                ``operate(resume=..., choice=..., approval=...)``; nothing was sent.
            InvalidApprovalChoiceError, ApprovalNotPendingError, ApprovalNotActiveError: Hermes'
                400 ``invalid_approval_choice`` and 409 ``approval_not_pending`` / ``approval_not_active``.
            StaleApprovalError: 409 for a ``request_id`` that is no longer pending (0.21+); its
                ``request_id`` names it.
        """
        data: dict[str, object] = {"run_id": run_id, "choice": choice}
        if resolve_all:
            data["all"] = True
        if request_id is not None:
            data["request_id"] = request_id
        return self._executor.request(self._approval_spec, data, CallOptions(
            endpoint=endpoint, action_id=action_id, context=context, deadline=deadline, timeout=timeout))

    def approval_request(self, run_id: str, command: object, *, reason: Optional[str] = None,
                         endpoint: Optional[str] = None, pattern_key: Optional[str] = None,
                         session_id: Optional[str] = None, objective: Optional[str] = None,
                         context: Optional[ExecutionContext] = None) -> ApprovalRequest:
        """The ApprovalRequest a run's approval request becomes: capability ``run_approval``, input
        ``{run_id, command}`` (bound by its hash), with the same evidence and TTL rules as deletes.

        The approver must see what it approves: the snapshot's ``command`` is every byte of the
        command but the values of secrets (:meth:`~hermes_sdk.Redactor.command`), with control,
        escape, bidi and invisible characters written out (:func:`~hermes_sdk.plugin.visible`), as
        are ``reason`` (Hermes' description) and the ``pattern_key`` (``recursive delete``, ...) in
        ``identifiers`` beside ``run_id`` and the run's ``session_id``; ``operation`` is
        ``run_approval``. ``objective`` (what the run was asked to do) is shown through the redactor
        too; principal and tenant come from ``context`` (the run's), else the client's. Ids, paths
        and names in the command are shown (only logs hide ids); when the client's redaction policy
        hides more than a secret's value, ``fully_shown`` is False and an approval without
        ``blind=True`` is answered ``deny``. A command Hermes sent as something other than a
        non-empty string (a list, an object, null, nothing) is shown as its JSON, not fully shown,
        and answered ``deny`` whatever the approver says (nobody saw what would run).
        """
        ex = self._executor
        extra = {name: visible(value) for name, value in (("pattern_key", pattern_key), ("session_id", session_id))
                 if value}
        shown_reason = visible(reason) if reason else "the agent asked to run a command"
        request = ex.approval_request(RUN_APPROVAL.name, {"run_id": run_id, "command": command}, shown_reason,
                                      endpoint=endpoint, context=context, identifiers=extra or None)
        unknown = command_unknown(command)
        not_shown: Optional[str]
        if unknown is not None:  # shown as sent (JSON), never as an empty command shown whole
            text = ex.command_view(json.dumps(command, ensure_ascii=False, sort_keys=True, default=repr)).text
            fully_shown, not_shown = False, unknown
        else:
            text, fully_shown, not_shown = ex.command_view(str(command))
        return attrs.evolve(request, input_snapshot={**request.input_snapshot, "command": visible(text)},
                            objective=visible(ex.redact(objective, "objective")) if objective else None,
                            fully_shown=fully_shown, not_shown=not_shown)

    def mark_stopped(self, run_id: str) -> None:
        """Refuse every later approval for the run (as ``stop`` does before it sends)."""
        self._state.stopped.add(run_id)

    def follow(self, run: Run) -> None:
        """Note the handle that holds a run's one events subscription (until it is dropped)."""
        self._state.followed[run.id] = run

    def client_closed(self) -> bool:
        """Whether this client was closed (its pool is): an approval answer is not tried again."""
        return self._executor.closed

    def stopped(self, run_id: str) -> bool:
        """Whether this client asked to stop the run (no approval is sent to it from then on)."""
        return run_id in self._state.stopped

    def _subscribe(self, run_id: str, endpoint: Optional[str], context: Optional[ExecutionContext],
                   deadline: Optional[float] = None, last_event_id: Optional[str] = None) -> RunEventStream:
        """Open a run's one events subscription (only :class:`Run` calls this, once per run).

        It lives until the run ends or ``deadline`` (else the contract's 24 hours); a read waits at
        most ``RUN_EVENTS_READ_TIMEOUT`` seconds, well above Hermes' 30 s keepalive, so a silent
        connection is found broken and the run is polled instead.
        """
        data: dict[str, object] = {"run_id": run_id}
        if last_event_id is not None:
            data["last_event_id"] = last_event_id  # 0.21+: resume after this event
        return self._executor.request(RUN_EVENTS, data, CallOptions(
            endpoint=endpoint, context=context, deadline=deadline, keep_events=False,
            timeout=CallTimeout(read=RUN_EVENTS_READ_TIMEOUT)))
