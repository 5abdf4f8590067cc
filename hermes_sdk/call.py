"""Call: one capability invocation as it travels through the stages, and as hooks see it."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Optional

import attrs

from .capabilities import Contract
from .endpoints import Endpoint, ExecutionContext
from .errors import HermesError
from .models import ActionResult

if TYPE_CHECKING:
    from .approval import ApprovalDecision
    from .operations import OperationSpec, ProviderRequest
    from .runtime import Runtime

log = logging.getLogger("hermes_sdk")

SettleCallback = Callable[[dict[str, Any]], None]


@attrs.define(eq=False)
class Call:
    """One invocation: what was asked, what the stages decided, and what hooks may read.

    Stages fill ``headers``, ``decision`` and ``record_key``; the execute stage sets ``value`` (the
    typed result or the live stream). ``attributes`` are the redacted facts hooks and tracers see
    (names, numbers and flags, never prompts, outputs, ids or credentials).
    """

    endpoint: Endpoint
    spec: "OperationSpec[Any]"
    input: dict[str, Any]
    request: "ProviderRequest"
    action_id: str
    capability_id: str
    runtime: "Runtime" = attrs.field(repr=False)
    key: Optional[str] = None
    context: Optional[ExecutionContext] = None
    deadline: Optional[float] = None  #: the caller's absolute deadline (sent as X-AIP-Deadline-Unix-Ms)
    ends_at: Optional[float] = None  #: the wall-clock end of the whole call: the deadline or the total timeout
    read_timeout: Optional[float] = None  #: the longest wait for bytes (default: the published timeout)
    connect_timeout: Optional[float] = None
    idle_timeout: Optional[float] = None  #: streams: the longest wait for an event (keepalives not counted)
    alarm: Any = None  #: the watchdog alarm that cuts the connection at ``ends_at``
    approval: Any = None  #: the decision the caller passed as ``approval=`` (or its JSON shape)
    reason: Optional[str] = None
    keep_events: bool = True
    decision: Optional["ApprovalDecision"] = None  #: the checked approval, with its evidence
    headers: dict[str, str] = attrs.field(factory=dict)
    record_key: Optional[str] = None  #: the key this call reserved in the idempotency store
    value: Any = None  #: the typed result, or the live stream
    replay_of: Optional["ActionResult"] = None  #: the recorded outcome, when this call is a replay
    attributes: dict[str, Any] = attrs.field(factory=dict)
    started_at: float = attrs.field(factory=time.time)
    executed: bool = False  #: whether it was handed to the transport (its outcome may be uncertain from then on)
    stream_settled: bool = False
    _settle_callbacks: list[SettleCallback] = attrs.field(factory=list, alias="_settle_callbacks")

    def __attrs_post_init__(self) -> None:
        contract = self.spec.contract
        self.attributes.update({
            "capability_id": self.capability_id, "endpoint_id": self.endpoint.id, "operation": contract.operation,
            "streaming": contract.streaming, "idempotency": self.key is not None,
        })

    @property
    def endpoint_id(self) -> str:
        """The normalised endpoint id."""
        return self.endpoint.id

    @property
    def operation(self) -> str:
        """The operation name (``chat``, ``response_get``, ...)."""
        return self.spec.name

    @property
    def contract(self) -> "Contract":
        """The operation's published contract."""
        return self.spec.contract

    def execute(self) -> "ActionResult":
        """Run the call, or return its recorded outcome (the built-in innermost hook calls this)."""
        if self.replay_of is not None:
            return self.replay_of
        self.executed = True
        return _execute()(self)

    def bind(self, exc: "HermesError") -> "HermesError":
        """Name this call's action and capability on an error that does not name them yet.

        The one place an error learns its call: errors are raised deep in the transport, which
        does not know the action.
        """
        exc.action_id = exc.action_id or self.action_id
        exc.capability_id = exc.capability_id or self.capability_id
        return exc

    def set_attribute(self, key: str, value: Any) -> None:
        """Add a (non-secret) attribute for later hooks and observers."""
        self.attributes[key] = value

    @property
    def settle_watched(self) -> bool:
        """Whether a plugin waits for this stream to settle (so its redacted outcome must be built)."""
        return bool(self._settle_callbacks)

    def on_stream_settled(self, callback: SettleCallback) -> None:
        """Register ``callback(redacted_result)`` for when a stream ends (tracing spans end there)."""
        self._settle_callbacks.append(callback)

    def settle(self, redacted: dict[str, Any]) -> None:
        """Mark the stream settled and run the callbacks once; a failing one is logged, never raised."""
        if self.stream_settled:
            return
        self.stream_settled = True
        for callback in self._settle_callbacks:
            try:
                callback(redacted)
            except Exception as exc:
                owner, hook = _origin(callback)
                log.warning("hermes_sdk plugin %r failed in %s: %s", owner, f"{hook} (stream-settled callback)",
                            type(exc).__name__)


def _origin(callback: Callable[..., Any]) -> tuple[str, str]:
    """Which plugin class and hook registered a callback, read from its qualified name."""
    qualname = str(getattr(callback, "__qualname__", "") or type(callback).__qualname__)
    parts = qualname.rsplit(".<locals>.", 1)[0].split(".")  # "Plugin.hook.<locals>.<lambda>" -> Plugin, hook
    if len(parts) >= 2:
        return parts[-2], parts[-1]
    return (getattr(callback, "__module__", None) or "unknown"), parts[-1]


_stage_execute: Optional[Callable[["Call"], "ActionResult"]] = None


def _execute() -> Callable[["Call"], "ActionResult"]:
    # stages.execute imports this module: looked up once, not with an import statement per call.
    global _stage_execute
    if _stage_execute is None:
        from .stages.execute import execute

        _stage_execute = execute
    return _stage_execute
