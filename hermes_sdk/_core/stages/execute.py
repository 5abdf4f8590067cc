"""Stage 4, execute: HTTP attempts (only retry-safe operations retry), then decode or open the stream.

This is the innermost part of the ``hermes_call`` hook; each attempt runs inside the
``hermes_http_attempt`` hook.
"""

from __future__ import annotations

import functools
import time
from typing import Optional

from ...errors import DeadlineExceededError, HermesError, InvalidResponseError, PluginError
from .. import convert
from .._constants import CONNECT_TIMEOUT
from .._plugin_manager import around
from .._wire import WIRE_FAULTS
from ..aggregate import Aggregate
from ..call import Call
from ..convert import DecodeContext
from ..deadline import WATCHDOG, set_current_alarm
from ..endpoints import Endpoint
from ..exchange import Attempt, Received, mark_sent
from ..models import ActionResult
from ..recorders import raised_by_test_double
from ..transport import (
    check_framing,
    decode_reply,
    error_for_exception,
    error_for_status,
    read_body,
    socket_of,
)
from .idempotency import never_sent
from .record import StepRecord
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
        accumulator = spec.accumulator()
        accumulator.bind(call.input)
        aggregate = Aggregate(call.endpoint_id, spec.name, reply.status, call.request.max_events, session_id,
                              call.keep_events, accumulator=accumulator)
        call.value = spec.stream_class(reply.stream, aggregate, deadline=call.ends_at, alarm=call.alarm,
                                       idle_timeout=call.idle_timeout, sink=StreamSink(call, base))
        call.value.action_id = call.action_id
        call.runtime.open_streams.add(call.value)
        return base
    assert spec.decode is not None and reply.body is not None
    try:
        data = decode_reply(reply.body)
        call.value = spec.decode(data, DecodeContext(spec.name, session_id, call.action_id, False, reply.headers))
        if spec.about_another(call.request.path_params, call.input, data):
            raise InvalidResponseError(f"the {spec.name} reply is about another object than the one requested",
                                       details={"reason": "another_object"})
    except InvalidResponseError as exc:
        raise _typed_invalid(exc, call, reply.status) from None
    base.status, base.output, base.recorded_at = "completed", data, time.time()
    return base


def attempts(call: Call) -> Received:
    """The HTTP attempts of one call, each inside the ``hermes_http_attempt`` hook.

    The watchdog alarm armed here cuts the connection at ``call.ends_at`` whatever the server
    sends; a non-streaming call disarms it once its body is read, a stream when it settles.
    """
    if call.ends_at is not None and call.alarm is None:
        call.alarm = WATCHDOG.arm(call.ends_at)
    try:
        reply = _attempts(call)
    except BaseException:
        if call.alarm is not None:
            call.alarm.cancel()
        raise
    if reply.stream is None and call.alarm is not None:
        call.alarm.cancel()
    return reply


def _attempts(call: Call) -> Received:
    rt, contract = call.runtime, call.contract
    policy = rt.retry
    number = 0
    while True:
        number += 1
        timeout = call.read_timeout or call.spec.timeout
        if call.ends_at is not None:
            remaining = call.ends_at - time.time()
            if remaining <= 0:
                raise DeadlineExceededError("the deadline passed before the call was sent",
                                            details={"operation": contract.operation, "sent": False})
            timeout = min(timeout, remaining)
        attempt = Attempt(call.view, number, contract.method, contract.path)
        step = StepRecord()
        try:
            shown = around(rt.pm, "hermes_http_attempt", attempt,
                           functools.partial(step.run, functools.partial(_send_attempt, attempt, call, timeout)),
                           sent=lambda: call.sent, present=step.show(lambda got: got.view(rt.redactor.text)))
            reply = _own_reply(step, shown, call)
        except HermesError as exc:
            call.set_attribute("attempts", number)
            step.truthful(exc, call.sent)
            if step.replaced(exc):  # a wrapper's own failure after the step ran: never sent again
                raise
            policy.classify(contract, exc)
            delay = policy.delay(contract, exc, number)
            if delay is None or (call.ends_at is not None and time.time() + delay >= call.ends_at):
                raise
            time.sleep(delay)
            continue
        call.set_attribute("attempts", number)
        return reply


def _send_attempt(attempt: Attempt, call: Call, timeout: float) -> Received:
    mark_sent(attempt)
    before, call.sent = call.sent, True  # from here the request may leave, unless the send proves otherwise
    try:
        return send_once(call, timeout)
    except HermesError as exc:
        if never_sent(exc):
            call.sent = before
        raise


def _own_reply(step: StepRecord, shown: object, call: Call) -> Received:
    """What the transport received for this attempt, if the hooks handed back the SDK's own reply."""
    if step.ran and (shown is step.shown or shown is step.result) and shown is not None:
        return step.result  # type: ignore[no-any-return]
    if step.ran and step.result is not None and step.result.stream is not None:
        step.result.stream.close()
    raise PluginError("a hermes_http_attempt hook replaced the reply: a wrapper hands back what its yield gave",
                      details={"hook": "hermes_http_attempt"}, uncertain_outcome=call.sent)


def send_once(call: Call, timeout: float) -> Received:
    """One request; a 2xx JSON body is read here, so a body cut short is a (retryable) attempt failure.

    Failures are raised outside the ``except`` blocks, with the redacted cause only: requests' own
    exception text (which carries the URL path, and so ids) stays out of ``__context__``.
    """
    contract, request = call.contract, call.request
    failure: Optional[HermesError] = None
    set_current_alarm(call.alarm)
    try:
        response = call.runtime.transport.send(call.endpoint, request.method, request.path, call.headers,
                                               request.body, timeout, call.connect_timeout or CONNECT_TIMEOUT)
    except HermesError:
        raise
    except WIRE_FAULTS as exc:  # a framing fault while reading the status line and headers included
        if raised_by_test_double(exc):  # responses' unmatched call: the test's to see as raised
            raise
        failure = error_for_exception(exc, contract, deadline_hit=_late(call))
    finally:
        set_current_alarm(None)
    if failure is not None:
        raise failure from failure.__cause__
    if call.alarm is not None:
        call.alarm.attach(socket_of(response))  # a caller's own adapter: its socket is known from here on
    if not 200 <= response.status_code < 300:
        # Hermes' status decides the error; a body cut at the deadline only loses its detail.
        failure = error_for_status(response, contract)
        if response.status_code == 401:
            failure = explain_refused_key(failure, call.endpoint)
        for name in call.spec.error_input_keys:
            if call.input.get(name) is not None:
                failure.details.setdefault(name, call.input[name])
        if call.spec.refine_error is not None:
            failure = call.spec.refine_error(failure)
        if _late(call):
            failure.details["body_cut_at_deadline"] = True
        raise failure
    if request.stream:
        try:
            check_framing(response)
        except InvalidResponseError as exc:
            raise _typed_invalid(exc, call, response.status_code) from None
        return Received(response.status_code, response.headers, None, stream=response)
    try:
        body = read_body(response)
    except InvalidResponseError as exc:
        failure = _typed_invalid(exc, call, response.status_code)
    except WIRE_FAULTS as exc:
        failure = error_for_exception(exc, contract, deadline_hit=_late(call))
    if failure is not None:
        raise failure from failure.__cause__
    if _late(call):  # the watchdog cut a body that then looked complete
        raise error_for_exception(TimeoutError(), contract, deadline_hit=True)
    return Received(response.status_code, response.headers, body)


def masked_key(key: str) -> str:
    """A key's first characters and an ellipsis (``sk-ab…``): a quarter of it at most, five at most."""
    return key[:min(5, len(key) // 4)] + "\u2026"


def explain_refused_key(failure: HermesError, endpoint: Endpoint) -> HermesError:
    """A 401 names the key it refused: where it was read and its masked prefix, never the key."""
    key = endpoint.api_key or ""
    source = endpoint.key_source or "the Endpoint's api_key"
    data = failure.to_dict()
    data["details"] = {**data["details"], "key_source": source, "key_prefix": masked_key(key), "key_length": len(key)}
    data["message"] = (f"{failure.message}. Hermes refused the API key from {source} ({masked_key(key)}, "
                       f"{len(key)} characters): set it to the server's API_SERVER_KEY")
    return HermesError.from_dict(data)


def _typed_invalid(exc: InvalidResponseError, call: Call, status: int) -> InvalidResponseError:
    """The same failure, with the flags of this call: a model call's bad reply leaves its outcome uncertain."""
    return InvalidResponseError(exc.message, uncertain_outcome=not call.contract.read_only, http_status=status,
                                details={"operation": call.operation, **exc.details})


def _late(call: Call) -> bool:
    """Whether the call's wall-clock bound has passed (the watchdog fired, or is about to)."""
    return (call.alarm is not None and call.alarm.fired) or (
        call.ends_at is not None and time.time() >= call.ends_at - 0.01)


__all__ = ["attempts", "execute", "send_once", "convert"]
