"""Error messages that name the fix: the URL and cause of a transport failure, "drop /v1", missing evidence."""

from __future__ import annotations

import time

import pytest
import requests
from core_support import free_port

from hermes_sdk import ApprovalDeniedError, ApprovalRequest, Endpoint, HermesClient, InvalidInputError, TransportError
from hermes_sdk.approval import check
from hermes_sdk.capabilities import CONTRACTS
from hermes_sdk.transport import TransportCause, error_for_exception


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
    from hermes_sdk.approval import approval_required_message

    text = approval_required_message("response_delete")
    for fix in ("client.approval_request('response_delete', input", "approval_provider=", "--yes",
                "docs/approvals.md", "nothing was sent"):
        assert fix in text
