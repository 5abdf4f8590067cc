"""Stages 3 and 5, idempotency: begin (replay, refuse, or reserve) and finish (record the outcome).

A completed record is returned without executing; a pending one (an interrupted call) refuses to
run again; otherwise a pending record is reserved before anything is sent.
"""

from __future__ import annotations

import logging
import time
from typing import Optional

from ...errors import HermesError, IdempotencyConflictError, OutcomeUnknownError, PluginError
from .. import convert
from .._constants import DELETE_KEY_TTL_SECONDS
from ..approval import input_hash
from ..call import Call
from ..idempotency import COMPLETED, IdempotencyRecord
from ..models import ActionResult

log = logging.getLogger("hermes_sdk")

#: How long past its call's end a pending record is kept at least: time to record the outcome.
PENDING_GRACE_SECONDS = 60.0


def recorded(call: Call) -> Optional[ActionResult]:
    """The outcome already recorded for this key, read without reserving (a pending record raises).

    Used before approval: replaying executes nothing, so a recorded outcome outlives its approval.
    """
    if call.key is None:
        return None
    try:
        existing = call.runtime.store.get(call.capability_id, call.key)
    except HermesError:  # a store's own typed error (a corrupt record)
        raise
    except Exception as exc:
        raise PluginError(f"the idempotency store failed to read: {type(exc).__name__}",
                          details={"hook": "idempotency_store"}) from exc
    return None if existing is None else _outcome_of(call, existing)


def begin(call: Call) -> Optional[ActionResult]:
    """Reserve the key (``call.record_key``), or return the recorded outcome to replay."""
    if call.key is None:
        return None
    rt = call.runtime
    now = time.time()
    ttl = DELETE_KEY_TTL_SECONDS if call.contract.key_ttl_ms else rt.key_retention
    expires_at = now + ttl
    if call.ends_at is not None:
        # A pending record outlives its call (a retention shorter than the call must not let a
        # second call with the key run while the first is in flight), and the moment after it in
        # which the outcome is recorded.
        if call.ends_at + PENDING_GRACE_SECONDS > expires_at:
            call.retained_until = expires_at
            expires_at = call.ends_at + PENDING_GRACE_SECONDS
    record = IdempotencyRecord(capability_id=call.capability_id, key=call.key, action_id=call.action_id,
                               input_hash=input_hash(call.capability_id, call.input), state="pending",
                               created_at=now, expires_at=expires_at)
    try:
        existing = rt.store.reserve(record)
    except HermesError:
        raise
    except Exception as exc:
        raise PluginError(f"the idempotency store failed to reserve: {type(exc).__name__}",
                          details={"hook": "idempotency_store"}) from exc
    if existing is None:
        call.record_key = call.key
        return None
    return _outcome_of(call, existing)


def _outcome_of(call: Call, existing: IdempotencyRecord) -> ActionResult:
    details = {"original_action_id": existing.action_id, "state": existing.state}
    if existing.state != COMPLETED or existing.result is None:
        raise OutcomeUnknownError(
            "an earlier call with this idempotency key has no recorded outcome; it will not run again. "
            "Reconcile with action_result(), resolve_pending() or forget_idempotency_key()", details=details)
    if call.runtime.strict_idempotency and existing.input_hash != input_hash(call.capability_id, call.input):
        raise IdempotencyConflictError(
            "this idempotency key was used for a different input; nothing was sent. Use a new key for a new "
            "input (HermesClient(strict_idempotency=False) replays the first call's result instead)",
            details=details)
    replay = convert.recorded_result(existing.result)
    replay.replayed = True
    return replay


def finish(call: Call, result: ActionResult, unsent: bool = False) -> None:
    """Complete the record, failures included; a failure that never reached Hermes gives the key back."""
    key = call.record_key
    if key is None:
        return
    store = call.runtime.store
    try:
        if unsent and result.status == "failed":
            store.forget(call.capability_id, key)
        else:
            store.complete(call.capability_id, key, convert.action_result_to_json(result))
            if call.retained_until is not None and time.time() >= call.retained_until:
                # The retention ended while the call ran: the key is free now, as if it had expired.
                store.forget(call.capability_id, key)
    except Exception as exc:  # the record stays pending: later calls refuse rather than replay
        log.warning("hermes_sdk could not record an idempotency outcome (%s); the key stays pending",
                    type(exc).__name__)


def never_sent(exc: HermesError) -> bool:
    """Known not to have reached Hermes, or refused before any work: no original result exists, so
    the key is given back (``details.started`` False: e.g. a run Hermes refused with a 4xx)."""
    return (exc.details.get("sent") is False or exc.details.get("started") is False
            or (exc.http_status is None and not exc.uncertain_outcome))
