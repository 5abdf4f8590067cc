"""Emulator-only behaviour of the sessions / jobs / skills families (controls the conformance
suite cannot reach on the real server): the cron tick controls, scripted replies and faults in
session chat, tool events in the session stream, the cap and draining, reset and restarts."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
import requests

from hermes_sdk.testing import HermesEmulator, Reply
from hermes_sdk.testing.cron import cron_next, parse_schedule
from hermes_sdk.testing.emulator import TOOLSETS


@pytest.fixture
def emu() -> Iterator[HermesEmulator]:
    emulator = HermesEmulator(api_key="k", jobs_tick_seconds=0).start()
    try:
        yield emulator
    finally:
        emulator.stop()


def call(emu: HermesEmulator, method: str, path: str, body: Any = None, **headers: str) -> requests.Response:
    return requests.request(
        method,
        emu.base_url + path,
        data=None if body is None else json.dumps(body),
        headers={"Authorization": "Bearer k", **headers},
        timeout=30,
    )


def events(resp: requests.Response) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for block in resp.text.split("\n\n"):
        lines = block.split("\n")
        if len(lines) >= 2 and lines[0].startswith("event: "):
            out.append((lines[0][7:], json.loads(lines[1][6:])))
    return out


# --------------------------------------------------------------------------- jobs tick controls


def test_tick_jobs_runs_only_due_jobs_and_returns_their_ids(emu: HermesEmulator) -> None:
    due = call(emu, "POST", "/api/jobs", {"name": "due", "schedule": "every 2h", "prompt": "hello"}).json()["job"]
    later = call(emu, "POST", "/api/jobs", {"name": "later", "schedule": "every 2h"}).json()["job"]
    assert emu.tick_jobs() == []
    call(emu, "POST", f"/api/jobs/{due['id']}/run")
    assert emu.executions == 0  # run only schedules
    assert emu.tick_jobs() == [due["id"]]
    assert emu.executions == 1
    assert emu.tick_jobs() == []  # next_run_at moved two hours on
    job = emu.job(due["id"])
    assert job is not None and job["last_status"] == "ok" and job["repeat"]["completed"] == 1
    assert emu.job(later["id"])["last_run_at"] is None  # type: ignore[index]
    cron_sessions = [s for s in emu.session_ids() if s.startswith(f"cron_{due['id']}_")]
    assert len(cron_sessions) == 1
    rows = emu.session_rows(cron_sessions[0])
    assert rows[-1]["content"].startswith("ECHO: [IMPORTANT: You are running as a scheduled cron job.")


def test_the_background_ticker_follows_jobs_tick_seconds(emu: HermesEmulator) -> None:
    job = call(emu, "POST", "/api/jobs", {"name": "auto", "schedule": "every 2h"}).json()["job"]
    call(emu, "POST", f"/api/jobs/{job['id']}/run")
    past = time.monotonic() + 0.3
    while time.monotonic() < past:  # a window to watch (load only makes it longer): nothing ticks
        time.sleep(0.02)
    assert emu.job(job["id"])["last_run_at"] is None  # type: ignore[index]  # 0 = manual only
    emu.jobs_tick_seconds = 0.2
    deadline = time.monotonic() + 30  # a guard against a hang, not a bound
    while time.monotonic() < deadline and emu.job(job["id"])["last_run_at"] is None:  # type: ignore[index]
        time.sleep(0.05)
    assert emu.job(job["id"])["last_status"] == "ok"  # type: ignore[index]


def test_default_tick_interval_is_hermes_60_seconds() -> None:
    assert HermesEmulator().jobs_tick_seconds == 60.0


def test_scripted_failures_and_repeat_exhaustion_in_cron_runs(emu: HermesEmulator) -> None:
    job = call(emu, "POST", "/api/jobs", {"name": "twice", "schedule": "every 1m", "repeat": 2}).json()["job"]
    emu.fail_next(1, status=500)
    call(emu, "POST", f"/api/jobs/{job['id']}/run")
    emu.tick_jobs()
    failed = emu.job(job["id"])
    assert failed is not None and failed["last_status"] == "error"
    assert failed["last_error"] == "RuntimeError: HTTP 500: fake upstream exploded (FAIL500)"
    call(emu, "POST", f"/api/jobs/{job['id']}/run")
    emu.tick_jobs()
    assert emu.job(job["id"]) is None  # repeat.times reached: removed
    assert job["id"] not in emu.job_ids()


def test_paused_and_disabled_jobs_do_not_tick(emu: HermesEmulator) -> None:
    job = call(emu, "POST", "/api/jobs", {"name": "p", "schedule": "every 0m"}).json()["job"]
    call(emu, "POST", f"/api/jobs/{job['id']}/pause")
    assert emu.tick_jobs() == []
    call(emu, "POST", f"/api/jobs/{job['id']}/resume")
    call(emu, "PATCH", f"/api/jobs/{job['id']}", {"enabled": False})
    assert emu.tick_jobs() == []


def test_cron_next_and_parse_schedule() -> None:
    monday = datetime(2026, 11, 30, 8, 59, 30, tzinfo=timezone.utc)
    assert cron_next("0 9 * * 1-5", monday) == datetime(2026, 11, 30, 9, 0, tzinfo=timezone.utc)
    assert cron_next("0 9 * * 1-5", datetime(2026, 12, 4, 9, 0, tzinfo=timezone.utc)).day == 7  # Fri -> Mon
    assert cron_next("*/15 * * * *", monday).minute == 0
    assert cron_next("0 0 1 1 *", monday) == datetime(2027, 1, 1, tzinfo=timezone.utc)
    assert cron_next("0 0 * * 7", monday).weekday() == 6  # 7 is Sunday too
    assert parse_schedule("every 3 days")["minutes"] == 4320
    with pytest.raises(ValueError, match="out of range"):
        parse_schedule("0 24 * * *")


# --------------------------------------------------------------------------- session chat and the model


def _session(emu: HermesEmulator, **fields: Any) -> str:
    resp = call(emu, "POST", "/api/sessions", fields)
    assert resp.status_code == 201
    return str(resp.json()["session"]["id"])


def test_session_chat_uses_scripted_replies_and_counts_executions(emu: HermesEmulator) -> None:
    seen: list[Any] = []

    def responder(info: Any) -> str:
        seen.append(info)
        return f"scripted for {info.prompt}"

    emu.script("first scripted", Reply(text="second", deltas=["sec", "ond"]), responder)
    sid = _session(emu)
    assert call(emu, "POST", f"/api/sessions/{sid}/chat", {"message": "a"}).json()["message"]["content"] == (
        "first scripted"
    )
    stream = events(call(emu, "POST", f"/api/sessions/{sid}/chat/stream", {"message": "b"}))
    assert [d["delta"] for n, d in stream if n == "assistant.delta"] == ["sec", "ond"]
    reply = call(emu, "POST", f"/api/sessions/{sid}/chat", {"message": "c", "system_message": "sys"}).json()
    assert reply["message"]["content"] == "scripted for c"
    assert emu.executions == 3
    info = seen[0]
    assert info.endpoint == "sessions" and info.session_id == sid and info.system_prompt == "sys"
    assert [m["content"] for m in info.history] == ["a", "first scripted", "b", "second"]


def test_session_chat_fail_next_and_truncation(emu: HermesEmulator) -> None:
    sid = _session(emu)
    emu.fail_next(1, status=400)
    body = call(emu, "POST", f"/api/sessions/{sid}/chat", {"message": "x"}).json()
    assert body["message"]["content"] == "HTTP 400: fake upstream bad request (FAIL400)"
    emu.force_truncation(empty=True)
    assert call(emu, "POST", f"/api/sessions/{sid}/chat", {"message": "y"}).json()["message"]["content"] is None
    emu.force_truncation(False)
    assert emu.session(sid)["api_call_count"] == 0  # type: ignore[index]


def test_a_raising_responder_ends_the_stream_with_an_error_event(emu: HermesEmulator) -> None:
    def boom(_info: Any) -> str:
        raise RuntimeError("responder exploded")

    emu.script(boom)
    sid = _session(emu)
    names = events(call(emu, "POST", f"/api/sessions/{sid}/chat/stream", {"message": "x"}))
    assert [n for n, _ in names] == ["run.started", "message.started", "error", "done"]
    assert names[2][1]["message"] == "responder exploded"
    assert [m["role"] for m in emu.session_rows(sid)] == ["user"]


def test_session_stream_tool_events_and_persisted_tool_rows() -> None:
    with HermesEmulator(api_key="k", toolsets=TOOLSETS, tool_followup_delay=0) as emu:
        sid = _session(emu)
        resp = call(emu, "POST", f"/api/sessions/{sid}/chat/stream", {"message": "PREAMBLE TOOL:terminal:echo hi"})
        stream = events(resp)
        names = [n for n, _ in stream]
        assert names[:5] == ["run.started", "message.started", "assistant.delta", "tool.progress", "tool.started"]
        assert stream[3][1]["delta"] == stream[2][1]["delta"]  # _thinking repeats the preamble
        started = stream[4][1]
        assert started["tool_name"] == "terminal" and started["args"] == {"command": "echo hi"}
        assert started["preview"] == "echo hi"
        assert names[5] == "tool.completed" and stream[5][1]["preview"] is None and stream[5][1]["args"] is None
        assert names[-4:] == ["tool.progress", "assistant.completed", "run.completed", "done"]
        messages = stream[-2][1]["messages"]
        assert [m["role"] for m in messages] == ["assistant", "tool", "assistant"]
        call_entry = messages[0]["tool_calls"][0]
        assert call_entry["type"] == "function" and call_entry["response_item_id"].startswith("fc_")
        rows = emu.session_rows(sid)
        assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
        assert rows[1]["finish_reason"] == "tool_calls" and rows[2]["tool_name"] == "terminal"
        session = emu.session(sid)
        assert session is not None and session["tool_call_count"] == 1 and session["api_call_count"] == 2


def test_session_chat_honours_the_run_cap_and_draining(emu: HermesEmulator) -> None:
    sid = _session(emu)
    emu.max_concurrent_runs = 1
    # The model holds "a" (the slot taken) until "b" was refused: no sleep guesses when "a" started.
    reached, release = threading.Event(), threading.Event()
    emu.script(lambda info: None if info.prompt != "hold a" else (reached.set(), release.wait(60)) and None)
    slow = threading.Thread(target=call, args=(emu, "POST", f"/api/sessions/{sid}/chat", {"message": "hold a"}))
    slow.start()
    try:
        assert reached.wait(60)
        resp = call(emu, "POST", f"/api/sessions/{sid}/chat/stream", {"message": "b"})
    finally:
        release.set()
    slow.join()
    assert resp.status_code == 429 and resp.headers["Retry-After"] == "1"
    emu.draining = True
    resp = call(emu, "POST", f"/api/sessions/{sid}/chat", {"message": "c"})
    assert resp.status_code == 503 and resp.json()["error"]["code"] == "gateway_draining"


def test_drop_connection_on_a_session_stream_still_persists_the_turn(emu: HermesEmulator) -> None:
    sid = _session(emu)
    emu.drop_connection("mid_stream", path=f"/api/sessions/{sid}/chat/stream", after_events=2)
    with pytest.raises(requests.RequestException):
        call(emu, "POST", f"/api/sessions/{sid}/chat/stream", {"message": "cut me"}).text  # noqa: B018
    deadline = time.monotonic() + 30  # a guard against a hang, not a bound
    while time.monotonic() < deadline and len(emu.session_rows(sid)) < 2:
        time.sleep(0.05)
    assert [r["content"] for r in emu.session_rows(sid)] == ["cut me", "ECHO: cut me"]


# --------------------------------------------------------------------------- state: reset, restart, skills


def test_state_survives_stop_and_start_and_reset_clears_it() -> None:
    emu = HermesEmulator(api_key="k", jobs_tick_seconds=0).start()
    try:
        sid = _session(emu, title="durable")
        call(emu, "POST", f"/api/sessions/{sid}/chat", {"message": "kept"})
        job = call(emu, "POST", "/api/jobs", {"name": "kept", "schedule": "every 2h"}).json()["job"]
        emu.add_skill("s", "d", "c")
        emu.stop()
        emu.start()  # like a FRESH=0 restart on the same HERMES_HOME (hermes-wire/62, 69)
        assert call(emu, "GET", f"/api/sessions/{sid}").json()["session"]["title"] == "durable"
        assert call(emu, "POST", "/api/sessions", {"id": sid}).status_code == 409
        assert call(emu, "GET", f"/api/jobs/{job['id']}").status_code == 200
        emu.reset()
        assert emu.session_ids() == [] and emu.job_ids() == [] and emu.skills == []
        assert call(emu, "GET", f"/api/sessions/{sid}").status_code == 404
    finally:
        emu.stop()


def test_skills_control(emu: HermesEmulator) -> None:
    emu.add_skill("b-skill", "second", "ops")
    emu.add_skill("a-skill", "root")
    emu.skills.append({"name": "c-skill", "description": "third", "category": "ops"})
    data = call(emu, "GET", "/v1/skills").json()["data"]
    assert [(s["name"], s["category"]) for s in data] == [("a-skill", None), ("b-skill", "ops"), ("c-skill", "ops")]


def test_session_messages_helper_keeps_its_text_turn_shape(emu: HermesEmulator) -> None:
    sid = _session(emu)
    call(emu, "POST", f"/api/sessions/{sid}/chat", {"message": "hi"})
    assert emu.session_messages(sid) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "ECHO: hi"},
    ]
