"""Error messages that name the fix: the URL and cause of a transport failure, "drop /v1", missing evidence."""

from __future__ import annotations

import time
from typing import Any

import pytest
import requests
from core_support import free_port

from hermes_sdk import ApprovalDeniedError, ApprovalRequest, Endpoint, HermesClient, InvalidInputError, TransportError
from hermes_sdk._app.builtin import BUILTIN_SPECS
from hermes_sdk._core.approval import check
from hermes_sdk._core.transport import TransportCause, error_for_exception

CONTRACTS = {name: spec.contract for name, spec in BUILTIN_SPECS.items()}


def test_a_refused_connection_names_the_url_and_the_cause_in_one_short_sentence() -> None:
    port = free_port()
    with HermesClient(f"http://127.0.0.1:{port}", "secret-key-4471", load_entrypoints=False) as c:
        with pytest.raises(TransportError) as info:
            c.chat(prompt="x")
        text = str(info.value)
        assert text == (f"connector.hermes_agent.transport: could not connect to Hermes at http://127.0.0.1:{port} "
                        "(connection refused); nothing was sent. Is Hermes running there, and is HERMES_BASE_URL "
                        "right?")
        assert info.value.uncertain_outcome is False and info.value.details["sent"] is False
        assert info.value.details["cause"] == "ConnectionRefusedError: [Errno 111] Connection refused"
        assert info.value.details["origin"] == f"http://127.0.0.1:{port}"
        with pytest.raises(TransportError) as info:
            c.response_get("resp_secret123")  # read-only: not uncertain, so no explanation is needed
        text = str(info.value)
        assert "connection refused" in text and "uncertain_outcome" not in text and "resp_secret123" not in text
        assert "secret-key-4471" not in text


def test_the_cause_is_kept_redacted_as_dunder_cause() -> None:
    port = free_port()
    try:
        requests.get(f"http://127.0.0.1:{port}/v1/responses/resp_hidden42", timeout=5)
    except requests.RequestException as exc:
        err = error_for_exception(exc, CONTRACTS["response_get"])
    assert isinstance(err.__cause__, ConnectionRefusedError) and err.__suppress_context__
    assert err.__cause__.__traceback__ is None  # no urllib3 frames
    wrapped = requests.exceptions.ConnectionError(
        "HTTPConnectionPool(host='h', port=1): Max retries exceeded with url: /v1/responses/resp_hidden42 "
        "(Caused by ProxyError('Bearer sk-abcdefghijkl'))")
    err = error_for_exception(wrapped, CONTRACTS["chat"], origin="http://h:1")
    assert isinstance(err.__cause__, TransportCause)
    assert "resp_hidden42" not in str(err.__cause__) and "sk-abcdefghijkl" not in str(err.__cause__)
    assert "resp_hidden42" not in err.details["cause"] and "at http://h:1 (" in err.message


def test_a_call_keeps_the_cause() -> None:
    with HermesClient(f"http://127.0.0.1:{free_port()}", "k", load_entrypoints=False) as c:
        with pytest.raises(TransportError) as info:
            c.chat(prompt="x")
    assert isinstance(info.value.__cause__, ConnectionRefusedError)
    # requests' own exception (its text holds the request path, hence ids) is not kept as context
    assert info.value.__context__ is None or info.value.__suppress_context__ and \
        "Max retries" not in repr(info.value.__context__)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8642/v1", "http://127.0.0.1:8642/v1/"])
def test_a_base_url_ending_in_v1_says_drop_v1(url: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        Endpoint("default", url, "k")
    assert "drop /v1 (use 'http://127.0.0.1:8642')" in str(info.value)
    assert info.value.details["field"] == "base_url"


def test_a_missing_evidence_field_is_named() -> None:
    now = time.time()
    request = ApprovalRequest(id="apr_req", action_id="act_1", capability_id="cap:hermes_agent:default:response_delete",
                              input_snapshot={}, input_hash="h", reason=None, requested_at=now, expires_at=now + 900)
    decision = request.approve(approver="ops", policy_decision_id="")
    with pytest.raises(ApprovalDeniedError) as info:
        check(decision, request)
    assert "lacks required evidence: reason, policy_decision_id" in str(info.value)
    assert "reason= on the call" in str(info.value)
    assert info.value.details["missing"] == ["reason", "policy_decision_id"]


def test_the_approval_required_text_names_every_way_to_approve() -> None:
    from hermes_sdk._core.approval import approval_required_message

    text = approval_required_message("response_delete")
    for fix in ("client.approval_request('response_delete', input", "approval_provider=", "--yes",
                "'Approvals' in the hermes-sdk documentation", "nothing was sent"):
        assert fix in text


# ---------------------------------------------------------------- 401, deadlines, responses("hello")


def test_a_401_names_where_the_key_was_read_and_its_masked_prefix(hermes_emulator: Any,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_sdk import AuthenticationError

    key = "sk-abWRONGwrong0123456789"
    cases = [(lambda: HermesClient(hermes_emulator.base_url, key, load_entrypoints=False), "the api_key argument"),
             (lambda: HermesClient(hermes_emulator.base_url, load_entrypoints=False), "HERMES_API_KEY"),
             (lambda: HermesClient(endpoints=[Endpoint("e", hermes_emulator.base_url, key)], load_entrypoints=False),
              "the Endpoint's api_key")]
    monkeypatch.setenv("HERMES_API_KEY", key)
    for make, source in cases:
        with make() as client:
            for call in (lambda: client.chat(prompt="x"), lambda: client.chat_stream(prompt="x")):
                with pytest.raises(AuthenticationError) as info:
                    call()
                err = info.value
                assert (f"Hermes refused the API key from {source} (sk-ab\u2026, {len(key)} characters): set it to "
                        "the server's API_SERVER_KEY") in str(err)
                assert err.details["key_source"] == source and err.details["key_prefix"] == "sk-ab\u2026"
                for text in (str(err), repr(err), err.message, str(err.details)):
                    assert key not in text and "sk-abW" not in text
    with HermesClient(hermes_emulator.base_url, "short-12", load_entrypoints=False) as client:
        with pytest.raises(AuthenticationError) as info:
            client.models()
        assert "(sh\u2026, 8 characters)" in str(info.value)  # a quarter of a short key at most


def test_the_cli_names_api_key_flag_on_a_401(hermes_emulator: Any, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_sdk._app.cli import main

    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    assert main(["chat", "hi", "--api-key", "sk-wrongwrongwrong123"]) == 1
    err = capsys.readouterr().err
    assert "refused the API key from --api-key (sk-wr\u2026, 21 characters)" in err and "sk-wrongwrong" not in err


@pytest.mark.parametrize("how,expected", [
    ("timeout", "the limit was the call's timeout=0.3 s: pass a larger timeout= (or a deadline=)"),
    ("deadline", "the limit was the call's deadline=: pass a later deadline="),
    ("context", "the limit was the context's deadline (ExecutionContext(deadline=...)): give the context a later "
                "deadline, or the call its own deadline="),
    ("client", "the limit was the client's timeout=0.3 s (HermesClient(timeout=...)): raise it with "
               "HermesClient(timeout=...) or client.with_options(timeout=...), or pass timeout= on the call"),
])
def test_a_deadline_error_names_the_bound_that_fired_and_the_knob(hermes_emulator: Any, how: str,
                                                                  expected: str) -> None:
    import threading

    from hermes_sdk import DeadlineExceededError, ExecutionContext

    # The model holds every call until the test ends: the bound fires, however busy the machine
    # (a SLOW:3 reply raced the 0.3 s bound there), before or after the request was sent.
    release = threading.Event()
    hermes_emulator.script(responder=lambda info: release.wait(60) and None)
    with hermes_emulator.client(load_entrypoints=False) as client:
        def call(stream: bool) -> Any:
            method = client.chat_stream if stream else client.chat
            if how == "timeout":
                return method(prompt="x", timeout=0.3)
            if how == "deadline":
                return method(prompt="x", deadline=time.time() + 0.3)
            if how == "context":
                return method(prompt="x", context=ExecutionContext(deadline=time.time() + 0.3))
            return client.with_options(timeout=0.3).chat(prompt="x") if not stream else \
                client.with_options(timeout=0.3).chat_stream(prompt="x")

        try:
            with pytest.raises(DeadlineExceededError) as info:
                call(False)
            assert str(info.value).endswith(expected) and info.value.details["bound"] in (how, "client_timeout")
            with pytest.raises(DeadlineExceededError) as info:
                for _ in call(True):
                    pass
            assert str(info.value).endswith(expected)
        finally:
            release.set()


def test_without_a_bound_the_published_default_is_named(hermes_emulator: Any) -> None:
    from hermes_sdk import DeadlineExceededError
    from hermes_sdk._app.builtin import BUILTIN_SPECS as SPECS
    from hermes_sdk._core.options import CallOptions

    with hermes_emulator.client(load_entrypoints=False) as client:
        executor = client._executor
        call = executor.build(SPECS["chat"], executor.endpoint(None), {"prompt": "x"}, CallOptions())
    err = call.bind(DeadlineExceededError("the call's deadline passed while waiting for Hermes"))
    assert str(err).endswith("the limit was the published default of 60 s for chat (sla.timeout_ms): pass "
                             "timeout= or deadline= on the call, or build the client with HermesClient(timeout=...)")
    assert err.details["bound"] == "default"
    idle = call.bind(DeadlineExceededError("no stream event for 1 s (idle_timeout; keepalives do not count)",
                                           details={"reason": "idle_timeout"}))
    assert "the limit was" not in str(idle)  # an idle timeout names its own knob


def test_responses_with_a_positional_text_suggests_input(hermes_emulator: Any) -> None:
    with hermes_emulator.client(load_entrypoints=False) as client:
        for method in (client.responses, client.responses_stream):
            with pytest.raises(InvalidInputError) as info:
                method("hello")  # type: ignore[arg-type]
            assert 'pass the text as input=, e.g. client.responses(input="hello")' in str(info.value)
            assert info.value.details == {"field": "body", "suggestion": "input"}
    assert hermes_emulator.requests_seen == []
