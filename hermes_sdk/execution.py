"""One execution of a capability: HTTP attempts (only retry-safe capabilities retry), decoding, streams.

A mixin of HermesClient: the client owns the state (plugin manager, transport, redactor); this
module owns what happens between "send it" and "here is the ActionResult".
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

import pluggy
import requests

from . import convert
from ._constants import MODEL_CALL_TIMEOUT, STORED_CALL_TIMEOUT, STREAM_TIMEOUT
from .approval import ApprovalDecision
from .capabilities import CONTRACTS, Contract
from .endpoints import Endpoint
from .errors import DeadlineExceededError, HermesError, InvalidResponseError
from .invocation import Attempt, Invocation
from .models import ActionResult, StreamEvent, StreamResult
from .operations import ProviderRequest
from .plugins import call_pipeline, notify
from .redaction import Redactor
from .streaming import Aggregate, ChatStream, HermesStream, ResponseStream
from .transport import Transport, backoff_delay, decode_json, error_for_exception, error_for_status, read_body

_TIMEOUTS = {"chat": MODEL_CALL_TIMEOUT, "responses": MODEL_CALL_TIMEOUT, "chat_stream": STREAM_TIMEOUT,
             "responses_stream": STREAM_TIMEOUT, "response_get": STORED_CALL_TIMEOUT,
             "response_delete": STORED_CALL_TIMEOUT}
_PATH_TEMPLATES = {op: c.path for op, c in CONTRACTS.items()}


class ExecutionMixin:
    """Execution steps of HermesClient; the attributes below are the client's."""

    _pm: pluggy.PluginManager
    _transport: Transport
    _event_observers: bool
    redactor: Redactor
    max_attempts: int

    def _record(self, cap: str, key: Optional[str], result: ActionResult, unsent: bool) -> None:
        raise NotImplementedError

    def _observe(self, invocation: Invocation, result: ActionResult,
                 stream_result: Optional[StreamResult] = None) -> None:
        raise NotImplementedError

    def _execute(self, invocation: Invocation, ep: Endpoint, contract: Contract, request: ProviderRequest,
                 headers: dict[str, str], deadline: Optional[float], keep_events: bool, key: Optional[str],
                 decision: Optional[ApprovalDecision]) -> tuple[ActionResult, Any]:
        response = self._attempts(invocation, ep, contract, request, headers, deadline)
        session_id = response.headers.get("X-Hermes-Session-Id")
        base: dict[str, Any] = dict(
            action_id=invocation.action_id, capability_id=invocation.capability_id, idempotency_key=key,
            session_id=session_id, http_status=response.status_code,
            approval=decision.evidence() if decision else None)
        invocation.set_attribute("http_status", response.status_code)
        if request.stream:
            return self._open_stream(invocation, ep, contract, request, response, deadline, keep_events, key, base)
        body = response._content  # read inside the attempt, unless a plugin substituted the response
        if not isinstance(body, bytes):
            body = _read_typed(response, contract, deadline)
        try:
            data = decode_json(body)
            value: Any
            if contract.operation == "chat":
                value = convert.chat_completion(data, session_id)
            elif contract.operation == "response_delete":
                value = convert.deletion_receipt(data)
            else:
                value = convert.response(data, session_id)
        except InvalidResponseError as exc:
            exc.uncertain_outcome = not contract.read_only
            exc.http_status = response.status_code
            raise
        return ActionResult(status="completed", output=data, recorded_at=time.time(), **base), value

    def _attempts(self, invocation: Invocation, ep: Endpoint, contract: Contract, request: ProviderRequest,
                  headers: dict[str, str], deadline: Optional[float]) -> requests.Response:
        attempts = self.max_attempts if contract.retry_safe else 1
        number = 0
        while True:
            number += 1
            timeout = _TIMEOUTS[contract.operation]
            if deadline is not None:
                remaining = deadline - time.time()
                if remaining <= 0:
                    raise DeadlineExceededError("the deadline passed before the call was sent",
                                                details={"operation": contract.operation, "sent": False})
                timeout = min(timeout, remaining)

            def send(t: float = timeout) -> requests.Response:
                return self._send_once(ep, contract, request, headers, t, deadline)

            attempt = Attempt(invocation, number, contract.method, _PATH_TEMPLATES[contract.operation], send)
            try:
                response: requests.Response = call_pipeline(self._pm, "hermes_http_attempt", attempt=attempt)
            except HermesError as exc:
                invocation.set_attribute("attempts", number)
                if not exc.retryable or number >= attempts:
                    raise
                delay = backoff_delay(number, exc)
                if deadline is not None and time.time() + delay >= deadline:
                    raise
                time.sleep(delay)
                continue
            invocation.set_attribute("attempts", number)
            return response

    def _send_once(self, ep: Endpoint, contract: Contract, request: ProviderRequest, headers: dict[str, str],
                   timeout: float, deadline: Optional[float]) -> requests.Response:
        try:
            response = self._transport.send(ep, request.method, request.path, headers, request.body, timeout)
        except (requests.RequestException, OSError) as exc:
            raise error_for_exception(exc, contract, deadline_hit=_passed(deadline)) from None
        if not 200 <= response.status_code < 300:
            raise error_for_status(response, contract)
        if not request.stream:
            # Read the body inside the attempt, so a body cut short is a retryable attempt failure
            # for response_get (the retry loop never sees failures that happen after it returns).
            response._content = _read_typed(response, contract, deadline)
        return response

    def _open_stream(self, invocation: Invocation, ep: Endpoint, contract: Contract, request: ProviderRequest,
                     response: requests.Response, deadline: Optional[float], keep_events: bool,
                     key: Optional[str], base: dict[str, Any]) -> tuple[ActionResult, HermesStream]:
        aggregate = Aggregate(ep.id, contract.operation, response.status_code, request.max_events,
                              base["session_id"], keep_events)
        holder: list[HermesStream] = []

        def on_settle(stream_result: StreamResult) -> None:
            # The aggregate as JSON copies every event: build it only for a durable record here;
            # invoke() builds it when it returns the result, observers get a summary without events.
            output = convert.stream_result_to_json(stream_result) if key is not None else None
            result = ActionResult(status=stream_result.status, output=output,
                                  error=stream_result.error, recorded_at=time.time(), **base)
            if result.error is not None:
                result.error.action_id, result.error.capability_id = base["action_id"], base["capability_id"]
            if holder:
                holder[0].action_result = result  # type: ignore[attr-defined]
            self._record(invocation.capability_id, key, result, unsent=False)
            self._observe(invocation, result, stream_result)

        on_event: Optional[Callable[[StreamEvent], None]] = None
        if self._event_observers:
            def on_event(event: StreamEvent) -> None:
                notify(self._pm, "hermes_stream_event", invocation=invocation,
                       event=self.redactor.redact({"event": event.event, "terminal": event.terminal,
                                                   "data": event.data}))
        klass = ChatStream if contract.operation == "chat_stream" else ResponseStream
        stream = klass(response, aggregate, deadline=deadline, on_event=on_event, on_settle=on_settle)
        holder.append(stream)
        pending = ActionResult(status="pending", **base)
        return pending, stream



def _passed(deadline: Optional[float]) -> bool:
    return deadline is not None and time.time() >= deadline - 0.01


def _read_typed(response: requests.Response, contract: Contract, deadline: Optional[float]) -> bytes:
    """Read a JSON body; a cut or oversize body is a typed error (uncertain for model calls)."""
    try:
        return read_body(response)
    except InvalidResponseError as exc:
        exc.uncertain_outcome = not contract.read_only
        exc.http_status = response.status_code
        raise
    except (requests.RequestException, OSError) as exc:
        raise error_for_exception(exc, contract, deadline_hit=_passed(deadline)) from None
