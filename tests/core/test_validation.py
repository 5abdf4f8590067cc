"""Input validation: every rule raises InvalidInputError with the connector's code and the field,
before anything reaches the server; and the request mapping (headers vs body) is exact."""

from __future__ import annotations

import json
from typing import Any, Callable

import pytest
from core_support import agent_requests, approve_all, json_response, raw_client

from hermes_sdk import HermesClient, InvalidInputError
from hermes_sdk._families.chat.operations import CHAT_FIELDS

CODE = "connector.hermes_agent.configuration_or_input"
LONG = "s" * 257


def expect_invalid(fn: Callable[[], Any], field: str, emu: Any = None) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as info:
        fn()
    err = info.value
    assert err.code == CODE and err.category == "permanent"
    assert err.details["field"] == field
    assert err.retryable is False and err.uncertain_outcome is False
    if emu is not None:
        assert emu.requests_seen == [], "nothing may be sent for invalid input"
    return err


CHAT_CASES = [
    ({"prompt": "a", "query": "b"}, "input"),
    ({"prompt": "a", "messages": [{"role": "user", "content": "b"}]}, "input"),
    ({}, "input"),
    ({"prompt": "   \n\t"}, "prompt"),
    ({"query": ""}, "query"),
    ({"prompt": 42}, "prompt"),
    ({"messages": []}, "messages"),
    ({"messages": "hi"}, "messages"),
    ({"messages": ["hi"]}, "messages[0]"),
    ({"messages": [{"role": "user"}]}, "messages[0]"),
    ({"messages": [{"content": "no role"}]}, "messages[0]"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0]"),
    ({"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}, "messages"),
    ({"messages": [{"role": "system", "content": "only system"}]}, "messages"),
    ({"messages": [{"role": "user", "content": "   "}]}, "messages"),
    ({"prompt": "x", "model": ""}, "model"),
    ({"prompt": "x", "model": 3}, "model"),
    ({"prompt": "x", "session_id": LONG}, "session_id"),
    ({"prompt": "x", "session_id": "a\rb"}, "session_id"),
    ({"prompt": "x", "session_id": "a\nb"}, "session_id"),
    ({"prompt": "x", "session_id": "a\x00b"}, "session_id"),
    ({"prompt": "x", "session_id": ""}, "session_id"),
    ({"prompt": "x", "session_key": LONG}, "session_key"),
    ({"prompt": "x", "session_key": "k\r\n"}, "session_key"),
    ({"prompt": "x", "session_key": "k\x00"}, "session_key"),
    ({"prompt": "x", "max_tokens": -1}, "max_tokens"),
    ({"prompt": "x", "max_tokens": 1.5}, "max_tokens"),
    ({"prompt": "x", "max_tokens": True}, "max_tokens"),
    ({"prompt": "x", "max_tokens": "10"}, "max_tokens"),
    ({"prompt": "x", "temperature": "hot"}, "temperature"),
    ({"prompt": "x", "temperature": True}, "temperature"),
    ({"prompt": "x", "temperature": float("nan")}, "temperature"),
    ({"prompt": "x", "top_p": "0.9"}, "top_p"),
    ({"prompt": "x", "top_p": float("inf")}, "top_p"),
    ({"prompt": "x", "unserialisable": object()}, "input"),
]


@pytest.mark.parametrize("op", ["chat", "chat_stream"])
@pytest.mark.parametrize("data,field", CHAT_CASES)
def test_chat_rules_typed(client: HermesClient, emu, op: str, data: dict, field: str) -> None:
    method = client.chat if op == "chat" else client.chat_stream
    # Fields the typed method does not model travel in extra_body (a bare unknown keyword is refused).
    typed = {k: v for k, v in data.items() if k in CHAT_FIELDS or k in ("prompt", "query", "messages", "model")}
    extra = {k: v for k, v in data.items() if k not in typed}
    expect_invalid(lambda: method(**typed, **({"extra_body": extra} if extra else {})), field, emu)


@pytest.mark.parametrize("data,field", CHAT_CASES[:12])
def test_chat_rules_invoke(client: HermesClient, emu, data: dict, field: str) -> None:
    r = client.invoke("cap:hermes_agent:default:chat", data)
    assert r.status == "failed" and isinstance(r.error, InvalidInputError)
    assert r.error.code == CODE and r.error.details["field"] == field
    assert emu.requests_seen == []


def test_chat_stream_max_events_range(client: HermesClient, emu) -> None:
    expect_invalid(lambda: client.chat_stream(prompt="x", max_events=0), "max_events", emu)
    expect_invalid(lambda: client.chat_stream(prompt="x", max_events=100_001), "max_events", emu)
    r = client.invoke("cap:hermes_agent:default:chat", {"prompt": "x", "max_events": 5})
    assert r.status == "failed" and r.error.details["field"] == "max_events"


def test_chat_boundaries_accepted(client: HermesClient, emu) -> None:
    sid, skey = "i" * 256, "k" * 256
    out = client.chat(prompt="edge", session_id=sid, session_key=skey, max_tokens=0, temperature=0, top_p=1)
    assert out.text == "ECHO: edge"
    seen = agent_requests(emu)[0]
    assert seen.header("X-Hermes-Session-Id") == sid and seen.header("X-Hermes-Session-Key") == skey
    assert out.session_id == sid


def test_chat_mapping_headers_body_and_forwarding(client: HermesClient, emu) -> None:
    client.chat(
        messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": "u1"},
                  {"role": "assistant", "content": "a1"}, {"role": "user", "content": "u2"}],
        session_id="sess-1", session_key="mem:1", idempotency_key="idem-1",
        temperature=0.2, top_p=0.5, max_tokens=7, stop=["X"], user="u-9", metadata={"m": 1},
        extra_body={"vendor_extension": {"nested": [1, 2]}, "stream": True},
    )
    seen = agent_requests(emu)[0]
    body = seen.body
    for control in ("session_id", "session_key", "idempotency_key", "max_events", "_aip", "prompt", "query"):
        assert control not in body
    assert body["stream"] is False, "stream is forced to the capability"
    assert body["model"] == "hermes-agent"
    assert body["vendor_extension"] == {"nested": [1, 2]}, "unknown fields are forwarded"
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["stop"]) == (0.2, 0.5, 7, ["X"])
    assert (body["user"], body["metadata"]) == ("u-9", {"m": 1})
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    assert seen.header("X-Hermes-Session-Id") == "sess-1"
    assert seen.header("X-Hermes-Session-Key") == "mem:1"
    assert seen.header("Idempotency-Key") == "idem-1"


def test_chat_stream_forces_stream_true_and_strips_control(client: HermesClient, emu) -> None:
    client.chat_stream(prompt="s", extra_body={"stream": False}, max_events=10, model="custom-model").result()
    body = agent_requests(emu)[0].body
    assert body["stream"] is True and "max_events" not in body and body["model"] == "custom-model"


def test_chat_invoke_control_fields_become_headers(client: HermesClient, emu) -> None:
    r = client.invoke("cap:hermes_agent:default:chat_stream",
                      {"query": "q", "session_id": "s-2", "session_key": "k-2", "max_events": 50,
                       "_aip": {"session_id": "aip"}, "idempotency_key": "ik"})
    assert r.status == "completed"
    seen = agent_requests(emu)[0]
    assert set(seen.body) == {"messages", "model", "stream"}
    assert seen.body["messages"] == [{"role": "user", "content": "q"}]
    assert seen.header("X-Hermes-Session-Id") == "s-2" and seen.header("Idempotency-Key") == "ik"


# ---------------------------------------------------------------- responses

RESP_CASES = [
    ({}, "body.input"),
    ({"input": ""}, "body.input"),
    ({"input": "  "}, "body.input"),
    ({"input": []}, "body.input"),
    ({"input": 5}, "body.input"),
    ({"input": {"role": "user", "content": "x"}}, "body.input"),
    ({"input": [5]}, "body.input[0]"),
    ({"input": [{"role": "user"}]}, "body.input[0]"),
    ({"input": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}, "body.input"),
    ({"input": ["first", "  "]}, "body.input"),
    ({"input": "x", "conversation": "c", "previous_response_id": "resp_1"}, "body.conversation"),
    ({"input": "x", "conversation_history": "nope"}, "body.conversation_history"),
    ({"input": "x", "conversation_history": [{"role": "user"}]}, "body.conversation_history[0]"),
    ({"input": "x", "conversation_history": [7]}, "body.conversation_history[0]"),
    ({"input": "x", "store": "yes"}, "body.store"),
    ({"input": "x", "model": ""}, "body.model"),
]


@pytest.mark.parametrize("op", ["responses", "responses_stream"])
@pytest.mark.parametrize("body,field", RESP_CASES)
def test_responses_rules(client: HermesClient, emu, op: str, body: dict, field: str) -> None:
    method = client.responses if op == "responses" else client.responses_stream
    expect_invalid(lambda: method(body), field, emu)
    r = client.invoke(f"cap:hermes_agent:default:{op}", {"body": body})
    assert r.status == "failed" and r.error.details["field"] == field
    assert emu.requests_seen == []


def test_responses_body_must_be_object(client: HermesClient, emu) -> None:
    expect_invalid(lambda: client.responses("just a string"), "body", emu)  # type: ignore[arg-type]
    r = client.invoke("cap:hermes_agent:default:responses", {"body": ["x"]})
    assert r.status == "failed" and r.error.details["field"] == "body"


def test_responses_fields_beside_body_rejected(client: HermesClient, emu) -> None:
    r = client.invoke("cap:hermes_agent:default:responses", {"body": {"input": "x"}, "model": "m"})
    assert r.status == "failed" and r.error.details["field"] == "model"
    expect_invalid(lambda: client.responses({"input": "x"}, session_key="a\nb"), "session_key", emu)
    expect_invalid(lambda: client.responses({"input": "x"}, session_key=LONG), "session_key", emu)
    assert emu.requests_seen == []


def test_responses_accepts_lists_of_strings_and_messages(client: HermesClient, emu) -> None:
    a = client.responses({"input": ["earlier", "now"]})
    b = client.responses({"input": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                                    {"role": "user", "content": "again"}]})
    c = client.responses({"input": "x", "conversation_history": [{"role": "user", "content": "h"},
                                                                 {"role": "assistant", "content": "i"}]})
    # Hermes merges back-to-back user turns before the model sees them.
    assert (a.output_text, b.output_text, c.output_text) == ("ECHO: earlier\n\nnow", "ECHO: again", "ECHO: x")


def test_responses_control_fields_become_headers(client: HermesClient, emu) -> None:
    r = client.invoke("cap:hermes_agent:default:responses_stream",
                      {"body": {"input": "hello", "stream": False, "instructions": "i"},
                       "session_key": "mem:2", "idempotency_key": "idem-r", "max_events": 100})
    assert r.status == "completed"
    seen = agent_requests(emu)[0]
    assert seen.body == {"input": "hello", "instructions": "i", "model": "hermes-agent", "stream": True}
    assert seen.header("X-Hermes-Session-Key") == "mem:2"
    assert seen.header("Idempotency-Key") == "idem-r"


def test_responses_typed_session_key_and_key_are_headers(client: HermesClient, emu) -> None:
    client.responses({"input": "x", "stream": True}, session_key="sk", idempotency_key="ik",
                     extra_body={"extra_field": 1})
    seen = agent_requests(emu)[0]
    assert seen.body == {"input": "x", "stream": False, "model": "hermes-agent", "extra_field": 1}
    assert seen.header("X-Hermes-Session-Key") == "sk" and seen.header("Idempotency-Key") == "ik"


# ---------------------------------------------------------------- response_id


@pytest.mark.parametrize("rid", ["", "   ", ".", "..", "r" * 513, "é" * 257, "a\x01b", "tab\there", "del\x7f", None, 5])
def test_response_id_rules(client: HermesClient, emu, rid: Any) -> None:
    expect_invalid(lambda: client.response_get(rid), "response_id", emu)
    expect_invalid(lambda: client.response_delete(rid, idempotency_key="k"), "response_id", emu)
    r = client.invoke("cap:hermes_agent:default:response_get", {"response_id": rid})
    assert r.status == "failed" and r.error.details["field"] == "response_id"
    assert emu.requests_seen == []


def test_response_id_512_bytes_accepted(client: HermesClient, emu) -> None:
    rid = "r" * 512
    with pytest.raises(Exception) as info:
        client.response_get(rid)
    assert getattr(info.value, "http_status", None) == 404
    assert emu.requests_seen[0].path == "/v1/responses/" + rid


@pytest.mark.parametrize("rid,encoded", [
    ("a b", "a%20b"),
    ("a/b", "a%2Fb"),
    ("x?y#z", "x%3Fy%23z"),
    ("p%2F", "p%252F"),
    ("../admin", "..%2Fadmin"),
    ("ü", "%C3%BC"),
    ("a+b", "a%2Bb"),
])
def test_response_id_is_one_encoded_path_segment(raw_server, rid: str, encoded: str) -> None:
    def reply(sock, req, srv) -> None:  # the reply names the id asked for (another one is refused)
        body = {"id": rid, "object": "response", "status": "completed", "output": [], "deleted": True}
        sock.sendall(json_response(200, json.dumps(body).encode()))
    server = raw_server(reply)
    with raw_client(server, approval_provider=approve_all) as c:
        c.response_get(rid)
        c.response_delete(rid, idempotency_key="k", reason="r")
    assert [r.request_line for r in server.requests] == [
        f"GET /v1/responses/{encoded} HTTP/1.1", f"DELETE /v1/responses/{encoded} HTTP/1.1"]


def test_responses_body_and_keywords_must_not_disagree(client: HermesClient, emu) -> None:
    with pytest.raises(InvalidInputError) as info:
        client.responses({"input": "from body"}, input="from keyword")
    assert info.value.details["field"] == "input" and emu.requests_seen == []
    same = client.responses({"input": "x"}, input="x", store=False)  # agreeing or extra fields merge
    assert same.output_text == "ECHO: x"
    assert emu.requests_seen[-1].body["store"] is False


@pytest.mark.parametrize("call", [
    lambda c: c.chat(prompt="x", temprature=0.2),
    lambda c: c.chat(prompt="x", timeout_s=5),
    lambda c: c.chat_stream(prompt="x", max_retries=0),
    lambda c: c.responses(input="x", instructionz="y"),
    lambda c: c.responses_stream(input="x", foo=1),
])
def test_unknown_keywords_are_refused_before_io(client: HermesClient, emu, call: Any) -> None:
    with pytest.raises(InvalidInputError) as info:
        call(client)
    assert "extra_body" in str(info.value) and emu.requests_seen == []


def test_unknown_keyword_names_the_close_match(client: HermesClient, emu) -> None:
    with pytest.raises(InvalidInputError) as info:
        client.chat(prompt="x", temprature=0.2)
    assert info.value.details == {"field": "temprature", "suggestion": "temperature"}
    assert "did you mean 'temperature'" in str(info.value)


def test_extra_body_clash_with_a_keyword_is_refused(client: HermesClient, emu) -> None:
    with pytest.raises(InvalidInputError) as info:
        client.chat(prompt="x", temperature=0.1, extra_body={"temperature": 0.9})
    assert info.value.details["field"] == "temperature" and emu.requests_seen == []
    with pytest.raises(InvalidInputError):
        client.chat(prompt="x", extra_body=["not", "a", "mapping"])  # type: ignore[arg-type]
