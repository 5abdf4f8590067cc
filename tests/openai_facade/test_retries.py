"""A POST that may have reached Hermes is never sent again; only failures that provably ran nothing
are retried (not sent, 503 draining, 429 concurrency gate), and GETs keep openai's retries.

Each hazard runs through the facade and through plain openai on the same emulator, counting the
agent executions the emulator saw: plain openai re-runs the turn, the facade runs it once.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from openai_support import user  # noqa: E402

from hermes_sdk import HermesError  # noqa: E402

HAZARDS = ["dropped_after_execution", "read_timeout", "draining"]


def _arm(emu: Any, hazard: str) -> tuple[str, dict[str, Any]]:
    """Arm the fault; return the prompt and the call's extra keywords."""
    if hazard == "dropped_after_execution":
        emu.drop_connection("before_response", count=10)
        return "drop me", {}
    if hazard == "read_timeout":
        return "SLOW:3 then answer", {"timeout": 0.5}
    emu.draining = True
    return "while draining", {}


def _expected(hazard: str) -> type:
    return openai.APITimeoutError if hazard == "read_timeout" else (
        openai.InternalServerError if hazard == "draining" else openai.APIConnectionError)


def _executions(emu: Any, hazard: str) -> int:
    """The chat POSTs Hermes received: each one starts an agent turn (draining: each was refused
    before any work). Counted from the requests, not the fake LLM's log, which a turn abandoned
    at a timeout writes only when it ends."""
    return sum(1 for r in emu.requests_seen if r.method == "POST" and r.path == "/v1/chat/completions")


@pytest.mark.parametrize("max_retries", [None, 5])
@pytest.mark.parametrize("hazard", HAZARDS)
def test_the_facade_runs_the_turn_once(make_facade: Any, emu: Any, hazard: str, max_retries: Any) -> None:
    client = make_facade() if max_retries is None else make_facade().with_options(max_retries=max_retries)
    prompt, extra = _arm(emu, hazard)
    with pytest.raises(_expected(hazard)) as caught:
        client.chat.completions.create(model="hermes-agent", messages=user(prompt), **extra)
    error = caught.value
    assert isinstance(error, HermesError) and error.action_id
    if hazard == "draining":
        # Hermes refused before any agent work: retried, Retry-After (1 s) apart, up to max_retries.
        assert error.details["before_agent_work"] is True
        assert _executions(emu, hazard) == (2 if max_retries is None else max_retries) + 1
        assert emu.executions == 0
    else:
        assert error.uncertain_outcome is True
        assert _executions(emu, hazard) == 1


@pytest.mark.parametrize("hazard", HAZARDS)
def test_plain_openai_runs_it_three_times(make_plain: Any, emu: Any, hazard: str) -> None:
    client = make_plain(max_retries=2)
    prompt, extra = _arm(emu, hazard)
    with pytest.raises(_expected(hazard)):
        client.chat.completions.create(model="hermes-agent", messages=user(prompt), **extra)
    assert _executions(emu, hazard) == 3


def test_a_stream_dropped_after_execution_is_not_resent(make_facade: Any, emu: Any) -> None:
    emu.drop_connection("before_response", count=10)
    with pytest.raises(openai.APIConnectionError):
        make_facade(max_retries=5).chat.completions.create(model="hermes-agent", messages=user("stream"), stream=True)
    assert _executions(emu, "stream") == 1


def test_draining_that_ends_is_retried_and_runs_once(make_facade: Any, emu: Any) -> None:
    emu.draining = True
    refused = threading.Event()

    def stop_draining_after_the_first_refusal() -> None:
        while not any(r.method == "POST" for r in emu.requests_seen):
            if refused.wait(0.01):
                return
        emu.draining = False

    watcher = threading.Thread(target=stop_draining_after_the_first_refusal)
    watcher.start()
    try:
        reply = make_facade().chat.completions.create(model="hermes-agent", messages=user("after draining"))
    finally:
        refused.set()
        watcher.join()
    assert reply.choices[0].message.content == "ECHO: after draining"
    assert emu.executions == 1 and sum(1 for r in emu.requests_seen if r.method == "POST") == 2


def test_the_concurrency_gate_429_is_retried_within_the_budget(make_facade: Any, emu: Any) -> None:
    emu.max_concurrent_runs = 1
    with emu.client(load_entrypoints=False) as other:
        holder = other.chat_stream(prompt="SLOW:30 holding the only slot")  # headers in: the slot is taken
        try:
            with pytest.raises(openai.RateLimitError) as caught:
                make_facade(max_retries=1).with_options(timeout=5).chat.completions.create(
                    model="hermes-agent", messages=user("gated"))
        finally:
            holder.close()
    assert isinstance(caught.value, HermesError) and caught.value.details["before_agent_work"] is True
    assert caught.value.retry_after_ms == 1000
    assert _executions(emu, "gate") == 3  # the holder's, then the gated call and its one retry


def test_no_retry_is_started_that_the_deadline_cannot_hold(facade: Any, emu: Any) -> None:
    import time

    from hermes_sdk.openai import call_options

    emu.draining = True  # Retry-After: 1 s, past the deadline
    with call_options(deadline=time.time() + 0.5), pytest.raises(openai.InternalServerError):
        facade.chat.completions.create(model="hermes-agent", messages=user("no time"))
    assert _executions(emu, "draining") == 1


def test_max_retries_zero_sends_a_gated_post_once(make_facade: Any, emu: Any) -> None:
    emu.draining = True
    with pytest.raises(openai.InternalServerError):
        make_facade(max_retries=0).chat.completions.create(model="hermes-agent", messages=user("once"))
    assert sum(1 for r in emu.requests_seen if r.method == "POST") == 1


def test_a_refused_connection_is_retried_since_nothing_was_sent(emu: Any) -> None:
    import socket

    from hermes_sdk.openai import OpenAI

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    attempts: list[int] = []
    client = OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k", max_retries=2, load_entrypoints=False)
    client.hermes_transport.max_retries = 2
    from hermes_sdk.openai import _transport

    original = _transport.HermesTransport._post

    def counting(self: Any, request: Any, extras: Any) -> Any:
        attempts.append(1)
        return original(self, request, extras)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_transport.HermesTransport, "_post", counting)
        mp.setattr(_transport, "_safe_retry_wait", lambda err, attempt: 0.0 if err.details.get("sent") is False
                   else None)
        with pytest.raises(openai.APIConnectionError) as caught:
            client.chat.completions.create(model="hermes-agent", messages=user("nobody home"))
    assert caught.value.uncertain_outcome is False and caught.value.details["sent"] is False
    assert len(attempts) == 3
    client.close()


def test_gets_keep_openais_retries(facade: Any, emu: Any) -> None:
    emu.drop_connection("before_response", path="/v1/models", count=1)
    assert [m.id for m in facade.models.list()] == ["hermes-agent"]
    assert sum(1 for r in emu.requests_seen if r.path == "/v1/models") == 2


def test_a_get_that_keeps_failing_raises_the_dual_connection_error(make_facade: Any, emu: Any) -> None:
    emu.drop_connection("before_response", path="/v1/models", count=10)
    with pytest.raises(openai.APIConnectionError) as caught:
        make_facade(max_retries=1).models.list()
    assert isinstance(caught.value, HermesError)
    assert sum(1 for r in emu.requests_seen if r.path == "/v1/models") == 2


def test_a_keyed_call_after_an_uncertain_failure_is_not_run_again(facade: Any, emu: Any) -> None:
    emu.drop_connection("before_response")
    key = {"Idempotency-Key": "uncertain-1"}
    with pytest.raises(openai.APIConnectionError):
        facade.chat.completions.create(model="hermes-agent", messages=user("k"), extra_headers=key)
    with pytest.raises(openai.APIConnectionError) as again:
        facade.chat.completions.create(model="hermes-agent", messages=user("k"), extra_headers=key)
    assert again.value.uncertain_outcome is True and _executions(emu, "keyed") == 1
    assert facade.hermes.action_result(again.value.action_id) is not None


def test_a_deadline_bounds_the_whole_call(facade: Any, emu: Any) -> None:
    import time

    from hermes_sdk.openai import call_options

    with call_options(deadline=time.time() + 0.5), pytest.raises(openai.APITimeoutError) as caught:
        facade.chat.completions.create(model="hermes-agent", messages=user("SLOW:3"))
    assert isinstance(caught.value, HermesError) and caught.value.hermes_code.endswith("deadline_exceeded")
    assert _executions(emu, "deadline") == 1


def test_a_keyed_call_refused_while_draining_is_retried_once_it_ends(make_facade: Any, emu: Any) -> None:
    """The retry decision reads the error's ``before_agent_work`` marker, never the store, and the core
    gives a key refused before any agent work back (issue 38 item 4): the keyed retry runs the turn."""
    emu.draining = True
    done = threading.Event()

    def stop_draining_after_the_first_refusal() -> None:
        while not any(r.method == "POST" for r in emu.requests_seen):
            if done.wait(0.01):
                return
        emu.draining = False

    watcher = threading.Thread(target=stop_draining_after_the_first_refusal)
    watcher.start()
    try:
        reply = make_facade(max_retries=2).chat.completions.create(
            model="hermes-agent", messages=user("keyed after draining"), extra_headers={"Idempotency-Key": "drain-1"})
    finally:
        done.set()
        watcher.join()
    assert reply.choices[0].message.content == "ECHO: keyed after draining" and emu.executions == 1


def test_timeout_none_does_not_fall_back_to_hermes_sdks_60_second_default() -> None:
    from hermes_sdk.openai._transport import STREAM_TOTAL_SECONDS, _call_timeout

    assert _call_timeout(None, 5.0, False).total == STREAM_TOTAL_SECONDS  # timeout=None: unbounded reads
    assert _call_timeout(None, None, False).total == STREAM_TOTAL_SECONDS
    assert _call_timeout(30.0, 5.0, False).total == 30.0  # a plain call: one long read is the whole call
    assert _call_timeout(30.0, 5.0, True).read == 30.0 and _call_timeout(30.0, 5.0, True).total == STREAM_TOTAL_SECONDS
