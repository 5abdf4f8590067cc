"""Stage 4, execute: HTTP attempts (only retry-safe operations retry), then decode or open the stream.

This is the innermost part of the ``hermes_invocation`` hook; each attempt runs inside the
``hermes_http_attempt`` hook.
"""

from __future__ import annotations

import functools
import time
from typing import Optional

import requests

from .. import convert
from ..call import Call
from ..errors import DeadlineExceededError, HermesError, InvalidResponseError
from ..http import Attempt, HttpReply
from ..models import ActionResult
from ..plugins import around
from ..streaming import Aggregate
from ..transport import backoff_delay, decode_json, error_for_exception, error_for_status, read_body
from .streams import StreamSink


def execute(call: Call) -> ActionResult:
    """Send the call and return its ActionResult; ``call.value`` becomes the typed value or stream."""
    reply = attempts(call)
    session_id = reply.headers.get("X-Hermes-Session-Id")
    call.set_attribute("http_status", reply.status)
    base = ActionResult(action_id=call.action_id, capability_id=call.capability_id, status="pending",
                        idempotency_key=call.key, session_id=session_id, http_status=reply.status,
                        approval=call.decision.evidence() if call.decision else None)
    spec = call.spec
    if spec.stream_class is not None:
        aggregate = Aggregate(call.endpoint_id, spec.name, reply.status, call.request.max_events, session_id,
                              call.keep_events)
        call.value = spec.stream_class(reply.stream, aggregate, deadline=call.deadline,
                                       sink=StreamSink(call, base))
        call.value.action_id = call.action_id
        return base
    assert spec.decode is not None and reply.body is not None
    try:
        data = decode_json(reply.body)
        call.value = spec.decode(data, session_id, call.action_id)
    except InvalidResponseError as exc:
        raise _typed_invalid(exc, call, reply.status) from None
    base.status, base.output, base.recorded_at = "completed", data, time.time()
    return base


def attempts(call: Call) -> HttpReply:
    """The HTTP attempts of one call, each inside the ``hermes_http_attempt`` hook."""
    rt, contract = call.runtime, call.contract
    allowed = rt.max_attempts if contract.retry_safe else 1
    number = 0
    while True:
        number += 1
        timeout = call.spec.timeout
        if call.deadline is not None:
            remaining = call.deadline - time.time()
            if remaining <= 0:
                raise DeadlineExceededError("the deadline passed before the call was sent",
                                            details={"operation": contract.operation, "sent": False})
            timeout = min(timeout, remaining)
        attempt = Attempt(call, number, contract.method, contract.path,
                          functools.partial(send_once, call, timeout))
        try:
            reply: HttpReply = around(rt.pm, "hermes_http_attempt", "attempt", attempt)
        except HermesError as exc:
            call.set_attribute("attempts", number)
            if not exc.retryable or number >= allowed:
                raise
            delay = backoff_delay(number, exc)
            if call.deadline is not None and time.time() + delay >= call.deadline:
                raise
            time.sleep(delay)
            continue
        call.set_attribute("attempts", number)
        return reply


def send_once(call: Call, timeout: float) -> HttpReply:
    """One request; a 2xx JSON body is read here, so a body cut short is a (retryable) attempt failure."""
    contract, request = call.contract, call.request
    transport = call.runtime.transport
    try:
        response = transport.send(call.endpoint, request.method, request.path, call.headers, request.body, timeout)
    except (requests.RequestException, OSError) as exc:
        raise error_for_exception(exc, contract, deadline_hit=_passed(call.deadline)) from None
    if not 200 <= response.status_code < 300:
        error = error_for_status(response, contract)
        if call.spec.refine_error is not None:
            error = call.spec.refine_error(error)
        raise error
    if request.stream:
        return HttpReply(response.status_code, response.headers, None, stream=response)
    try:
        body = read_body(response)
    except InvalidResponseError as exc:
        raise _typed_invalid(exc, call, response.status_code) from None
    except (requests.RequestException, OSError) as exc:
        raise error_for_exception(exc, contract, deadline_hit=_passed(call.deadline)) from None
    return HttpReply(response.status_code, response.headers, body)


def _typed_invalid(exc: InvalidResponseError, call: Call, status: int) -> InvalidResponseError:
    """The same failure, with the flags of this call: a model call's bad reply leaves its outcome uncertain."""
    return InvalidResponseError(exc.message, uncertain_outcome=not call.contract.read_only, http_status=status,
                                details={"operation": call.operation, **exc.details})


def _passed(deadline: Optional[float]) -> bool:
    return deadline is not None and time.time() >= deadline - 0.01


__all__ = ["attempts", "execute", "send_once", "convert"]
