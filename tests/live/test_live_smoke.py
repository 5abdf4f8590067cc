"""Proves the live harness: a real Hermes server answers, and the fake LLM counts calls."""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from typing import TYPE_CHECKING

import pytest
import requests

if TYPE_CHECKING:  # the harness is imported by conftest.py; tests only annotate with it
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


def test_cap1_instance_rejects_a_second_run_with_429(
    hermes_live_cap1: HermesServer,
) -> None:
    url = f"{hermes_live_cap1.base_url}/v1/chat/completions"
    slow = {"messages": [{"role": "user", "content": "SLOW:3 hold the only slot"}]}
    mark = hermes_live_cap1.mark()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(
            _session().post,
            url,
            json=slow,
            headers=hermes_live_cap1.headers(),
            timeout=30,
        )
        # The slow run holds the slot once its model call began (the gate is taken first): polled,
        # not a sleep that guesses when.
        end = time.monotonic() + 60  # a guard against a hang, not a bound
        while not any("hold the only slot" in str(c.get("last_user"))
                      for c in hermes_live_cap1.upstream_calls(since=mark)):
            assert time.monotonic() < end, "the slow run never reached the model"
            time.sleep(0.02)
        second = _session().post(
            url,
            json={"messages": [{"role": "user", "content": "second"}]},
            headers=hermes_live_cap1.headers(),
            timeout=10,
        )
        assert first.result().status_code == 200
    assert second.status_code == 429
    assert second.headers["Retry-After"] == "1"
    assert second.json()["error"]["code"] == "rate_limit_exceeded"


@pytest.mark.slow  # Hermes backs off ~2 s and ~5 s between its 3 tries
def test_cap1_instance_retries_upstream_three_times(
    hermes_live_cap1: HermesServer,
) -> None:
    mark = hermes_live_cap1.mark()
    reply = _session().post(
        f"{hermes_live_cap1.base_url}/v1/chat/completions",
        json={"messages": [{"role": "user", "content": f"FAIL500 {uuid.uuid4().hex}"}]},
        headers=hermes_live_cap1.headers(),
        timeout=60,
    )
    assert reply.status_code == 200  # Hermes reports upstream failure as a soft 200
    assert reply.json()["choices"][0]["finish_reason"] == "error"
    assert len(hermes_live_cap1.upstream_calls(since=mark)) == 3
