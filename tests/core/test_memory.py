"""Memory that grows with work is bounded or dropped with its owner: thousands of calls and runs on
one client leave its memory flat (measured with tracemalloc, after a warm-up).

A fast raw server on loopback answers, so the test measures the client, not a server."""

from __future__ import annotations

import gc
import itertools
import json
import socket
import time
import tracemalloc
from typing import Any, Callable

import pytest
from core_support import RawRequest, RawServer, chunk, json_response, raw_client, sse_head

from hermes_sdk._core.executor import _SERVERS_MAX, _servers, server_attributes
from hermes_sdk._core.idempotency import IdempotencyRecord, MemoryStore
from hermes_sdk._families.runs import RunsState
from hermes_sdk._families.runs.state import StoppedRuns

CHAT_OK = (b'{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
           b'"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}')


def growth(work: Callable[[int], None], warm: int, measured: int) -> int:
    """Bytes still allocated after ``measured`` more iterations of ``work``, past a warm-up of
    ``warm`` (pools, caches and the first thread stacks are filled by then; traced from there on)."""
    for i in range(warm):
        work(i)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(warm, warm + measured):
            work(i)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def chat_server(conn: socket.socket, request: RawRequest, server: RawServer) -> None:
    server.requests.clear()  # the server shares the process: only the client's memory is measured
    conn.sendall(json_response(200, CHAT_OK))


@pytest.mark.slow
@pytest.mark.timeout(600)  # a guard against a hang: thousands of calls take longer on a busy machine
def test_5000_keyed_calls_leave_memory_flat(raw_server: Any) -> None:
    server = raw_server(chat_server)
    # key_retention=0: each record expires at once, so the store must not keep what it cannot replay
    # (it sweeps them each time it reaches SWEEP_MIN records: both measures are taken right after one).
    with raw_client(server, key_retention=0) as client:
        grew = growth(lambda i: client.chat(prompt="x", idempotency_key=f"k-{i}"), warm=1024 + 1, measured=4096)
        store = client.idempotency_store
        assert isinstance(store, MemoryStore) and len(store._records) <= 2 * MemoryStore.SWEEP_MIN
    assert grew < 256 * 1024, f"{grew} bytes kept by 4,096 calls"


class _FastRuns:
    """``/v1/runs`` at its quickest: a new run id per start, an events stream that ends at once."""

    def __init__(self) -> None:
        self._ids = itertools.count()

    def __call__(self, conn: socket.socket, request: RawRequest, server: RawServer) -> None:
        server.requests.clear()
        if request.method == "POST" and request.target == "/v1/runs":
            body = json.dumps({"run_id": f"run_{next(self._ids):032x}", "status": "started"}).encode()
            conn.sendall(json_response(202, body))
        elif request.target.endswith("/events"):
            run_id = request.target.split("/")[3]
            done = {"event": "run.completed", "run_id": run_id, "output": "ok", "usage": {"total_tokens": 1}}
            conn.sendall(sse_head() + chunk(b"data: " + json.dumps(done).encode() + b"\n\n")
                         + chunk(b": stream closed\n\n") + b"0\r\n\r\n")
        else:
            run_id = request.target.split("/")[3]
            conn.sendall(json_response(200, json.dumps({"object": "hermes.run", "run_id": run_id,
                                                        "status": "completed"}).encode()))


@pytest.mark.slow
@pytest.mark.timeout(600)  # a guard against a hang: thousands of calls take longer on a busy machine
def test_5000_runs_leave_memory_flat(raw_server: Any) -> None:
    server = raw_server(_FastRuns())
    with raw_client(server, key_retention=0) as client:
        stopped = client._executor.state(RunsState).stopped
        stopped.max_entries = 500  # reached during the warm-up: what is measured is the bound holding

        def work(i: int) -> None:
            run = client.run("go", idempotency_key=f"run-{i}")
            assert run.wait(timeout=10).ok
            run.stop()  # a finished run: remembered as stopped (no approval after it), not sent /stop
            # A run key is kept 24 hours by design (one run per key): what the store keeps is the
            # caller's choice, so the test lets each go and measures what the client itself keeps.
            assert client.records.forget("cap:hermes_agent:default:run_start", f"run-{i}")

        grew = growth(work, warm=1024 + 1, measured=4096)
        assert len(stopped) == 500
        assert len(client._executor.state(RunsState).followed) < 50  # each Run dropped with its handle
    assert grew < 512 * 1024, f"{grew} bytes kept by 4,096 runs"


def test_the_bounded_structures_hold_their_bounds() -> None:
    stopped = StoppedRuns(max_entries=100, max_age=3600)
    for i in range(30_000):
        stopped.add(f"run_{i}")
    assert len(stopped) == 100 and "run_29999" in stopped and "run_0" not in stopped
    aged = StoppedRuns(max_age=0.0)
    aged.add("run_old")
    assert "run_old" not in aged and len(aged) == 0
    store = MemoryStore()
    for i in range(20_000):
        store.reserve(IdempotencyRecord(capability_id="cap", key=f"k{i}", action_id=f"act_{i}",
                                        input_hash="h", state="pending", created_at=0.0, expires_at=0.0))
    assert len(store._records) <= 2 * MemoryStore.SWEEP_MIN and len(store._by_action) == len(store._records)
    from hermes_sdk._core.endpoints import Endpoint

    for i in range(3 * _SERVERS_MAX):  # one entry per origin, cleared past a few hundred
        server_attributes(Endpoint(id="e", base_url=f"http://h{i}.example:80", api_key="k"))
    assert len(_servers) <= _SERVERS_MAX


def test_50000_stream_events_with_idle_timeout_leave_no_dead_alarms(raw_server: Any) -> None:
    """A stream's idle alarm is re-armed per event; with a longer-lived call's alarm on top of the
    heap (an earlier deadline anywhere in the process), the cancelled ones must not pile up below."""
    from hermes_sdk._core.deadline import WATCHDOG

    frame = b'data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n'
    batch = chunk(frame * 500)

    def many(conn: socket.socket, request: RawRequest, server: RawServer) -> None:
        conn.sendall(sse_head(True))
        for _ in range(100):  # 50,000 events in 100 chunks
            conn.sendall(batch)
        conn.sendall(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    server = raw_server(many)
    holder = WATCHDOG.arm(time.time() + 50)  # a call in flight whose deadline comes before the idle alarms
    peak = 0
    try:
        with raw_client(server) as client:
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                stream = client.chat_stream(prompt="x", idle_timeout=120, keep_events=False, max_events=60_000)
                for count, _ in enumerate(stream, 1):
                    if count % 5000 == 0:
                        peak = max(peak, WATCHDOG.pending())
                result = stream.result()
                gc.collect()
                grown = tracemalloc.get_traced_memory()[0] - before
            finally:
                tracemalloc.stop()
    finally:
        holder.cancel()
    assert result.event_count == 50_001 and len(result.text) == 50_000
    assert peak < 600, f"{peak} alarms in the heap"  # a sweep every few hundred cancelled alarms
    assert grown < 1024 * 1024, f"{grown} bytes kept after the stream"


def test_kept_events_cost_their_wire_text_until_result_reads_them(raw_server: Any) -> None:
    """With default settings (``keep_events=True``) a stream keeps each event as its wire text, not its
    parsed JSON (~1.7 KB an event, issue 34); ``result().events`` parses them when it is first read
    and equals the events the iteration gave."""
    frame = (b'data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"hermes-agent",'
             b'"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n')

    def many(conn: socket.socket, request: RawRequest, server: RawServer) -> None:
        conn.sendall(sse_head(True))
        for _ in range(20):  # 5,000 events in 20 chunks
            conn.sendall(chunk(frame * 250))
        conn.sendall(chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    server = raw_server(many)
    with raw_client(server) as client:
        for _ in client.chat_stream(prompt="x", max_events=10_000):  # warm-up: the pool, the caches
            pass
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            stream = client.chat_stream(prompt="x", max_events=10_000)
            count = sum(1 for _ in stream)
            per_event = (tracemalloc.get_traced_memory()[1] - before) / count
        finally:
            tracemalloc.stop()
        seen = list(client.chat_stream(prompt="x", max_events=10_000))
    events = stream.result().events
    assert count == len(events) == 5_001 and events[-1].data == "[DONE]" and events[-1].terminal
    assert events[0].data["choices"][0]["delta"] == {"content": "x"}
    assert events == seen  # the same events, parsed again from the same text
    assert per_event < 600, f"{per_event:.0f} bytes per kept event"
