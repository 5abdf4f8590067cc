"""Endpoints (id, base URL, key, tenant binding, selection, env vars) and the headers every call sends."""

from __future__ import annotations

import datetime as dt
import json
import time
from urllib.parse import unquote

import pytest
from core_support import agent_requests, json_response, raw_client

from hermes_sdk import (
    Endpoint,
    ExecutionContext,
    HermesClient,
    InvalidInputError,
    MissingCredentialError,
    TenantMismatchError,
)

CODE = "connector.hermes_agent.configuration_or_input"
BASE = "http://127.0.0.1:9"


# ---------------------------------------------------------------- Endpoint validation


@pytest.mark.parametrize("raw,norm", [(" Hermes-A ", "hermes-a"), ("A_b-9", "a_b-9"), ("x" * 128, "x" * 128),
                                      ("\tDEFAULT\n", "default")])
def test_endpoint_id_normalised(raw: str, norm: str) -> None:
    assert Endpoint(raw, BASE, "k").id == norm


@pytest.mark.parametrize("raw", ["", "   ", "a b", "a:b", "a.b", "x" * 129, "é", "a/b", 7])
def test_endpoint_id_rejected(raw: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        Endpoint(raw, BASE, "k")  # type: ignore[arg-type]
    assert info.value.code == CODE and info.value.details["field"] == "endpoint_id"


@pytest.mark.parametrize("raw,norm", [
    ("http://127.0.0.1:8642", "http://127.0.0.1:8642"),
    ("http://127.0.0.1:8642/", "http://127.0.0.1:8642"),
    ("HTTPS://Example.COM", "https://example.com"),
    (" http://[::1]:80 ", "http://[::1]:80"),
])
def test_base_url_bare_origin(raw: str, norm: str) -> None:
    assert Endpoint("e", raw, "k").base_url == norm


@pytest.mark.parametrize("raw", [
    "http://h/v1", "http://h//", "http://h?x=1", "http://h/?", "http://h#frag", "http://user:pw@h",
    "http://user@h", "ftp://h", "file:///etc/passwd", "h:8642", "127.0.0.1", "", "http://", "http://h:99999",
    None,
])
def test_base_url_rejected(raw: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        Endpoint("e", raw, "k")  # type: ignore[arg-type]
    assert info.value.code == CODE and info.value.details["field"] == "base_url"


@pytest.mark.parametrize("key", ["has space", "tab\tkey", "nl\nkey", "ctl\x01", "k" * (16 * 1024 + 1), 5])
def test_api_key_rejected(key: object) -> None:
    with pytest.raises(InvalidInputError) as info:
        Endpoint("e", BASE, key)  # type: ignore[arg-type]
    assert info.value.details["field"] == "api_key"


def test_api_key_accepted_and_hidden() -> None:
    ep = Endpoint("e", BASE, "k" * (16 * 1024))
    assert "kkkk" not in repr(ep) and "***" in repr(ep)


@pytest.mark.parametrize("tenant", ["", " t", "t ", "x" * 513, "a\nb"])
def test_tenant_id_rejected(tenant: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        Endpoint("e", BASE, "k", tenant_id=tenant)
    assert info.value.details["field"] == "tenant_id"


def test_missing_key_raises_before_sending(emu) -> None:
    with HermesClient(emu.base_url, None, load_entrypoints=False) as c:
        with pytest.raises(MissingCredentialError) as info:
            c.chat(prompt="x")
        assert info.value.code == "connector.hermes_agent.missing_credential"
        assert info.value.category == "auth" and info.value.details["endpoint_id"] == "default"
        r = c.invoke("cap:hermes_agent:default:response_get", {"response_id": "resp_1"})
        assert r.status == "failed" and r.error.code == "connector.hermes_agent.missing_credential"
    assert emu.requests_seen == []


# ---------------------------------------------------------------- tenant binding


def test_tenant_binding(emu) -> None:
    with emu.client(tenant_id="tenant-a", load_entrypoints=False) as c:
        with pytest.raises(TenantMismatchError) as info:
            c.chat(prompt="x")
        assert info.value.code == "connector.hermes_agent.tenant_mismatch" and info.value.category == "auth"
        assert info.value.details["actual_tenant"] == "none" and info.value.uncertain_outcome is False
        with pytest.raises(TenantMismatchError) as info:
            c.chat_stream(prompt="x", context=ExecutionContext(tenant_id="tenant-b"))
        assert info.value.details["actual_tenant"] == "tenant-b"
        r = c.invoke("cap:hermes_agent:default:responses", {"body": {"input": "x"}},
                     context=ExecutionContext(tenant_id="TENANT-A"))
        assert r.status == "failed" and r.error.code == "connector.hermes_agent.tenant_mismatch"
        assert emu.requests_seen == []
        out = c.chat(prompt="ok", context=ExecutionContext(tenant_id="tenant-a"))
        assert out.text == "ECHO: ok"
        assert agent_requests(emu)[0].header("X-AIP-Tenant-Id") == "tenant-a"


def test_client_level_context_binds_tenant(emu) -> None:
    with emu.client(tenant_id="t1", context=ExecutionContext(tenant_id="t1"), load_entrypoints=False) as c:
        assert c.chat(prompt="x").text == "ECHO: x"
        with pytest.raises(TenantMismatchError):
            c.chat(prompt="x", context=ExecutionContext(tenant_id="t2"))


# ---------------------------------------------------------------- several endpoints


def test_several_endpoints_capability_id_selects(hermes_emulator_factory) -> None:
    one = hermes_emulator_factory(api_key="key-one")
    two = hermes_emulator_factory(api_key="key-two")
    eps = [Endpoint("One", one.base_url, "key-one"), Endpoint("two", two.base_url, "key-two")]
    with HermesClient(endpoints=eps, load_entrypoints=False) as c:
        assert [e.id for e in c.endpoints] == ["one", "two"]
        assert c.chat(prompt="to two", endpoint="TWO").text == "ECHO: to two"
        assert (len(agent_requests(one)), len(agent_requests(two))) == (0, 1)
        r = c.invoke("cap:hermes_agent:one:chat", {"prompt": "to one", "endpoint": "two", "base_url": two.base_url,
                                                   "endpoint_id": "two"})
        assert r.status == "completed"
        assert (len(agent_requests(one)), len(agent_requests(two))) == (1, 1)
        # input fields never redirect the call; unknown fields are just forwarded as provider JSON
        assert agent_requests(one)[0].body["base_url"] == two.base_url
        assert agent_requests(one)[0].header("Authorization") == "Bearer key-one"
        with pytest.raises(InvalidInputError) as info:
            c.chat(prompt="x")
        assert info.value.details["field"] == "endpoint"
        with pytest.raises(InvalidInputError):
            c.chat(prompt="x", endpoint="three")
        r = c.invoke("cap:hermes_agent:ONE:chat", {"prompt": "x"})
        assert r.status == "failed" and r.error.details["field"] == "capability_id"
        ids = {d["capability_id"] for d in c.capabilities()}
        assert "cap:hermes_agent:one:chat" in ids and "cap:hermes_agent:two:response_delete" in ids
        assert len(ids) == 74  # 37 operations per endpoint


def test_duplicate_endpoint_ids_rejected() -> None:
    with pytest.raises(InvalidInputError):
        HermesClient(endpoints=[Endpoint("a", BASE, "k"), Endpoint(" A ", BASE, "k")], load_entrypoints=False)


def test_input_cannot_change_url(raw_server) -> None:
    evil = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, b"{}")))
    def answer(sock, req, srv) -> None:  # a stored response names the id asked for (another is refused)
        rid = unquote(req.target.rsplit("/", 1)[1]) if req.method == "GET" else "resp_1"
        body = json.dumps({"id": rid, "object": "response", "status": "completed", "output": []}).encode()
        sock.sendall(json_response(200, body))
    good = raw_server(answer)
    with raw_client(good) as c:
        c.response_get(evil.base_url + "/v1/responses/x")
        c.responses({"input": "x", "url": evil.base_url, "base_url": evil.base_url})
    assert evil.connections == 0 and len(good.requests) == 2
    assert good.requests[0].target.startswith("/v1/responses/http%3A%2F%2F127.0.0.1")


# ---------------------------------------------------------------- environment


def test_env_vars(emu, monkeypatch) -> None:
    monkeypatch.setenv("HERMES_BASE_URL", emu.base_url)
    monkeypatch.setenv("HERMES_API_KEY", emu.api_key)
    monkeypatch.setenv("HERMES_ENDPOINT_ID", "Env-EP")
    with HermesClient(load_entrypoints=False) as c:
        assert [e.id for e in c.endpoints] == ["env-ep"]
        assert c.endpoints[0].base_url == emu.base_url
        r = c.invoke("cap:hermes_agent:env-ep:chat", {"prompt": "from env"})
        assert r.status == "completed"
        assert agent_requests(emu)[0].header("Authorization") == f"Bearer {emu.api_key}"
    with HermesClient(emu.base_url, "explicit-key", endpoint_id="mine", load_entrypoints=False) as c:
        assert c.endpoints[0].id == "mine" and c.endpoints[0].api_key == "explicit-key"
    monkeypatch.delenv("HERMES_API_KEY")
    with HermesClient(load_entrypoints=False) as c, pytest.raises(MissingCredentialError):
        c.chat(prompt="x")
    monkeypatch.delenv("HERMES_BASE_URL")
    with pytest.raises(InvalidInputError) as info:
        HermesClient(load_entrypoints=False)
    assert info.value.details["field"] == "base_url"


# ---------------------------------------------------------------- headers


def test_bearer_and_context_headers(client: HermesClient, emu) -> None:
    ctx = ExecutionContext(principal_id="user:1", tenant_id="t-1", authentication_issuer="https://idp",
                           trace_id="trace-9", delegation_chain=["agent:a", "agent:b"], aip_session_id="aip-sess")
    deadline = time.time() + 30
    client.chat(prompt="x", context=ctx, deadline=deadline)
    h = agent_requests(emu)[0]
    assert h.header("Authorization") == f"Bearer {emu.api_key}"
    assert h.header("X-AIP-Principal-Id") == "user:1"
    assert h.header("X-AIP-Tenant-Id") == "t-1"
    assert h.header("X-AIP-Authentication-Issuer") == "https://idp"
    assert h.header("X-AIP-Trace-Id") == "trace-9"
    assert h.header("X-AIP-Correlation-Id") == "trace-9"
    assert json.loads(h.header("X-AIP-Delegation-Chain")) == ["agent:a", "agent:b"]
    assert h.header("X-AIP-Session-Id") == "aip-sess"
    assert h.header("X-Hermes-Session-Id") is None, "the AIP session id is never copied into Hermes'"
    assert h.header("X-AIP-Deadline-Unix-Ms") == str(int(deadline * 1000))
    assert h.header("Accept") == "application/json"


def test_correlation_and_deadline_sources(client: HermesClient, emu) -> None:
    when = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=60)
    ctx = ExecutionContext(correlation_id="corr-1", trace_id="tr", deadline=time.time() + 120)
    client.chat(prompt="a", context=ctx, deadline=when)
    client.chat(prompt="b", context=ctx)
    client.chat_stream(prompt="c", session_id="hermes-own").result()
    first, second, third = agent_requests(emu)
    assert first.header("X-AIP-Correlation-Id") == "corr-1"
    assert first.header("X-AIP-Deadline-Unix-Ms") == str(int(when.timestamp() * 1000))
    assert second.header("X-AIP-Deadline-Unix-Ms") == str(int(ctx.deadline * 1000))
    assert third.header("X-AIP-Deadline-Unix-Ms") is None and third.header("X-AIP-Tenant-Id") is None
    assert third.header("X-Hermes-Session-Id") == "hermes-own"
    assert third.header("Accept") == "text/event-stream"


@pytest.mark.parametrize("field", ["principal_id", "tenant_id", "authentication_issuer", "trace_id",
                                   "correlation_id", "aip_session_id"])
@pytest.mark.parametrize("value", ["", "a\r\nX-Evil: 1", "nul\x00", "x" * (16 * 1024 + 1), "euro\u20ac", " pad"])
def test_context_header_values_validated(field: str, value: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        ExecutionContext(**{field: value})
    assert info.value.code == CODE and info.value.details["field"] == field


def test_context_header_16kib_accepted(client: HermesClient, emu) -> None:
    big = "p" * (16 * 1024)
    client.chat(prompt="x", context=ExecutionContext(principal_id=big))
    assert agent_requests(emu)[0].header("X-AIP-Principal-Id") == big


def test_delegation_chain_validated() -> None:
    with pytest.raises(InvalidInputError) as info:
        ExecutionContext(delegation_chain=["a" * (16 * 1024)]).headers(None)
    assert info.value.details["field"] == "delegation_chain"


@pytest.mark.parametrize("chain", ["agent:a", b"agent:a", 5, 1.5])
def test_delegation_chain_that_is_not_a_sequence_is_refused(chain: object) -> None:
    # A string is not split into one-letter delegates, and nothing escapes as a bare TypeError.
    with pytest.raises(InvalidInputError) as info:
        ExecutionContext(delegation_chain=chain)  # type: ignore[arg-type]
    assert info.value.details["field"] == "delegation_chain"


def test_delegation_chain_from_any_iterable_of_strings() -> None:
    assert ExecutionContext(delegation_chain=iter(["a", "b"])).delegation_chain == ("a", "b")
    assert ExecutionContext(delegation_chain=("a",)).delegation_chain == ("a",)
    assert ExecutionContext(delegation_chain=None).delegation_chain == ()  # as with the other fields: unset


@pytest.mark.parametrize("key", ["abc DEF/123:;=,", "K" * 200, "ünï"])
def test_idempotency_key_sent_unchanged(client: HermesClient, emu, key: str) -> None:
    client.chat(prompt="x", idempotency_key=key)
    client.responses({"input": "y"}, idempotency_key=key + "-r")
    chat_req, resp_req = agent_requests(emu)
    assert chat_req.header("Idempotency-Key").encode("latin-1") == key.encode("latin-1")
    assert resp_req.header("Idempotency-Key").encode("latin-1") == (key + "-r").encode("latin-1")


@pytest.mark.parametrize("key", ["", " lead", "trail ", "a\nb", "k" * (16 * 1024 + 1), "€"])
def test_idempotency_key_validated(client: HermesClient, emu, key: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        client.chat(prompt="x", idempotency_key=key)
    assert info.value.details["field"] == "idempotency_key"
    assert emu.requests_seen == []
