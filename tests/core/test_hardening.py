"""Issue 9, the parts below the call path: inputs refused before any I/O, Retry-After and deep JSON
in the error mapping, fail-closed approvals, and redirects that are never read."""

from __future__ import annotations

import datetime as dt
import email.utils
import io
import math
import time
from typing import Any

import attrs
import pytest
import requests
import urllib3
from requests.structures import CaseInsensitiveDict

from hermes_sdk import ApprovalDecision, HermesClient
from hermes_sdk._app.builtin import BUILTIN_SPECS, build_request
from hermes_sdk._core._constants import MAX_INPUT_DEPTH, RETRY_AFTER_CAP
from hermes_sdk._core.approval import check
from hermes_sdk._core.endpoints import Endpoint, ExecutionContext, deadline_epoch, validate_header_value
from hermes_sdk._core.retry import backoff_delay
from hermes_sdk._core.transport import decode_json, error_for_status, retry_after_ms
from hermes_sdk.errors import (
    ApprovalDeniedError,
    HermesError,
    InvalidInputError,
    InvalidResponseError,
    RateLimitedError,
    RemoteRejectedError,
)

CONTRACTS = {name: spec.contract for name, spec in BUILTIN_SPECS.items()}


def _response(status: int, body: bytes = b"", **headers: str) -> requests.Response:
    response = requests.Response()
    response.status_code = status
    response.headers = CaseInsensitiveDict(headers)
    response.raw = urllib3.HTTPResponse(body=io.BytesIO(body), preload_content=False, status=status)
    return response


# ---------------------------------------------------------------- Retry-After


@pytest.mark.parametrize("value, expected", [
    ("1", 1000), ("0.5", 500), ("inf", 30_000), ("Infinity", 30_000), ("1e309", 30_000), ("-inf", 0),
    ("99999999999999999999999", 30_000), ("-30", 0), ("nan", None), ("soon", None), ("", None),
    ("1" * 5000, 30_000),
])
def test_retry_after_never_raises_and_is_capped(value: str, expected: Any) -> None:
    assert retry_after_ms(_response(429, **{"Retry-After": value})) == expected


def test_retry_after_http_dates() -> None:
    future = email.utils.formatdate(time.time() + 10 * 86_400, usegmt=True)
    soon = email.utils.formatdate(time.time() + 5, usegmt=True)
    past = email.utils.formatdate(time.time() - 3600, usegmt=True)
    assert retry_after_ms(_response(429, **{"Retry-After": future})) == int(RETRY_AFTER_CAP * 1000)
    assert 3000 <= retry_after_ms(_response(429, **{"Retry-After": soon})) <= 5000
    assert retry_after_ms(_response(429, **{"Retry-After": past})) == 0
    assert retry_after_ms(_response(429, **{"Retry-After": "Mon, 99 Foo 99999 99:99:99 GMT"})) is None


@pytest.mark.parametrize("value", ["inf", "1e309", "nan", "-1"])
def test_a_429_with_a_wild_retry_after_keeps_its_status_and_retryability(value: str) -> None:
    error = error_for_status(_response(429, b'{"error": {"message": "slow down"}}', **{"Retry-After": value}),
                             CONTRACTS["response_get"])
    assert isinstance(error, RateLimitedError) and error.http_status == 429
    assert error.retryable is True and error.uncertain_outcome is False
    assert error.retry_after_ms is None or 0 <= error.retry_after_ms <= RETRY_AFTER_CAP * 1000
    assert 0 <= backoff_delay(1, error) <= RETRY_AFTER_CAP


# ---------------------------------------------------------------- bodies


def test_json_nested_too_deep_is_invalid_response() -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(InvalidResponseError) as info:
        decode_json(deep)
    assert info.value.code == "connector.hermes_agent.invalid_response"
    # In an error body it is only an unreadable body: the status decides.
    error = error_for_status(_response(500, deep), CONTRACTS["chat"])
    assert error.http_status == 500 and error.uncertain_outcome is True


def test_an_error_body_is_read_only_a_little() -> None:
    big = b'{"error": {"message": "' + b"m" * (1024 * 1024) + b'"}}'
    response = _response(500, big)
    error = error_for_status(response, CONTRACTS["chat"])
    assert error.http_status == 500 and len(error.message) < 200  # the body was not taken in
    assert response.raw.tell() <= 64 * 1024 + 1


def test_a_callers_session_never_reads_a_redirect_body(raw_server) -> None:
    from core_support import raw_client  # noqa: F401  (the suite's helper, for the same setup)

    sent: list[int] = []

    def handler(sock, req, srv) -> None:
        sock.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:9/x\r\nContent-Length: 314572800\r\n\r\n")
        total = 0
        try:
            while total < 300 * 1024 * 1024:
                sock.sendall(b"r" * 65536)
                total += 65536
        except OSError:
            pass
        sent.append(total)
    server = raw_server(handler)
    with requests.Session() as session:
        client = HermesClient(base_url=server.base_url, api_key="k", session=session, load_entrypoints=False)
        with pytest.raises(RemoteRejectedError) as info:
            client.response_get("resp_1")
        client.close()
    assert info.value.http_status == 302 and info.value.details["redirect_not_followed"] is True
    deadline = time.time() + 30  # a guard against a hang, not a bound
    while not sent and time.time() < deadline:
        time.sleep(0.01)
    assert sent and sent[0] < 32 * 1024 * 1024, sent  # what the kernel buffers, not 300 MiB


# ---------------------------------------------------------------- inputs refused before any I/O


def _refused(operation: str, data: Any) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as info:
        build_request(operation, data)
    assert "field" in info.value.details
    return info.value


@pytest.mark.parametrize("operation, data, field", [
    ("chat", {"prompt": "x", "temperature": 10 ** 400}, "temperature"),
    ("chat", {"prompt": "x", "temperature": math.inf}, "temperature"),
    ("chat", {"prompt": "x", "top_p": math.nan}, "top_p"),
    ("chat", {"prompt": "x", "max_tokens": 2 ** 64}, "max_tokens"),
    ("chat", {"prompt": "x", "presence_penalty": -math.inf}, "presence_penalty"),
    ("chat", {"prompt": "x", "seed": 10 ** 30}, "seed"),
    ("chat", {"prompt": "x", "session_id": "s\ud800"}, "session_id"),
    ("chat", {"prompt": "x", "session_id": "日本語"}, "session_id"),
    ("chat_stream", {"prompt": "x", "session_key": " padded"}, "session_key"),
    ("chat", {"prompt": "x", "idempotency_key": "k\udc80"}, "idempotency_key"),
    ("chat", {"prompt": "x\ud800"}, "input"),
    ("chat", {"prompt": "x", "metadata": {1: "a", "b": 2}}, "input.metadata"),
    ("chat", {"prompt": "x", "metadata": {(1, 2): "a"}}, "input.metadata"),
    ("responses", {"input": "x", "temperature": 1e309}, "body.temperature"),
    ("responses", {"input": "x", "max_output_tokens": 10 ** 100}, "body.max_output_tokens"),
    ("responses", {"body": {"input": "x"}, "session_key": "\udcff"}, "session_key"),
    ("responses_stream", {"input": [{"role": "user", "content": "x\udfff"}]}, "input"),
    ("response_get", {"response_id": "resp_\ud800"}, "response_id"),
    ("response_delete", {"response_id": "resp_1", "session_key": "ключ"}, "session_key"),
    ("response_get", {"response_id": "resp_1", "_aip": {None: 1, "a": 2}}, "input._aip"),
])
def test_unsendable_values_are_refused_with_their_field(operation: str, data: Any, field: str) -> None:
    assert _refused(operation, data).details["field"] == field


@pytest.mark.parametrize("operation", sorted(CONTRACTS))
def test_input_nested_thousands_deep_is_refused(operation: str) -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = {"d": deep} if len(str(type(deep))) % 2 else [deep]
    base = {"chat": {"prompt": "x"}, "chat_stream": {"prompt": "x"}, "responses": {"input": "x"},
            "responses_stream": {"input": "x"}}.get(operation, {"response_id": "resp_1"})
    error = _refused(operation, {**base, "_aip": deep} if "response_id" in base else {**base, "metadata": deep})
    assert error.details["limit"] == MAX_INPUT_DEPTH


def test_nesting_within_the_limit_is_sent() -> None:
    deep: Any = "x"
    for _ in range(MAX_INPUT_DEPTH - 2):
        deep = [deep]
    assert build_request("chat", {"prompt": "x", "metadata": {"d": deep}}).body


@pytest.mark.parametrize("value", [0, 5, 5.0, 300, 999_999_999.9, -1])
def test_a_small_deadline_says_it_is_epoch_seconds_and_points_to_timeout(value: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        deadline_epoch(value)
    assert info.value.details["field"] == "deadline"
    assert "absolute epoch seconds" in info.value.message and "timeout=" in info.value.message


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 10 ** 400, 1e300, 2 ** 63, "123", True,
                                   dt.datetime(1990, 1, 1, tzinfo=dt.timezone.utc)])
def test_unusable_deadlines_are_refused(value: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        deadline_epoch(value)
    assert info.value.details["field"] == "deadline"


def test_real_deadlines_are_kept() -> None:
    now = time.time()
    assert deadline_epoch(now + 5) == now + 5
    assert deadline_epoch(int(now)) == float(int(now))
    aware = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=30)
    assert abs(deadline_epoch(aware) - aware.timestamp()) < 1e-6
    assert deadline_epoch(dt.datetime(9999, 12, 31, tzinfo=dt.timezone.utc)) is not None
    assert deadline_epoch(None) is None


def test_header_values_are_checked_when_built() -> None:
    for bad in ("a\ud800", "日本", " lead", "trail ", "a\r\nb", "x" * 20_000):
        with pytest.raises(InvalidInputError):
            validate_header_value("f", bad)
    assert validate_header_value("f", "café\tok") == "café\tok"
    for key in ("sk-\ud800", "clé-日本"):
        with pytest.raises(InvalidInputError) as info:
            Endpoint(id="e", base_url="http://127.0.0.1:1", api_key=key)
        assert info.value.details["field"] == "api_key"
        with pytest.raises(InvalidInputError):
            HermesClient(base_url="http://127.0.0.1:1", api_key=key, load_entrypoints=False)
    with pytest.raises(InvalidInputError):
        ExecutionContext(principal_id="user-\udc00")
    with pytest.raises(InvalidInputError):
        ExecutionContext(delegation_chain=["ok", 5])  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        ExecutionContext(deadline=5)


def test_typed_methods_and_invoke_refuse_before_io_and_keep_the_key(hermes_emulator) -> None:
    with hermes_emulator.client(load_entrypoints=False) as client:
        calls = [
            lambda: client.chat(prompt="x", session_id="s-日本", idempotency_key="k1"),
            lambda: client.chat(prompt="x", temperature=math.inf, idempotency_key="k1"),
            lambda: client.chat_stream(prompt="x", session_key="\udc80", idempotency_key="k1"),
            lambda: client.responses(input="x", metadata={1: 2}, idempotency_key="k1"),
            lambda: client.response_get("resp_\ud800", idempotency_key="k1"),
            lambda: client.chat(prompt="x", deadline=5, idempotency_key="k1"),
        ]
        for call in calls:
            with pytest.raises(InvalidInputError):
                call()
        result = client.invoke("cap:hermes_agent:default:chat", {"prompt": "x", "top_p": 10 ** 400},
                               idempotency_key="k1")
        assert result.status == "failed" and isinstance(result.error, InvalidInputError)
        for op in ("chat", "chat_stream", "responses", "response_get"):
            assert client.records.get(f"cap:hermes_agent:default:{op}", "k1") is None
        assert client.chat(prompt="x", idempotency_key="k1").text  # the key was never spent
    assert len([r for r in hermes_emulator.requests_seen if r.path.startswith("/v1/")]) == 1


# ---------------------------------------------------------------- approvals fail closed


def _decision(**changes: Any) -> dict[str, Any]:
    now = time.time()
    base = dict(approval_id="apr_1", decision="approved", approver="ops", decided_at=now, expires_at=now + 600,
                input_hash="h", reason="cleanup", policy_decision_id="pd-1")
    return {**base, **changes}


@pytest.mark.parametrize("changes", [
    {"decided_at": math.nan}, {"expires_at": math.nan}, {"expires_at": math.inf}, {"decided_at": -math.inf},
    {"expires_at": "2099-01-01T00:00:00Z"}, {"decided_at": None}, {"expires_at": True}, {"expires_at": 10 ** 400},
])
def test_malformed_approval_timestamps_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError) as info:
        ApprovalDecision(**_decision(**changes))
    assert info.value.details["field"].startswith("approval.")


@pytest.mark.parametrize("name", ["decided_at", "expires_at"])
def test_a_nan_timestamp_that_got_past_construction_never_approves(name: str) -> None:
    from hermes_sdk import ApprovalRequest

    decision = ApprovalDecision(**_decision())
    object.__setattr__(decision, name, math.nan)
    request = ApprovalRequest(id="aprq_1", action_id="act_1", capability_id="cap:hermes_agent:default:response_delete",
                              input_snapshot={}, input_hash="h", reason="cleanup", requested_at=time.time(),
                              expires_at=time.time() + 600)
    with pytest.raises(ApprovalDeniedError) as info:
        check(decision, request)
    assert info.value.details["reason"] == "malformed_timestamps"
    fixed = {"decided_at": time.time(), "expires_at": time.time() + 300}[name]
    assert check(attrs.evolve(decision, **{name: fixed}), request).approver == "ops"


def test_a_nan_approval_sends_no_delete(hermes_emulator) -> None:
    with hermes_emulator.client(load_entrypoints=False) as client:
        request = client.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup")
        decision = request.approve(approver="ops", policy_decision_id="pd-1")
        object.__setattr__(decision, "expires_at", math.nan)
        with pytest.raises(ApprovalDeniedError):
            client.response_delete("resp_1", idempotency_key="d1", approval=decision, reason="cleanup")
        as_json = {**attrs.asdict(decision), "expires_at": math.nan}
        with pytest.raises(InvalidInputError):
            client.response_delete("resp_1", idempotency_key="d1", approval=as_json, reason="cleanup")
        result = client.invoke("cap:hermes_agent:default:response_delete", {"response_id": "resp_1"},
                               idempotency_key="d1", approval=decision, reason="cleanup")
        assert result.status == "failed" and isinstance(result.error, ApprovalDeniedError)
    assert not [r for r in hermes_emulator.requests_seen if r.method == "DELETE"]


# ---------------------------------------------------------------- TLS


def test_tls_is_verified_by_default(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A self-signed certificate is refused: nothing is sent, the failure is typed."""
    import shutil
    import socket
    import ssl
    import subprocess
    import threading

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.delenv(name, raising=False)
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
                   check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    received: list[bytes] = []
    done = threading.Event()

    def serve() -> None:  # every attempt (response_get retries a transport failure)
        while not done.is_set():
            try:
                sock, _ = listener.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            try:
                with context.wrap_socket(sock, server_side=True) as tls:
                    received.append(tls.recv(65536))
            except (OSError, ssl.SSLError):
                pass
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client = HermesClient(base_url=f"https://127.0.0.1:{listener.getsockname()[1]}", api_key="sk-tls-test",
                          load_entrypoints=False)
    with pytest.raises(HermesError) as info:
        client.response_get("resp_1", deadline=time.time() + 10)
    client.close()
    done.set()
    thread.join(5)
    listener.close()
    assert info.value.code == "connector.hermes_agent.transport"
    assert received == [], "no request bytes may cross an unverified connection"
    assert client._executor.runtime.transport._origin_settings(client.endpoints[0].base_url)[1] is True  # verify=True
