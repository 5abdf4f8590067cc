"""What a family's rules are given: :class:`AdmitContext` (a spec's ``admit``), :class:`CompositeContext`
(a composite operation) and :class:`RecordsView` (read-only record lookups).

Built-in and third-party families get the same objects (``hermes_sdk.plugin``); none holds the
endpoint's credential or the internal call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Optional, TypeVar

import attrs

from ..errors import PluginError
from .idempotency import IdempotencyRecord, IdempotencyStore

if TYPE_CHECKING:
    from .approval import ApprovalProvider
    from .endpoints import ExecutionContext
    from .executor import Executor
    from .families import FamilyExecutor
    from .operations.spec import OperationSpec
    from .options import CallOptions

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")


class RecordsView:
    """Read-only lookups in the client's idempotency store (a store failure is a PluginError)."""

    __slots__ = ("_store",)

    def __init__(self, store: IdempotencyStore) -> None:
        self._store = store

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The record of a capability-scoped key (pending or completed), or None."""
        try:
            return self._store.get(capability_id, key)
        except Exception as exc:
            raise PluginError(f"the idempotency store failed to read: {type(exc).__name__}",
                              details={"hook": "idempotency_store"}) from exc

    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        """The record of the call whose action id is ``action_id``, or None."""
        try:
            return self._store.get_by_action(action_id)
        except Exception as exc:
            raise PluginError(f"the idempotency store failed to read: {type(exc).__name__}",
                              details={"hook": "idempotency_store"}) from exc


@attrs.frozen
class AdmitContext(Generic[S]):
    """What an ``OperationSpec.admit`` rule sees of one call, before anything is reserved or sent.

    ``input`` is the validated input without the idempotency key; ``state`` is the per-client
    state of the family that registered the operation (``Family(state=...)``; None without one).
    A rule refuses the call by raising a :class:`~hermes_sdk.HermesError` (``details["sent"]`` False).
    """

    operation: str
    endpoint_id: str
    #: The endpoint's Hermes URL (never its credential): what scopes a lookup by server.
    base_url: str
    input: Mapping[str, object]
    state: S
    records: RecordsView
    #: Whether the client allows the permanent approval choice ``always``.
    allow_permanent_approvals: bool


class CompositeContext:
    """What a composite operation (``OperationSpec.composite``, the operator) is given by ``invoke()``:
    its endpoint, validated-later input (without the idempotency key) and options (the key and the
    action id set), and typed calls through every stage, never the internal executor (a plugin
    family's composite gets a :class:`FamilyExecutor` facade; nothing it holds leads to the key)."""

    __slots__ = ("endpoint_id", "base_url", "tenant_id", "input", "options", "context", "approval_provider",
                 "store", "_executor")

    def __init__(self, executor: "Executor", endpoint_id: Optional[str], input: Mapping[str, object],
                 options: "CallOptions", calls: Optional["FamilyExecutor"] = None) -> None:
        endpoint = executor.endpoint(endpoint_id)
        runtime = executor.runtime
        self.endpoint_id = endpoint.id
        self.base_url = endpoint.base_url
        self.tenant_id = endpoint.tenant_id  #: the endpoint's tenant (None when not bound to one)
        self.input = input
        self.options = options
        #: The client's default :class:`~hermes_sdk.ExecutionContext` (the options' own wins).
        self.context: Optional["ExecutionContext"] = executor.context
        self.approval_provider: Optional["ApprovalProvider"] = runtime.approval_provider
        #: The client's idempotency store, where a composite operation keeps its own durable state.
        self.store: IdempotencyStore = runtime.store
        # Its calls go through a FamilyExecutor (built-in and plugin families alike): nothing here leads to the key.
        self._executor: "FamilyExecutor" = calls if calls is not None else executor.given_to()

    @property
    def records(self) -> RecordsView:
        """Read-only lookups in the client's store."""
        return RecordsView(self.store)

    def request(self, spec: "OperationSpec[T]", data: Mapping[str, object],
                options: Optional["CallOptions"] = None) -> T:
        """One typed call of ``spec`` through every stage (the options default to this operation's)."""
        return self._executor.request(spec, data, self.options if options is None else options)

    def state(self, kind: Callable[[], S]) -> S:
        """The client's state of the family declared with ``Family(state=kind)``."""
        return self._executor.state(kind)

    def resource(self, factory: Callable[[Any], R]) -> R:
        """A resource built over this client's calls (as ``Family(resource=...)`` is), for this operation."""
        return factory(self._executor)
