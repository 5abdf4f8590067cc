"""Responses: transcripts 04-10, 12, 13 and 21, through the SDK's public API."""

from __future__ import annotations

import uuid

import pytest
from conformance_helpers import (
    FAIL400_TEXT,
    FAIL500_TEXT,
    INPUT,
    MSG_ID,
    REMOTE_REJECTED,
    RESP_ID,
    STREAM_FAILED,
    TRUNCATION_TEXT,
    UUID4,
    ZERO_RESP_USAGE,
    Target,
    assert_error,
    assert_usage,
    message_output,
    uniq,
)

from hermes_sdk import HermesResponse, InvalidInputError, NotFoundError, StreamResult
from hermes_sdk._core.capabilities import capability_id

ENVELOPE_KEYS = {"id", "object", "status", "created_at", "model", "output", "usage"}


def _key() -> str:
    return f"conf-{uuid.uuid4().hex}"


def assert_envelope(resp: HermesResponse, text: str) -> None:
    assert RESP_ID.match(resp.id), resp.id
    assert resp.raw["object"] == "response"
    assert resp.status == "completed"
    assert isinstance(resp.created_at, int)
    assert resp.output == message_output(text)  # items carry no id or status
    assert resp.output_text == text
    assert set(resp.raw) == ENVELOPE_KEYS  # no output_text, error, instructions, previous_response_id
    assert_usage(resp.usage, "responses")


# --------------------------------------------------------------------------- 04


def test_04_store_true_with_instructions(server: Target) -> None:
    user = uniq("first responses turn")
    mark = server.mark()
    with server.client() as client:
        resp = client.responses(input=user, instructions="Be brief.", store=True)
    assert_envelope(resp, f"ECHO: {user}")
    assert resp.model == "hermes-agent"
    assert UUID4.match(resp.session_id or ""), resp.session_id
    assert [c["roles"] for c in server.calls_since(mark)] == [["system", "user"]]


def test_04_array_input_makes_history(server: Target) -> None:
    word = uniq("array input")
    mark = server.mark()
    with server.client() as client:
        resp = client.responses({"input": [
            {"role": "user", "content": "earlier q"},
            {"role": "assistant", "content": "earlier a"},
            {"role": "user", "content": [{"type": "input_text", "text": word}]}]})
    assert resp.output_text == f"ECHO: {word}"
    assert [c["roles"] for c in server.calls_since(mark)] == [["system", "user", "assistant", "user"]]


# --------------------------------------------------------------------------- 05


def test_05_previous_response_id_chain(server: Target) -> None:
    with server.client() as client:
        first = client.responses(input=uniq("first"), instructions="Be brief.")
        m2 = server.mark()
        second = client.responses(input="second turn via previous_response_id", previous_response_id=first.id)
        m3 = server.mark()
        third = client.responses(input="third turn", previous_response_id=second.id)
    assert second.output_text == "ECHO: second turn via previous_response_id"
    assert third.output_text == "ECHO: third turn"
    # The chain shares the first turn's session (UUID4), and each turn sees the history.
    assert UUID4.match(first.session_id or "")
    assert first.session_id == second.session_id == third.session_id
    assert len({first.id, second.id, third.id}) == 3
    two = server.calls_between(m2, m3)
    assert [c["roles"] for c in two] == [["system", "user", "assistant", "user"]]
    three = server.calls_since(m3)
    assert len(three) == 1 and three[0]["n_messages"] > 4
    assert three[0]["roles"][0] == "system" and three[0]["roles"][-1] == "user"
    assert three[0]["last_user"] == "third turn"


def test_05_unknown_previous_response_id_is_404(server: Target) -> None:
    mark = server.mark()
    with server.client() as client, pytest.raises(NotFoundError) as info:
        client.responses(input="x", previous_response_id="resp_doesnotexist")
    assert_error(info.value, code=REMOTE_REJECTED, category="permanent", http_status=404, retryable=False)
    assert "Previous response not found: resp_doesnotexist" in info.value.message
    assert info.value.details["provider_error"] == {"type": "invalid_request_error"}
    assert server.calls_since(mark) == []


# --------------------------------------------------------------------------- 06


def test_06_conversation_name_then_delete_head_starts_fresh(server: Target) -> None:
    name = uniq("sdk-conv").replace(" ", "-")
    with server.client() as client:
        m1 = server.mark()
        one = client.responses(input="conv turn one", conversation=name)
        m2 = server.mark()
        two = client.responses(input="conv turn two", conversation=name)
        receipt = client.response_delete(two.id, idempotency_key=_key(), reason="conformance 06")
        m3 = server.mark()
        three = client.responses(input="conv turn three", conversation=name)
    assert [c["n_messages"] for c in server.calls_between(m1, m2)] == [2]  # an unknown name is not an error
    assert [c["roles"] for c in server.calls_between(m2, m3)] == [["system", "user", "assistant", "user"]]
    assert one.session_id == two.session_id
    assert (receipt.id, receipt.object, receipt.deleted) == (two.id, "response", True)
    # Deleting the head dropped the name -> id mapping: no history, a new session.
    assert [c["roles"] for c in server.calls_since(m3)] == [["system", "user"]]
    assert three.output_text == "ECHO: conv turn three"
    assert UUID4.match(three.session_id or "") and three.session_id != two.session_id


# --------------------------------------------------------------------------- 07


def test_07_conversation_and_previous_response_id(server: Target) -> None:
    with server.client() as client:
        prev = client.responses(input=uniq("prev"))
        mark = server.mark()
        with pytest.raises(InvalidInputError) as info:  # the SDK refuses locally, nothing is sent
            client.responses(input="x", conversation="sdk-conv-1", previous_response_id=prev.id)
    assert_error(info.value, code=INPUT, category="permanent", http_status=None)
    assert server.calls_since(mark) == []
    reply = server.http.post(server.url("/v1/responses"), headers=server.auth(), timeout=30, json={
        "model": "hermes-agent", "input": "x", "conversation": "sdk-conv-1", "previous_response_id": prev.id})
    assert reply.status_code == 400
    assert reply.json() == {"error": {"message": "Cannot use both 'conversation' and 'previous_response_id'",
                                      "type": "invalid_request_error", "param": None, "code": None}}


# --------------------------------------------------------------------------- 08


def test_08_conversation_history_wins_over_previous_response_id(server: Target) -> None:
    with server.client() as client:
        first = client.responses(input=uniq("chain base"))
        second = client.responses(input="chain more", previous_response_id=first.id)
        mark = server.mark()
        resp = client.responses(input="what did I say?", previous_response_id=second.id,
                                conversation_history=[{"role": "user", "content": "I like tea"},
                                                      {"role": "assistant", "content": "noted"}])
    assert resp.output_text == "ECHO: what did I say?"
    assert [c["roles"] for c in server.calls_since(mark)] == [["system", "user", "assistant", "user"]]
    assert resp.session_id != second.session_id and UUID4.match(resp.session_id or "")


@pytest.mark.parametrize(("history", "message"), [
    ([{"role": "user"}], "conversation_history[0] must have 'role' and 'content' fields"),
    ("nope", "'conversation_history' must be an array of message objects"),
])
def test_08_bad_conversation_history(server: Target, history: object, message: str) -> None:
    with server.client() as client, pytest.raises(InvalidInputError):
        client.responses(input="x", conversation_history=history)
    reply = server.http.post(server.url("/v1/responses"), headers=server.auth(), timeout=30,
                             json={"model": "hermes-agent", "input": "x", "conversation_history": history})
    assert reply.status_code == 400
    assert reply.json() == {"error": {"message": message, "type": "invalid_request_error",
                                      "param": None, "code": None}}


# --------------------------------------------------------------------------- 09

EXPECTED_STREAM = ["response.created", "response.output_item.added", "response.output_text.delta",
                   "response.output_text.done", "response.output_item.done", "response.completed"]


def assert_sequence(result: StreamResult) -> None:
    numbers = [e.data["sequence_number"] for e in result.events]
    assert numbers == list(range(len(numbers)))  # 0-based, monotonic, no gaps
    assert all(e.data["type"] == e.event for e in result.events)
    assert not any(e.data == "[DONE]" for e in result.events)


def test_09_responses_stream_then_get_then_chain(server: Target) -> None:
    user = uniq("stream a response please with several words")
    with server.client() as client:
        stream = client.responses_stream(input=user)
        pieces = list(stream.text_deltas())
        result = stream.result()
        stored = client.response_get(result.final["id"])
        mark = server.mark()
        follow = client.responses_stream(input="stream follow-up", previous_response_id=stored.id)
        follow_result = follow.result()
    text = f"ECHO: {user}"
    for res in (result, follow_result):
        assert res.status == "completed" and res.error is None and res.terminal
        assert [e.event for e in res.events] == EXPECTED_STREAM  # a short answer is ONE batched delta
        assert_sequence(res)
    assert "".join(pieces) == result.text == text
    created, added, delta, done, item_done, completed = (e.data for e in result.events)
    head = created["response"]
    assert RESP_ID.match(head["id"]) and head["status"] == "in_progress" and head["output"] == []
    assert set(head) == {"id", "object", "status", "created_at", "model", "output"}
    item_id = added["item"]["id"]
    assert MSG_ID.match(item_id)
    assert added["item"] == {"id": item_id, "type": "message", "status": "in_progress",
                             "role": "assistant", "content": []}
    assert delta == {"type": "response.output_text.delta", "item_id": item_id, "output_index": 0,
                     "content_index": 0, "delta": text, "logprobs": [], "sequence_number": 2}
    assert done["text"] == text and done["item_id"] == item_id
    assert item_done["item"] == {"id": item_id, "type": "message", "status": "completed", "role": "assistant",
                                 "content": [{"type": "output_text", "text": text}]}
    final = completed["response"]
    assert final["id"] == head["id"] and final["status"] == "completed"
    assert final["output"] == message_output(text)
    assert_usage(final["usage"], "responses")
    assert result.final == final
    # GET returns exactly the completed envelope.
    assert stored.raw == final and stored.session_id is None
    assert UUID4.match(stream.session_id or "")
    assert follow.session_id == stream.session_id  # the chain inherits the session
    assert [c["roles"] for c in server.calls_since(mark)] == [["system", "user", "assistant", "user"]]
    assert follow_result.text == "ECHO: stream follow-up"


def test_09_responses_stream_through_invoke(server: Target) -> None:
    user = uniq("invoke stream")
    with server.client() as client:
        result = client.invoke(capability_id("default", "responses_stream"), {"body": {"input": user}})
    assert result.status == "completed" and result.error is None
    assert result.output["text"] == f"ECHO: {user}"
    assert result.output["final"]["status"] == "completed"
    assert UUID4.match(result.session_id or "")


# --------------------------------------------------------------------------- 10


def test_10_get_stored_response(server: Target) -> None:
    with server.client() as client:
        created = client.responses(input=uniq("stored"), instructions="Be brief.")
        mark = server.mark()
        got = client.response_get(created.id)
    assert got.raw == created.raw
    assert got.session_id is None  # GET sets no X-Hermes-Session-Id
    assert server.calls_since(mark) == []


# --------------------------------------------------------------------------- 12


def test_12_delete_then_delete_again_then_get(server: Target) -> None:
    with server.client() as client:
        created = client.responses(input=uniq("delete me"))
        receipt = client.response_delete(created.id, idempotency_key=_key(), reason="conformance 12")
        with pytest.raises(NotFoundError) as again:
            client.response_delete(created.id, idempotency_key=_key(), reason="conformance 12 again")
        with pytest.raises(NotFoundError) as gone:
            client.response_get(created.id)
    assert (receipt.id, receipt.object, receipt.deleted) == (created.id, "response", True)
    for err in (again.value, gone.value):
        assert_error(err, code=REMOTE_REJECTED, category="permanent", http_status=404)
        assert f"Response not found: {created.id}" in err.message


# --------------------------------------------------------------------------- 13


def test_13_store_false_then_get_and_chain_are_404(server: Target) -> None:
    with server.client() as client:
        resp = client.responses(input=uniq("do not store"), store=False)
        mark = server.mark()
        with pytest.raises(NotFoundError) as get_info:
            client.response_get(resp.id)
        with pytest.raises(NotFoundError) as chain_info:
            client.responses(input="x", previous_response_id=resp.id)
    assert_envelope(resp, resp.output_text)
    assert UUID4.match(resp.session_id or "")
    assert f"Response not found: {resp.id}" in get_info.value.message
    assert f"Previous response not found: {resp.id}" in chain_info.value.message
    assert chain_info.value.http_status == 404
    assert server.calls_since(mark) == []


# --------------------------------------------------------------------------- 21


@pytest.mark.parametrize(("switch", "text", "calls"), [
    ("FAIL500", f"API call failed after 1 retries: {FAIL500_TEXT}", 1),
    ("FAIL400", FAIL400_TEXT, 1),
    ("TRUNCEMPTY", TRUNCATION_TEXT, 4),
])
def test_21_nonstream_responses_never_signal_failure(server: Target, switch: str, text: str, calls: int) -> None:
    mark = server.mark()
    with server.client() as client:
        resp = client.responses(input=uniq(f"resp {switch}"))
        stored = client.response_get(resp.id)
    assert resp.status == "completed"
    assert resp.output == message_output(text)
    assert resp.usage == ZERO_RESP_USAGE
    assert stored.raw == resp.raw  # what got stored for the failed run
    assert len(server.calls_since(mark)) == calls


def test_21_stream_fail500_still_completes(server: Target) -> None:
    with server.client() as client:
        result = client.responses_stream(input=uniq("resp stream FAIL500")).result()
    assert result.status == "completed" and result.error is None
    assert [e.event for e in result.events] == EXPECTED_STREAM
    assert_sequence(result)
    text = f"API call failed after 1 retries: {FAIL500_TEXT}"
    assert result.text == text
    assert result.final["output"] == message_output(text) and result.final["usage"] == ZERO_RESP_USAGE


def test_21_stream_truncempty_is_response_failed(server: Target) -> None:
    with server.client() as client:
        result = client.responses_stream(input=uniq("resp stream TRUNCEMPTY")).result()
        stored = client.response_get(result.final["id"])
    assert [e.event for e in result.events] == ["response.created", "response.failed"]
    assert_sequence(result)
    assert result.status == "failed" and result.terminal and result.text == ""
    assert result.error is not None
    assert_error(result.error, code=STREAM_FAILED, category="connector", http_status=None, uncertain=True)
    final = result.events[-1].data["response"]
    assert final["status"] == "failed"
    assert final["error"] == {"message": TRUNCATION_TEXT, "type": "server_error"}
    assert final["output"] == message_output(TRUNCATION_TEXT)
    assert final["usage"] == ZERO_RESP_USAGE
    assert stored.raw == final and stored.status == "failed" and stored.error == final["error"]
