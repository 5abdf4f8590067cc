"""Errors through the facade are openai's classes and hermes-sdk's at once; openai's meaning wins
where the two name the same attribute."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from openai_support import user  # noqa: E402

import hermes_sdk  # noqa: E402
import hermes_sdk.openai as facade_module  # noqa: E402
from hermes_sdk import errors as he  # noqa: E402
from hermes_sdk.openai import OpenAI  # noqa: E402


def test_a_401_is_both_classes_and_keeps_openais_code(emu: Any) -> None:
    with OpenAI(base_url=emu.base_url + "/v1", api_key="wrong-key", load_entrypoints=False) as client:
        with pytest.raises(openai.AuthenticationError) as caught:
            client.chat.completions.create(model="hermes-agent", messages=user("hi"))
    error = caught.value
    assert isinstance(error, he.AuthenticationError) and isinstance(error, openai.APIStatusError)
    assert error.status_code == 401 and error.code == "invalid_api_key"
    assert error.hermes_code == "connector.hermes_agent.authentication" and error.hermes_error.code == error.hermes_code
    assert error.uncertain_outcome is False and error.http_status == 401


def test_an_unknown_response_id_is_not_found_in_both(facade: Any) -> None:
    if not hasattr(facade, "responses"):
        pytest.skip(f"openai {openai.VERSION} has no Responses API")
    with pytest.raises(openai.NotFoundError) as caught:
        facade.responses.retrieve("resp_nope")
    assert isinstance(caught.value, he.NotFoundError)


def test_responses_delete_needs_an_approval_and_sends_nothing_without(facade: Any, make_facade: Any,
                                                                    emu: Any) -> None:
    if not hasattr(facade, "responses"):
        pytest.skip(f"openai {openai.VERSION} has no Responses API")
    stored = facade.responses.create(model="hermes-agent", input="keep me")
    with pytest.raises(openai.PermissionDeniedError) as caught:
        facade.responses.delete(stored.id)
    assert isinstance(caught.value, he.ApprovalRequiredError) and caught.value.details.get("sent") is not True
    assert caught.value.response.headers["x-hermes-sdk-local"] == "1"
    assert not [r for r in emu.requests_seen if r.method == "DELETE"]

    def approve(request: Any) -> Any:
        return request.approve(approver="ops", policy_decision_id="pd-7", reason="cleanup")

    approving = make_facade(approval_provider=approve)
    assert approving.responses.delete(stored.id) is None
    assert [r.path for r in emu.requests_seen if r.method == "DELETE"] == [f"/v1/responses/{stored.id}"]
    with pytest.raises(openai.NotFoundError):
        approving.responses.retrieve(stored.id)


def test_a_route_hermes_does_not_serve_fails_locally_unsent(facade: Any, emu: Any) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        facade.embeddings.create(model="hermes-agent", input="x")
    assert isinstance(caught.value, he.UnsupportedByServerError) and caught.value.code == "unsupported_by_facade"
    assert emu.requests_seen == []


def test_an_incomplete_agent_run_is_a_server_error_with_hermes_code(facade: Any) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        facade.chat.completions.create(model="hermes-agent", messages=user("TRUNCEMPTY"))
    error = caught.value
    assert isinstance(error, he.AgentIncompleteError) and error.code == "agent_incomplete"
    assert error.status_code == 502 and error.uncertain_outcome is True and error.action_id


def test_bad_input_is_a_local_bad_request_before_sending(facade: Any, emu: Any) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        facade.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "a"},
                                                                       {"role": "assistant", "content": "b"}])
    assert isinstance(caught.value, he.InvalidInputError) and isinstance(caught.value, ValueError)
    assert caught.value.details["field"] == "messages" and emu.requests_seen == []


def test_errors_pickle_as_their_hermes_error(facade: Any) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        facade.chat.completions.create(model="hermes-agent", messages=user("TRUNCEMPTY"))
    back = pickle.loads(pickle.dumps(caught.value))
    assert isinstance(back, he.AgentIncompleteError) and back.action_id == caught.value.action_id


def test_except_clauses_written_for_openai_or_for_hermes_both_catch(facade: Any) -> None:
    for catch in (openai.APIError, openai.APIStatusError, facade_module.APIStatusError, hermes_sdk.HermesError,
                  he.RemoteTemporaryError):
        with pytest.raises(catch):
            facade.chat.completions.create(model="hermes-agent", messages=user("TRUNCEMPTY"))


def test_the_module_reexports_openais_own_objects() -> None:
    for name in ("APIError", "APIStatusError", "APIConnectionError", "APITimeoutError", "RateLimitError",
                 "NotFoundError", "Stream", "NOT_GIVEN", "Timeout", "DEFAULT_MAX_RETRIES", "types", "OpenAIError"):
        assert getattr(facade_module, name) is getattr(openai, name)
    assert issubclass(facade_module.OpenAI, openai.OpenAI)


def test_there_is_no_async_client_and_it_says_why() -> None:
    with pytest.raises(AttributeError, match="synchronous"):
        facade_module.AsyncOpenAI  # noqa: B018
    with pytest.raises(ImportError):
        from hermes_sdk.openai import AsyncOpenAI  # noqa: F401


def test_error_text_is_scrubbed(facade: Any, emu: Any) -> None:
    secret = "sk-" + "a1b2c3d4e5f6g7h8i9j0k1l2"
    with pytest.raises(openai.BadRequestError) as caught:
        facade.chat.completions.create(model="hermes-agent", messages=user("x"),
                                       extra_headers={"X-Hermes-Session-Id": "bad\nvalue " + secret})
    assert secret not in str(caught.value) and secret not in repr(caught.value)
