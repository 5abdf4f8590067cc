"""``client.operate``, mixed into the client: the operator family (and the runs family it
drives) is imported by the first call, not when the client is built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional, Protocol

from hermes_sdk.plugin import (
    REQUIRED,
    ApprovalDecision,
    ApprovalProvider,
    Deadline,
    ExecutionContext,
    FamilyExecutor,
    TimeoutLike,
)
from hermes_sdk.plugin import import_family_module as import_module

from .types import OperatorResult  # light; typing.get_type_hints(operate) resolves (the docs read them)


class _GivesFamilyExecutors(Protocol):
    def given_to(self, family: str) -> FamilyExecutor: ...


class OperatorMethods:
    """Mixed into :class:`~hermes_sdk.HermesClient`: ``client.operate``."""

    if TYPE_CHECKING:  # the client's executor: it gives the operator family its FamilyExecutor
        @property
        def _executor(self) -> _GivesFamilyExecutors: ...

    def operate(self, objective: Optional[str] = None, *, resume: Optional[str] = None, choice: Optional[str] = None,
                context: object = None, constraints: Optional[Mapping[str, object]] = None,
                candidate_capabilities: Optional[list[str]] = None, resolve_all: bool = False,
                idempotency_key: str = REQUIRED, approval: Optional[ApprovalDecision] = None,
                reason: Optional[str] = None, approval_provider: Optional[ApprovalProvider] = None,
                endpoint: Optional[str] = None, action_id: Optional[str] = None,
                execution_context: Optional[ExecutionContext] = None,
                deadline: Deadline = None, timeout: TimeoutLike = None) -> OperatorResult:
        """Run a governed operator action on ``/v1/runs`` and follow it (the connector's ``operator``).

        **Start** (``objective=``): needs ``idempotency_key`` and an approved decision bound to the
        input ``{"objective", "context"?, "constraints"?, "candidate_capabilities"?}`` (high risk,
        code execution), from ``approval=`` or the approval provider; without one nothing is sent
        (ApprovalRequiredError). The run's session is ``aip-operator-<action_id>``. The run's own
        approval requests go to ``approval_provider`` (default: the client's); when none answers,
        this returns ``requires_human`` with ``pending_approval`` instead of blocking.

        **Resume** (``resume=<action_id>``, ``choice=`` ``once``/``session``/``deny``/``always``):
        answers the pending approval once (its own key and an approval bound to ``{"resume":
        {"source_action_id", "choice", "resolve_all"}}``) and follows the run by polling. It works
        from another process with the same idempotency store; without ``choice`` it only follows.

        The same start key again replays: nothing is sent, the saved state is returned (a
        ``requires_human`` one is re-checked). A start whose outcome is unknown (a crash, a
        transport failure after sending) is ``outcome_unknown`` and never sent again; so is a
        run that passed ``deadline``/``timeout`` (default 900 s) still going: resume follows it.

        ``context`` is the objective's context (any JSON); the call's
        :class:`~hermes_sdk.ExecutionContext` is ``execution_context=``.
        """
        import_module("hermes_sdk._families.operator.resource")  # under the family import lock (it imports runs)
        from .resource import operate

        return operate(self._executor.given_to("operator"), objective, resume=resume, choice=choice, context=context,
                       constraints=constraints, candidate_capabilities=candidate_capabilities,
                       resolve_all=resolve_all, idempotency_key=idempotency_key, approval=approval, reason=reason,
                       approval_provider=approval_provider, endpoint=endpoint, action_id=action_id,
                       execution_context=execution_context, deadline=deadline, timeout=timeout)
