"""CallOptions: the per-call settings every typed method and resource method shares, as one value."""

from __future__ import annotations

from typing import Optional

import attrs

from .approval import ProviderAnswer
from .deadline import TimeoutLike
from .endpoints import Deadline, ExecutionContext


@attrs.frozen
class CallOptions:
    """What a caller may set on any call besides its input.

    Args:
        endpoint: the endpoint id (default: the only, or the ``default``, endpoint).
        idempotency_key: the caller's key (sent unchanged; a replay returns the recorded outcome).
        action_id: the AIP action id (default: a new one).
        context: the call's :class:`ExecutionContext` (default: the client's).
        deadline: absolute epoch seconds or an aware ``datetime``.
        timeout: relative seconds, or a :class:`~hermes_sdk.Timeout`; the earlier of the two wins.
        idle_timeout: streams: the longest wait for an event (keepalives not counted).
        approval: an :class:`~hermes_sdk.ApprovalDecision` for an approval-gated call.
        reason: why the call is made (shown to the approver).
        keep_events: streams: keep every event in the result (False keeps only the aggregate).
    """

    endpoint: Optional[str] = None
    idempotency_key: Optional[str] = None
    action_id: Optional[str] = None
    context: Optional[ExecutionContext] = None
    deadline: Deadline = None
    timeout: TimeoutLike = None
    idle_timeout: Optional[float] = None
    approval: ProviderAnswer = None  #: a decision or its JSON shape (checked before anything is sent)
    reason: Optional[str] = None
    keep_events: bool = True
