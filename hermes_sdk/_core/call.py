"""Call: one call of a capability as it travels through the stages (internal; hooks get its view).

The executor builds it, the stages read and fill it. It holds the endpoint's credential and the
caller's input, so it is never handed to a plugin: hooks receive :attr:`Call.view`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

import attrs

from ..errors import DeadlineExceededError, HermesError
from .capabilities import Contract
from .endpoints import Endpoint, ExecutionContext
from .models import ActionResult
from .redaction import scrub
from .view import CallView

if TYPE_CHECKING:
    from .approval import ApprovalDecision
    from .deadline import Alarm
    from .operations import OperationSpec, ProviderRequest
    from .runtime import Runtime


@attrs.define(eq=False)
class Call:
    """One call: what was asked, and what the stages decided.

    Stages fill ``headers``, ``decision`` and ``record_key``; the execute stage sets ``value`` (the
    typed result or the live stream).
    """

    endpoint: Endpoint = attrs.field(repr=False)
    spec: "OperationSpec[object]" = attrs.field(repr=False)
    input: dict[str, object] = attrs.field(repr=False)
    request: "ProviderRequest" = attrs.field(repr=False)
    action_id: str
    capability_id: str
    runtime: "Runtime" = attrs.field(repr=False)
    view: CallView = attrs.field(repr=False)
    key: Optional[str] = attrs.field(default=None, repr=False)
    context: Optional[ExecutionContext] = attrs.field(default=None, repr=False)
    deadline: Optional[float] = None  #: the caller's absolute deadline (sent as X-AIP-Deadline-Unix-Ms)
    ends_at: Optional[float] = None  #: the wall-clock end of the whole call: the deadline or the total timeout
    read_timeout: Optional[float] = None  #: the longest wait for bytes (default: the published timeout)
    connect_timeout: Optional[float] = None
    idle_timeout: Optional[float] = None  #: streams: the longest wait for an event (keepalives not counted)
    #: The watchdog alarm that cuts the connection at ``ends_at``.
    alarm: Optional["Alarm"] = attrs.field(default=None, repr=False)
    approval: object = attrs.field(default=None, repr=False)  #: the caller's ``approval=`` (or its JSON shape)
    reason: Optional[str] = attrs.field(default=None, repr=False)
    keep_events: bool = True
    decision: Optional["ApprovalDecision"] = attrs.field(default=None, repr=False)
    headers: dict[str, str] = attrs.field(factory=dict, repr=False)
    record_key: Optional[str] = attrs.field(default=None, repr=False)  #: the key this call reserved
    #: When the reserved key's retention ends, if its pending record was kept longer (for the call).
    retained_until: Optional[float] = attrs.field(default=None, repr=False)
    value: Any = attrs.field(default=None, repr=False)  #: the typed result, or the live stream
    replay_of: Optional["ActionResult"] = attrs.field(default=None, repr=False)  #: the recorded outcome
    #: Whether the call was handed to the transport (its outcome may be uncertain from then on).
    executed: bool = attrs.field(default=False, repr=False)
    #: The SDK's own record: a request of this call may have reached Hermes and started work (never
    #: read back from what hooks are given: it decides whether an idempotency key is given back).
    sent: bool = attrs.field(default=False, repr=False)
    #: Which bound set ``ends_at`` and how to change it: ``(source, what, fix)``; a deadline error names it.
    bound: Optional[tuple[str, str, str]] = attrs.field(default=None, repr=False)

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

    @property
    def attributes(self) -> dict[str, object]:
        """The redacted attributes hooks see (the view's)."""
        return self.view.attributes

    @property
    def started_at(self) -> float:
        """When the call was built (epoch seconds)."""
        return self.view.started_at

    def bind(self, exc: "HermesError") -> "HermesError":
        """Name this call's action and capability on an error that does not name them yet.

        The one place an error learns its call: errors are raised deep in the transport, which
        does not know the action.
        """
        exc.action_id = exc.action_id or self.action_id
        exc.capability_id = exc.capability_id or self.capability_id
        if (isinstance(exc, DeadlineExceededError) and self.bound is not None and "bound" not in exc.details
                and exc.details.get("reason") != "idle_timeout"):
            # Which limit fired and which knob moves it (the message alone should name the fix).
            source, what, fix = self.bound
            exc.details.update(bound=source, bound_text=what)
            exc.message = f"{exc.message}; the limit was {what}: {fix}"
            exc.args = (scrub(exc.message),)
        return exc

    def set_attribute(self, key: str, value: object) -> None:
        """Add a (non-secret) attribute for later hooks and observers."""
        self.view.attributes[key] = value
