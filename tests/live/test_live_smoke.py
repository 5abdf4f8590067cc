"""Proves the live harness: a real Hermes server answers, and the fake LLM counts calls."""

from __future__ import annotations

import uuid

import requests
from hermes_server import HermesServer


def _session() -> requests.Session:
    session = requests.Session()
    session.trust_env = False  # loopback only: never route through an env proxy
    return session


def test_health_needs_no_auth(hermes_live: HermesServer) -> None:
    reply = _session().get(f"{hermes_live.base_url}/health", timeout=5)
    assert reply.status_code == 200
    assert reply.json() == {
        "status": "ok",
        "platform": "hermes-agent",
        "version": "0.19.0",
    }


def test_one_chat_call_runs_the_model_exactly_once(hermes_live: HermesServer) -> None:
    prompt = f"smoke {uuid.uuid4().hex}"
    mark = hermes_live.mark()
    reply = _session().post(
        f"{hermes_live.base_url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": prompt}]},
        headers=hermes_live.headers(),
        timeout=30,
    )
    assert reply.status_code == 200, reply.text
    assert reply.json()["choices"][0]["message"]["content"] == f"ECHO: {prompt}"
    assert reply.headers["X-Hermes-Session-Id"].startswith("api-")
    calls = hermes_live.upstream_calls(since=mark)
    assert len(calls) == 1
    assert calls[0]["last_user"] == prompt
    assert calls[0]["stream"] is True  # Hermes always streams upstream
    assert calls[0]["n_tools"] == 0  # platform_toolsets.api_server: [] took effect


def test_wrong_key_is_401(hermes_live: HermesServer) -> None:
    reply = _session().post(
        f"{hermes_live.base_url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}]},
        headers={"Authorization": "Bearer wrong"},
        timeout=10,
    )
    assert reply.status_code == 401
    assert reply.json()["error"]["code"] == "invalid_api_key"
