"""One command, every client side by side: ``python -m benchmarks [--quick] [--json PATH]``.

Clients: hermes-sdk (default plugins; with an idempotency key on the SQLite store; with an extra
no-op wrapper plugin; with the OpenTelemetry plugin on a real SDK tracer and meter provider: a
``BatchSpanProcessor`` into an in-memory exporter and an in-memory metric reader), raw ``requests``
(plain ``Session()``, and ``trust_env=False``), the ``openai`` client, and ``http.client`` (the
floor). The server is ``benchmarks/server.py`` in a subprocess, so the client process has the GIL to
itself.

Every timing is the median of several rounds; clients are interleaved inside each round so drift
hits them all alike. ``--quick`` uses small counts: it proves the benchmark runs and that its
numbers are sane (CI smoke test), it is not a measurement.
"""

from __future__ import annotations

import argparse
import gc
import http.client
import importlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from typing import Any, Callable, Iterator, Optional

if __package__ in (None, ""):  # python benchmarks/run.py
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import requests  # noqa: E402
import sseclient  # noqa: E402

import hermes_sdk  # noqa: E402
from benchmarks import baseline  # noqa: E402
from benchmarks.first_call import bench_first_call  # noqa: E402
from hermes_sdk import HermesClient  # noqa: E402

try:
    import openai
except ImportError:  # pragma: no cover - the table then says n/a for openai
    openai = None  # type: ignore[assignment]
try:  # the openai facade (issue 39): openai's client with hermes-sdk as its transport
    import hermes_sdk.openai as hermes_openai
except ImportError:  # pragma: no cover - no openai, or a baseline checkout from before the facade
    hermes_openai = None  # type: ignore[assignment]
try:  # the HTTP client openai is built on (published as httpx, or httpx2 where openai uses that)
    import httpx
except ImportError:  # pragma: no cover
    try:
        import httpx2 as httpx  # type: ignore[no-redef]
    except ImportError:
        httpx = None  # type: ignore[assignment]

API_KEY = "bench-key-0123456789"
PROMPT = "Hello"
CHAT_JSON = {"model": "hermes-agent", "messages": [{"role": "user", "content": PROMPT}]}
RESP_JSON = {"model": "hermes-agent", "input": PROMPT}
AUTH = {"Authorization": f"Bearer {API_KEY}"}

FULL = dict(rounds=7, calls=200, stream_events=10_000, stream_rounds=5, ttfe_samples=9, hold_ms=100,
            mem_events=100_000, thread_seconds=1.5, thread_rounds=3, reuse_streams=10, first_call_processes=7)
QUICK = dict(rounds=3, calls=20, stream_events=500, stream_rounds=2, ttfe_samples=3, hold_ms=30,
             mem_events=2_000, thread_seconds=0.2, thread_rounds=1, reuse_streams=3, first_call_processes=2)


# ---------------------------------------------------------------------------- server control


class Server:
    def __init__(self) -> None:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.proc = subprocess.Popen([sys.executable, "-m", "benchmarks.server"], cwd=root,
                                     stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise RuntimeError("the benchmark server did not start")
        self.port = int(self.base_url.rsplit(":", 1)[1])

    def _call(self, method: str, path: str, body: Optional[dict[str, Any]] = None) -> Any:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, path, json.dumps(body).encode() if body is not None else None,
                         {"Content-Type": "application/json", "Connection": "close"})
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()

    def config(self, **kwargs: Any) -> None:
        self._call("POST", "/_bench/config", {"events": 10, "framing": "chunked", "delay_ms": 0, "hold_ms": 0,
                                              **kwargs})

    def connections(self) -> int:
        return int(self._call("GET", "/_bench/stats")["connections"])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---------------------------------------------------------------------------- the clients


def _noop_call(self: Any, call: Any) -> Any:
    return (yield)


def _noop_invocation(self: Any, invocation: Any) -> Any:
    return (yield)


class NoopWrapper:
    """An extra plugin with no-op wrappers around both around-hooks."""

    name = "bench-noop"

    @hermes_sdk.hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        return (yield)


# The call-level around-hook under the name the measured SDK knows: a baseline revision (before 0.2)
# calls it hermes_invocation, and refuses a plugin with a hook name it does not know.
if hasattr(importlib.import_module("hermes_sdk.hookspecs"), "hermes_call"):
    NoopWrapper.hermes_call = hermes_sdk.hookimpl(wrapper=True)(_noop_call)  # type: ignore[attr-defined]
else:
    NoopWrapper.hermes_invocation = hermes_sdk.hookimpl(wrapper=True)(_noop_invocation)  # type: ignore[attr-defined]


OTEL = "hermes-sdk + OpenTelemetry plugin"


def otel_client(base: str) -> Optional[tuple[HermesClient, tuple[Any, Any]]]:
    """A client traced by the OpenTelemetry plugin through real SDK providers; None if not installed."""
    try:
        from hermes_sdk_opentelemetry import OpenTelemetryPlugin
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:  # pragma: no cover - the table then has no OpenTelemetry row
        return None
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(InMemorySpanExporter()))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    plugin = OpenTelemetryPlugin(tracer_provider, meter_provider)
    return HermesClient(base, API_KEY, plugins=[plugin], load_entrypoints=False), (tracer_provider, meter_provider)


def floor_sse(resp: http.client.HTTPResponse) -> Iterator[Any]:
    """The minimal SSE parser: split on blank lines, take ``data:``, parse JSON."""
    buf = b""
    read1 = resp.read1
    loads = json.loads
    while True:
        data = read1(65536)
        if not data:
            return
        buf += data
        *frames, buf = buf.split(b"\n\n")
        for frame in frames:
            for line in frame.split(b"\n"):
                if line.startswith(b"data:"):
                    value = line[5:].strip()
                    yield value.decode() if value == b"[DONE]" else loads(value)


def sse_read1(r: requests.Response) -> Iterator[Any]:
    raw = r.raw
    chunks = iter(lambda: raw.read1(65536, decode_content=True), b"")
    for ev in sseclient.SSEClient(chunks).events():
        yield ev.data if ev.data == "[DONE]" else json.loads(ev.data)


def sse_iter_content(r: requests.Response) -> Iterator[Any]:
    for ev in sseclient.SSEClient(r.iter_content(None)).events():
        yield ev.data if ev.data == "[DONE]" else json.loads(ev.data)


class Clients:
    def __init__(self, base: str, tmp: str) -> None:
        self.base = base
        port = int(base.rsplit(":", 1)[1])
        self.http = http.client.HTTPConnection("127.0.0.1", port)
        self.requests = requests.Session()
        self.requests_notrust = requests.Session()
        self.requests_notrust.trust_env = False
        self.openai = openai.OpenAI(base_url=base + "/v1", api_key=API_KEY, max_retries=0) if openai else None
        self.httpx = httpx.Client() if httpx else None
        self.facade = hermes_openai.OpenAI(base_url=base + "/v1", api_key=API_KEY, max_retries=0,
                                           load_entrypoints=False) if hermes_openai else None
        # "Default plugins" = the built-ins a fresh install has; plugins that happen to be installed
        # on this machine (entry points) get their own row.
        self.sdk = HermesClient(base, API_KEY, load_entrypoints=False)
        self.sdk_noop = HermesClient(base, API_KEY, plugins=[NoopWrapper()], load_entrypoints=False)
        self.sdk_sqlite = HermesClient(base, API_KEY, idempotency_store=f"sqlite:///{tmp}/idem.db",
                                       load_entrypoints=False)
        self.sdk_memory = HermesClient(base, API_KEY, idempotency_store="memory:", load_entrypoints=False)
        self.sdk_installed = HermesClient(base, API_KEY)
        self._otel = otel_client(base)
        self._key = 0
        self._chat_body = json.dumps(CHAT_JSON).encode()
        self._resp_body = json.dumps(RESP_JSON).encode()
        self._stream_body = json.dumps({**CHAT_JSON, "stream": True}).encode()

    def close(self) -> None:
        self.http.close()
        self.requests.close()
        self.requests_notrust.close()
        if self.openai:
            self.openai.close()
        if self.facade:
            self.facade.close()
        if self.httpx:
            self.httpx.close()
        self.sdk.close()
        self.sdk_memory.close()
        self.sdk_noop.close()
        self.sdk_sqlite.close()
        self.sdk_installed.close()
        if self._otel is not None:
            self._otel[0].close()
            for provider in self._otel[1]:
                provider.shutdown()

    def _sdk(self, name: str) -> HermesClient:
        if name == OTEL:
            if self._otel is None:
                raise LookupError(name)
            return self._otel[0]
        return {"hermes-sdk": self.sdk, "hermes-sdk + no-op plugin": self.sdk_noop}.get(name, self.sdk_installed)

    # non-streaming calls: op is "chat" or "responses"
    def call(self, name: str, op: str) -> Callable[[], Any]:
        chat = op == "chat"
        path = "/v1/chat/completions" if chat else "/v1/responses"
        payload = CHAT_JSON if chat else RESP_JSON
        if name == "http.client":
            conn = self.http
            body = self._chat_body if chat else self._resp_body
            headers = {**AUTH, "Content-Type": "application/json"}

            def floor() -> Any:
                conn.request("POST", path, body, headers)
                return json.loads(conn.getresponse().read())
            return floor
        if name in ("requests", "requests (trust_env=False)"):
            s = self.requests if name == "requests" else self.requests_notrust
            url = self.base + path
            return lambda: s.post(url, json=payload, headers=AUTH).json()
        if name == "httpx":
            if self.httpx is None:
                raise LookupError(name)
            hc, url = self.httpx, self.base + path
            return lambda: hc.post(url, json=payload, headers=AUTH).json()
        if name == "openai":
            if self.openai is None:
                raise LookupError
            oc = self.openai
            if chat:
                return lambda: oc.chat.completions.create(model="hermes-agent", messages=CHAT_JSON["messages"])
            return lambda: oc.responses.create(model="hermes-agent", input=PROMPT)
        if name == FACADE:
            if self.facade is None or (not chat and not hasattr(self.facade, "responses")):
                raise LookupError(name)
            fc = self.facade
            if chat:
                return lambda: fc.chat.completions.create(model="hermes-agent", messages=CHAT_JSON["messages"])
            return lambda: fc.responses.create(model="hermes-agent", input=PROMPT)
        if name in ("hermes-sdk", "hermes-sdk + no-op plugin", "hermes-sdk + installed entry-point plugins", OTEL):
            c = self._sdk(name)
            if chat:
                return lambda: c.chat(prompt=PROMPT)
            return lambda: c.responses(model="hermes-agent", input=PROMPT)
        if name in (KEYED_MEMORY, KEYED_SQLITE):
            c = self.sdk_memory if name == KEYED_MEMORY else self.sdk_sqlite

            def keyed() -> Any:
                self._key += 1
                key = f"bench-{os.getpid()}-{time.time_ns()}-{self._key}"
                if chat:
                    return c.chat(prompt=PROMPT, idempotency_key=key)
                return c.responses(model="hermes-agent", input=PROMPT, idempotency_key=key)
            return keyed
        raise LookupError(name)

    # a chat stream as an iterator of events (the whole body is read when the iterator ends)
    def stream(self, name: str, keep_events: bool = True, max_events: int = 100_000) -> Iterator[Any]:
        if name == "http.client":
            self.http.request("POST", "/v1/chat/completions", self._stream_body,
                              {**AUTH, "Content-Type": "application/json", "Accept": "text/event-stream"})
            return floor_sse(self.http.getresponse())
        if name in ("requests", "requests + iter_content (trap)"):
            r = self.requests.post(self.base + "/v1/chat/completions", json={**CHAT_JSON, "stream": True},
                                   headers={**AUTH, "Accept": "text/event-stream"}, stream=True)
            return sse_read1(r) if name == "requests" else sse_iter_content(r)
        if name == "openai":
            if self.openai is None:
                raise LookupError
            return iter(self.openai.chat.completions.create(model="hermes-agent",
                                                            messages=CHAT_JSON["messages"], stream=True))
        if name == FACADE:
            if self.facade is None:
                raise LookupError(name)
            return iter(self.facade.chat.completions.create(model="hermes-agent",
                                                            messages=CHAT_JSON["messages"], stream=True))
        if name == "hermes-sdk keep_events=False":
            name, keep_events = "hermes-sdk", False
        if name in ("hermes-sdk", "hermes-sdk + installed entry-point plugins", OTEL):
            c = self._sdk(name)
            return iter(c.chat_stream(prompt=PROMPT, max_events=max_events, keep_events=keep_events))
        raise LookupError(name)


FACADE = "hermes_sdk.openai (facade)"
KEYED_MEMORY = "hermes-sdk + idempotency key (memory)"
KEYED_SQLITE = "hermes-sdk + idempotency key (sqlite)"
NONSTREAM = ["http.client", "requests", "requests (trust_env=False)", "httpx", "openai", FACADE, "hermes-sdk",
             "hermes-sdk + no-op plugin", OTEL, KEYED_MEMORY, KEYED_SQLITE,
             "hermes-sdk + installed entry-point plugins"]
STREAMERS = ["http.client", "requests", "requests + iter_content (trap)", "openai", FACADE, "hermes-sdk",
             "hermes-sdk keep_events=False", OTEL, "hermes-sdk + installed entry-point plugins"]


# ---------------------------------------------------------------------------- measurements


def med(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def bench_calls(clients: Clients, op: str, p: dict[str, Any]) -> dict[str, dict[str, Any]]:
    fns: dict[str, Callable[[], Any]] = {}
    for name in NONSTREAM:
        try:
            fns[name] = clients.call(name, op)
        except LookupError:
            continue
    for fn in fns.values():  # warm-up: connections open, caches filled
        for _ in range(5):
            fn()
    samples: dict[str, list[float]] = {n: [] for n in fns}
    cpu: dict[str, list[float]] = {n: [] for n in fns}  # this process's CPU: what a busy machine cannot move
    for _ in range(p["rounds"]):
        for name, fn in fns.items():
            gc.collect()
            c0, t0 = time.process_time(), time.perf_counter()
            for _ in range(p["calls"]):
                fn()
            samples[name].append((time.perf_counter() - t0) / p["calls"] * 1e6)
            cpu[name].append((time.process_time() - c0) / p["calls"] * 1e6)
    return {n: {"us_per_call": med(s), "samples": s, "cpu_us_per_call": med(cpu[n])} for n, s in samples.items()}


def bench_stream(server: Server, clients: Clients, p: dict[str, Any]) -> dict[str, dict[str, Any]]:
    n = p["stream_events"]
    server.config(events=n)
    expected = n + 2  # n data events, the finish chunk, [DONE]
    samples: dict[str, list[float]] = {name: [] for name in STREAMERS}
    counts: dict[str, int] = {}
    for _ in range(p["stream_rounds"]):
        for name in STREAMERS:
            try:
                gc.collect()
                t0 = time.perf_counter()
                count = sum(1 for _ in clients.stream(name))
                samples[name].append((time.perf_counter() - t0) / n * 1e6)
                counts[name] = count
            except LookupError:
                continue
    return {name: {"us_per_event": med(s), "samples": s, "events_seen": counts.get(name),
                   "events_sent": expected} for name, s in samples.items() if s}


def bench_first_event(server: Server, clients: Clients, p: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for framing in ("chunked", "close"):
        server.config(events=5, framing=framing, hold_ms=p["hold_ms"])
        names = [n for n in STREAMERS if "installed" not in n and "keep_events" not in n]
        samples: dict[str, list[float]] = {name: [] for name in names}
        for _ in range(p["ttfe_samples"]):
            for name in names:
                try:
                    t0 = time.perf_counter()
                    it = clients.stream(name)
                    next(it)
                    samples[name].append((time.perf_counter() - t0) * 1e3)
                    for _ in it:
                        pass
                except LookupError:
                    continue
        out[framing] = {name: {"ms_to_first_event": med(s), "samples": s} for name, s in samples.items() if s}
    server.config()
    return out


def bench_memory(server: Server, clients: Clients, p: dict[str, Any]) -> dict[str, Any]:
    n = p["mem_events"]
    server.config(events=n)
    cases: list[tuple[str, str, bool, int]] = [
        ("hermes-sdk keep_events=True (default), max_events=N", "hermes-sdk", True, 100_000),
        ("hermes-sdk keep_events=True, max_events=N/10", "hermes-sdk", True, max(1, n // 10)),
        ("hermes-sdk keep_events=False", "hermes-sdk", False, 100_000),
        ("http.client floor", "http.client", True, 100_000),
    ]
    out: dict[str, Any] = {"events": n}
    for label, name, keep, max_events in cases:
        for _ in range(2):  # warm-up outside tracemalloc
            for _ in clients.stream(name, keep_events=keep, max_events=max_events):
                pass
        gc.collect()
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        it = clients.stream(name, keep_events=keep, max_events=max_events)
        seen = 0
        for _ in it:
            seen += 1
        peak = tracemalloc.get_traced_memory()[1]
        del it
        tracemalloc.stop()
        gc.collect()
        out[label] = {"peak_growth_bytes": peak - base, "events_seen": seen, "max_events": max_events,
                      "bytes_per_event": (peak - base) / max(1, seen)}
    server.config()
    return out


def _per_thread_floor(server: Server) -> Callable[[], Any]:
    """The http.client floor for threads: each thread its own keep-alive connection.

    It shows what the machine itself allows: on 2 cores, with the server a Python process of its
    own, even this floor loses throughput at 4 threads, so an SDK ratio near it adds no contention.
    """
    local = threading.local()
    body = json.dumps(CHAT_JSON).encode()
    headers = {**AUTH, "Content-Type": "application/json"}

    def call() -> Any:
        conn = getattr(local, "conn", None)
        if conn is None:
            conn = local.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        conn.request("POST", "/v1/chat/completions", body, headers)
        return json.loads(conn.getresponse().read())
    return call


def _requests_with_timeouts(clients: Clients) -> Callable[[], Any]:
    session, url = clients.requests, clients.base + "/v1/chat/completions"
    return lambda: session.post(url, json=CHAT_JSON, headers=AUTH, timeout=(10, 300)).json()


def bench_threads(server: Server, clients: Clients, p: dict[str, Any]) -> dict[str, Any]:
    server.config()
    out: dict[str, Any] = {}
    for name in ("http.client (connection per thread)", "hermes-sdk", "requests", "requests (timeout=(10, 300))"):
        if name.startswith("http.client"):
            fn = _per_thread_floor(server)
        elif name.startswith("requests (timeout"):
            # The SDK always sets timeouts; a socket with a timeout polls before each send and recv,
            # and every poll gives the GIL away: this row is requests paying the same.
            fn = _requests_with_timeouts(clients)
        else:
            fn = clients.call(name, "chat")
        row: dict[str, Any] = {}
        for threads in (1, 4):
            rates = []
            for _ in range(p["thread_rounds"]):
                stop = time.perf_counter() + p["thread_seconds"]
                counts = [0] * threads
                errors: list[BaseException] = []

                def worker(i: int, stop: float = stop, counts: list[int] = counts,
                           errors: list[BaseException] = errors, fn: Callable[[], Any] = fn) -> None:
                    try:
                        while time.perf_counter() < stop:
                            fn()
                            counts[i] += 1
                    except BaseException as exc:  # reported below
                        errors.append(exc)
                t0 = time.perf_counter()
                ts = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
                for t in ts:
                    t.start()
                for t in ts:
                    t.join()
                if errors:
                    raise errors[0]
                rates.append(sum(counts) / (time.perf_counter() - t0))
            row[f"{threads}_thread_calls_per_s"] = med(rates)
        out[name] = row
    return out


def bench_reuse(server: Server, clients: Clients, p: dict[str, Any]) -> dict[str, Any]:
    server.config(events=20)
    out: dict[str, Any] = {"streams": p["reuse_streams"]}
    for name in ("http.client", "requests", "openai", "hermes-sdk"):
        try:
            for _ in clients.stream(name):  # warm: one connection in the pool
                pass
        except LookupError:
            continue
        before = server.connections()
        for _ in range(p["reuse_streams"]):
            for _ in clients.stream(name):
                pass
        out[name] = {"new_connections": server.connections() - before}
    server.config()
    return out


# ---------------------------------------------------------------------------- report


def otel_cost(res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What tracing with the OpenTelemetry plugin adds to a call (and to a stream event), same run."""
    out: dict[str, dict[str, Any]] = {}
    for op in ("chat", "responses"):
        calls = res["calls"][op]
        if OTEL in calls:
            traced, plain = calls[OTEL]["us_per_call"], calls["hermes-sdk"]["us_per_call"]
            out[f"{op} call"] = {"delta": traced - plain, "ratio": ratio(traced, plain), "unit": "µs/call"}
    st = res["stream"]
    if OTEL in st:
        traced, plain = st[OTEL]["us_per_event"], st["hermes-sdk"]["us_per_event"]
        out["stream event"] = {"delta": traced - plain, "ratio": ratio(traced, plain), "unit": "µs/event"}
    return out


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return None
    return a / b


def fmt_ratio(r: Optional[float]) -> str:
    return "n/a" if r is None else f"{r:.2f}x"


def evaluate(res: dict[str, Any]) -> list[dict[str, Any]]:
    targets = []

    def add(name: str, value: Optional[float], limit: float, op: str, detail: str) -> None:
        ok = value is not None and (value <= limit if op == "<=" else value >= limit)
        targets.append({"target": name, "value": value, "limit": limit, "op": op, "met": ok, "detail": detail})

    for op in ("chat", "responses"):
        calls = res["calls"][op]
        sdk = calls["hermes-sdk"]["us_per_call"]
        add(f"{op}: sdk / requests", ratio(sdk, calls["requests"]["us_per_call"]), 1.0, "<=", "non-streaming call")
        add(f"{op}: sdk / requests (trust_env=False)",
            ratio(sdk, calls["requests (trust_env=False)"]["us_per_call"]), 0.8, "<=",
            "non-streaming call, against requests without per-request environment lookups")
        if "openai" in calls:
            add(f"{op}: sdk / openai", ratio(sdk, calls["openai"]["us_per_call"]), 0.6, "<=", "non-streaming call")
        if "openai" in calls and FACADE in calls:
            add(f"{op}: hermes_sdk.openai / openai (issue 39)",
                ratio(calls[FACADE]["us_per_call"], calls["openai"]["us_per_call"]), 1.0, "<=",
                "non-streaming call: openai's own client with hermes-sdk as its transport")
            add(f"{op}, CPU: hermes_sdk.openai / openai (issue 39)",
                ratio(calls[FACADE].get("cpu_us_per_call"), calls["openai"].get("cpu_us_per_call")), 1.0, "<=",
                "the same batches' CPU time in this process (the server's is not counted)")
    st = res["stream"]
    sdk_ev = st["hermes-sdk"]["us_per_event"]
    add("stream: sdk / http.client floor per event", ratio(sdk_ev, st["http.client"]["us_per_event"]), 2.0, "<=",
        "per event, 10,000-event stream")
    add("stream: sdk / http.client floor per event, public-API transport (issue 15)",
        ratio(sdk_ev, st["http.client"]["us_per_event"]), 1.5, "<=", "per event, default settings")
    if "openai" in st:
        add("stream: openai / sdk per event (speed-up)", ratio(st["openai"]["us_per_event"], sdk_ev), 8.0, ">=",
            "per event")
    add("stream: sdk / http.client floor per event, default settings (issue 34)",
        ratio(sdk_ev, st["http.client"]["us_per_event"]), 1.3, "<=", "per event, keep_events=True")
    r34 = baseline.issue34_ratios(res)
    add("keyed chat (memory store) / requests (trust_env=False)",
        r34["keyed chat (memory) / requests (trust_env=False)"], 0.85, "<=", "a fresh idempotency key per call")
    add("chat: sdk / httpx", r34["chat: sdk / httpx"], 1.0, "<=", "non-streaming call")
    add("first call: sdk / requests", r34["first call: sdk / requests"], 1.5, "<=",
        "import + client + one chat in a fresh process, median of several processes")
    first = res.get("first_call") or {}
    for name in ("hermes_sdk.openai", "hermes_sdk.openai (load_entrypoints=False)"):
        if "openai" in first and name in first:
            add(f"first call: {name} / openai (issue 39)", ratio(first[name]["ms"], first["openai"]["ms"]), 1.1,
                "<=", "import + client + one chat in a fresh process (wall); the first row also loads every "
                "installed entry-point plugin")
            if "cpu_ms" in first[name] and "cpu_ms" in first["openai"]:
                add(f"first call, CPU: {name} / openai (issue 39)",
                    ratio(first[name]["cpu_ms"], first["openai"]["cpu_ms"]), 1.1, "<=",
                    "the same processes' own CPU time over the same span: what a busy machine cannot move")
    for framing, rows in res["first_event"].items():
        add(f"first event ({framing}): sdk - floor, ms",
            rows["hermes-sdk"]["ms_to_first_event"] - rows["http.client"]["ms_to_first_event"], 1.0, "<=",
            "rest of the stream held back (issue 15: within 1 ms of the floor)")
    add("connection reuse: new connections over the streams", res["reuse"]["hermes-sdk"]["new_connections"], 0, "<=",
        f"{res['reuse']['streams']} streams read to the end after a warm-up")
    mem = res["memory"]
    full = mem["hermes-sdk keep_events=True (default), max_events=N"]["peak_growth_bytes"]
    tenth = mem["hermes-sdk keep_events=True, max_events=N/10"]["peak_growth_bytes"]
    add("memory: growth(max_events=N/10) / growth(max_events=N)", ratio(tenth, full), 0.2, "<=",
        "kept events are bounded by max_events")
    add("memory: keep_events=False peak growth, MiB",
        mem["hermes-sdk keep_events=False"]["peak_growth_bytes"] / 2**20, 1.0, "<=",
        f"iterating a {mem['events']}-event stream")
    th = res["threads"]["hermes-sdk"]
    add("threads: 4-thread / 1-thread calls/s", ratio(th["4_thread_calls_per_s"], th["1_thread_calls_per_s"]),
        1.0, ">=", "one shared client")
    fl = res["threads"]["http.client (connection per thread)"]
    floor_ratio = ratio(fl["4_thread_calls_per_s"], fl["1_thread_calls_per_s"])
    sdk_ratio = ratio(th["4_thread_calls_per_s"], th["1_thread_calls_per_s"])
    add("threads: sdk 4/1 ratio / http.client floor 4/1 ratio", ratio(sdk_ratio, floor_ratio), 0.9, ">=",
        "context for the target above: what the machine allows")
    rt = res["threads"]["requests (timeout=(10, 300))"]
    add("threads: sdk 4/1 ratio / requests-with-timeouts 4/1 ratio",
        ratio(sdk_ratio, ratio(rt["4_thread_calls_per_s"], rt["1_thread_calls_per_s"])), 1.0, ">=",
        "context: requests paying the same socket timeouts")
    return targets


def table(res: dict[str, Any]) -> str:
    lines = []

    def row(cols: list[str], widths: list[int]) -> None:
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cols, widths))))

    w = [40, 11, 11, 11, 11]
    for op in ("chat", "responses"):
        calls = res["calls"][op]
        req = calls["requests"]["us_per_call"]
        oa = calls.get("openai", {}).get("us_per_call")
        fl = calls["http.client"]["us_per_call"]
        lines.append(f"\nNon-streaming {op} (median µs per call)")
        row(["client", "µs/call", "/requests", "/openai", "/floor"], w)
        for name, v in calls.items():
            u = v["us_per_call"]
            row([name, f"{u:.0f}", fmt_ratio(ratio(u, req)), fmt_ratio(ratio(u, oa)), fmt_ratio(ratio(u, fl))], w)
    st = res["stream"]
    req, oa, fl = (st.get(k, {}).get("us_per_event") for k in ("requests", "openai", "http.client"))
    lines.append(f"\nStreaming chat, {res['params']['stream_events']} events (median µs per event)")
    row(["client", "µs/event", "/requests", "/openai", "/floor"], w)
    for name, v in st.items():
        u = v["us_per_event"]
        row([name, f"{u:.2f}", fmt_ratio(ratio(u, req)), fmt_ratio(ratio(u, oa)), fmt_ratio(ratio(u, fl))], w)
    lines.append(f"\nTime to first event, rest held back {res['params']['hold_ms']} ms (median ms)")
    row(["client", "chunked", "-floor", "close", "-floor"], w)
    fe = res["first_event"]
    for name in fe["chunked"]:
        c, d = fe["chunked"][name]["ms_to_first_event"], fe["close"].get(name, {}).get("ms_to_first_event", math.nan)
        row([name, f"{c:.2f}", f"{c - fe['chunked']['http.client']['ms_to_first_event']:+.2f}", f"{d:.2f}",
             f"{d - fe['close']['http.client']['ms_to_first_event']:+.2f}"], w)
    mem = res["memory"]
    lines.append(f"\nPeak memory growth over a {mem['events']}-event stream (tracemalloc)")
    for label, v in mem.items():
        if isinstance(v, dict):
            per = v.get("bytes_per_event")
            row([label, f"{v['peak_growth_bytes'] / 2**20:.2f} MiB", f"{v['events_seen']} ev",
                 "" if per is None else f"{per:,.0f} B/ev", ""], [52, 11, 11, 11, 0])
    first = res.get("first_call") or {}
    if first:
        lines.append("\nFirst call of a fresh process: import + client + one chat (median ms over "
                     f"{res['params']['first_call_processes']} processes)")
        row(["client", "ms", "/requests", "/openai", "CPU ms", "/openai"], w + [11])
        fr, fo = first.get("requests", {}).get("ms"), first.get("openai", {}).get("ms")
        co = first.get("openai", {}).get("cpu_ms")
        for name, v in first.items():
            cpu = v.get("cpu_ms")
            row([name, f"{v['ms']:.1f}", fmt_ratio(ratio(v["ms"], fr)), fmt_ratio(ratio(v["ms"], fo)),
                 "n/a" if cpu is None else f"{cpu:.1f}", fmt_ratio(ratio(cpu, co))], w + [11])
    lines.append("\nCalls per second, one shared client")
    row(["client", "1 thread", "4 threads", "4/1", ""], w)
    for name, v in res["threads"].items():
        a, b = v["1_thread_calls_per_s"], v["4_thread_calls_per_s"]
        row([name, f"{a:.0f}", f"{b:.0f}", fmt_ratio(ratio(b, a)), ""], w)
    otel = res.get("otel") or {}
    if otel:
        lines.append("\nOpenTelemetry plugin (real SDK tracer + meter provider, BatchSpanProcessor, in-memory "
                     "exporter), against the plain hermes-sdk row of the same run")
        for what, v in otel.items():
            lines.append(f"  {what}: {v['delta']:+.1f} {v['unit']} ({fmt_ratio(v['ratio'])} plain hermes-sdk)")
    chat = res["calls"]["chat"]
    lines.append("\nPlugin hook overhead (extra no-op wrapper on both around-hooks): "
                 f"{chat['hermes-sdk + no-op plugin']['us_per_call'] - chat['hermes-sdk']['us_per_call']:+.1f} µs/call")
    reuse = res["reuse"]
    lines.append(f"\nNew connections over {reuse['streams']} streams after a warm-up (0 = reused every time)")
    lines.append("  " + ", ".join(f"{k}: {v['new_connections']}" for k, v in reuse.items() if isinstance(v, dict)))
    lines.append("\nTargets")
    for t in res["targets"]:
        v = t["value"]
        lines.append(f"  [{'met' if t['met'] else 'MISSED'}] {t['target']}: "
                     f"{'n/a' if v is None else f'{v:.2f}'} (target {t['op']} {t['limit']}) — {t['detail']}")
    return "\n".join(lines)


def sanity(res: dict[str, Any]) -> list[str]:
    """What --quick checks: the benchmark ran everything and its numbers are plausible."""
    problems = []
    for op in ("chat", "responses"):
        for name, v in res["calls"][op].items():
            if not (0 < v["us_per_call"] < 1e6):
                problems.append(f"calls/{op}/{name}: {v['us_per_call']}")
    for name, v in res["stream"].items():
        if not (0 < v["us_per_event"] < 1e4):
            problems.append(f"stream/{name}: {v['us_per_event']}")
        want = v["events_sent"] - (1 if name in ("openai", FACADE) else 0)  # openai hides [DONE]
        if v["events_seen"] != want:
            problems.append(f"stream/{name}: saw {v['events_seen']} events, expected {want}")
    for framing, rows in res["first_event"].items():
        for name, v in rows.items():
            if not (0 < v["ms_to_first_event"] < 10_000):
                problems.append(f"first_event/{framing}/{name}: {v['ms_to_first_event']}")
    for label, v in res["memory"].items():
        if isinstance(v, dict) and not v["peak_growth_bytes"] >= 0:
            problems.append(f"memory/{label}: {v}")
    for name, v in res["threads"].items():
        if not all(x > 0 for x in v.values()):
            problems.append(f"threads/{name}: {v}")
    for name, v in (res.get("first_call") or {}).items():
        if not 0 < v["ms"] < 60_000:
            problems.append(f"first_call/{name}: {v['ms']}")
    for name, v in res["reuse"].items():
        if isinstance(v, dict) and not 0 <= v["new_connections"] <= res["reuse"]["streams"] + 1:
            problems.append(f"reuse/{name}: {v}")
    return problems


def run(quick: bool = False) -> dict[str, Any]:
    p = dict(QUICK if quick else FULL)
    server = Server()
    tmp = tempfile.mkdtemp(prefix="hermes-bench-")
    clients = Clients(server.base_url, tmp)
    try:
        res: dict[str, Any] = {
            "params": p, "quick": quick, "python": sys.version.split()[0],
            "hermes_sdk_path": os.path.dirname(os.path.abspath(hermes_sdk.__file__)),
            "versions": {"hermes_sdk": getattr(hermes_sdk, "__version__", "?"), "requests": requests.__version__,
                         "openai": getattr(openai, "__version__", None)},
        }
        server.config()
        res["calls"] = {op: bench_calls(clients, op, p) for op in ("chat", "responses")}
        res["stream"] = bench_stream(server, clients, p)
        res["first_event"] = bench_first_event(server, clients, p)
        res["reuse"] = bench_reuse(server, clients, p)
        res["threads"] = bench_threads(server, clients, p)
        res["memory"] = bench_memory(server, clients, p)
        server.config()
        res["first_call"] = bench_first_call(server.base_url, API_KEY, os.path.dirname(res["hermes_sdk_path"]),
                                             p["first_call_processes"])
        res["otel"] = otel_cost(res)
        res["targets"] = evaluate(res)
        res["sanity_problems"] = sanity(res)
        return res
    finally:
        clients.close()
        server.stop()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke test, not a measurement")
    parser.add_argument("--json", metavar="PATH", help="write every figure as JSON")
    parser.add_argument("--baseline", metavar="REV", default=baseline.DEFAULT_BASELINE,
                        help="also run this harness on hermes_sdk as of git REV and print both (default: %(default)s)")
    parser.add_argument("--no-baseline", action="store_true", help="measure the working tree only")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    before = None if args.no_baseline else baseline.run_at(args.baseline, args.quick)
    res = run(args.quick)
    res["elapsed_s"] = round(time.perf_counter() - t0, 1)
    print(table(res))
    if before is not None:
        res["baseline"] = {"rev": args.baseline, "ratios": baseline.key_ratios(before)}
        print(baseline.table(before, res, args.baseline))
    print(f"\n({'quick mode: not a measurement; ' if args.quick else ''}{res['elapsed_s']} s)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1, default=str)
    if res["sanity_problems"]:
        print("\nSANITY PROBLEMS:\n  " + "\n  ".join(res["sanity_problems"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
