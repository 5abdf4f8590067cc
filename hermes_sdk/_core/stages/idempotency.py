"""Stages 3 and 5, idempotency: begin (replay, refuse, or reserve) and finish (record the outcome).

A completed record is returned without executing; a pending one (an interrupted call) refuses to
run again; otherwise a pending record is reserved before anything is sent.
"""

from __future__ import annotations

import logging
import socket
import time
from typing import Callable, Optional, TypeVar

from ...errors import (
    DeadlineExceededError,
    HermesError,
    IdempotencyConflictError,
    OutcomeUnknownError,
    PluginError,
    StoreUnavailableError,
)
from .. import convert
from .._constants import DELETE_KEY_TTL_SECONDS
from ..approval import input_hash
from ..call import Call
from ..idempotency import COMPLETED, PENDING, IdempotencyRecord, IdempotencyStore
from ..models import ActionResult
from ..store_calls import ABANDONED, Late, StoreTimeout, call_store

T = TypeVar("T")

log = logging.getLogger("hermes_sdk")

#: How long past its call's end a pending record is kept at least: time to record the outcome.
PENDING_GRACE_SECONDS = 60.0
#: Recording the outcome may take this long past the deadline (an outcome that arrives at the
#: deadline, a deadline error included, is still recorded rather than left pending).
RECORD_GRACE_SECONDS = 0.5
#: A store error this close to the deadline is the deadline's doing (timers are not exact).
_DEADLINE_SLACK = 0.05


def _guarded(call: Call, what: str, fn: Callable[[], T], late: Optional[Late] = None) -> T:
    """One store call before anything is sent, bounded by the call's deadline, its failures typed:
    the deadline (:class:`DeadlineExceededError`), an outage (:class:`StoreUnavailableError`, both
    retryable) or a bug (:class:`PluginError`); each says ``details["sent"]`` False."""
    deadline = call.ends_at
    try:
        return call_store(call.runtime.store, fn, deadline, late)
    except HermesError as exc:  # a store's own typed error (a corrupt record, an outage it named)
        exc.details.setdefault("sent", False)
        raise
    except Exception as exc:
        raise _typed(call, what, exc, deadline) from exc


def _typed(call: Call, what: str, exc: Exception, deadline: Optional[float]) -> HermesError:
    details: dict[str, object] = {"hook": "idempotency_store", "store_operation": what, "sent": False,
                                  "operation": call.contract.operation}
    timed_out = isinstance(exc, (TimeoutError, socket.timeout))
    if isinstance(exc, StoreTimeout) or (timed_out and deadline is not None
                                         and time.time() >= deadline - _DEADLINE_SLACK):
        details["reason"] = "store_deadline"
        return DeadlineExceededError(f"the deadline passed while the idempotency store was asked to {what}; "
                                     "nothing was sent and the key is free", retryable=True, details=details)
    if isinstance(exc, (ConnectionError, OSError)):  # TimeoutError and socket errors included
        details["reason"] = "store_unavailable"
        return StoreUnavailableError(f"the idempotency store could not {what}: {type(exc).__name__}; nothing "
                                     "was sent", retryable=True, details=details)
    return PluginError(f"the idempotency store failed to {what}: {type(exc).__name__}", details=details)


def recorded(call: Call) -> Optional[ActionResult]:
    """The outcome already recorded for this key, read without reserving (a pending record raises).

    Used before approval: replaying executes nothing, so a recorded outcome outlives its approval.
    """
    key = call.key
    if key is None:
        return None
    store = call.runtime.store
    existing = _guarded(call, "read", lambda: store.get(call.capability_id, key))
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
    existing = _reserve(call, rt.store, record)
    if existing is not None and existing.state == PENDING:
        held = existing
        claimed = ABANDONED.claim(held.action_id)
        if claimed is not None:
            # An earlier call of this process gave this reservation up before sending anything: it
            # never ran, so the key is taken over rather than refused.
            try:
                _guarded(call, "reserve", lambda: rt.store.forget(held.capability_id, held.key))
            finally:
                ABANDONED.release(held.action_id, claimed)
        else:
            # Refused only on a fresh read: the worker giving an abandoned reservation back may
            # have forgotten it since the read above (then the key is free), or be doing so now.
            ABANDONED.wait_settled(held.action_id, None if call.ends_at is None
                                   else max(0.0, call.ends_at - time.time()))
        existing = _reserve(call, rt.store, record)
    if existing is None:
        call.record_key = call.key
        return None
    return _outcome_of(call, existing)


def _reserve(call: Call, store: IdempotencyStore, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
    try:
        return _guarded(call, "reserve", lambda: store.reserve(record), late=_give_back(store, record))
    except DeadlineExceededError:
        # The store may still insert it after we gave up: a pending record of an action that sent
        # nothing. The worker gives it back when it lands; until then this process knows it.
        ABANDONED.add(record.action_id)
        raise


def _give_back(store: IdempotencyStore, record: IdempotencyRecord) -> Late:
    """What the worker does when an abandoned reservation returns at last."""
    def late(value: object, error: Optional[BaseException]) -> None:
        if error is not None:
            return  # unknown whether it landed: the action id stays known as abandoned
        held = store.get(record.capability_id, record.key) if value is None else None
        claimed = ABANDONED.claim(record.action_id)
        if claimed is None:
            return  # a retry of this process took the key over first: the record is its own now
        try:
            if held is not None and held.action_id == record.action_id and held.state == PENDING:
                store.forget(record.capability_id, record.key)  # it landed: ours, nothing sent under it
        finally:
            ABANDONED.release(record.action_id, claimed)
    return late


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
    deadline = None if call.ends_at is None else max(call.ends_at, time.time() + RECORD_GRACE_SECONDS)
    try:
        if unsent and result.status == "failed":
            call_store(store, lambda: store.forget(call.capability_id, key), deadline)
        else:
            data = convert.action_result_to_json(result)
            call_store(store, lambda: store.complete(call.capability_id, key, data), deadline)
            if call.retained_until is not None and time.time() >= call.retained_until:
                # The retention ended while the call ran: the key is free now, as if it had expired.
                call_store(store, lambda: store.forget(call.capability_id, key), deadline)
    except Exception as exc:  # the record stays pending: later calls refuse rather than replay
        log.warning("hermes_sdk could not record an idempotency outcome (%s); the key stays pending",
                    type(exc).__name__)


def never_sent(exc: HermesError) -> bool:
    """Known not to have reached Hermes, or refused before any work: no original result exists, so
    the key is given back (``details.started`` False: e.g. a run Hermes refused with a 4xx;
    ``details.before_agent_work``: a 429 from the concurrency gate or a 503 ``gateway_draining``,
    which Hermes answers before it runs anything: a keyed retry after the drain must run)."""
    return (exc.details.get("sent") is False or exc.details.get("started") is False
            or exc.details.get("before_agent_work") is True
            or (exc.http_status is None and not exc.uncertain_outcome))
