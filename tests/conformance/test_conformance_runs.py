"""/v1/runs, tool events and approvals on the raw wire: the emulator and the real Hermes 0.19.0.

Every test takes ``runs_target`` (tools ``[terminal, file, todo]``, manual approvals with a
4 s ``approvals.timeout``), parametrised over both servers, and talks plain HTTP with
``requests``. Delta boundaries differ between the emulator's scripted model and the live
fake LLM, so streamed text is compared joined. See spec/hermes-runs.md.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import pytest
import requests
from runs_helpers import (
    APPROVAL_TIMEOUT,
    EventStream,
    RunsTarget,
    delta_text,
    kinds,
    uniq,
    without_deltas,
)

from hermes_sdk.testing.families.discovery import CAPABILITIES

RUN_ID = re.compile(r"^run_[0-9a-f]{32}$")
CALL_ID = re.compile(r"^call_[A-Za-z0-9_]+$")
SECURITY = ("Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy")
APPROVAL_KEYS = [
    "command",
    "pattern_key",
    "pattern_keys",
    "description",
    "allow_permanent",
    "event",
    "run_id",
    "timestamp",
    "choices",
]
ALL_CHOICES = ["once", "session", "always", "deny"]
ROOT_PATTERN = "delete in root path"
PLAIN_END = ["message.delta", "reasoning.available", "run.completed"]


def error_of(resp: requests.Response) -> dict[str, Any]:
    body: dict[str, Any] = resp.json()
    return dict(body["error"])


def assert_run_not_found(resp: requests.Response, run_id: str) -> None:
    assert resp.status_code == 404, resp.text
    assert resp.json() == {
        "error": {
            "message": f"Run not found: {run_id}",
            "type": "invalid_request_error",
            "param": None,
            "code": "run_not_found",
        }
    }


# --------------------------------------------------------------------------- start, poll, events


def test_start_is_202_started_and_the_run_object_polls_to_completed(runs_target: RunsTarget) -> None:
    prompt = uniq("plain run")
    resp = runs_target.start({"input": prompt}, **{"X-Hermes-Session-Key": "sdk-key-1"})
    assert resp.status_code == 202
    assert resp.headers["Content-Type"] == "application/json; charset=utf-8"
    assert resp.headers["X-Hermes-Session-Key"] == "sdk-key-1"
    assert all(h in resp.headers for h in SECURITY)
    body = resp.json()
    assert list(body) == ["run_id", "status"] and body["status"] == "started"
    run_id = body["run_id"]
    assert RUN_ID.match(run_id)

    first = runs_target.get(run_id).json()
    assert first["object"] == "hermes.run" and first["status"] in ("running", "completed")
    assert first["session_id"] == run_id and first["model"] == "hermes-agent"
    assert isinstance(first["created_at"], float) and isinstance(first["updated_at"], float)

    final = runs_target.wait_done(run_id)
    assert final["status"] == "completed"
    assert final["output"] == f"ECHO: {prompt}"
    assert final["last_event"] == "run.completed"
    usage = final["usage"]
    assert set(usage) == {"input_tokens", "output_tokens", "total_tokens"}
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    assert "error" not in final


def _until_running(runs_target: RunsTarget, run_id: str) -> dict[str, Any]:
    """The run's status object once it is running (polled: no sleep guesses when that is)."""
    end = time.monotonic() + 30  # a guard against a hang, not a bound
    while True:
        status: dict[str, Any] = runs_target.get(run_id).json()
        if status["status"] == "running" or time.monotonic() > end:
            return status
        time.sleep(0.02)


def test_a_running_run_has_no_last_event_until_a_non_delta_event(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(f"SLOW:2 {uniq('poll me')}")
    running = _until_running(runs_target, run_id)
    assert running["status"] == "running"
    assert "last_event" not in running and "output" not in running and "usage" not in running
    runs_target.events(run_id)  # consume, so the buffer is not left behind


def test_events_are_data_only_json_and_end_with_the_stream_closed_comment(runs_target: RunsTarget) -> None:
    prompt = uniq("events shape")
    run_id = runs_target.start_id(prompt)
    with runs_target.subscribe(run_id) as stream:
        assert stream.status == 200
        headers = stream.response.headers
        assert headers["Content-Type"] == "text/event-stream"
        assert headers["Cache-Control"] == "no-cache"
        assert headers["X-Accel-Buffering"] == "no"
        assert not any(h in headers for h in SECURITY)
        events, comments = stream.read_all()
        raw = stream.raw.decode()
    assert comments[-1] == "stream closed" and raw.endswith(": stream closed\n\n")
    assert "event:" not in raw.replace('"event":', "") and "[DONE]" not in raw
    assert "\nid:" not in raw and "retry:" not in raw
    for frame in raw.split("\n\n")[:-1]:
        assert frame.startswith("data: {") or frame.startswith(": "), frame
    assert without_deltas(events) == PLAIN_END
    for event in events:
        assert list(event)[:3] == ["event", "run_id", "timestamp"]
        assert event["run_id"] == run_id and isinstance(event["timestamp"], float)
    assert delta_text(events) == f"ECHO: {prompt}"
    assert events[-2]["text"] == f"ECHO: {prompt}"  # reasoning.available repeats the content
    assert events[-1]["output"] == f"ECHO: {prompt}"
    assert set(events[-1]["usage"]) == {"input_tokens", "output_tokens", "total_tokens"}


def test_a_late_first_subscriber_gets_the_whole_replay_and_the_next_one_404(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(uniq("buffered replay"))
    runs_target.wait_done(run_id)
    events, comments = runs_target.events(run_id)
    assert without_deltas(events) == PLAIN_END and comments == ["stream closed"]
    began = time.monotonic()
    with runs_target.subscribe(run_id) as again:
        assert again.status == 404
        assert_run_not_found(again.response, run_id)
    assert time.monotonic() - began >= 0.8  # the route waits 20 x 50 ms for a queue
    assert runs_target.get(run_id).status_code == 200


@pytest.mark.parametrize("switch", ["FAIL400", "FAIL500"])
def test_an_upstream_failure_is_run_failed_with_no_deltas(runs_target: RunsTarget, switch: str) -> None:
    run_id = runs_target.start_id(f"run {switch} {uniq('x')}")
    events, _ = runs_target.events(run_id)
    assert kinds(events) == ["run.failed"]
    assert switch in events[0]["error"] and events[0]["error"].startswith("HTTP ")
    final = runs_target.get(run_id).json()
    assert final["status"] == "failed" and final["error"] == events[0]["error"]
    assert final["last_event"] == "run.failed"
    assert "output" not in final and "usage" not in final


def test_an_empty_truncated_answer_still_completes_with_null_output(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(f"run TRUNCEMPTY {uniq('x')}")
    events, _ = runs_target.events(run_id)
    assert kinds(events) == ["run.completed"]
    assert events[0]["output"] is None
    assert events[0]["usage"] == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    final = runs_target.get(run_id).json()
    assert final["status"] == "completed" and final["output"] is None


# --------------------------------------------------------------------------- tool events


def test_a_terminal_call_gives_tool_started_and_completed_and_the_text_after_starts_with_a_break(
    runs_target: RunsTarget,
) -> None:
    word = uniq("hello-from-terminal")
    run_id = runs_target.start_id(f"TOOL:terminal:echo {word}")
    events, _ = runs_target.events(run_id)
    assert without_deltas(events) == ["tool.started", "tool.completed", *PLAIN_END]
    started, completed = events[0], events[1]
    assert list(started) == ["event", "run_id", "timestamp", "tool", "preview"]
    assert started["tool"] == "terminal" and started["preview"] == f"echo {word}"
    assert list(completed) == ["event", "run_id", "timestamp", "tool", "duration", "error"]
    assert completed["tool"] == "terminal" and completed["error"] is False
    assert isinstance(completed["duration"], float)
    expected = f'DONE: {{"output": "{word}", "exit_code": 0, "error": null}}'
    assert delta_text(events) == "\n\n" + expected  # in the deltas only ...
    assert events[-1]["output"] == expected  # ... not in the output
    assert runs_target.get(run_id).json()["output"] == expected


def test_parallel_calls_run_one_after_another_and_a_preamble_comes_first(runs_target: RunsTarget) -> None:
    hello = runs_target.make_file(f"{runs_target.scratch}/{uniq('hello')}.txt", "hello from read_file target\n")
    run_id = runs_target.start_id(f"PREAMBLE TOOL:read_file:{hello} || TOOL:todo:write the SDK")
    events, _ = runs_target.events(run_id)
    assert without_deltas(events) == [
        "message.delta",
        "reasoning.available",
        "tool.started",
        "tool.completed",
        "tool.started",
        "tool.completed",
        *PLAIN_END,
    ]
    tools = [e for e in events if e["event"].startswith("tool.")]
    assert [(e["event"], e["tool"]) for e in tools] == [
        ("tool.started", "read_file"),
        ("tool.completed", "read_file"),
        ("tool.started", "todo"),
        ("tool.completed", "todo"),
    ]
    assert tools[0]["preview"] == hello.rsplit("/", 1)[1]
    assert tools[2]["preview"] == "planning 1 task(s)"
    assert not tools[1]["error"] and not tools[3]["error"]
    first_reasoning = next(e for e in events if e["event"] == "reasoning.available")
    assert first_reasoning["text"] == "Calling tools now."
    text = delta_text(events)
    assert text.startswith("Calling tools now.\n\nDONE: ")
    output = events[-1]["output"]
    assert output.startswith('DONE: {"content": "1|hello from read_file target\\n2|", "total_lines": 1')
    assert ' | {"todos": [{"id": "1", "content": "write the SDK", "status": "in_progress"}]' in output


def test_a_failing_tool_says_error_true_and_the_run_still_completes(runs_target: RunsTarget) -> None:
    missing = f"{runs_target.scratch}/{uniq('missing')}.txt"
    run_id = runs_target.start_id(f"TOOL:read_file:{missing}")
    events, _ = runs_target.events(run_id)
    completed = next(e for e in events if e["event"] == "tool.completed")
    assert completed["error"] is True
    assert events[-1]["event"] == "run.completed"
    assert '"error": "File not found: ' in events[-1]["output"]


def test_an_unknown_tool_gives_no_tool_events_and_no_break(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(f"TOOL:no_such_tool:{uniq('x')}")
    events, _ = runs_target.events(run_id)
    assert without_deltas(events) == PLAIN_END
    expected = (
        "DONE: Tool 'no_such_tool' does not exist. Available tools: "
        "patch, process, read_file, search_files, terminal, todo, write_file"
    )
    assert delta_text(events) == expected == events[-1]["output"]


# --------------------------------------------------------------------------- approvals


def _until_approval(stream: EventStream) -> dict[str, Any]:
    request = stream.until("approval.request")
    assert list(request) == APPROVAL_KEYS
    return request


def test_approval_once_runs_the_command_and_later_answers_are_409(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    command = f"rm -rf {victim}"
    run_id = runs_target.start_id(f"TOOL:terminal:{command}")
    with runs_target.subscribe(run_id) as stream:
        started = stream.until("tool.started")
        assert started["preview"] == command
        request = _until_approval(stream)
        assert request["command"] == command
        assert request["pattern_key"] == request["description"] == ROOT_PATTERN
        assert request["pattern_keys"] == [ROOT_PATTERN]
        assert request["allow_permanent"] is True and request["choices"] == ALL_CHOICES
        waiting = runs_target.get(run_id).json()
        assert waiting["status"] == "waiting_for_approval" and waiting["last_event"] == "approval.request"
        assert runs_target.exists(victim)  # nothing runs before the answer

        bad = runs_target.approve(run_id, {"choice": "maybe"})
        assert bad.status_code == 400
        assert error_of(bad) == {
            "message": "Invalid approval choice; expected one of: once, session, always, deny",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_approval_choice",
        }
        broken = runs_target.http.post(
            runs_target.url(f"/v1/runs/{run_id}/approval"),
            data=b"{nope",
            headers=runs_target.auth(**{"Content-Type": "application/json"}),
        )
        assert broken.status_code == 400 and error_of(broken)["message"] == "Invalid JSON"

        ok = runs_target.approve(run_id, {"choice": "once"})
        assert ok.status_code == 200
        expected = {"object": "hermes.run.approval_response", "run_id": run_id, "choice": "once", "resolved": 1}
        assert ok.json() == expected
        again = runs_target.approve(run_id, {"choice": "once"})
        assert again.status_code == 409
        assert error_of(again)["code"] == "approval_not_pending"
        assert error_of(again)["message"] == f"Run has no pending approval: {run_id}"
        events, comments = stream.read_all()
    after = [e["event"] for e in events[events.index(request) + 1 :]]
    assert after[:2] == ["approval.responded", "tool.completed"]
    responded = events[events.index(request) + 1]
    assert responded["choice"] == "once" and responded["resolved"] == 1
    assert events[events.index(request) + 2]["error"] is False
    assert events[-1]["event"] == "run.completed" and comments[-1] == "stream closed"
    assert "and was approved by the user." in events[-1]["output"]
    assert not runs_target.exists(victim)
    late = runs_target.approve(run_id, {"choice": "once"})
    assert late.status_code == 409
    assert error_of(late) == {
        "message": f"Run has no active approval session: {run_id}",
        "type": "invalid_request_error",
        "param": None,
        "code": "approval_not_active",
    }


def test_deny_blocks_the_command_the_file_survives_and_the_run_still_completes(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    run_id = runs_target.start_id(f"TOOL:terminal:rm -rf {victim}")
    with runs_target.subscribe(run_id) as stream:
        _until_approval(stream)
        resp = runs_target.approve(run_id, {"choice": "DENY", "reason": "not today"})
        assert resp.status_code == 200 and resp.json()["choice"] == "deny"
        events, _ = stream.read_all()
    completed = next(e for e in events if e["event"] == "tool.completed")
    assert completed["error"] is True
    final = runs_target.wait_done(run_id)
    assert final["status"] == "completed"
    assert '"error": "BLOCKED: Command denied by user.' in final["output"]
    assert runs_target.exists(victim)  # on Hermes: the real file in the scratch dir


def test_session_approves_the_pattern_for_the_rest_of_the_run(runs_target: RunsTarget) -> None:
    first, second = runs_target.victim(), runs_target.victim()
    run_id = runs_target.start_id(f"TOOL:terminal:rm -rf {first} || TOOL:terminal:rm -rf {second}")
    with runs_target.subscribe(run_id) as stream:
        request = _until_approval(stream)
        assert request["command"] == f"rm -rf {first}"
        resp = runs_target.approve(run_id, {"choice": "session"})
        assert resp.json()["choice"] == "session" and resp.json()["resolved"] == 1
        events, _ = stream.read_all()
    assert kinds(events).count("approval.request") == 1
    completed = [e for e in events if e["event"] == "tool.completed"]
    assert [e["error"] for e in completed] == [False, False]
    assert not runs_target.exists(first) and not runs_target.exists(second)
    output = runs_target.get(run_id).json()["output"]
    assert output.count("was approved by the user") == 1  # the second call needed no approval


def test_an_alias_choice_and_a_bogus_request_id_resolve_the_oldest_request(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    run_id = runs_target.start_id(f"TOOL:terminal:rm -rf {victim}")
    with runs_target.subscribe(run_id) as stream:
        _until_approval(stream)
        resp = runs_target.approve(run_id, {"choice": "approve", "request_id": "apr_does_not_exist", "id": "x"})
        assert resp.status_code == 200 and resp.json()["choice"] == "once"
        stream.read_all()
    assert not runs_target.exists(victim)


def test_always_allows_the_pattern_for_later_runs(runs_target: RunsTarget) -> None:
    target = runs_target.make_file(f"{runs_target.scratch}/{uniq('perm')}.txt")
    command = f"chmod 777 {target}"
    run_id = runs_target.start_id(f"TOOL:terminal:{command}")
    with runs_target.subscribe(run_id) as stream:
        request = _until_approval(stream)
        if request["pattern_key"] != "world/other-writable permissions":
            pytest.fail(f"unexpected pattern {request}")
        assert runs_target.approve(run_id, {"choice": "always"}).json()["choice"] == "always"
        stream.read_all()
    again = runs_target.start_id(f"TOOL:terminal:{command}")
    events, _ = runs_target.events(again)
    assert "approval.request" not in kinds(events)
    assert events[-1]["event"] == "run.completed"
    if runs_target.live is not None:  # Hermes persists it by rewriting its own config.yaml
        config = (runs_target.live.home / "config.yaml").read_text()
        assert "command_allowlist" in config and "world/other-writable permissions" in config
    else:
        assert "world/other-writable permissions" in runs_target.emulator.command_allowlist


def test_an_unanswered_approval_times_out_blocked_and_the_run_completes(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    run_id = runs_target.start_id(f"TOOL:terminal:rm -rf {victim}")
    events, _ = runs_target.events(run_id, read_timeout=APPROVAL_TIMEOUT + 30)
    assert "approval.responded" not in kinds(events)
    completed = next(e for e in events if e["event"] == "tool.completed")
    assert completed["error"] is True and completed["duration"] >= APPROVAL_TIMEOUT - 0.5
    assert events[-1]["event"] == "run.completed"
    assert '"error": "BLOCKED: Command timed out without user response.' in events[-1]["output"]
    assert runs_target.exists(victim)


def test_approval_while_running_is_not_pending_and_choice_is_checked_first(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(f"SLOW:3 {uniq('nothing to approve')}")
    assert _until_running(runs_target, run_id)["status"] == "running"
    resp = runs_target.approve(run_id, {"choice": "once"})
    assert resp.status_code == 409 and error_of(resp)["code"] == "approval_not_pending"
    empty = runs_target.approve(run_id, {})
    assert empty.status_code == 400 and error_of(empty)["code"] == "invalid_approval_choice"
    assert runs_target.stop(run_id).status_code == 200
    runs_target.wait_done(run_id)
    finished = runs_target.approve(run_id, {"choice": "nope"})
    assert finished.status_code == 400  # the choice is validated before the active check
    runs_target.events(run_id)


# --------------------------------------------------------------------------- stop


def test_stop_while_running_ends_cancelled_and_stop_after_that_is_404(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(f"SLOW:8 {uniq('please stop me')}")
    assert _until_running(runs_target, run_id)["status"] == "running"
    resp = runs_target.stop(run_id)
    end = time.monotonic() + 30  # a guard against a hang, not a bound
    while resp.status_code == 404 and time.monotonic() < end:
        # Hermes 0.19 says "running" as it queues the run and registers it for /stop when its agent
        # starts: a stop in between is a 404 (what the old 0.5 s sleep stepped over, when not loaded)
        time.sleep(0.02)
        resp = runs_target.stop(run_id)
    assert resp.status_code == 200 and resp.json() == {"run_id": run_id, "status": "stopping"}
    stopping = runs_target.get(run_id).json()
    if stopping["status"] == "stopping":  # the emulator may already be done
        assert stopping["last_event"] == "run.stopping"
        assert runs_target.stop(run_id).json() == {"run_id": run_id, "status": "stopping"}
    events, comments = runs_target.events(run_id)
    assert kinds(events) == ["run.cancelled"] and comments == ["stream closed"]
    assert list(events[0]) == ["event", "run_id", "timestamp"]
    final = runs_target.wait_done(run_id)
    assert final["status"] == "cancelled" and final["last_event"] == "run.cancelled"
    assert "output" not in final and "usage" not in final
    assert_run_not_found(runs_target.stop(run_id), run_id)


def test_stop_while_waiting_for_approval_denies_and_the_file_survives(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    run_id = runs_target.start_id(f"TOOL:terminal:rm -rf {victim}")
    with runs_target.subscribe(run_id) as stream:
        _until_approval(stream)
        assert runs_target.stop(run_id).json()["status"] == "stopping"
        assert runs_target.get(run_id).json()["status"] in ("stopping", "cancelled")
        events, _ = stream.read_all()
    tail = [e for e in events if e["event"] in ("tool.completed", "run.cancelled")]
    assert [e["event"] for e in tail] == ["tool.completed", "run.cancelled"]
    assert tail[0]["error"] is True
    assert runs_target.wait_done(run_id)["status"] == "cancelled"
    assert runs_target.exists(victim)
    late = runs_target.approve(run_id, {"choice": "once"})
    assert late.status_code == 409 and error_of(late)["code"] == "approval_not_active"


def test_stop_on_a_completed_run_is_404_but_the_run_object_stays(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(uniq("quick run"))
    runs_target.wait_done(run_id)
    assert_run_not_found(runs_target.stop(run_id), run_id)
    assert runs_target.get(run_id).json()["status"] == "completed"
    runs_target.events(run_id)


# --------------------------------------------------------------------------- idempotency, subscriptions


def test_the_idempotency_key_is_ignored_every_post_is_a_new_run(runs_target: RunsTarget) -> None:
    body = {"input": uniq("idempotent?")}
    key = uniq("idem")
    ids = []
    for _ in range(2):
        resp = runs_target.start(body, **{"Idempotency-Key": key})
        assert resp.status_code == 202
        ids.append(resp.json()["run_id"])
    assert ids[0] != ids[1]
    for run_id in ids:
        assert runs_target.wait_done(run_id)["output"] == f"ECHO: {body['input']}"
        runs_target.events(run_id)


def test_two_concurrent_subscribers_split_the_events_and_only_one_sees_the_end(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(f"SLOW:2 {uniq('two subscribers')}")
    streams = [runs_target.subscribe(run_id, read_timeout=5) for _ in range(2)]
    results: list[list[dict[str, Any]]] = [[], []]
    ended = [False, False]

    def read(index: int) -> None:
        stream = streams[index]
        try:
            stream.read_all()
        except requests.exceptions.RequestException:
            pass  # the one without the close sentinel hangs until our read timeout
        results[index] = stream.events
        ended[index] = "stream closed" in stream.comments

    threads = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    for stream in streams:
        stream.close()
    assert sorted(ended) == [False, True]
    assert results[0] and results[1]  # each got a share
    merged = sorted(results[0] + results[1], key=lambda e: e["timestamp"])
    assert without_deltas(merged) == PLAIN_END
    assert runs_target.get(run_id).json()["status"] == "completed"


def test_a_reconnect_after_a_drop_receives_nothing_poll_instead(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id(f"SLOW:3 {uniq('disconnect me')}")
    first = runs_target.subscribe(run_id)
    assert first.status == 200  # its handler is a consumer now
    assert _until_running(runs_target, run_id)["status"] == "running"
    first.close()  # the server's handler stays a consumer until its next write fails
    second = runs_target.subscribe(run_id, read_timeout=4.5)
    assert second.status == 200
    try:
        second.read_all()
    except requests.exceptions.RequestException:
        pass
    finally:
        second.close()
    # Never the end: the dead first handler took an event, failed to write and dropped the
    # buffer. How many deltas slip through first depends on their pacing (none in hermes-wire/49).
    assert "stream closed" not in second.comments
    assert all(e["event"] == "message.delta" for e in second.events)
    final = runs_target.wait_done(run_id)
    assert final["status"] == "completed" and final["output"].startswith("ECHO: SLOW:3")


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"model": "hermes-agent"}, "Missing 'input' field"),
        ({"input": ""}, "Missing 'input' field"),
        ({"input": None}, "Missing 'input' field"),
        ({"input": []}, "Missing 'input' field"),
        ({"input": 42}, "No user message found in input"),
        ({"input": True}, "No user message found in input"),
        ({"input": {"role": "user", "content": "x"}}, "No user message found in input"),
        ({"input": [{"role": "user"}]}, "No user message found in input"),
        ({"input": "x", "conversation_history": "nope"}, "'conversation_history' must be an array of message objects"),
        (
            {"input": "x", "conversation_history": [{"role": "user"}]},
            "conversation_history[0] must have 'role' and 'content' fields",
        ),
    ],
)
def test_invalid_run_bodies_are_400(runs_target: RunsTarget, body: Any, message: str) -> None:
    resp = runs_target.start(body)
    assert resp.status_code == 400, resp.text
    assert resp.json() == {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}


@pytest.mark.parametrize("raw", [b"{not json", b""])
def test_a_body_that_is_not_json_is_400_invalid_json(runs_target: RunsTarget, raw: bytes) -> None:
    resp = runs_target.http.post(
        runs_target.url("/v1/runs"), data=raw, headers=runs_target.auth(**{"Content-Type": "application/json"})
    )
    assert resp.status_code == 400
    assert error_of(resp) == {"message": "Invalid JSON", "type": "invalid_request_error", "param": None, "code": None}


@pytest.mark.parametrize("body", [{"input": ["a", "b"]}, ["input"]])
def test_some_bodies_crash_hermes_into_a_text_plain_500(runs_target: RunsTarget, body: Any) -> None:
    resp = runs_target.start(body)
    assert resp.status_code == 500
    assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert resp.headers.get("Connection", "").lower() == "close"
    assert resp.content == b"500 Internal Server Error\n\nServer got itself in trouble"
    assert not any(h in resp.headers for h in SECURITY)


def test_whitespace_input_and_content_parts_are_accepted(runs_target: RunsTarget) -> None:
    blank = runs_target.start({"input": "   "})
    assert blank.status_code == 202
    parts = runs_target.start({"input": [{"role": "user", "content": [{"type": "input_text", "text": "parts"}]}]})
    assert parts.status_code == 202
    assert runs_target.wait_done(parts.json()["run_id"])["output"] == "ECHO: parts"
    runs_target.wait_done(blank.json()["run_id"])
    runs_target.events(blank.json()["run_id"])
    runs_target.events(parts.json()["run_id"])


def test_request_fields_model_session_id_and_history_are_used(runs_target: RunsTarget) -> None:
    session = uniq("my-session")
    run_id = runs_target.start_id(
        uniq("fields"),
        model="custom-model",
        session_id=session,
        instructions="You are terse.",
        conversation_history=[{"role": "user", "content": "earlier"}, {"role": "assistant", "content": "ok"}],
    )
    final = runs_target.wait_done(run_id)
    assert final["model"] == "custom-model" and final["session_id"] == session
    runs_target.events(run_id)


def test_an_over_long_session_key_is_400(runs_target: RunsTarget) -> None:
    resp = runs_target.start({"input": "x"}, **{"X-Hermes-Session-Key": "k" * 257})
    assert resp.status_code == 400
    assert resp.json() == {"error": {"message": "Session key too long", "type": "invalid_request_error"}}


def test_there_is_no_list_or_delete_route(runs_target: RunsTarget) -> None:
    listing = runs_target.http.get(runs_target.url("/v1/runs"), headers=runs_target.auth())
    assert listing.status_code == 405 and listing.headers["Allow"] == "POST"
    assert listing.text == "405: Method Not Allowed"
    delete = runs_target.http.delete(runs_target.url("/v1/runs/run_x"), headers=runs_target.auth())
    assert delete.status_code == 405 and delete.headers["Allow"] == "GET"


AUTH_ERROR = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("POST", "/v1/runs", b'{"input":"x"}'),
        ("POST", "/v1/runs", b"{bad"),
        ("GET", "/v1/runs/run_x", None),
        ("GET", "/v1/runs/run_x/events", None),
        ("POST", "/v1/runs/run_x/approval", b'{"choice":"once"}'),
        ("POST", "/v1/runs/run_x/stop", None),
    ],
)
@pytest.mark.parametrize("authorization", [None, "Bearer wrong-key", "bearer {key}"])
def test_every_runs_route_checks_the_key_first(
    runs_target: RunsTarget, method: str, path: str, body: bytes | None, authorization: str | None
) -> None:
    headers = {"Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization.format(key=runs_target.api_key)
    resp = runs_target.http.request(method, runs_target.url(path), data=body, headers=headers, timeout=10)
    assert resp.status_code == 401
    assert resp.json() == AUTH_ERROR


def test_unknown_run_ids_are_404_on_every_route(runs_target: RunsTarget) -> None:
    unknown = "run_00000000000000000000000000000000"
    assert_run_not_found(runs_target.get(unknown), unknown)
    assert_run_not_found(runs_target.get("not-a-run-id"), "not-a-run-id")
    began = time.monotonic()
    with runs_target.subscribe(unknown) as stream:
        assert_run_not_found(stream.response, unknown)
    assert time.monotonic() - began >= 0.8
    assert_run_not_found(runs_target.approve(unknown, {"choice": "once"}), unknown)
    bad_json = runs_target.http.post(
        runs_target.url(f"/v1/runs/{unknown}/approval"), data=b"{bad", headers=runs_target.auth()
    )
    assert_run_not_found(bad_json, unknown)  # the run is looked up before the body is read
    assert_run_not_found(runs_target.stop(unknown), unknown)


def test_a_run_waiting_for_approval_holds_its_slot_and_chat_gets_429(runs_target_cap1: RunsTarget) -> None:
    target = runs_target_cap1
    victim = target.victim()
    run_id = target.start_id(f"TOOL:terminal:rm -rf {victim}")
    limited = {
        "error": {
            "message": "Too many concurrent runs (max 1)",
            "type": "rate_limit_error",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    with target.subscribe(run_id) as stream:
        _until_approval(stream)
        second = target.start({"input": "blocked by waiting run"})
        assert second.status_code == 429 and second.headers["Retry-After"] == "1"
        assert second.json() == limited
        chat = target.http.post(
            target.url("/v1/chat/completions"),
            json={"messages": [{"role": "user", "content": "x"}]},
            headers=target.auth(),
        )
        assert chat.status_code == 429 and chat.json() == limited
        broken = target.http.post(target.url("/v1/runs"), data=b"{bad", headers=target.auth())
        assert broken.status_code == 429  # the cap is checked before the body is parsed
        assert target.get(run_id).status_code == 200  # status, approval and stop are not capped
        assert target.approve(run_id, {"choice": "deny"}).status_code == 200
        stream.read_all()
    target.wait_done(run_id)
    deadline = time.monotonic() + 30  # a guard against a hang, not a bound
    while True:
        after = target.start({"input": uniq("after")})
        if after.status_code == 202 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert after.status_code == 202
    target.wait_done(after.json()["run_id"])
    target.events(after.json()["run_id"])


# --------------------------------------------------------------------------- chat and Responses


def _sse_frames(raw: str) -> list[tuple[str | None, str]]:
    frames = []
    for block in raw.split("\n\n"):
        if not block.strip() or block.startswith(":"):
            continue
        name = None
        data = []
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data.append(line[len("data: ") :])
        frames.append((name, "\n".join(data)))
    return frames


def test_chat_streams_carry_named_tool_progress_events(runs_target: RunsTarget) -> None:
    word = uniq("chat-stream-tool")
    resp = runs_target.http.post(
        runs_target.url("/v1/chat/completions"),
        json={"stream": True, "messages": [{"role": "user", "content": f"TOOL:terminal:echo {word}"}]},
        headers=runs_target.auth(),
        timeout=30,
    )
    assert resp.status_code == 200
    frames = _sse_frames(resp.text)
    progress = [json.loads(d) for n, d in frames if n == "hermes.tool.progress"]
    assert [p["status"] for p in progress] == ["running", "completed"]
    running, completed = progress
    assert list(running) == ["tool", "emoji", "label", "toolCallId", "status"]
    assert running["tool"] == "terminal" and running["emoji"] == "\U0001f4bb"
    assert running["label"] == f"echo {word}" and CALL_ID.match(running["toolCallId"])
    assert completed == {"tool": "terminal", "toolCallId": running["toolCallId"], "status": "completed"}
    assert all(n is None for n, d in frames if n != "hermes.tool.progress")
    assert frames[-1] == (None, "[DONE]")
    chunks = [json.loads(d) for n, d in frames if n is None and d != "[DONE]"]
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices"))
    assert text == f'\n\nDONE: {{"output": "{word}", "exit_code": 0, "error": null}}'
    # the progress events come before the first content chunk
    first_content = next(i for i, (n, d) in enumerate(frames) if n is None and '"content"' in d)
    assert all(i < first_content for i, (n, _d) in enumerate(frames) if n == "hermes.tool.progress")


def test_chat_non_stream_shows_only_the_final_text(runs_target: RunsTarget) -> None:
    word = uniq("chat-nonstream-tool")
    resp = runs_target.http.post(
        runs_target.url("/v1/chat/completions"),
        json={"messages": [{"role": "user", "content": f"PREAMBLE TOOL:terminal:echo {word}"}]},
        headers=runs_target.auth(),
        timeout=30,
    )
    content = resp.json()["choices"][0]["message"]["content"]
    assert content == f'DONE: {{"output": "{word}", "exit_code": 0, "error": null}}'


def test_a_dangerous_command_on_chat_is_pending_approval_and_never_runs(runs_target: RunsTarget) -> None:
    victim = runs_target.victim()
    resp = runs_target.http.post(
        runs_target.url("/v1/chat/completions"),
        json={"messages": [{"role": "user", "content": f"TOOL:terminal:rm -rf {victim}"}]},
        headers=runs_target.auth(),
        timeout=30,
    )
    content = resp.json()["choices"][0]["message"]["content"]
    assert '"status": "pending_approval", "approval_pending": true' in content
    assert runs_target.exists(victim)


def test_responses_streams_tool_items_whose_output_index_differs_from_the_final_order(
    runs_target: RunsTarget,
) -> None:
    hello = runs_target.make_file(f"{runs_target.scratch}/{uniq('hello')}.txt", "hello from read_file target\n")
    resp = runs_target.http.post(
        runs_target.url("/v1/responses"),
        json={"stream": True, "input": f"PREAMBLE TOOL:read_file:{hello} || TOOL:todo:resp todo"},
        headers=runs_target.auth(),
        timeout=30,
    )
    events = [json.loads(d) for n, d in _sse_frames(resp.text)]
    added = [(e["output_index"], e["item"]["type"]) for e in events if e["type"] == "response.output_item.added"]
    assert added == [(0, "message"), (1, "function_call"), (2, "function_call_output"),
                     (3, "function_call"), (4, "function_call_output")]
    added_items = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    calls = [i for i in added_items if i["type"] == "function_call"]
    assert all(re.match(r"^fc_[0-9a-f]{24}$", c["id"]) and c["status"] == "in_progress" for c in calls)
    assert calls[0]["arguments"] == json.dumps({"path": hello})
    todo = {"todos": [{"id": "1", "content": "resp todo", "status": "in_progress"}]}
    assert calls[1]["arguments"] == json.dumps(todo)
    done_items = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    outputs = [i for i in done_items if i["type"] == "function_call_output"]
    assert all(re.match(r"^fco_[0-9a-f]{24}$", o["id"]) for o in outputs)
    assert outputs[0]["output"][0]["type"] == "input_text"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed"
    assert [i["type"] for i in final["output"]] == [
        "function_call", "function_call_output", "function_call", "function_call_output", "message"
    ]
    text = final["output"][-1]["content"][0]["text"]
    assert text.startswith("Calling tools now.\n\nDONE: ")
    assert list(final["output"][0]) == ["type", "name", "arguments", "call_id"]


def test_non_stream_responses_list_calls_then_outputs_then_the_message(runs_target: RunsTarget) -> None:
    hello = runs_target.make_file(f"{runs_target.scratch}/{uniq('hello')}.txt", "hello from read_file target\n")
    resp = runs_target.http.post(
        runs_target.url("/v1/responses"),
        json={"input": f"TOOL:read_file:{hello} || TOOL:todo:resp nonstream todo"},
        headers=runs_target.auth(),
        timeout=30,
    )
    output = resp.json()["output"]
    assert [i["type"] for i in output] == [
        "function_call", "function_call", "function_call_output", "function_call_output", "message"
    ]
    assert list(output[0]) == ["type", "name", "arguments", "call_id"]
    assert list(output[2]) == ["type", "call_id", "output"] and isinstance(output[2]["output"], str)
    assert output[2]["call_id"] == output[0]["call_id"]
    assert output[-1]["content"][0]["text"].startswith('DONE: {"content": "1|hello from read_file target')


# --------------------------------------------------------------------------- discovery


def test_discovery_routes(runs_target: RunsTarget) -> None:
    caps = runs_target.http.get(runs_target.url("/v1/capabilities"), headers=runs_target.auth()).json()
    assert caps == CAPABILITIES
    toolsets = runs_target.http.get(runs_target.url("/v1/toolsets"), headers=runs_target.auth()).json()
    assert toolsets["object"] == "list" and toolsets["platform"] == "api_server"
    assert {t["name"] for t in toolsets["data"] if t["enabled"]} == {"terminal", "file", "todo"}
    assert all(list(t) == ["name", "label", "description", "enabled", "configured", "tools"] for t in toolsets["data"])
    detailed = runs_target.http.get(runs_target.url("/health/detailed"), headers=runs_target.auth()).json()
    assert detailed["status"] == "ok" and detailed["version"] == "0.19.0"
    queues = detailed["readiness"]["checks"]["background_queues"]
    assert isinstance(queues["active_api_runs"], int)
    health = runs_target.http.get(runs_target.url("/health")).json()
    assert health == {"status": "ok", "platform": "hermes-agent", "version": "0.19.0"}


# --------------------------------------------------------------------------- more tool shapes


def test_stop_during_a_running_tool_interrupts_it_and_ends_cancelled(runs_target: RunsTarget) -> None:
    run_id = runs_target.start_id("TOOL:terminal:sleep 8")
    with runs_target.subscribe(run_id) as stream:
        started = stream.until("tool.started")
        assert started["preview"] == "sleep 8"
        running = runs_target.get(run_id).json()
        assert running["status"] == "running" and running["last_event"] == "tool.started"
        assert runs_target.stop(run_id).status_code == 200
        events, _ = stream.read_all()
    # interrupted, not waited out: the tool ended in error (a `sleep 8` waited out ends fine)
    assert kinds(events)[-2:] == ["tool.completed", "run.cancelled"]
    assert events[-2]["error"] is True
    assert runs_target.wait_done(run_id)["status"] == "cancelled"


def test_write_file_then_read_file_through_tooljson(runs_target: RunsTarget) -> None:
    path = f"{runs_target.scratch}/{uniq('written')}.txt"
    args = json.dumps({"path": path, "content": "written by the agent\n"})
    run_id = runs_target.start_id(f"TOOLJSON:write_file:{args} || TOOL:read_file:{path}")
    events, _ = runs_target.events(run_id)
    tools = [(e["event"], e["tool"]) for e in events if e["event"].startswith("tool.")]
    assert tools == [
        ("tool.started", "write_file"),
        ("tool.completed", "write_file"),
        ("tool.started", "read_file"),
        ("tool.completed", "read_file"),
    ]
    assert [e["error"] for e in events if e["event"] == "tool.completed"] == [False, False]
    assert '"bytes_written": 21' in events[-1]["output"]
    assert '"content": "1|written by the agent' in events[-1]["output"]
    assert runs_target.exists(path)


def test_a_chained_non_stream_response_repeats_the_previous_turns_tool_items(runs_target: RunsTarget) -> None:
    word = uniq("chained")
    first = runs_target.http.post(
        runs_target.url("/v1/responses"), json={"input": f"TOOL:terminal:echo {word}"}, headers=runs_target.auth()
    ).json()
    second = runs_target.http.post(
        runs_target.url("/v1/responses"),
        json={"input": "follow-up after tool", "previous_response_id": first["id"]},
        headers=runs_target.auth(),
    ).json()
    assert [i["type"] for i in second["output"]] == ["function_call", "function_call_output", "message"]
    assert second["output"][:2] == first["output"][:2]  # Hermes' bug (hermes-wire/40), reproduced
    assert second["output"][-1]["content"][0]["text"] == "ECHO: follow-up after tool"


# --------------------------------------------------------------------------- approvals.mode: smart


def _smart_victim(target: RunsTarget, verdict: str) -> str:
    directory = f"{target.victim()}/{verdict}"
    target.make_file(f"{directory}/file.txt")
    return directory


def test_smart_approve_runs_the_command_without_asking(runs_target_smart: RunsTarget) -> None:
    target = runs_target_smart
    victim = _smart_victim(target, "smart-approve")
    events, _ = target.events(target.start_id(f"TOOL:terminal:rm -rf {victim}"))
    assert "approval.request" not in kinds(events)
    assert "and auto-approved by smart approval." in events[-1]["output"]
    assert not target.exists(victim)


def test_smart_deny_asks_the_owner_with_once_or_deny_only(runs_target_smart: RunsTarget) -> None:
    target = runs_target_smart
    victim = _smart_victim(target, "smart-deny")
    run_id = target.start_id(f"TOOL:terminal:rm -rf {victim}")
    with target.subscribe(run_id) as stream:
        request = stream.until("approval.request")
        assert list(request) == APPROVAL_KEYS[:5] + ["smart_denied"] + APPROVAL_KEYS[5:]
        assert request["allow_permanent"] is False and request["smart_denied"] is True
        assert request["choices"] == ["once", "deny"]
        assert target.approve(run_id, {"choice": "deny"}).status_code == 200
        stream.read_all()
    assert target.exists(victim)


def test_smart_escalate_is_an_ordinary_request(runs_target_smart: RunsTarget) -> None:
    target = runs_target_smart
    victim = target.victim()
    run_id = target.start_id(f"TOOL:terminal:rm -rf {victim}")
    with target.subscribe(run_id) as stream:
        request = stream.until("approval.request")
        assert list(request) == APPROVAL_KEYS and request["choices"] == ALL_CHOICES
        target.approve(run_id, {"choice": "deny"})
        stream.read_all()
    assert target.exists(victim)
