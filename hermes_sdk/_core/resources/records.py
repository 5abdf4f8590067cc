"""``client.records``: the recovery tools over the idempotency store (the safe recovery rule)."""

from __future__ import annotations

import time
from typing import Optional

from ...errors import HermesError, InvalidInputError
from .. import convert
from ..executor import Executor
from ..idempotency import COMPLETED, PENDING, IdempotencyRecord
from ..models import ActionResult


class Records:
    """Durable records of keyed calls: read an outcome, reconcile an interrupted call, forget a key."""

    def __init__(self, executor: Executor) -> None:
        self._executor = executor

    def action_result(self, action_id: str) -> Optional[ActionResult]:
        """The durable result recorded for ``action_id`` (step one of the safe recovery rule), or None.

        Only calls made with an idempotency key leave a durable record.
        """
        record = self._executor.runtime.store.get_by_action(action_id)
        if record is None or record.state != COMPLETED or record.result is None:
            return None
        return convert.recorded_result(record.result)

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The raw record (pending or completed) for a capability-scoped key, or None."""
        return self._executor.runtime.store.get(capability_id, key)

    def resolve_pending(self, capability_id: str, key: str, *, status: str, output: object = None,
                        error: Optional[HermesError] = None) -> ActionResult:
        """Operator reconciliation: record the outcome of an interrupted call you verified by hand.

        Raises InvalidInputError unless the key has a pending record and ``status`` is
        ``completed``, ``failed`` or ``cancelled``.
        """
        store = self._executor.runtime.store
        record = store.get(capability_id, key)
        if record is None or record.state != PENDING:
            raise InvalidInputError("no pending record for that key", details={"field": "idempotency_key"})
        if status not in ("completed", "failed", "cancelled"):
            raise InvalidInputError("status must be completed, failed or cancelled", details={"field": "status"})
        result = ActionResult(action_id=record.action_id, capability_id=capability_id, status=status,
                              output=output, error=error, idempotency_key=key, recorded_at=time.time())
        store.complete(capability_id, key, convert.action_result_to_json(result))
        return result

    def forget(self, capability_id: str, key: str) -> bool:
        """Operator escape hatch: drop a record so the key can execute again. Use only after reconciling."""
        return self._executor.runtime.store.forget(capability_id, key)
