"""The call path, as an ordered list of stages over one :class:`~hermes_sdk._core.call.Call`.

policy → approval → idempotency.begin → execute (inside the ``hermes_call`` hook: HTTP
attempts, decode, or open a stream) → idempotency.finish → observe.

A stream's finish and observe run when it settles (``streams.StreamSink``). Every stage is a small
module with one function over the call; none reaches back into the client.
"""

from __future__ import annotations

import time

from ...errors import HermesError, PluginError
from .._plugin_manager import around
from ..call import Call
from ..models import ActionResult
from ..view import mark_executed
from . import approval, execute, idempotency, observe, policy
from .record import StepRecord


def run(call: Call) -> ActionResult:
    """Run every stage; return the ActionResult (``call.value`` holds the typed value when executed).

    A failure raises its HermesError, bound to this call's action and capability ids.
    """
    try:
        policy.check(call)
        # An approval-gated call answers from its record before asking: a replay executes nothing,
        # and the 24-hour delete receipt must outlive the 15-minute approval.
        recorded = idempotency.recorded(call) if call.contract.requires_approval else None
        if recorded is None:
            approval.approve(call)
            recorded = idempotency.begin(call)
    except HermesError as exc:
        call.bind(exc)
        raise
    if recorded is not None:
        return replay(call, recorded)
    step = StepRecord()
    try:
        result = invoke(call, step)
    except HermesError as exc:
        call.bind(exc)
        step.truthful(exc, call.sent)
        failed = ActionResult(action_id=call.action_id, capability_id=call.capability_id, status="failed",
                              error=exc, idempotency_key=call.key, http_status=exc.http_status,
                              approval=call.decision.evidence() if call.decision else None,
                              recorded_at=time.time())
        # From the SDK's own record, never from what a hook was given or raised.
        idempotency.finish(call, failed, unsent=not call.sent)
        observe.observe(call, failed)
        raise
    if not call.spec.streaming:  # a stream finishes and is observed when it settles
        idempotency.finish(call, result)
        observe.observe(call, result)
    return result


def replay(call: Call, recorded: ActionResult) -> ActionResult:
    """Return a recorded outcome; it passes through the ``hermes_call`` hook too, marked ``replayed``."""
    call.replay_of = recorded
    call.set_attribute("replayed", True)
    invoke(call, StepRecord())
    observe.observe(call, recorded)
    return recorded


def _innermost(call: Call) -> ActionResult:
    if call.replay_of is not None:
        return call.replay_of
    call.executed = True
    mark_executed(call.view)
    return execute.execute(call)


def invoke(call: Call, step: StepRecord) -> ActionResult:
    """Stage 4 inside the ``hermes_call`` hook (which sees ``call.view``); the hook must hand back an
    ActionResult. The innermost step runs once, whatever the wrappers do."""
    result = around(call.runtime.pm, "hermes_call", call.view, lambda: step.run(lambda: _innermost(call)),
                    sent=lambda: call.sent)
    if not isinstance(result, ActionResult):
        raise PluginError("a hermes_call hook replaced the result with an unexpected value",
                          details={"hook": "hermes_call"}, uncertain_outcome=call.sent)
    return result
