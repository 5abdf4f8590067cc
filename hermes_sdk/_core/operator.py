"""The operator's result: how a governed run on ``/v1/runs`` ended, or why it waits for a person."""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Any, Mapping, Optional

import attrs

from ..errors import HermesError, PluginError

if TYPE_CHECKING:
    from .idempotency import IdempotencyStore

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


#: The store namespace of operator state (the connector's binding namespace), and of the index
#: that tells every client sharing the store which runs an operator action started.
STATE_NAMESPACE = "aip.connector.hermes_agent.operator_runs.v1"
RUN_INDEX_NAMESPACE = STATE_NAMESPACE + ".by_run"
#: How long a run is known as an operator's: Hermes forgets a finished run within the hour, and
#: an operator's run lasts at most its 24-hour key.
RUN_INDEX_SECONDS = 2 * 86_400.0


def scope_digest(*parts: Optional[str]) -> str:
    """A short digest of what scopes a lookup (a Hermes URL, a tenant): part of a store namespace."""
    text = "\n".join(part if part is not None else "\0" for part in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _run_index_key(run_id: str) -> tuple[str, str]:
    # Keyed by the run id alone, not by the server's URL: every client sharing the store must find
    # it, however it spells the server (localhost, 127.0.0.1, a DNS name, a trailing slash, a port
    # spelled out), and whatever its tenant. Hermes makes run ids (``run_<32 hex>``, ``chatcmpl-…``)
    # unique; two servers whose run ids collide would both be gated: over-protected, never under.
    return RUN_INDEX_NAMESPACE, f"run:{run_id}"


def _legacy_run_index_key(base_url: str, run_id: str) -> tuple[str, str]:
    # How earlier releases keyed it (by the URL's text): still read, so an upgrade keeps the
    # gate on the operator runs they started.
    return RUN_INDEX_NAMESPACE, f"{scope_digest(base_url)}:{run_id}"


def mark_operator_run(store: IdempotencyStore, run_id: str) -> None:
    """Note in the shared store that ``run_id`` is an operator's run (on any Hermes)."""
    from .idempotency import IdempotencyRecord

    ns, key = _run_index_key(run_id)
    now = time.time()
    try:
        store.reserve(IdempotencyRecord(capability_id=ns, key=key, action_id=f"opidx_{key}", input_hash="",
                                        state="completed", created_at=now, expires_at=now + RUN_INDEX_SECONDS,
                                        result={"operator": True}, completed_at=now))
    except Exception as exc:
        raise PluginError(f"the idempotency store failed to record the operator run: {type(exc).__name__}",
                          details={"hook": "idempotency_store"}) from exc


def is_operator_run(store: IdempotencyStore, base_url: str, run_id: str) -> bool:
    """Whether an operator action started ``run_id`` (as far as the store shared with it knows):
    by the run id, or by an older release's record under ``base_url``."""
    try:
        return any(store.get(*key) is not None
                   for key in (_run_index_key(run_id), _legacy_run_index_key(base_url, run_id)))
    except Exception as exc:
        raise PluginError(f"the idempotency store failed to read: {type(exc).__name__}",
                          details={"hook": "idempotency_store"}) from exc


__all__ = ["OPERATOR_STATUSES", "OperatorResult"]
