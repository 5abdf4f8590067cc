"""Failure mapping for every Hermes status, retries (only response_get), transport and deadline errors."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from core_support import agent_requests, free_port, json_response, raw_client

from hermes_sdk import (
    AgentIncompleteError,
    AuthenticationError,
    BadRequestError,
    DeadlineExceededError,
    HermesClient,
    HermesError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitedError,
    RemoteRejectedError,
    ServerError,
    TransportError,
)

P = "connector.hermes_agent."


def err_body(message: str, **extra: Any) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", **extra}}).encode()


HERMES_502 = {"message": "agent failed", "type": "server_error", "param": None, "code": "agent_incomplete",
              "hermes": {"completed": False, "partial": True, "failed": False}}

# status, raw reply, error class, code, category
STATUS_CASES = [
    ("400-json", json_response(400, err_body("Invalid JSON in request body", param=None, code=None)),
     BadRequestError, P + "remote_rejected", "permanent"),
    ("400-nouser", json_response(400, err_body("No user message found in messages")),
     BadRequestError, P + "remote_rejected", "permanent"),
    ("400-content", json_response(400, err_body("bad part", param="messages[0].content",
                                                code="unsupported_content_type")),
     BadRequestError, P + "remote_rejected", "permanent"),
    ("400-session", json_response(400, err_body("Invalid session ID")),
     BadRequestError, P + "remote_rejected", "permanent"),
    ("401", json_response(401, err_body("Invalid API key", code="invalid_api_key")),
     AuthenticationError, P + "authentication", "auth"),
    ("403-origin", b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n",
     AuthenticationError, P + "authentication", "auth"),
    ("404", json_response(404, err_body("Response not found: resp_x", param=None, code=None)),
     NotFoundError, P + "remote_rejected", "permanent"),
    ("404-plain", b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 14\r\n\r\n404: Not Found",
     NotFoundError, P + "remote_rejected", "permanent"),
    ("405", b"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Length: 23\r\n\r\n405: Method Not Allowed",
     RemoteRejectedError, P + "remote_rejected", "permanent"),
    ("413", json_response(413, err_body("Request body too large.", param=None, code="body_too_large")),
     PayloadTooLargeError, P + "remote_rejected", "permanent"),
    ("429", json_response(429, json.dumps({"error": {"message": "Too many concurrent runs (max 10)",
                                                     "type": "rate_limit_error", "param": None,
                                                     "code": "rate_limit_exceeded"}}).encode(),
                          "Retry-After: 1\r\n"),
     RateLimitedError, P + "remote_temporary", "temporary"),
    ("500", json_response(500, json.dumps({"error": {"message": "Internal server error: boom",
                                                     "type": "server_error", "param": None, "code": None}}).encode()),
     ServerError, P + "remote_temporary", "temporary"),
    ("502", json_response(502, json.dumps({"error": HERMES_502}).encode(), "X-Hermes-Completed: false\r\n"),
     AgentIncompleteError, P + "remote_temporary", "temporary"),
    ("503-drain", json_response(503, json.dumps({"error": {"message": "draining", "type": "server_error",
                                                           "code": "gateway_draining"}}).encode(),
                                "Retry-After: 1\r\n"),
     ServerError, P + "remote_temporary", "temporary"),
    ("503", json_response(503, b"Service Unavailable"), ServerError, P + "remote_temporary", "temporary"),
]


@pytest.mark.parametrize("name,reply,klass,code,category", STATUS_CASES, ids=[c[0] for c in STATUS_CASES])
@pytest.mark.parametrize("op", ["chat", "response_get"])
def test_status_mapping(raw_server, op: str, name: str, reply: bytes, klass: type, code: str,
                        category: str) -> None:
    server = raw_server(lambda sock, req, srv: sock.sendall(reply))
    status = int(name[:3])
    with raw_client(server, max_attempts=1) as c:
        with pytest.raises(klass) as info:
            c.chat(prompt="x") if op == "chat" else c.response_get("resp_x")
    err = info.value
    assert isinstance(err, HermesError)
    assert (err.code, err.category, err.http_status) == (code, category, status)
    assert err.details["remote_status"] == status and err.details["operation"] == op
    read = op == "response_get"
    temporary = category == "temporary"
    assert err.retryable is (read and temporary)
    # Conservative like the connector: every temporary failure of a model call is uncertain.
    assert err.uncertain_outcome is (temporary and not read)
    if name in ("429", "503-drain"):
        assert err.retry_after_ms == 1000 and err.details["before_agent_work"] is True
    if name == "502":
        assert isinstance(err, AgentIncompleteError)
        assert err.hermes == {"completed": False, "partial": True, "failed": False}
        assert err.details["hermes"] == err.hermes
        assert err.details["provider_error"]["code"] == "agent_incomplete"
    if name == "400-content":
        assert err.details["provider_error"] == {"type": "invalid_request_error", "param": "messages[0].content",
                                                 "code": "unsupported_content_type"}
    assert len(server.requests) == 1


def test_emulator_statuses(emu) -> None:
    with HermesClient(emu.base_url, "wrong-key", load_entrypoints=False) as c, pytest.raises(AuthenticationError) as a:
        c.chat(prompt="x")
    assert a.value.http_status == 401 and a.value.details["provider_error"]["code"] == "invalid_api_key"
    with emu.client(load_entrypoints=False) as c:
        with pytest.raises(AgentIncompleteError) as info:
            c.chat(prompt="TRUNCEMPTY")
        assert info.value.http_status == 502 and info.value.uncertain_outcome is True
        assert info.value.hermes["completed"] is False and info.value.hermes["partial"] is True
        r = c.invoke("cap:hermes_agent:default:chat", {"prompt": "TRUNCEMPTY"})
        assert r.status == "failed" and isinstance(r.error, AgentIncompleteError) and r.error.hermes
        with pytest.raises(BadRequestError) as bad:
            c.chat(messages=[{"role": "user", "content": [{"type": "text", "text": "hi"},
                                                          {"type": "input_audio", "data": "x"}]}])
        assert bad.value.http_status == 400 and bad.value.uncertain_outcome is False
        with pytest.raises(NotFoundError):
            c.responses({"input": "x", "previous_response_id": "resp_unknown"})


def test_emulator_draining_is_503_before_the_cap_and_before_any_work(emu) -> None:
    emu.draining = True
    with emu.client(load_entrypoints=False) as c:
        with pytest.raises(ServerError) as info:
            c.chat(prompt="x", idempotency_key="k-drain")
        r = c.invoke("cap:hermes_agent:default:responses_stream", {"body": {"input": "y"}})
        emu.draining = False
        again = c.chat(prompt="x", idempotency_key="k-drain")  # nothing ran: the key was given back
        assert c.chat(prompt="after").text == "ECHO: after"
    err = info.value
    assert (err.http_status, err.retry_after_ms, err.code) == (503, 1000, P + "remote_temporary")
    assert err.retryable is False and err.uncertain_outcome is True and err.details["before_agent_work"] is True
    assert err.details["provider_error"]["code"] == "gateway_draining"
    assert r.status == "failed" and r.error.http_status == 503
    assert again.text == "ECHO: x" and not again.replayed
    assert emu.executions == 2


def test_emulator_429_keeps_retry_after(hermes_emulator_factory) -> None:
    # Its own emulator: a run another test left in flight on the shared one would take the only slot.
    emu = hermes_emulator_factory(max_concurrent_runs=1)
    with emu.client(load_entrypoints=False) as c:
        slow = c.chat_stream(prompt="SLOW:1 hold")
        next(iter(slow))  # the run is admitted and holds the only slot
        with pytest.raises(RateLimitedError) as info:
            c.chat(prompt="x")
        slow.close()
    err = info.value
    assert err.http_status == 429 and err.retry_after_ms == 1000
    assert err.retryable is False and err.uncertain_outcome is True and err.code == P + "remote_temporary"
    assert err.details["before_agent_work"] is True


# ---------------------------------------------------------------- retries


def sequence_server(raw_server, replies: list[bytes]):
    def handler(sock, req, srv) -> None:
        index = min(len(srv.requests), len(replies)) - 1
        sock.sendall(replies[index])
    return raw_server(handler)


OK_RESPONSE = json.dumps({"id": "resp_ok", "object": "response", "status": "completed", "created_at": 1,
                          "model": "hermes-agent", "output": [], "usage": None}).encode()


def test_response_get_retries_5xx_then_succeeds(raw_server) -> None:
    server = sequence_server(raw_server, [json_response(503, b"{}"), json_response(500, b"{}"),
                                         json_response(200, OK_RESPONSE)])
    with raw_client(server) as c:
        out = c.response_get("resp_ok", idempotency_key="get-key")
    assert out.id == "resp_ok" and out.status == "completed"
    assert len(server.requests) == 3
    assert {r.header("Idempotency-Key") for r in server.requests} == {"get-key"}
    assert {r.request_line for r in server.requests} == {"GET /v1/responses/resp_ok HTTP/1.1"}


def test_response_get_gives_up_after_max_attempts(raw_server) -> None:
    server = sequence_server(raw_server, [json_response(500, b"{}")])
    with raw_client(server, max_attempts=2) as c, pytest.raises(ServerError) as info:
        c.response_get("resp_ok")
    assert len(server.requests) == 2 and info.value.retryable is True and info.value.uncertain_outcome is False


def test_response_get_does_not_retry_404(raw_server) -> None:
    server = sequence_server(raw_server, [json_response(404, b"{}"), json_response(200, OK_RESPONSE)])
    with raw_client(server) as c, pytest.raises(NotFoundError):
        c.response_get("resp_ok")
    assert len(server.requests) == 1


def test_response_get_retries_dropped_connection(raw_server) -> None:
    def handler(sock, req, srv) -> None:
        if len(srv.requests) == 1:
            sock.close()  # no response bytes at all
            return
        sock.sendall(json_response(200, OK_RESPONSE))
    server = raw_server(handler)
    with raw_client(server) as c:
        assert c.response_get("resp_ok").id == "resp_ok"
    assert len(server.requests) == 2


@pytest.mark.parametrize("op", ["chat", "responses", "response_delete"])
def test_unsafe_operations_sent_exactly_once(raw_server, op: str) -> None:
    server = sequence_server(raw_server, [json_response(500, b"{}"), json_response(200, b"{}")])
    with raw_client(server, approval_provider=lambda r: r.approve(approver="a", policy_decision_id="p")) as c:
        with pytest.raises(ServerError) as info:
            if op == "chat":
                c.chat(prompt="x")
            elif op == "responses":
                c.responses(input="x")
            else:
                c.response_delete("resp_1", idempotency_key="k", reason="cleanup")
    assert len(server.requests) == 1
    assert info.value.retryable is False and info.value.uncertain_outcome is True


def test_emulator_chat_500_sent_once(emu) -> None:
    with emu.client(load_entrypoints=False) as c:
        emu.drop_connection("before_response")
        with pytest.raises(TransportError) as info:
            c.chat(prompt="side effects happen")
    err = info.value
    assert err.code == P + "transport" and err.category == "transport"
    assert err.uncertain_outcome is True and err.retryable is False
    assert err.details["connect_failure"] is False
    assert len(agent_requests(emu)) == 1 and emu.executions == 1


def test_mid_body_drop_on_chat_is_typed(emu) -> None:
    with emu.client(load_entrypoints=False) as c:
        emu.drop_connection("mid_body")
        with pytest.raises(TransportError) as info:
            c.chat(prompt="x")
        assert info.value.uncertain_outcome is True
        emu.drop_connection("mid_body", path="/v1/responses/")
        rid = c.responses(input="stored").id
        assert c.response_get(rid).id == rid  # the cut GET is retried
    assert len([r for r in emu.requests_seen if r.method == "GET"]) == 2


def test_connect_refused_is_certain_because_nothing_was_sent() -> None:
    # The connector marks every transport failure of a model call uncertain; nothing left here, so
    # the outcome is certain (and the key is given back).
    with HermesClient(f"http://127.0.0.1:{free_port()}", "k", load_entrypoints=False) as c:
        with pytest.raises(TransportError) as info:
            c.chat(prompt="x", idempotency_key="k-refused")
        assert info.value.uncertain_outcome is False and info.value.retryable is False
        assert info.value.details["connect_failure"] is True and info.value.details["sent"] is False
        assert c.records.get("cap:hermes_agent:default:chat", "k-refused") is None  # key given back
        with pytest.raises(TransportError) as info:
            c.chat_stream(prompt="x")
        assert info.value.uncertain_outcome is False and info.value.details["sent"] is False
        result = c.invoke("cap:hermes_agent:default:chat", {"prompt": "x"}, idempotency_key="k-refused")
        assert result.status == "failed" and result.error is not None and not result.error.uncertain_outcome
        with pytest.raises(TransportError) as info:
            c.response_get("resp_1")
        assert info.value.uncertain_outcome is False and info.value.retryable is True


# ---------------------------------------------------------------- deadlines


def test_passed_deadline_sends_nothing(client: HermesClient, emu) -> None:
    for call in (lambda: client.chat(prompt="x", deadline=time.time() - 1),
                 lambda: client.chat_stream(prompt="x", deadline=time.time() - 1),
                 lambda: client.response_get("resp_1", deadline=time.time() - 3600),
                 lambda: client.responses(input="x", deadline=time.time())):
        with pytest.raises(DeadlineExceededError) as info:
            call()
        assert info.value.code == P + "deadline_exceeded" and info.value.details["sent"] is False
        assert info.value.uncertain_outcome is False
    assert emu.requests_seen == []


def test_deadline_passes_while_server_is_slow(client: HermesClient, emu) -> None:
    start = time.monotonic()
    with pytest.raises(DeadlineExceededError) as info:  # the reply comes at 2 s: only the deadline ends it
        client.chat(prompt="SLOW:2 think", deadline=time.time() + 0.5)
    elapsed = time.monotonic() - start
    err = info.value
    assert elapsed > 0.4  # not before the deadline (a lower bound: a busy machine cannot break it)
    assert err.code == P + "deadline_exceeded" and err.category == "temporary"
    assert err.uncertain_outcome is True and err.retryable is False
    assert len(agent_requests(emu)) == 1
    r = client.invoke("cap:hermes_agent:default:chat", {"prompt": "SLOW:2 again"}, deadline=time.time() + 0.3)
    assert r.status == "failed" and isinstance(r.error, DeadlineExceededError) and r.error.uncertain_outcome


def test_deadline_on_slow_get_is_certain(raw_server) -> None:
    def handler(sock, req, srv) -> None:
        srv.event("release").wait(3)
    server = raw_server(handler)
    with raw_client(server) as c, pytest.raises(DeadlineExceededError) as info:
        c.response_get("resp_1", deadline=time.time() + 0.3)
    server.event("release").set()
    assert info.value.uncertain_outcome is False and len(server.requests) == 1


def test_deadline_during_stream(client: HermesClient) -> None:
    stream = client.chat_stream(prompt="SLOW:2 wait", deadline=time.time() + 0.5)
    events = []
    with pytest.raises(DeadlineExceededError) as info:
        for event in stream:
            events.append(event)
    assert len(events) == 1  # the role chunk arrives before the agent runs
    assert info.value.uncertain_outcome is True
    res = stream.result()
    assert res.status == "failed" and res.error.code == P + "deadline_exceeded"
