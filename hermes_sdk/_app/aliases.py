"""The client's former flat methods, kept for one release as deprecated aliases of the resources."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable, Optional, TypeVar, cast

from .._core.families import family_executor, legacy_resources
from ._compat import deprecated

if TYPE_CHECKING:
    from .._core.approval import ApprovalRequest
    from .._core.deadline import TimeoutLike
    from .._core.endpoints import Deadline, ExecutionContext
    from .._core.executor import Executor
    from .._core.idempotency import IdempotencyRecord
    from .._core.models import ActionResult
    from .._core.resources.records import Records
    from .._families.runs import Runs
    from .._families.runs.types import ApprovalAnswer, RunStatus
    from ..errors import HermesError

F = TypeVar("F", bound=Callable[..., object])


def _moved(new: str) -> Callable[[F], F]:
    def wrap(method: F) -> F:
        @functools.wraps(method)
        def alias(self: object, *args: object, **kwargs: object) -> object:
            deprecated(f"HermesClient.{method.__name__}() is deprecated: use client.{new}()")
            return method(self, *args, **kwargs)
        alias.__doc__ = f"Deprecated alias of ``client.{new}()``."
        return cast(F, alias)  # the same signature: it passes every argument on
    return wrap


class DeprecatedAliases:
    """``run_get``, ``run_stop``, ``run_approval``, ``run_approval_request`` and the recovery tools."""

    records: Records
    _executor: Executor

    if TYPE_CHECKING:  # FamilyResources.runs
        @property
        def runs(self) -> Runs: ...

    if not TYPE_CHECKING:  # resources registered process-wide (deprecated); type checkers see no such attributes
        def __getattr__(self, name: str) -> object:
            factory = legacy_resources().get(name)
            if factory is None or name.startswith("_"):
                raise AttributeError(f"'HermesClient' object has no attribute {name!r}")
            extra = self.__dict__.setdefault("_extra", {})
            if name not in extra:
                extra[name] = factory(family_executor(self._executor))  # not the executor: nothing leads to the key
            return extra[name]

    @_moved("runs.get")
    def run_get(self, run_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                timeout: TimeoutLike = None) -> RunStatus:
        return self.runs.get(run_id, endpoint=endpoint, action_id=action_id, context=context, deadline=deadline,
                             timeout=timeout)

    @_moved("runs.stop")
    def run_stop(self, run_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                 context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                 timeout: TimeoutLike = None) -> RunStatus:
        return self.runs.stop(run_id, endpoint=endpoint, action_id=action_id, context=context, deadline=deadline,
                              timeout=timeout)

    @_moved("runs.approve")
    def run_approval(self, run_id: str, choice: str, *, resolve_all: bool = False, request_id: Optional[str] = None,
                     endpoint: Optional[str] = None, action_id: Optional[str] = None,
                     context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                     timeout: TimeoutLike = None) -> ApprovalAnswer:
        return self.runs.approve(run_id, choice, resolve_all=resolve_all, request_id=request_id, endpoint=endpoint,
                                 action_id=action_id, context=context, deadline=deadline, timeout=timeout)

    @_moved("runs.approval_request")
    def run_approval_request(self, run_id: str, command: str, *, reason: Optional[str] = None,
                             endpoint: Optional[str] = None, pattern_key: Optional[str] = None,
                             session_id: Optional[str] = None, objective: Optional[str] = None,
                             context: Optional[ExecutionContext] = None) -> ApprovalRequest:
        return self.runs.approval_request(run_id, command, reason=reason, endpoint=endpoint, pattern_key=pattern_key,
                                          session_id=session_id, objective=objective, context=context)

    @_moved("records.get")
    def idempotency_record(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        return self.records.get(capability_id, key)

    @_moved("records.resolve_pending")
    def resolve_pending(self, capability_id: str, key: str, *, status: str, output: object = None,
                        error: Optional[HermesError] = None) -> ActionResult:
        return self.records.resolve_pending(capability_id, key, status=status, output=output, error=error)

    @_moved("records.forget")
    def forget_idempotency_key(self, capability_id: str, key: str) -> bool:
        return self.records.forget(capability_id, key)
