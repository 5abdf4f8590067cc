"""A deadline bounds the whole call in wall-clock time, whatever the server sends."""

from __future__ import annotations

import socket
import time
import warnings
from typing import Any, Callable, Iterator

import pytest
from core_support import RawRequest, RawServer, SchedulerLag, chunk, json_response, raw_client, sse_head

from hermes_sdk import DeadlineExceededError, HermesClient, InvalidInputError, TransportError
from hermes_sdk._core.deadline import Timeout
from hermes_sdk.testing import HermesEmulator

LATE = 0.25  # how late a call may end after its bound (the measured budget)
_lag: list[SchedulerLag] = []


@pytest.fixture(autouse=True)
def scheduler_lag() -> Iterator[None]:
    """What the machine's scheduler adds to a wall-clock bound while the test runs (a thread's worst
    wake-up overshoot): a busy machine wakes the watchdog late too, and that is not the SDK's."""
    with SchedulerLag() as lag:
        _lag.append(lag)
        yield
    _lag.remove(lag)


def late() -> float:
    """How late a call may end after its bound: the SDK's budget plus the scheduler's lag."""
    return LATE + (_lag[-1].worst if _lag else 0.0)
CHAT_OK = (b'{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
           b'"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}')


def drip(data: bytes, every: float = 0.1) -> Callable[[socket.socket, RawRequest, RawServer], None]:
    def handler(conn: socket.socket, request: RawRequest, server: RawServer) -> None:
        try:
            for i in range(len(data)):
                conn.sendall(data[i:i + 1])
                time.sleep(every)
            while True:  # then hold the connection open
                conn.sendall(b"")
                time.sleep(every)
        except OSError:
            pass
    return handler


def keepalives(conn: socket.socket, request: RawRequest, server: RawServer) -> None:
    try:
        conn.sendall(sse_head())
        while True:
            conn.sendall(chunk(b": keepalive\n\n"))
            time.sleep(0.05)
    except OSError:
        pass


def silent(conn: socket.socket, request: RawRequest, server: RawServer) -> None:
    time.sleep(30)  # a half-open peer: accepts, never answers


@pytest.mark.parametrize("name,handler", [
    ("drip in headers", drip(json_response(200, CHAT_OK))),
    ("drip in the JSON body", drip(json_response(200, CHAT_OK)[:60] + b"x" * 0, every=0.1)),
    ("drip in an error body", drip(json_response(500, b'{"error":{"message":"' + b"x" * 200 + b'"}}'))),
    ("half-open socket", silent),
])
def test_model_call_ends_at_its_timeout(raw_server: Any, name: str, handler: Any) -> None:
    server = raw_server(handler)
    with raw_client(server) as client:
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError) as info:
            client.chat(prompt="x", timeout=1.0)
        took = time.monotonic() - began
    assert 1.0 - 0.05 <= took <= 1.0 + late(), (name, took)
    assert info.value.uncertain_outcome is True


def test_deadline_and_timeout_the_earlier_wins(raw_server: Any) -> None:
    server = raw_server(silent)
    with raw_client(server) as client:
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            client.chat(prompt="x", timeout=10, deadline=time.time() + 0.5)
        assert time.monotonic() - began <= 0.5 + late()


def test_keepalive_only_stream_ends_at_its_deadline(raw_server: Any) -> None:
    server = raw_server(keepalives)
    with raw_client(server) as client:
        began = time.monotonic()
        stream = client.chat_stream(prompt="x", timeout=1.0)
        result = stream.result()
        took = time.monotonic() - began
    assert result.status == "failed" and isinstance(result.error, DeadlineExceededError)
    assert result.error.uncertain_outcome is True
    assert took <= 1.0 + late()


def test_idle_timeout_ends_a_stream_of_keepalives(raw_server: Any) -> None:
    # Which bound fired is the answer, not how long it took: the call's own bound is 60 s, so only
    # the idle bound ends the stream in this test's time, and keepalives (every 50 ms) do not hold it.
    server = raw_server(keepalives)
    with raw_client(server) as client:
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError) as info:
            list(client.chat_stream(prompt="x", idle_timeout=0.5, timeout=60))
        took = time.monotonic() - began
    assert info.value.details["reason"] == "idle_timeout" and took >= 0.5


def test_client_default_timeout_and_with_options(raw_server: Any) -> None:
    server = raw_server(silent)
    with raw_client(server, timeout=0.5) as client:
        assert client.timeout == Timeout(total=0.5)
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            client.chat(prompt="x")
        assert time.monotonic() - began <= 0.5 + late()
        quick = client.with_options(timeout=Timeout(total=0.3), max_attempts=1)
        assert quick.max_attempts == 1 and client.max_attempts == 3
        began = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            quick.chat(prompt="x")
        assert time.monotonic() - began <= 0.3 + late()
        quick.close()  # the copy does not own the pool
    with pytest.raises(InvalidInputError):
        HermesClient("http://127.0.0.1:9", "k", timeout=-1)


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), 1e309, "5", True])
def test_bad_timeouts_are_refused_before_io(hermes_emulator: HermesEmulator, bad: Any) -> None:
    with hermes_emulator.client(load_entrypoints=False) as client:
        with pytest.raises(InvalidInputError) as info:
            client.chat(prompt="x", timeout=bad)
        assert info.value.details["field"] == "timeout"
        result = client.invoke("cap:hermes_agent:default:chat", {"prompt": "x"}, timeout=bad)
        assert result.status == "failed" and isinstance(result.error, InvalidInputError)
    assert hermes_emulator.requests_seen == []


def test_a_fast_call_is_not_cut_and_leaves_no_alarm(hermes_emulator: HermesEmulator) -> None:
    # 2 s: the bound a loopback call needs on a busy machine (0.5 s was a race with the clock there).
    with hermes_emulator.client(load_entrypoints=False, timeout=2.0) as client:
        for _ in range(5):
            started = time.time()
            assert client.chat(prompt="fast").text == "ECHO: fast"
        # Once every finished call's alarm is due, they fire into nothing: the pooled connection is reused.
        time.sleep(max(0.0, started + 2.0 + 0.2 - time.time()))
        assert client.chat(prompt="again").text == "ECHO: again"


def test_finished_calls_do_not_pile_up_alarms(hermes_emulator: HermesEmulator) -> None:
    # Each call arms a wall-clock alarm (60 s by default); those of finished calls are dropped as
    # new ones are armed, so a busy client holds about as many alarms as calls in flight.
    from hermes_sdk._core.deadline import WATCHDOG

    with hermes_emulator.client(load_entrypoints=False) as client:
        for _ in range(40):
            client.chat(prompt="fast")
        assert WATCHDOG.pending() <= 5  # it held all 40 before (each alarm stays until its 60 s)


def test_a_forked_child_arms_its_own_watchdog() -> None:
    import os

    from hermes_sdk._core.deadline import WATCHDOG

    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    WATCHDOG.arm(time.time() + 60).cancel()
    read, write = os.pipe()
    with warnings.catch_warnings():  # 3.12+ warns that the test process has threads (the child uses none of theirs)
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: a fresh watchdog, whose alarm fires there
        try:
            alarm = WATCHDOG.arm(time.time() + 0.05)
            deadline = time.time() + 5
            while not alarm.fired and time.time() < deadline:
                time.sleep(0.01)
            os.write(write, b"1" if alarm.fired else b"0")
        finally:
            os._exit(0)
    os.close(write)
    try:
        assert os.read(read, 1) == b"1"
    finally:
        os.close(read)
        os.waitpid(pid, 0)


def test_close_closes_streams_left_open(hermes_emulator_factory: Any) -> None:
    # Its own emulator: the interrupted run holds a run slot until its SLOW sleep ends.
    client = hermes_emulator_factory().client(load_entrypoints=False)
    stream = client.chat_stream(prompt="SLOW:5 hold on")
    began = time.monotonic()
    client.close()
    try:
        list(stream)
    except Exception:
        pass  # a read on the closed connection may fail or end; either way it is over at once
    assert stream.result().status in ("failed", "cancelled") and time.monotonic() - began < 2 + late()


def test_typed_results_and_streams_show_response_headers(hermes_emulator: HermesEmulator) -> None:
    with hermes_emulator.client(load_entrypoints=False) as client:
        reply = client.chat(prompt="h", session_id="s-9")
        assert reply.headers["x-hermes-session-id"] == "s-9" and "content-type" in reply.headers
        created = client.responses(input="h")
        assert created.headers["Content-Type"].startswith("application/json")
        stream = client.chat_stream(prompt="h")
        assert stream.headers["Content-Type"].startswith("text/event-stream")
        stream.close()


# ---------------------------------------------------------------- a caller's own session keeps the bound


@pytest.mark.parametrize("name,handler", [
    ("drip in headers", drip(json_response(200, CHAT_OK))),
    ("half-open socket", silent),
])
def test_a_callers_session_keeps_the_deadline(raw_server: Any, name: str, handler: Any) -> None:
    # The watchdog gets the socket at connect time through the caller's session too (issue 17):
    # a server dripping its headers no longer holds the call for as long as it drips.
    import requests

    server = raw_server(handler)
    session = requests.Session()
    session.headers["X-Team"] = "blue"
    try:
        with raw_client(server, session=session) as client:
            began = time.monotonic()
            with pytest.raises(DeadlineExceededError):
                client.chat(prompt="x", timeout=1.0)
            took = time.monotonic() - began
        assert 1.0 - 0.05 <= took <= 1.0 + late(), (name, took)
        sent = {k.lower(): v for k, v in server.requests[0].headers.items()}
        assert sent.get("x-team") == "blue"  # the session's own settings still apply
    finally:
        session.close()


def test_a_callers_session_still_works_and_its_settings_apply(raw_server: Any) -> None:
    import requests

    server = raw_server(lambda conn, request, srv: conn.sendall(json_response(200, CHAT_OK)))
    with requests.Session() as session:
        session.headers["X-Team"] = "green"
        with raw_client(server, session=session) as client:
            assert client.chat(prompt="x", timeout=5).text == "ok"
            assert client.chat(prompt="y", timeout=5).text == "ok"
    assert [{k.lower(): v for k, v in r.headers.items()}.get("x-team") for r in server.requests] == ["green", "green"]


def _never_accepting_listener() -> tuple[socket.socket, list[socket.socket]]:
    """A listener whose backlog is full: connects to it hang (SYN unanswered) until their timeout."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    for _ in range(8):  # fill the backlog; on Linux further connects are left waiting
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        filler.setblocking(False)
        filler.connect_ex(listener.getsockname())
        fillers.append(filler)
    return listener, fillers


@pytest.mark.parametrize("retries", ["Retry(total=3, backoff_factor=1)", "Retry(connect=5)", "3", "Retry(None)"])
def test_a_callers_adapter_that_retries_is_refused_at_construction(retries: str) -> None:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    session = requests.Session()
    session.mount("http://127.0.0.1:9/", HTTPAdapter(max_retries=eval(retries, {"Retry": Retry})))
    with pytest.raises(InvalidInputError) as info:
        HermesClient("http://127.0.0.1:9", api_key="k", session=session, load_entrypoints=False)
    message = str(info.value)
    assert "retries on its own" in message and "past the call's deadline" in message
    assert "HTTPAdapter(max_retries=0)" in message and "max_attempts" in message
    assert info.value.details["reason"] == "adapter_retries"
    # An adapter for another origin does not matter; one without retries is accepted.
    other = requests.Session()
    other.mount("http://elsewhere.invalid/", HTTPAdapter(max_retries=Retry(total=3)))
    other.mount("http://127.0.0.1:9/", HTTPAdapter(max_retries=0))
    HermesClient("http://127.0.0.1:9", api_key="k", session=other, load_entrypoints=False).close()


def test_a_callers_adapter_without_retries_ends_within_the_bound_on_a_listener_that_never_accepts() -> None:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    listener, fillers = _never_accepting_listener()
    host, port = listener.getsockname()
    try:
        session = requests.Session()
        session.mount(f"http://{host}:{port}/", HTTPAdapter(max_retries=Retry(total=0)))
        with HermesClient(f"http://{host}:{port}", api_key="k", session=session, load_entrypoints=False,
                          max_attempts=1) as client:
            began = time.monotonic()
            with pytest.raises((DeadlineExceededError, TransportError)):
                client.chat(prompt="x", timeout=1.0)
            took = time.monotonic() - began
        assert took <= 1.0 + late(), took
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
