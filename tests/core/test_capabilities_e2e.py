"""Every capability end to end against the emulator: typed methods and ``client.invoke``."""

from __future__ import annotations

import pytest
from core_support import agent_requests

from hermes_sdk import (
    ActionResult,
    ApprovalRequiredError,
    ChatCompletion,
    ChatStream,
    DeletionReceipt,
    HermesClient,
    HermesResponse,
    NotFoundError,
    ResponseStream,
    StreamResult,
)


def cap(op: str, ep: str = "default") -> str:
    return f"cap:hermes_agent:{ep}:{op}"


def test_chat_typed(client: HermesClient, emu) -> None:
    out = client.chat(prompt="hello there")
    assert isinstance(out, ChatCompletion)
    assert out.text == "ECHO: hello there"
    assert out.finish_reason == "stop" and out.completed
    assert out.id.startswith("chatcmpl-") and out.model == "hermes-agent"
    assert isinstance(out.created, int) and out.usage["total_tokens"] > 0
    assert out.session_id and out.session_id.startswith("api-")
    (seen,) = agent_requests(emu)
    assert seen.method == "POST" and seen.path == "/v1/chat/completions"
    assert seen.body["messages"] == [{"role": "user", "content": "hello there"}]
    assert seen.body["stream"] is False and seen.body["model"] == "hermes-agent"


def test_chat_stream_typed(client: HermesClient) -> None:
    stream = client.chat_stream(prompt="one two three four five")
    assert isinstance(stream, ChatStream)
    res = stream.result()
    assert isinstance(res, StreamResult)
    assert res.status == "completed" and res.terminal and not res.truncated and res.error is None
    assert res.text == "ECHO: one two three four five"
    assert res.operation == "chat_stream" and res.endpoint_id == "default" and res.http_status == 200
    assert res.events[-1].data == "[DONE]" and res.events[-1].terminal
    assert res.finish_reason == "stop"


def test_responses_typed_and_get_and_delete(client: HermesClient, emu) -> None:
    out = client.responses({"input": "store me", "instructions": "be brief"})
    assert isinstance(out, HermesResponse)
    assert out.status == "completed" and out.id.startswith("resp_")
    assert out.output_text == "ECHO: store me"
    assert out.session_id  # UUID per request
    (seen,) = agent_requests(emu)
    assert seen.body == {"input": "store me", "instructions": "be brief", "model": "hermes-agent", "stream": False}

    got = client.response_get(out.id)
    assert isinstance(got, HermesResponse) and got.id == out.id and got.output_text == "ECHO: store me"

    receipt = client.response_delete(out.id, idempotency_key="del-1", reason="cleanup")
    assert isinstance(receipt, DeletionReceipt)
    assert (receipt.id, receipt.object, receipt.deleted) == (out.id, "response", True)
    assert emu.stored_response(out.id) is None
    with pytest.raises(NotFoundError) as info:
        client.response_get(out.id)
    assert info.value.http_status == 404


def test_responses_body_fields_as_kwargs(client: HermesClient, emu) -> None:
    out = client.responses(input="kw input", store=False)
    assert out.output_text == "ECHO: kw input"
    assert agent_requests(emu)[0].body["store"] is False
    assert emu.stored_response(out.id) is None


def test_responses_stream_typed(client: HermesClient, emu) -> None:
    stream = client.responses_stream({"input": "stream this please"})
    assert isinstance(stream, ResponseStream)
    names = [e.event for e in stream]
    assert names[0] == "response.created" and names[-1] == "response.completed"
    res = stream.result()
    assert res.status == "completed" and res.text == "ECHO: stream this please"
    assert res.final is not None and res.final["status"] == "completed"
    assert emu.stored_response(res.final["id"])["status"] == "completed"
    assert agent_requests(emu)[0].body["stream"] is True


# ---------------------------------------------------------------- invoke


def test_invoke_chat(client: HermesClient) -> None:
    r = client.invoke(cap("chat"), {"prompt": "via invoke"}, action_id="act-1", idempotency_key="k-1")
    assert isinstance(r, ActionResult)
    assert r.status == "completed" and r.error is None and r.ok
    assert r.action_id == "act-1" and r.capability_id == cap("chat") and r.idempotency_key == "k-1"
    assert r.output["choices"][0]["message"]["content"] == "ECHO: via invoke"
    assert r.http_status == 200 and r.session_id and not r.replayed


def test_invoke_chat_stream(client: HermesClient) -> None:
    r = client.invoke(cap("chat_stream"), {"query": "streamed invoke"})
    assert r.status == "completed"
    assert r.output["text"] == "ECHO: streamed invoke"
    assert r.output["terminal"] is True and r.output["truncated"] is False
    assert r.output["operation"] == "chat_stream" and r.output["http_status"] == 200
    assert r.output["events"][-1]["raw_data"] == "[DONE]"


def test_invoke_responses_and_stream_and_get_and_delete(client: HermesClient, emu) -> None:
    r = client.invoke(cap("responses"), {"body": {"input": "first"}, "session_key": "sk"})
    assert r.status == "completed" and r.output["object"] == "response"
    rid = r.output["id"]
    assert agent_requests(emu)[0].header("X-Hermes-Session-Key") == "sk"

    s = client.invoke(cap("responses_stream"), {"body": {"input": "second", "previous_response_id": rid}})
    assert s.status == "completed" and s.output["text"] == "ECHO: second"

    g = client.invoke(cap("response_get"), {"response_id": rid})
    assert g.status == "completed" and g.output["id"] == rid

    d = client.invoke(cap("response_delete"), {"response_id": rid}, idempotency_key="del-k", reason="r")
    assert d.status == "completed" and d.output == {"id": rid, "object": "response", "deleted": True}
    assert d.approval is not None and d.approval["decision"] == "approved"


def test_invoke_failures_are_returned_not_raised(client: HermesClient, emu) -> None:
    r = client.invoke(cap("response_get"), {"response_id": "resp_missing"})
    assert r.status == "failed" and isinstance(r.error, NotFoundError)
    assert r.error.code == "connector.hermes_agent.remote_rejected" and r.error.http_status == 404
    assert r.error.action_id == r.action_id and r.error.capability_id == cap("response_get")

    bad = client.invoke(cap("chat"), {"prompt": "  "})
    assert bad.status == "failed" and bad.error.code == "connector.hermes_agent.configuration_or_input"

    unknown = client.invoke("cap:hermes_agent:default:cron_list", {})
    assert unknown.status == "failed" and unknown.error.details["field"] == "capability_id"

    other_ep = client.invoke(cap("chat", "elsewhere"), {"prompt": "x"})
    assert other_ep.status == "failed" and other_ep.error.details["field"] == "endpoint"
    assert agent_requests(emu) == []


def test_invoke_delete_without_approval_is_pending_approval(emu) -> None:
    with emu.client(load_entrypoints=False) as c:
        rid = c.responses(input="keep").id
        r = c.invoke(cap("response_delete"), {"response_id": rid}, idempotency_key="k")
        assert r.status == "pending_approval"
        assert isinstance(r.error, ApprovalRequiredError) and r.error.code == "hermes_sdk.approval_required"
        assert r.error.details["input_hash"]
        with pytest.raises(ApprovalRequiredError):
            c.response_delete(rid, idempotency_key="k2")
    assert emu.stored_response(rid) is not None
    assert [x.method for x in emu.requests_seen if x.path.startswith("/v1/responses/")] == []


def test_delete_with_explicit_approval(emu) -> None:
    with emu.client(load_entrypoints=False) as c:
        rid = c.responses(input="to delete").id
        req = c.approval_request("response_delete", {"response_id": rid}, reason="gdpr")
        decision = req.approve(approver="alice", policy_decision_id="pd-9")
        receipt = c.response_delete(rid, idempotency_key="k", approval=decision, reason="gdpr")
        assert receipt.deleted is True


def test_delete_requires_idempotency_key(client: HermesClient, emu) -> None:
    rid = client.responses(input="x").id
    r = client.invoke(cap("response_delete"), {"response_id": rid})
    assert r.status == "failed" and r.error.details["field"] == "idempotency_key"
    assert emu.stored_response(rid) is not None
