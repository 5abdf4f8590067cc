"""Non-2xx replies map to errors by a status table plus one refinement (issue 24), as before.

The mapping it replaced is kept here as the oracle: for every status from 300 to 599 and every
body shape Hermes and its proxies send, the error is the same (class, message, code, protocol
fields, details).
"""

from __future__ import annotations

import io
import itertools
from typing import Any

import pytest
import requests
import urllib3
from requests.structures import CaseInsensitiveDict

from hermes_sdk._app.builtin import BUILTIN_SPECS
from hermes_sdk._core._constants import MAX_ERROR_BODY_BYTES
from hermes_sdk._core._wire import WIRE_FAULTS
from hermes_sdk._core.capabilities import Contract
from hermes_sdk._core.retry import DEFAULT_POLICY
from hermes_sdk._core.transport import decode_json, error_for_status, read_body, retry_after_ms
from hermes_sdk.errors import (
    STATUS_ERRORS,
    AgentIncompleteError,
    AuthenticationError,
    BadRequestError,
    HermesError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    RemoteRejectedError,
    ServerError,
    status_error_class,
)

BODIES = [
    b"",
    b"not json",
    b'{"error": {"message": "m", "type": "t", "code": "c", "param": "p"}}',
    b'{"error": {"message": "busy", "code": "gateway_draining"}}',
    b'{"error": {"message": "stopped", "code": "agent_incomplete", "hermes": {"run": 1}}}',
    b'{"error": {"code": null}}',
    b'{"error": "plain text error"}',
    b'{"text": "a proxy page"}',
    b'[1, 2]',
    b'{"error": 7}',
]


def _response(status: int, body: bytes, reason: str = "Reason") -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.reason = reason
    response.headers = CaseInsensitiveDict({"Retry-After": "2"})
    response.raw = urllib3.HTTPResponse(body=io.BytesIO(body), preload_content=False, status=status)
    return response


def _facts(error: HermesError) -> tuple[Any, ...]:
    return (type(error), error.message, error.code, error.category, error.http_status, error.retryable,
            error.uncertain_outcome, error.retry_after_ms, error.details)


@pytest.mark.parametrize("operation", ["chat", "response_get", "response_delete"])
def test_every_status_and_body_maps_as_before(operation: str) -> None:
    contract = BUILTIN_SPECS[operation].contract
    for status, body in itertools.product(range(300, 600), BODIES):
        got = error_for_status(_response(status, body), contract)
        want = old_error_for_status(_response(status, body), contract)
        assert _facts(got) == _facts(want), (status, body)


@pytest.mark.parametrize("status, code, klass", [
    (400, None, BadRequestError), (401, None, AuthenticationError), (403, None, AuthenticationError),
    (404, None, NotFoundError), (413, None, PayloadTooLargeError), (429, None, RateLimitedError),
    (302, None, RemoteRejectedError), (409, None, RemoteRejectedError), (500, None, ServerError),
    (503, "gateway_draining", ServerError), (502, "agent_incomplete", AgentIncompleteError),
    (400, "agent_incomplete", BadRequestError),  # the refinement is for server errors only
])
def test_the_status_table_and_its_one_refinement(status: int, code: Any, klass: type) -> None:
    assert status_error_class(status, code) is klass
    assert all(issubclass(k, HermesError) for k in STATUS_ERRORS.values())


# ---------------------------------------------------------------- the mapping it replaced (the oracle)


def old_error_for_status(response: requests.Response, contract: Contract) -> HermesError:
    """Map a non-2xx provider response to a typed error, keeping what the connector drops."""
    status = response.status_code
    try:
        # A small bounded read: an error body adds detail, never megabytes (redirects included).
        payload = decode_json(read_body(response, MAX_ERROR_BODY_BYTES))
    except (HermesError,) + WIRE_FAULTS:
        payload = None  # the status alone decides the error; an unreadable body adds nothing
    err = payload.get("error") if isinstance(payload, dict) else None
    provider: dict[str, Any] = {}
    if isinstance(err, dict):
        provider = {k: err.get(k) for k in ("type", "code", "param") if err.get(k) is not None}
        message = str(err.get("message") or "")
    elif isinstance(err, str):
        message = err
    else:
        message = (payload.get("text") if isinstance(payload, dict) else None) or response.reason or ""
    details: dict[str, Any] = {"operation": contract.operation, "remote_status": status}
    if provider:
        details["provider_error"] = provider
    elif isinstance(err, str):  # the jobs routes' {"error": "<text>"} shape
        details["provider_message"] = err
    if isinstance(err, dict) and isinstance(err.get("hermes"), dict):
        details["hermes"] = err["hermes"]
    text = f"Hermes returned HTTP {status}" + (f": {message}" if message else "")
    read_only = contract.read_only
    kwargs: dict[str, Any] = {"http_status": status, "details": details}
    if status in (401, 403):
        return AuthenticationError(text, **kwargs)
    if 300 <= status < 400:
        details["redirect_not_followed"] = True
        return RemoteRejectedError(text, **kwargs)
    if status == 404:
        return NotFoundError(text, **kwargs)
    if status == 413:
        return PayloadTooLargeError(text, **kwargs)
    if status == 429 or (status == 503 and provider.get("code") == "gateway_draining"):
        # Hermes answers both before any agent work. The protocol fields stay conservative, as the
        # connector's are, for model calls; the fact itself is kept in details.
        details["before_agent_work"] = True
        klass = RateLimitedError if status == 429 else ServerError
        return DEFAULT_POLICY.classify(contract, klass(text, retry_after_ms=retry_after_ms(response),
                                                       uncertain_outcome=not read_only, **kwargs))
    if status >= 500:
        klass = AgentIncompleteError if provider.get("code") == "agent_incomplete" else ServerError
        return DEFAULT_POLICY.classify(contract, klass(text, retry_after_ms=retry_after_ms(response),
                                                       uncertain_outcome=not read_only, **kwargs))
    if status == 400:
        return BadRequestError(text, **kwargs)
    return RemoteRejectedError(text, **kwargs)
