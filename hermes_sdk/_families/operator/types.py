"""The operator's result: how a governed run on ``/v1/runs`` ended, or why it waits for a person."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import attrs

from hermes_sdk.errors import HermesError

#: The statuses an operator action ends in.
OPERATOR_STATUSES = ("completed", "failed", "cancelled", "requires_human", "outcome_unknown")


@attrs.frozen
class OperatorResult:
    """What ``client.operate(...)`` returns.

    Attributes:
        status: ``completed`` (``output`` holds the run's final text), ``failed`` (``error``),
            ``cancelled``, ``requires_human`` (the agent waits for an approval nobody gave:
            ``pending_approval`` says what it asks; answer with ``operate(resume=action_id,
            choice=...)``, from any process sharing the idempotency store) or ``outcome_unknown``
            (a start that may have reached Hermes without a recorded run id, which is never sent
            again; or a run this client lost sight of: ``error`` says which).
        action_id: the operator action (the id to pass as ``resume=``).
        run_id: the ``/v1/runs`` run, once known.
        output: the completed run's output.
        pending_approval: ``command``, ``description``, ``pattern_key``, ``choices`` of the
            pending request (from its event), or only ``run_id`` and ``status`` when the waiting
            was seen by polling the run (a resumed action has no events stream).
        error: why the action failed or its outcome is unknown.
        session_id: the run's Hermes session (``aip-operator-<action_id>``).
        replayed: the outcome was read from the store; nothing was sent.
    """

    status: str
    action_id: str
    run_id: Optional[str] = None
    output: Optional[str] = None
    pending_approval: Optional[dict[str, Any]] = None
    error: Optional[HermesError] = None
    session_id: Optional[str] = None
    replayed: bool = attrs.field(default=False, eq=False)

    @property
    def ok(self) -> bool:
        """Whether the run completed."""
        return self.status == "completed"

    def to_json(self) -> dict[str, object]:
        """The result as JSON (an ``invoke()`` output and the durable operator state)."""
        return {"status": self.status, "action_id": self.action_id, "run_id": self.run_id, "output": self.output,
                "pending_approval": self.pending_approval, "session_id": self.session_id,
                "error": self.error.to_dict() if self.error is not None else None}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], replayed: bool = False) -> "OperatorResult":
        """Rebuild a result from :meth:`to_json`."""
        error = data.get("error")
        return cls(status=str(data.get("status")), action_id=str(data.get("action_id")), run_id=data.get("run_id"),
                   output=data.get("output"), pending_approval=data.get("pending_approval"),
                   error=HermesError.from_dict(error) if isinstance(error, dict) else None,
                   session_id=data.get("session_id"), replayed=replayed)


__all__ = ["OPERATOR_STATUSES", "OperatorResult"]
