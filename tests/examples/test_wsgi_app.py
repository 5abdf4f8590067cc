"""examples/wsgi_app against the emulator: direct WSGI calls (environ + start_response), and one
round trip through wsgiref's real server."""

from __future__ import annotations

import io
import json
import os
import select
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server
from wsgiref.util import setup_testing_defaults

import pytest
import requests
from wsgi_app import app as wsgi_app


@pytest.fixture(autouse=True)
def fresh_client(hermes_env: Any) -> Iterator[None]:
    yield
    wsgi_app.close_client()


class Called:
    status = ""
    headers: dict[str, str] = {}


def call(method: str, path: str, body: Any = None, query: str = "") -> tuple[Called, Any]:
    environ: dict[str, Any] = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query}
    data = json.dumps(body).encode() if body is not None else b""
    environ.update({"wsgi.input": io.BytesIO(data), "CONTENT_LENGTH": str(len(data))})
    setup_testing_defaults(environ)
    called = Called()

    def start_response(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        called.status, called.headers = status, dict(headers)

    return called, wsgi_app.application(environ, start_response)


def events(chunks: Any) -> list[tuple[str, Any]]:
    out = []
    for block in b"".join(chunks).decode().strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_the_client_is_made_once_per_process(hermes_env: Any) -> None:
    clients: list[Any] = []
    threads = [threading.Thread(target=lambda: clients.append(wsgi_app.get_client())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(c) for c in clients}) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_worker_makes_its_own_client(hermes_env: Any) -> None:
    parent = wsgi_app.get_client()  # made before the fork, as gunicorn --preload would
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            child = wsgi_app.get_client()
            ok = child is not parent and child.chat(prompt="from the worker").text == "ECHO: from the worker"
            wsgi_app.close_client()
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    try:
        ready, _, _ = select.select([read], [], [], 30)
        answer = os.read(read, 1) if ready else b"timeout"
    finally:
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read)
    assert answer == b"1"
    assert wsgi_app.get_client() is parent
    assert parent.chat(prompt="from the master").text == "ECHO: from the master"


def test_a_repeated_summary_runs_the_model_once(hermes_env: Any) -> None:
    for _ in range(2):
        called, body = call("POST", "/orders/7/summary", {"notes": "late"})
        assert called.status == "200 OK"
        assert json.loads(b"".join(body)) == {"status": "completed", "summary": "ECHO: Summarize order 7: late"}
    assert hermes_env.executions == 1


def test_the_same_order_with_other_notes_is_a_409_conflict_not_a_502(hermes_env: Any) -> None:
    assert call("POST", "/orders/9/summary", {"notes": "two boxes"})[0].status == "200 OK"
    called, body = call("POST", "/orders/9/summary", {"notes": "three crates"})
    assert called.status == "409 Conflict" and json.loads(b"".join(body)) == {"status": "conflict"}
    assert hermes_env.executions == 1


def test_an_uncertain_failure_says_so_and_is_not_rerun(hermes_env: Any) -> None:
    hermes_env.drop_connection("before_response")
    for _ in range(2):
        called, body = call("POST", "/orders/9/summary", {"notes": "x"})
        assert called.status.startswith("502")
        assert json.loads(b"".join(body))["status"] == "outcome_unknown"
    assert hermes_env.executions == 1


def test_the_stream_ends_with_done(hermes_env: Any) -> None:
    called, body = call("GET", "/stream", query="prompt=one+two+three+four+five")
    assert called.status == "200 OK" and called.headers["Content-Type"] == "text/event-stream"
    got = events(body)
    assert "".join(d["text"] for n, d in got if n == "delta") == "ECHO: one two three four five"
    assert got[-1] == ("done", {"status": "completed"})


def test_a_broken_stream_ends_with_an_error_event(hermes_env: Any) -> None:
    hermes_env.drop_connection("mid_stream", after_events=2)
    called, body = call("GET", "/stream", query="prompt=one+two+three+four+five+six+seven")
    assert called.status == "200 OK"
    got = events(body)
    assert got[-1] == ("error", {"code": "connector.hermes_agent.transport", "message": "the answer was interrupted"})


def test_a_refused_stream_gets_a_status_before_any_header(hermes_env: Any) -> None:
    hermes_env.draining = True
    called, body = call("GET", "/stream", query="prompt=hi")
    assert called.status.startswith("502") and json.loads(b"".join(body))["code"].endswith("remote_temporary")


def test_closing_the_iterable_cancels_the_stream(hermes_env: Any) -> None:
    hermes_env.token_delay = 1.0  # 20 deltas: 20 s, longer than the wait below, if nobody closed it
    called, body = call("GET", "/stream", query="prompt=" + "+".join(["word"] * 60))
    assert next(body).startswith(b"event: delta")
    body.close()  # what a WSGI server does when the client disconnects (PEP 3333)
    deadline = time.monotonic() + 15  # a guard: only the cancel ends the run before 20 s
    while hermes_env.active_runs and time.monotonic() < deadline:
        time.sleep(0.02)
    assert hermes_env.active_runs == 0


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


def test_through_a_real_wsgi_server(hermes_env: Any) -> None:
    with make_server("127.0.0.1", 0, wsgi_app.application, handler_class=QuietHandler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            base = f"http://127.0.0.1:{server.server_port}"
            reply = requests.post(base + "/orders/1/summary", json={"notes": "n"}, timeout=10)
            assert reply.json()["summary"] == "ECHO: Summarize order 1: n"
            with requests.get(base + "/stream", params={"prompt": "a b c d"}, stream=True, timeout=10) as resp:
                assert events(resp.iter_content(None))[-1][0] == "done"
        finally:
            server.shutdown()
