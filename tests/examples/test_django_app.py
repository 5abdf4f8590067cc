"""examples/django_app against the emulator, through Django's own test client.

Settings are configured here from the example's tiny settings module: no project scaffolding,
no database.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from examples_support import require

django = require("django")

from django.conf import settings  # noqa: E402

if not settings.configured:
    from django_app import settings as example_settings

    settings.configure(**{name: getattr(example_settings, name) for name in dir(example_settings)
                          if name.isupper()})
    django.setup()

from django.test import Client  # noqa: E402
from django_app import hermes  # noqa: E402


@pytest.fixture
def client(hermes_env: Any) -> Iterator[Client]:
    yield Client()
    hermes.close_client()


def events(response: Any) -> list[tuple[str, Any]]:
    body = b"".join(response.streaming_content).decode()
    out = []
    for block in body.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_a_repeated_summary_runs_the_model_once(client: Client, hermes_env: Any) -> None:
    first = client.post("/orders/7/summary", {"notes": "late"}, content_type="application/json")
    again = client.post("/orders/7/summary", {"notes": "late"}, content_type="application/json")
    assert first.status_code == again.status_code == 200
    assert first.json()["summary"] == again.json()["summary"] == "ECHO: Summarize order 7: late"
    assert (first.json()["replayed"], again.json()["replayed"]) == (False, True)
    assert hermes_env.executions == 1
    assert client.get("/orders/7/summary").json()["summary"] == "ECHO: Summarize order 7: late"


def test_a_second_request_while_the_first_runs_is_refused(client: Client, hermes_env: Any) -> None:
    first: dict[str, Any] = {}
    t = threading.Thread(target=lambda: first.update(r=Client().post(
        "/orders/8/summary", {"notes": "SLOW:1"}, content_type="application/json")))
    t.start()
    deadline = time.monotonic() + 10
    while hermes_env.active_runs == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    busy = client.post("/orders/8/summary", {"notes": "SLOW:1"}, content_type="application/json")
    assert busy.status_code == 409 and busy.json()["status"] == "in_progress"
    t.join()
    assert first["r"].status_code == 200 and hermes_env.executions == 1


def test_an_uncertain_failure_is_reported_and_the_record_says_why(client: Client, hermes_env: Any) -> None:
    hermes_env.drop_connection("before_response")
    failed = client.post("/orders/9/summary", {"notes": "x"}, content_type="application/json")
    assert failed.status_code == 502 and failed.json()["status"] == "outcome_unknown"
    status = client.get("/orders/9/summary").json()
    assert status["status"] == "failed" and status["uncertain_outcome"] is True
    assert client.get("/orders/nothing-here/summary").status_code == 404


def test_the_streaming_response_ends_with_done(client: Client) -> None:
    response = client.get("/stream", {"prompt": "one two three four five"})
    assert response.status_code == 200 and response["Content-Type"] == "text/event-stream"
    got = events(response)
    assert "".join(d["text"] for n, d in got if n == "delta") == "ECHO: one two three four five"
    assert got[-1] == ("done", {"status": "completed"})


def test_a_stream_broken_after_the_headers_ends_with_an_error_event(client: Client, hermes_env: Any) -> None:
    hermes_env.drop_connection("mid_stream", after_events=2)
    response = client.get("/stream", {"prompt": "one two three four five six seven"})
    assert response.status_code == 200
    got = events(response)
    assert got[0][0] == "delta"
    assert got[-1] == ("error", {"code": "connector.hermes_agent.transport", "message": "the answer was interrupted"})


def test_a_truncated_answer_is_not_passed_off_as_complete(client: Client) -> None:
    got = events(client.get("/stream", {"prompt": "TRUNCATE"}))
    assert got[-1] == ("error", {"code": "connector.hermes_agent.stream_failed",
                                 "message": "the answer is incomplete"})


def test_a_refused_stream_gets_a_real_status(client: Client, hermes_env: Any) -> None:
    hermes_env.draining = True
    response = client.get("/stream", {"prompt": "hi"})
    assert response.status_code == 502 and not response.streaming


def test_closing_the_response_cancels_the_stream(client: Client, hermes_env: Any) -> None:
    hermes_env.token_delay = 1.0  # 20 deltas: 20 s, longer than the wait below, if nobody closed it
    response = client.get("/stream", {"prompt": " ".join(["word"] * 60)})
    assert next(iter(response.streaming_content)).startswith(b"event: delta")
    response.close()  # what the server does when the client disconnects
    deadline = time.monotonic() + 15  # a guard: only the cancel ends the run before 20 s
    while hermes_env.active_runs and time.monotonic() < deadline:
        time.sleep(0.02)
    assert hermes_env.active_runs == 0
