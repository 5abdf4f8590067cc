"""examples/flask_app against the emulator, through Flask's own test client."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from examples_support import require

require("flask")

from flask_app.app import create_app  # noqa: E402


@pytest.fixture
def client(hermes_env: Any) -> Iterator[Any]:
    app = create_app()
    yield app.test_client()
    app.extensions["hermes"].close()


def events(body: bytes) -> list[tuple[str, Any]]:
    out = []
    for block in body.decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_one_client_per_process_shared_by_threads(hermes_env: Any) -> None:
    app = create_app()
    hermes = app.extensions["hermes"]
    seen: list[Any] = []
    threads = [threading.Thread(target=lambda: seen.append(hermes.get())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in seen}) == 1
    hermes.close()


def test_a_repeated_summary_request_never_runs_the_model_twice(client: Any, hermes_env: Any) -> None:
    first = client.post("/orders/7/summary", json={"notes": "two boxes, one late"})
    again = client.post("/orders/7/summary", json={"notes": "two boxes, one late"})
    assert first.status_code == again.status_code == 200
    assert first.json["summary"] == again.json["summary"] == "ECHO: Summarize order 7: two boxes, one late"
    assert (first.json["replayed"], again.json["replayed"]) == (False, True)
    assert hermes_env.executions == 1
    status = client.get("/orders/7/summary").json
    assert status == {"status": "completed", "action_id": "act_order_summary_7",
                      "summary": "ECHO: Summarize order 7: two boxes, one late"}


def test_a_request_while_the_first_is_running_gets_409_not_a_second_model_call(client: Any, hermes_env: Any) -> None:
    body = {"notes": "SLOW:1"}
    first: dict[str, Any] = {}
    other = client.application.test_client()  # another browser tab, served by another thread
    t = threading.Thread(target=lambda: first.update(r=other.post("/orders/8/summary", json=body)))
    t.start()
    deadline = time.monotonic() + 10
    while hermes_env.active_runs == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    busy = client.post("/orders/8/summary", json=body)
    assert busy.status_code == 409 and busy.json == {"status": "in_progress", "action_id": "act_order_summary_8"}
    t.join()
    assert first["r"].status_code == 200
    assert client.get("/orders/8/summary").json["status"] == "completed"
    assert hermes_env.executions == 1


def test_an_uncertain_failure_is_reported_and_not_retried(client: Any, hermes_env: Any) -> None:
    hermes_env.drop_connection("before_response")  # the model runs, the answer never arrives
    failed = client.post("/orders/9/summary", json={"notes": "fragile"})
    assert failed.status_code == 502
    assert failed.json["status"] == "outcome_unknown" and failed.json["action_id"] == "act_order_summary_9"
    again = client.post("/orders/9/summary", json={"notes": "fragile"})  # the user presses again
    assert again.status_code == 502 and hermes_env.executions == 1       # replayed, not re-run
    status = client.get("/orders/9/summary").json
    assert status["status"] == "failed" and status["uncertain_outcome"] is True
    assert client.get("/orders/404/summary").status_code == 404


def test_an_agent_failure_is_not_returned_as_a_summary(client: Any, hermes_env: Any) -> None:
    hermes_env.fail_next()
    failed = client.post("/orders/10/summary", json={"notes": "x"})
    assert failed.status_code == 502 and failed.json == {"status": "incomplete", "finish_reason": "error"}


def test_the_stream_arrives_in_pieces_and_ends_with_done(client: Any) -> None:
    resp = client.get("/stream", query_string={"prompt": "one two three four five six seven"})
    assert resp.status_code == 200 and resp.mimetype == "text/event-stream"
    got = events(resp.data)
    deltas = [data["text"] for name, data in got if name == "delta"]
    assert len(deltas) > 1 and "".join(deltas) == "ECHO: one two three four five six seven"
    assert got[-1] == ("done", {"status": "completed"})


def test_a_stream_that_breaks_after_the_headers_ends_with_an_error_event(client: Any, hermes_env: Any,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    hermes_env.drop_connection("mid_stream", after_events=2)
    resp = client.get("/stream", query_string={"prompt": "one two three four five six seven secret-77"})
    assert resp.status_code == 200  # the headers were already out
    got = events(resp.data)
    assert got[0][0] == "delta"
    name, data = got[-1]
    assert name == "error" and data == {"code": "connector.hermes_agent.transport",
                                        "message": "the answer was interrupted"}
    assert "ProtocolError" not in resp.data.decode()    # the SDK's message stays in the server's log
    assert "stream broke" in caplog.text


def test_an_agent_failure_in_the_stream_ends_with_an_error_event(client: Any, hermes_env: Any) -> None:
    resp = client.get("/stream", query_string={"prompt": "FAIL500"})
    name, data = events(resp.data)[-1]
    assert name == "error" and data["code"] == "connector.hermes_agent.stream_failed"


def test_a_stream_refused_before_the_headers_gets_a_real_status(client: Any, hermes_env: Any) -> None:
    hermes_env.draining = True
    resp = client.get("/stream", query_string={"prompt": "hello"})
    assert resp.status_code == 502 and resp.json["code"] == "connector.hermes_agent.remote_temporary"


def test_a_client_that_goes_away_closes_the_stream(client: Any, hermes_env: Any) -> None:
    hermes_env.token_delay = 1.0  # 20 deltas: 20 s, longer than the wait below, if nobody closed it
    resp = client.get("/stream", query_string={"prompt": " ".join(["word"] * 60)}, buffered=False)
    chunks = resp.response
    assert next(iter(chunks))  # the first event arrived
    resp.close()               # what the server does when the browser disconnects
    deadline = time.monotonic() + 15  # a guard: only the cancel ends the run before 20 s
    while hermes_env.active_runs and time.monotonic() < deadline:
        time.sleep(0.02)
    assert hermes_env.active_runs == 0
