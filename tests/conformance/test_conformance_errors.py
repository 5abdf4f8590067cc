"""Errors and limits: transcripts 11, 14, 15, 16, 19, 22 and 24."""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from conformance_helpers import (
    AUTHENTICATION,
    FAIL500_TEXT,
    INPUT,
    REMOTE_REJECTED,
    REMOTE_TEMPORARY,
    Target,
    assert_error,
    uniq,
)

from hermes_sdk import (
    AuthenticationError,
    InvalidInputError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
)
from hermes_sdk._core.capabilities import capability_id

OVER_LIMIT = 10_000_012  # the transcripts' big.json
JSON_TYPE = "application/json; charset=utf-8"
SECURITY_HEADER = "Content-Security-Policy"

# --------------------------------------------------------------------------- 11


def test_11_get_unknown_is_not_found(server: Target) -> None:
    with server.client() as client:
        with pytest.raises(NotFoundError) as info:
            client.response_get("resp_unknown000")
        result = client.invoke(capability_id("default", "response_get"), {"response_id": "resp_unknown000"})
    err = info.value
    assert_error(err, code=REMOTE_REJECTED, category="permanent", http_status=404, retryable=False,
                 uncertain=False)
    assert "Response not found: resp_unknown000" in err.message
    assert err.details["provider_error"] == {"type": "invalid_request_error"}
    assert result.status == "failed" and isinstance(result.error, NotFoundError)
    assert result.error.http_status == 404
    raw = server.http.get(server.url("/v1/responses/resp_unknown000"), headers=server.auth(), timeout=10)
    assert raw.status_code == 404 and raw.headers["Content-Type"] == JSON_TYPE
    assert raw.json() == {"error": {"message": "Response not found: resp_unknown000",
                                    "type": "invalid_request_error", "param": None, "code": None}}


# --------------------------------------------------------------------------- 14

BAD_REQUESTS: list[tuple[str, str, Any]] = [
    ("/v1/responses", '{"model":"hermes-agent"}',
     {"message": "Missing 'input' field", "type": "invalid_request_error", "param": None, "code": None}),
    ("/v1/responses", '{"input":42}',
     {"message": "'input' must be a string or array", "type": "invalid_request_error", "param": None,
      "code": None}),
    ("/v1/responses", '{"input":"   "}',
     {"message": "No user message found in input", "type": "invalid_request_error", "param": None,
      "code": None}),
    ("/v1/chat/completions", '{"model":"hermes-agent"}',
     {"message": "Missing or invalid 'messages' field", "type": "invalid_request_error"}),
    ("/v1/chat/completions", '{"messages":[{"role":"system","content":"s"}]}',
     {"message": "No user message found in messages", "type": "invalid_request_error"}),
    ("/v1/chat/completions", "{not json",
     {"message": "Invalid JSON in request body", "type": "invalid_request_error", "param": None, "code": None}),
    ("/v1/responses", "{not json",
     {"message": "Invalid JSON in request body", "type": "invalid_request_error"}),
    ("/v1/chat/completions", '{"messages":[{"role":"user","content":[{"type":"input_file","file_id":"f1"}]}]}',
     {"message": "Inline image inputs are supported, but uploaded files and document inputs are not supported "
                 "on this endpoint.", "type": "invalid_request_error", "param": "messages[0].content",
      "code": "unsupported_content_type"}),
]


@pytest.mark.parametrize(("path", "body", "error"), BAD_REQUESTS, ids=[f"case{i}" for i in range(1, 9)])
def test_14_server_400_bodies(server: Target, path: str, body: str, error: Any) -> None:
    mark = server.mark()
    reply = server.http.post(server.url(path), data=body.encode(), timeout=10,
                             headers=server.auth(**{"Content-Type": "application/json"}))
    assert reply.status_code == 400
    assert reply.headers["Content-Type"] == JSON_TYPE
    assert reply.headers[SECURITY_HEADER] == "default-src 'none'; frame-ancestors 'none'"
    assert reply.json() == {"error": error}
    assert server.calls_since(mark) == []


SDK_REFUSED: list[tuple[str, dict[str, Any]]] = [
    ("responses", {"body": {"model": "hermes-agent"}}),
    ("responses", {"body": {"input": 42}}),
    ("responses", {"body": {"input": "   "}}),
    ("chat", {"model": "hermes-agent"}),
    ("chat", {"messages": [{"role": "system", "content": "s"}]}),
    ("chat", {"messages": [{"role": "user", "content": [{"type": "input_file", "file_id": "f1"}]}]}),
]


@pytest.mark.parametrize(("operation", "data"), SDK_REFUSED, ids=[f"sdk{i}" for i in range(1, 7)])
def test_14_sdk_refuses_what_the_server_would_400(server: Target, operation: str, data: dict[str, Any]) -> None:
    mark = server.mark()
    with server.client() as client:
        result = client.invoke(capability_id("default", operation), data)
    assert result.status == "failed" and isinstance(result.error, InvalidInputError)
    assert_error(result.error, code=INPUT, category="permanent", http_status=None)
    assert server.calls_since(mark) == []


# --------------------------------------------------------------------------- 15

AUTH_BODY = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}


def test_15_wrong_key_is_authentication_error(server: Target) -> None:
    mark = server.mark()
    with server.client(api_key="wrong-key") as client:
        calls = [
            lambda: client.chat(prompt="x"),
            lambda: client.responses(input="x"),
            lambda: client.response_get("resp_x"),
            lambda: client.response_delete("resp_x", idempotency_key=f"k-{uuid.uuid4().hex}", reason="401"),
            lambda: client.chat_stream(prompt="x"),
        ]
        for call in calls:
            with pytest.raises(AuthenticationError) as info:
                call()
            assert_error(info.value, code=AUTHENTICATION, category="auth", http_status=401, retryable=False)
            assert info.value.details["provider_error"] == {"type": "invalid_request_error",
                                                            "code": "invalid_api_key"}
    assert server.calls_since(mark) == []


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}),
    ("POST", "/v1/responses", {"input": "x"}),
    ("GET", "/v1/responses/resp_x", None),
    ("DELETE", "/v1/responses/resp_x", None),
])
def test_15_missing_or_wrong_bearer_is_401(server: Target, method: str, path: str, body: Any) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-key"}, {"Authorization": f"bearer {server.api_key}"}):
        reply = server.http.request(method, server.url(path), json=body, headers=headers, timeout=10)
        assert reply.status_code == 401
        assert reply.headers["Content-Type"] == JSON_TYPE
        assert reply.json() == AUTH_BODY


def test_15_health_needs_no_auth_and_origin_is_403(server: Target) -> None:
    health = server.http.get(server.url("/health"), timeout=10)
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}
    mark = server.mark()
    cors = server.http.post(server.url("/v1/chat/completions"), timeout=10,
                            headers=server.auth(Origin="http://evil.example"),
                            json={"messages": [{"role": "user", "content": "x"}]})
    assert cors.status_code == 403
    assert cors.content == b""
    assert "Content-Type" not in cors.headers and SECURITY_HEADER not in cors.headers
    assert server.calls_since(mark) == []


# --------------------------------------------------------------------------- 16


def _send_head_only(server: Target, path: str, key: str) -> tuple[int, dict[str, str], bytes]:
    """Announce an oversized body, send a little of it, read the server's early answer."""
    parts = urlsplit(server.base_url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    try:
        head = (f"POST {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {key}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {OVER_LIMIT}\r\n\r\n")
        sock.sendall(head.encode() + b'{"input":"' + b"x" * 65536)
        reply = http.client.HTTPResponse(sock)
        reply.begin()
        body = reply.read()
        return reply.status, {k: v for k, v in reply.getheaders()}, body
    finally:
        sock.close()


def _chunked_body() -> Iterator[bytes]:
    yield b'{"messages":[{"role":"user","content":"'
    left = OVER_LIMIT - 48
    while left > 0:
        piece = min(left, 1 << 20)
        yield b"x" * piece
        left -= piece
    yield b'"}]}'


BODY_TOO_LARGE = {"error": {"message": "Request body too large.", "type": "invalid_request_error", "param": None,
                            "code": "body_too_large"}}


def test_16_sdk_refuses_over_10mb_locally(server: Target) -> None:
    mark = server.mark()
    with server.client() as client, pytest.raises(PayloadTooLargeError) as info:
        client.responses(input="x" * 10_000_001)
    # Refused before sending: the input code, the class matching Hermes' 413.
    assert_error(info.value, code=INPUT, category="permanent", http_status=None)
    assert info.value.details["sent"] is False
    assert info.value.details["limit_bytes"] == 10_000_000
    assert server.calls_since(mark) == []


def test_16_server_413_with_content_length_comes_before_auth(server: Target) -> None:
    for key in (server.api_key, "wrong"):
        status, headers, body = _send_head_only(server, "/v1/responses", key)
        assert status == 413
        assert headers["Content-Type"] == JSON_TYPE
        assert SECURITY_HEADER not in headers
        assert json.loads(body) == BODY_TOO_LARGE


@pytest.mark.parametrize(("path", "error"), [
    ("/v1/chat/completions", {"message": "Invalid JSON in request body", "type": "invalid_request_error",
                              "param": None, "code": None}),
    ("/v1/responses", {"message": "Invalid JSON in request body", "type": "invalid_request_error"}),
])
def test_16_chunked_oversize_is_a_400(server: Target, path: str, error: Any) -> None:
    reply = server.http.post(server.url(path), data=_chunked_body(), timeout=60,
                             headers=server.auth(**{"Content-Type": "application/json"}))
    assert reply.status_code == 400
    assert reply.json() == {"error": error}


# --------------------------------------------------------------------------- 19


def _hold_the_model(target: Target) -> tuple[Callable[[int], bool], threading.Event]:
    """(wait until the holding run's model call began, the event that lets it finish).

    On the emulator the model call blocks until released: the slot is held for as long as the test
    needs, however slow the machine. The real Hermes' fake LLM sleeps (SLOW:3) instead."""
    release = threading.Event()
    if target.emulator is None:
        def reached(mark: int) -> bool:
            end = time.monotonic() + 60
            while not any("hold the slot" in (c["last_user"] or "") for c in target.calls_since(mark)):
                if time.monotonic() > end:
                    return False
                time.sleep(0.01)
            return True
        return reached, release
    entered = threading.Event()

    def hold(info: Any) -> None:
        if "hold the slot" in info.prompt and not release.is_set():
            entered.set()
            release.wait(60)
        return None  # the default reply (ECHO)

    target.emulator.script(responder=hold)
    return (lambda mark: entered.wait(60)), release


def test_19_concurrency_cap_is_429_with_retry_after(server_cap1: Target) -> None:
    target = server_cap1
    holding, release = _hold_the_model(target)
    with target.client() as holder, target.client() as other, \
            concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        mark = target.mark()
        slow = pool.submit(holder.chat, prompt=uniq("hold the slot" if target.emulator else "SLOW:3 hold the slot"))
        # The slow run holds the only slot once its model call began (the gate is taken first).
        assert holding(mark), "the holding run never reached the model"
        mark = target.mark()
        try:
            with pytest.raises(RateLimitedError) as chat_info:
                other.chat(prompt="B")
            with pytest.raises(RateLimitedError) as stream_info:  # rejected before any SSE begins
                other.responses_stream(input="C")
        finally:
            release.set()
        held = slow.result(timeout=60)
        after = other.chat(prompt=uniq("D"))
    assert held.finish_reason == "stop"
    for err in (chat_info.value, stream_info.value):
        assert_error(err, code=REMOTE_TEMPORARY, category="temporary", http_status=429, uncertain=True,
                     retryable=False)
        assert err.retry_after_ms == 1000 and err.details["before_agent_work"] is True
        assert err.details["provider_error"] == {"type": "rate_limit_error", "code": "rate_limit_exceeded"}
        assert "Too many concurrent runs (max 1)" in err.message
    # The rejected B and C never reached the model; D did (the slow call may log on either side).
    users = [c["last_user"] for c in target.calls_since(mark)]
    assert "B" not in users and "C" not in users
    assert after.text[len("ECHO: "):] in users
    assert after.finish_reason == "stop"


# --------------------------------------------------------------------------- 22


def test_22_other_routes(server: Target) -> None:
    health = {"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}
    for path in ("/health", "/v1/health"):
        reply = server.http.get(server.url(path), timeout=10)
        assert reply.status_code == 200 and reply.json() == health
        assert reply.headers["Content-Type"] == JSON_TYPE
    for path in ("/v1/models", "/p/anything/v1/models"):
        reply = server.http.get(server.url(path), headers=server.auth(), timeout=10)
        assert reply.status_code == 200
        models = reply.json()
        assert models["object"] == "list"
        assert [m["id"] for m in models["data"]] == ["hermes-agent"]
        assert models["data"][0]["owned_by"] == "hermes" and models["data"][0]["object"] == "model"
    unknown = server.http.get(server.url("/v1/nope"), headers=server.auth(), timeout=10)
    assert unknown.status_code == 404
    assert unknown.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert unknown.text == "404: Not Found"
    wrong = server.http.get(server.url("/v1/responses"), headers=server.auth(), timeout=10)
    assert wrong.status_code == 405
    assert wrong.headers["Allow"] == "POST"
    assert wrong.text == "405: Method Not Allowed"
    assert SECURITY_HEADER not in unknown.headers and SECURITY_HEADER not in wrong.headers


# --------------------------------------------------------------------------- 24


def test_24_upstream_500_with_default_retries(server_cap1: Target) -> None:
    target = server_cap1
    assert target.api_max_retries == 3
    mark = target.mark()
    with target.client() as client:
        done = client.chat(prompt=uniq("retry FAIL500"))  # one SDK call ...
    calls = target.calls_since(mark)
    assert len(calls) == 3  # ... three upstream calls, identical
    assert len({(tuple(c["roles"]), c["last_user"]) for c in calls}) == 1
    assert done.finish_reason == "error"
    assert done.text == f"API call failed after 3 retries: {FAIL500_TEXT}"
    assert done.hermes == {"completed": False, "partial": False, "failed": True, "error": FAIL500_TEXT,
                           "error_code": "agent_error"}
    assert done.usage == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
