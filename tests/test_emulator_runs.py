"""Emulator-only wire tests for ``/v1/runs``, tool events and approvals (no real server needed).

Numbers (token counts, delta boundaries, result texts) are the ones of the Hermes 0.19.0
captures ``hermes-wire/25``-``49``; the conformance suite (tests/conformance) checks the
shapes against the real server too.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
VICTIM = "/scratch/hermes-x/victim"
HELLO = "/scratch/hermes-x/work/hello.txt"
FILES = {f"{VICTIM}/file.txt": "x\n", f"{VICTIM}2/file.txt": "y\n", HELLO: "hello from read_file target\n"}


@pytest.fixture
def make() -> Iterator[Any]:
    started: list[HermesEmulator] = []

    def factory(**options: Any) -> HermesEmulator:
        options.setdefault("toolsets", TOOLSETS)
        options.setdefault("files", FILES)
        emulator = HermesEmulator(**options).start()
        started.append(emulator)
        return emulator

    yield factory
    for emulator in started:
        emulator.stop()


@pytest.fixture
def emu(make: Any) -> HermesEmulator:
    emulator: HermesEmulator = make(approval_timeout=3)
    return emulator


def start(emu: HermesEmulator, body: Any, **headers: str) -> requests.Response:
    return requests.post(emu.base_url + "/v1/runs", json=body, headers={**AUTH, **headers}, timeout=10)


def start_id(emu: HermesEmulator, prompt: str, **fields: Any) -> str:
    resp = start(emu, {"input": prompt, **fields})
    assert resp.status_code == 202, resp.text
    return str(resp.json()["run_id"])


def get(emu: HermesEmulator, run_id: str) -> requests.Response:
    return requests.get(f"{emu.base_url}/v1/runs/{run_id}", headers=AUTH, timeout=10)


def approve(emu: HermesEmulator, run_id: str, body: Any) -> requests.Response:
    return requests.post(f"{emu.base_url}/v1/runs/{run_id}/approval", json=body, headers=AUTH, timeout=10)


def stop(emu: HermesEmulator, run_id: str) -> requests.Response:
    return requests.post(f"{emu.base_url}/v1/runs/{run_id}/stop", headers=AUTH, timeout=10)


def read_events(emu: HermesEmulator, run_id: str, timeout: float = 10) -> tuple[int, str]:
    resp = requests.get(f"{emu.base_url}/v1/runs/{run_id}/events", headers=AUTH, timeout=timeout)
    return resp.status_code, resp.text


def parse(raw: str) -> tuple[list[dict[str, Any]], list[str]]:
    events, comments = [], []
    for frame in raw.split("\n\n"):
        if frame.startswith("data: "):
            events.append(json.loads(frame[len("data: ") :]))
        elif frame.startswith(":"):
            comments.append(frame[1:].strip())
    return events, comments


def events_of(emu: HermesEmulator, run_id: str) -> list[dict[str, Any]]:
    status, raw = read_events(emu, run_id)
    assert status == 200, raw
    return parse(raw)[0]


def wait_for(predicate: Any, timeout: float = 30.0) -> None:  # a guard against a hang, not a bound
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.02)


def waiting(emu: HermesEmulator, run_id: str) -> bool:
    return bool(emu.pending_approvals(run_id))


# --------------------------------------------------------------------------- capture numbers


def test_plain_run_events_match_the_capture(emu: HermesEmulator) -> None:
    run_id = start_id(emu, "buffered replay run")
    events = events_of(emu, run_id)
    assert [e["event"] for e in events] == ["message.delta", "message.delta", "reasoning.available", "run.completed"]
    assert [e["delta"] for e in events[:2]] == ["ECHO: buffered replay", " run"]
    assert events[-1]["usage"] == {"input_tokens": 590, "output_tokens": 4, "total_tokens": 594}
    status = get(emu, run_id).json()
    assert list(status) == [
        "object", "run_id", "status", "updated_at", "created_at", "session_id", "model", "last_event", "output", "usage"
    ]


def test_tool_runs_reproduce_the_capture_usage_and_texts(emu: HermesEmulator) -> None:
    run_id = start_id(emu, f"TOOL:read_file:{HELLO} || TOOL:todo:write the SDK")
    events = events_of(emu, run_id)
    assert events[-1]["usage"] == {"input_tokens": 1219, "output_tokens": 37, "total_tokens": 1256}
    deltas = [e["delta"] for e in events if e["event"] == "message.delta"]
    assert deltas[:2] == ['\n\nDONE: {"content": "1|hello', ' from read_file target\\n2|",']
    run_id = start_id(emu, "TOOL:terminal:echo hello-from-terminal")
    events = events_of(emu, run_id)
    assert events[-1]["output"] == 'DONE: {"output": "hello-from-terminal", "exit_code": 0, "error": null}'
    assert events[-1]["usage"] == {"input_tokens": 1184, "output_tokens": 8, "total_tokens": 1192}


def test_a_shortened_tool_answer_says_it_was_cut(emu: HermesEmulator) -> None:
    """A tool result over 160 characters is cut in the model's answer; the cut ends in "…", so the
    answer does not read as broken JSON. The live fake LLM answers the same."""
    import importlib.util
    from pathlib import Path

    from hermes_sdk.testing.tools import RESULT_PREVIEW_CHARS, done_text

    run_id = start_id(emu, "TOOL:todo:buy milk")
    output = events_of(emu, run_id)[-1]["output"]
    assert output.startswith('DONE: {"todos": [') and output.endswith("…")
    assert len(output) == len("DONE: ") + RESULT_PREVIEW_CHARS + 1
    run_id = start_id(emu, "TOOL:terminal:echo short")
    assert events_of(emu, run_id)[-1]["output"].endswith('"error": null}')  # whole, no mark
    spec = importlib.util.spec_from_file_location("fake_llm", Path(__file__).parent / "live" / "fake_llm.py")
    assert spec is not None and spec.loader is not None
    fake_llm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake_llm)
    for results in (["x" * 161, "short"], ["y" * 160], []):
        assert fake_llm.done_text(results) == done_text(results)


def test_deny_matches_the_capture(emu: HermesEmulator) -> None:
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}")
    wait_for(lambda: waiting(emu, run_id))
    assert approve(emu, run_id, {"choice": "deny"}).status_code == 200
    events = events_of(emu, run_id)
    assert events[-1]["usage"] == {"input_tokens": 1239, "output_tokens": 28, "total_tokens": 1267}
    # The capture's answer stops at the result's 160th character; the cut is marked now.
    assert events[-1]["output"].endswith("Do NOT retry this command, do NOT rephrase…")
    assert f"{VICTIM}/file.txt" in emu.files


def test_thinktag_deltas_drop_the_think_block_but_reasoning_keeps_its_text(emu: HermesEmulator) -> None:
    events = events_of(emu, start_id(emu, "THINKTAG answer with think tags"))
    assert [e["delta"] for e in events if e["event"] == "message.delta"] == [
        "ECHO:", " THINKTAG answer with", " think tags"
    ]
    reasoning = next(e for e in events if e["event"] == "reasoning.available")
    assert reasoning["text"] == "pondering the requestECHO: THINKTAG answer with think tags"
    assert events[-1]["output"] == "ECHO: THINKTAG answer with think tags"
    assert events[-1]["usage"]["output_tokens"] == 8


def test_without_toolsets_tool_prompts_are_plain_echoes(make: Any) -> None:
    emu = make(toolsets=())
    events = events_of(emu, start_id(emu, "TOOL:terminal:echo hi"))
    assert events[-1]["output"] == "ECHO: TOOL:terminal:echo hi"


# --------------------------------------------------------------------------- framing and subscriptions


def test_the_events_body_is_chunked_data_only_sse(emu: HermesEmulator) -> None:
    run_id = start_id(emu, "raw bytes")
    emu.wait_run(run_id)
    with socket.create_connection(("127.0.0.1", emu.port), timeout=5) as sock:
        request = f"GET /v1/runs/{run_id}/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\n\r\n"
        sock.sendall(request.encode())
        raw = b""
        while not raw.endswith(b"0\r\n\r\n"):
            chunk = sock.recv(65536)
            assert chunk
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[1:4] == [
        b"Content-Type: text/event-stream", b"Cache-Control: no-cache", b"X-Accel-Buffering: no"
    ]
    assert b"Transfer-Encoding: chunked" in head and b"X-Content-Type-Options" not in head
    assert b": stream closed\n\n\r\n0\r\n\r\n" in body
    assert b"event:" not in body.replace(b'"event":', b"")


def test_the_keepalive_interval_is_configurable(make: Any) -> None:
    emu = make(run_events_keepalive_seconds=0.2, approval_timeout=1)
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}")
    status, raw = read_events(emu, run_id)
    assert status == 200
    events, comments = parse(raw)
    assert comments.count("keepalive") >= 3 and comments[-1] == "stream closed"
    assert [e["event"] for e in events][:2] == ["tool.started", "approval.request"]


def test_an_unsubscribed_buffer_is_swept_after_the_ttl_but_the_run_object_stays(make: Any) -> None:
    emu = make(run_stream_ttl=0.3)
    run_id = start_id(emu, "retention probe")
    emu.wait_run(run_id)
    past = time.monotonic() + 0.4
    while time.monotonic() < past:  # the clock passes the TTL (a lower bound: load only waits longer)
        time.sleep(0.02)
    began = time.monotonic()
    status, raw = read_events(emu, run_id)
    assert status == 404 and json.loads(raw)["error"]["code"] == "run_not_found"
    assert time.monotonic() - began >= 0.9
    assert get(emu, run_id).json()["status"] == "completed"


def test_finished_run_objects_are_dropped_after_the_status_ttl(make: Any) -> None:
    emu = make(run_status_ttl=0.2)
    run_id = start_id(emu, "short lived")
    emu.wait_run(run_id)
    past = time.monotonic() + 0.3
    while time.monotonic() < past:  # the clock passes the TTL (a lower bound: load only waits longer)
        time.sleep(0.02)
    assert get(emu, run_id).status_code == 404


def test_a_subscriber_cut_by_a_fault_drops_the_buffer(emu: HermesEmulator) -> None:
    emu.drop_connection("mid_stream", path="/v1/runs/", after_events=1)
    run_id = start_id(emu, "SLOW:0.3 cut me")
    with pytest.raises(requests.exceptions.RequestException):
        resp = requests.get(f"{emu.base_url}/v1/runs/{run_id}/events", headers=AUTH, stream=True, timeout=5)
        for _ in resp.iter_content(None):
            pass
        raise requests.exceptions.ConnectionError("ended cleanly")  # pragma: no cover - not expected
    assert emu.wait_run(run_id)["status"] == "completed"  # type: ignore[index]
    assert read_events(emu, run_id)[0] == 404


def test_the_inspection_api(emu: HermesEmulator) -> None:
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}")
    wait_for(lambda: waiting(emu, run_id))
    assert run_id in emu.run_ids()
    assert emu.run_status(run_id)["status"] == "waiting_for_approval"  # type: ignore[index]
    assert emu.pending_approvals(run_id) == [
        {
            "command": f"rm -rf {VICTIM}",
            "pattern_key": "delete in root path",
            "pattern_keys": ["delete in root path"],
            "description": "delete in root path",
            "allow_permanent": True,
        }
    ]
    approve(emu, run_id, {"choice": "once"})
    final = emu.wait_run(run_id)
    assert final is not None and final["status"] == "completed"
    assert [e["event"] for e in emu.run_events(run_id)][:4] == [
        "tool.started", "approval.request", "approval.responded", "tool.completed"
    ]
    assert not any(p.startswith(VICTIM + "/") for p in emu.files)
    assert emu.run_status("run_unknown") is None and emu.run_events("run_unknown") == []


# --------------------------------------------------------------------------- approvals


def test_always_adds_the_pattern_to_the_process_wide_allowlist(emu: HermesEmulator) -> None:
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}")
    wait_for(lambda: waiting(emu, run_id))
    assert approve(emu, run_id, {"choice": "always"}).json()["choice"] == "always"
    emu.wait_run(run_id)
    assert emu.command_allowlist == {"delete in root path"}
    second = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}2")
    events = events_of(emu, second)
    assert "approval.request" not in [e["event"] for e in events]
    emu.reset()
    assert emu.command_allowlist == set() and emu.files == {}


def test_all_resolves_every_queued_request_but_calls_run_serially(emu: HermesEmulator) -> None:
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM} || TOOL:terminal:rm -rf {VICTIM}2")
    wait_for(lambda: waiting(emu, run_id))
    assert approve(emu, run_id, {"choice": "once", "all": True}).json()["resolved"] == 1
    wait_for(lambda: waiting(emu, run_id))
    assert emu.pending_approvals(run_id)[0]["command"] == f"rm -rf {VICTIM}2"
    assert approve(emu, run_id, {"choice": "once", "resolve_all": "true"}).json()["resolved"] == 1
    assert emu.wait_run(run_id)["status"] == "completed"  # type: ignore[index]


def test_smart_mode_approves_denies_or_escalates(make: Any) -> None:
    emu = make(approval_mode="smart")
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}/smart-approve")
    events = events_of(emu, run_id)
    assert "approval.request" not in [e["event"] for e in events]
    assert "auto-approved by smart approval" in events[-1]["output"]
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}/smart-deny")
    wait_for(lambda: waiting(emu, run_id))
    approve(emu, run_id, {"choice": "always"})  # accepted, acts once
    request = next(e for e in emu.run_events(run_id) if e["event"] == "approval.request")
    assert list(request)[:6] == [
        "command", "pattern_key", "pattern_keys", "description", "allow_permanent", "smart_denied"
    ]
    assert request["allow_permanent"] is False and request["smart_denied"] is True
    assert request["choices"] == ["once", "deny"]
    emu.wait_run(run_id)
    assert emu.command_allowlist == set()


def test_mode_off_never_asks_and_the_command_runs(make: Any) -> None:
    emu = make(approval_mode="off")
    events = events_of(emu, start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}"))
    assert "approval.request" not in [e["event"] for e in events]
    assert not any(p.startswith(VICTIM + "/") for p in emu.files)


def test_hardline_commands_are_blocked_without_asking(emu: HermesEmulator) -> None:
    events = events_of(emu, start_id(emu, "TOOL:terminal:rm -rf /"))
    assert "approval.request" not in [e["event"] for e in events]
    assert next(e for e in events if e["event"] == "tool.completed")["error"] is True
    assert "BLOCKED" in events[-1]["output"]


def test_chat_and_responses_get_pending_approval_and_nothing_runs(emu: HermesEmulator) -> None:
    body = {"messages": [{"role": "user", "content": f"TOOL:terminal:rm -rf {VICTIM}"}]}
    resp = requests.post(emu.base_url + "/v1/chat/completions", json=body, headers=AUTH, timeout=10)
    content = resp.json()["choices"][0]["message"]["content"]
    assert content.startswith('DONE: {"output": "", "exit_code": -1, "error": "", "status": "pending_approval"')
    resp = requests.post(
        emu.base_url + "/v1/responses", json={"input": f"TOOL:terminal:rm -rf {VICTIM}"}, headers=AUTH, timeout=10
    )
    assert '"approval_pending": true' in resp.json()["output"][1]["output"]
    assert f"{VICTIM}/file.txt" in emu.files


# --------------------------------------------------------------------------- stop


@pytest.mark.parametrize("stop_latency", [0.2, 5.0])
def test_an_approval_posted_right_after_stop_still_runs_the_command(emu: HermesEmulator, stop_latency: float) -> None:
    # However late the interrupt timer fires (a busy machine), the stop lands when the tool returns.
    emu.stop_latency = stop_latency
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}")
    wait_for(lambda: waiting(emu, run_id))
    assert stop(emu, run_id).json() == {"run_id": run_id, "status": "stopping"}
    assert approve(emu, run_id, {"choice": "once"}).status_code == 200  # inside the ~1 s window
    events = events_of(emu, run_id)
    assert [e["event"] for e in events][-2:] == ["tool.completed", "run.cancelled"]
    assert events[-2]["error"] is False
    assert not any(p.startswith(VICTIM + "/") for p in emu.files)  # the hermes-wire/31 S3 race


def test_stop_right_after_the_post_gives_only_run_cancelled(emu: HermesEmulator) -> None:
    run_id = start_id(emu, "SLOW:2 stop me at once")
    stop(emu, run_id)
    events = events_of(emu, run_id)
    assert [e["event"] for e in events] == ["run.cancelled"]


def test_stop_during_a_running_tool_interrupts_it(emu: HermesEmulator) -> None:
    run_id = start_id(emu, "TOOL:terminal:sleep 20")
    wait_for(lambda: (emu.run_status(run_id) or {}).get("last_event") == "tool.started")
    assert get(emu, run_id).json()["status"] == "running"
    stop(emu, run_id)
    events = events_of(emu, run_id)
    assert [e["event"] for e in events] == ["tool.started", "tool.completed", "run.cancelled"]
    assert events[1]["error"] is True


# --------------------------------------------------------------------------- requests


def test_a_crash_is_aiohttps_plain_500_in_its_header_order(emu: HermesEmulator) -> None:
    body = b'{"input":["a","b"]}'
    with socket.create_connection(("127.0.0.1", emu.port), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer test-key\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
        )
        raw = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    names = [line.split(b":")[0] for line in head.split(b"\r\n")[1:]]
    assert names == [b"Content-Type", b"Content-Length", b"Date", b"Server", b"Connection"]
    assert head.startswith(b"HTTP/1.1 500 Internal Server Error")
    assert payload == b"500 Internal Server Error\n\nServer got itself in trouble"
    assert emu.active_runs == 0  # the slot taken before parsing was given back


def test_request_fields_reach_the_model(emu: HermesEmulator) -> None:
    run_id = start_id(
        emu,
        "now",
        instructions="You are terse.",
        conversation_history=[{"role": "user", "content": "before"}, {"role": "assistant", "content": "ok"}],
        model="custom",
        session_id="sess-1",
    )
    status = emu.wait_run(run_id)
    assert status is not None and status["model"] == "custom" and status["session_id"] == "sess-1"
    assert emu.upstream_calls[-1]["roles"] == ["system", "user", "assistant", "user"]
    resp = start(emu, {"input": "x"}, **{"X-Hermes-Session-Key": "k" * 257})
    assert resp.status_code == 400


def test_previous_response_id_loads_history_and_an_unknown_id_is_not_an_error(emu: HermesEmulator) -> None:
    stored = requests.post(emu.base_url + "/v1/responses", json={"input": "remember: blue"}, headers=AUTH, timeout=10)
    run_id = start_id(emu, "what colour?", previous_response_id=stored.json()["id"])
    emu.wait_run(run_id)
    assert emu.upstream_calls[-1]["n_messages"] == 4
    assert start(emu, {"input": "x", "previous_response_id": "resp_unknown"}).status_code == 202


def test_draining_answers_503_before_the_cap(emu: HermesEmulator) -> None:
    emu.draining = True
    resp = start(emu, {"input": "x"})
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "1"
    emu.draining = False


def test_health_detailed_counts_a_waiting_run_and_toolsets_follow_the_config(emu: HermesEmulator) -> None:
    run_id = start_id(emu, f"TOOL:terminal:rm -rf {VICTIM}")
    wait_for(lambda: waiting(emu, run_id))
    detailed = requests.get(emu.base_url + "/health/detailed", headers=AUTH, timeout=5).json()
    assert detailed["readiness"]["checks"]["background_queues"]["active_api_runs"] == 1
    approve(emu, run_id, {"choice": "deny"})
    emu.toolsets = ("todo",)
    toolsets = requests.get(emu.base_url + "/v1/toolsets", headers=AUTH, timeout=5).json()
    assert [t["name"] for t in toolsets["data"] if t["enabled"]] == ["todo"]


def test_bad_configuration_is_refused() -> None:
    with pytest.raises(ValueError):
        HermesEmulator(toolsets=("browser",))
    with pytest.raises(ValueError):
        HermesEmulator(approval_mode="yolo")


# --------------------------------------------------------------------------- chat and Responses


def test_chat_stream_progress_for_parallel_tools_and_preamble(emu: HermesEmulator) -> None:
    prompt = f"PREAMBLE TOOL:read_file:{HELLO} || TOOL:todo:x"
    body = {"stream": True, "messages": [{"role": "user", "content": prompt}]}
    resp = requests.post(emu.base_url + "/v1/chat/completions", json=body, headers=AUTH, timeout=10)
    blocks = [b for b in resp.text.split("\n\n") if b.strip()]
    kinds = ["progress" if b.startswith("event: hermes.tool.progress\n") else "chunk" for b in blocks]
    assert kinds[:7] == ["chunk", "chunk", "progress", "progress", "progress", "progress", "chunk"]
    assert '"content": "Calling tools now."' in blocks[1]
    running = [json.loads(b.split("data: ", 1)[1]) for b in blocks if b.startswith("event:")][::2]
    assert [(p["tool"], p["emoji"], p["label"]) for p in running] == [
        ("read_file", "\U0001f4d6", "hello.txt"),
        ("todo", "\U0001f4cb", "planning 1 task(s)"),
    ]


def test_a_chained_non_stream_response_repeats_the_previous_tool_items(emu: HermesEmulator) -> None:
    first = requests.post(
        emu.base_url + "/v1/responses", json={"input": "TOOL:terminal:echo chained"}, headers=AUTH, timeout=10
    ).json()
    second = requests.post(
        emu.base_url + "/v1/responses",
        json={"input": "follow-up after tool", "previous_response_id": first["id"]},
        headers=AUTH,
        timeout=10,
    ).json()
    assert [i["type"] for i in second["output"]] == ["function_call", "function_call_output", "message"]
    assert second["output"][0] == first["output"][0]
    assert second["output"][-1]["content"][0]["text"] == "ECHO: follow-up after tool"


def test_concurrent_subscribers_alternate_events(emu: HermesEmulator) -> None:
    # The model holds the run until both subscribers are attached (their 200 came back): they split
    # the events by construction, not because both subscribed within a sleep of 0.1 s.
    release = threading.Event()
    emu.script(lambda info: None if release.wait(60) else None)
    run_id = start_id(emu, "one two three four five six seven eight nine")
    url = f"{emu.base_url}/v1/runs/{run_id}/events"
    subscribers = [requests.get(url, headers=AUTH, stream=True, timeout=60) for _ in range(2)]
    assert [s.status_code for s in subscribers] == [200, 200]
    release.set()
    results: list[str] = []
    ended = threading.Event()

    def read(resp: requests.Response) -> None:
        try:
            results.append(resp.text)
            ended.set()
        except Exception:  # closed below: the one who never got the end
            results.append("cut")

    threads = [threading.Thread(target=read, args=(s,)) for s in subscribers]
    for thread in threads:
        thread.start()
    assert ended.wait(60)  # one got ": stream closed"; the other waits for events that never come
    for s in subscribers:  # shut the waiting one's socket (a shutdown wakes its blocked read)
        try:
            s.raw._fp.fp.raw._sock.shutdown(socket.SHUT_RDWR)
        except (AttributeError, OSError):
            pass  # the finished one's connection is already gone
        s.close()
    for thread in threads:
        thread.join(10)
    assert sorted(r == "cut" for r in results) == [False, True]
    finished = next(r for r in results if r != "cut")
    events, comments = parse(finished)
    assert comments == ["stream closed"] and 0 < len(events) < len(emu.run_events(run_id))


def test_the_pytest_plugin_offers_a_runs_emulator(hermes_runs_emulator: HermesEmulator) -> None:
    assert hermes_runs_emulator.toolsets == TOOLSETS
    assert hermes_runs_emulator.approval_timeout == 5.0
    hermes_runs_emulator.files["/tmp/f.txt"] = "plugin\n"
    events = events_of(hermes_runs_emulator, start_id(hermes_runs_emulator, "TOOL:terminal:cat /tmp/f.txt"))
    assert events[-1]["output"] == 'DONE: {"output": "plugin", "exit_code": 0, "error": null}'


@pytest.mark.parametrize(
    "prompt",
    [
        "TOOL:terminal:echo hi",
        "PREAMBLE TOOL:read_file:/a/b.txt || TOOL:todo:write the SDK",
        "TOOL:write_file:/a/c.txt=some = text || TOOL:no_such_tool:x",
        'TOOLJSON:terminal:{"command": "echo json", "timeout": 5}',
        "line one\nTOOL:terminal:echo two || TOOL:terminal:echo three",
    ],
)
def test_the_live_fake_llm_makes_the_same_calls_as_the_scripted_model(prompt: str) -> None:
    import importlib.util
    from pathlib import Path

    from hermes_sdk.testing import tools

    path = Path(__file__).resolve().parent / "live" / "fake_llm.py"
    spec = importlib.util.spec_from_file_location("fake_llm_for_drift_check", path)
    assert spec is not None and spec.loader is not None
    fake_llm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake_llm)
    ours = [(name, tools.call_arguments(kind, name, arg)) for kind, name, arg in tools.parse_directives(prompt)]
    theirs = [
        (name, fake_llm.call_arguments(kind, name, arg)) for kind, name, arg in fake_llm.parse_directives(prompt)
    ]
    assert ours == theirs and ours


def test_a_dropped_start_still_starts_the_run(emu: HermesEmulator) -> None:
    before = set(emu.run_ids())  # (a run an earlier test left active survives the reset)
    emu.drop_connection("before_response")
    with pytest.raises(requests.exceptions.ConnectionError):
        start(emu, {"input": "lost 202"})
    wait_for(lambda: len(set(emu.run_ids()) - before) == 1)
    (run_id,) = set(emu.run_ids()) - before
    assert emu.wait_run(run_id)["output"] == "ECHO: lost 202"  # type: ignore[index]
    emu.drop_connection("before_response", after_execution=False)
    with pytest.raises(requests.exceptions.ConnectionError):
        start(emu, {"input": "never started"})
    assert set(emu.run_ids()) - before == {run_id}
