"""Keep-alive latency against the emulator, next to a baseline measured in the same run.

Each server runs in a subprocess of its own (the client loop here does not share its GIL):

* ``baseline``: a trivial ``http.server`` handler (HTTP/1.1, TCP_NODELAY) answering a small JSON body;
* ``emulator``: ``HermesEmulator`` as shipped (its handler sets TCP_NODELAY);
* ``emulator, Nagle on``: the same with ``disable_nagle_algorithm = False``, as before issue 25:
  headers and body leave in two writes, and the body waits for the client's delayed ACK.

The client is one ``requests.Session`` (one connection, reused) sending ``GET /health`` one after
another; the SDK row is ``client.health()`` against the emulator. Printed: requests per second and
the latency percentiles. ``python -m benchmarks.keepalive [--requests N] [--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

import requests

_BASELINE = r'''
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    def do_GET(self):
        body = json.dumps({"status": "ok", "platform": "baseline"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"http://127.0.0.1:{server.server_port}", flush=True)
server.serve_forever()
'''

_EMULATOR = r'''
import sys
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.server import HermesHandler

HermesHandler.disable_nagle_algorithm = sys.argv[1] == "nodelay"
emulator = HermesEmulator().start()
print(emulator.base_url, flush=True)
sys.stdin.read()  # until the benchmark closes our stdin
emulator.stop()
'''

SERVERS = {"baseline (http.server, TCP_NODELAY)": [_BASELINE],
           "emulator": [_EMULATOR, "nodelay"],
           "emulator, Nagle on (before)": [_EMULATOR, "nagle"]}


def _serve(argv: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, "-c", *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://"):
        proc.kill()
        raise RuntimeError(f"the server did not start: {url!r}")
    return proc, url


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def _summary(samples: list[float], total: float) -> dict[str, Any]:
    samples = sorted(samples)

    def pct(p: float) -> float:
        return round(samples[min(len(samples) - 1, int(p * len(samples)))] * 1000, 3)

    return {"requests": len(samples), "requests_per_second": round(len(samples) / total, 1),
            "mean_ms": round(statistics.fmean(samples) * 1000, 3), "p50_ms": pct(0.50), "p95_ms": pct(0.95),
            "p99_ms": pct(0.99), "max_ms": round(samples[-1] * 1000, 3)}


def _raw_caller(session: requests.Session, url: str) -> Callable[[], Any]:
    def call() -> None:
        reply = session.get(url + "/health", timeout=10)
        reply.raise_for_status()
        reply.json()

    return call


def _connections(session: requests.Session) -> int:
    """How many connections the session opened (1: every request reused the first)."""
    manager = session.get_adapter("http://").poolmanager
    return sum(manager.pools[key].num_connections for key in manager.pools.keys())


def run(count: int, rounds: int = 10) -> dict[str, Any]:
    """Every row in turn, ``rounds`` times (A, B, C, A, B, C, ...): a busy machine's slow spell is
    shared by the rows instead of falling on one of them."""
    from hermes_sdk import HermesClient

    servers = {name: _serve(argv) for name, argv in SERVERS.items()}
    sessions: list[requests.Session] = []
    callers: dict[str, Callable[[], Any]] = {}
    client = None
    try:
        for name, (_, url) in servers.items():
            session = requests.Session()
            session.trust_env = False
            sessions.append(session)
            callers[f"requests -> {name}"] = _raw_caller(session, url)
            if name == "emulator":
                client = HermesClient(url, "test-key", load_entrypoints=False)
                callers["hermes-sdk client.health() -> emulator"] = client.health
        for call in callers.values():  # warm: the connection open, the code paths loaded
            for _ in range(5):
                call()
        samples: dict[str, list[float]] = {name: [] for name in callers}
        spent = dict.fromkeys(callers, 0.0)
        per_round = max(1, count // rounds)
        for _ in range(rounds):
            for name, call in callers.items():
                started = time.perf_counter()
                for _ in range(per_round):
                    t0 = time.perf_counter()
                    call()
                    samples[name].append(time.perf_counter() - t0)
                spent[name] += time.perf_counter() - started
        rows = {name: _summary(samples[name], spent[name]) for name in callers}
        for session, name in zip(sessions, [n for n in callers if n.startswith("requests")]):
            rows[name]["connections_opened"] = _connections(session)
    finally:
        if client is not None:
            client.close()
        for session in sessions:
            session.close()
        for proc, _ in servers.values():
            _stop(proc)
    base = rows["requests -> baseline (http.server, TCP_NODELAY)"]["p50_ms"]
    for row in rows.values():
        row["p50_vs_baseline"] = round(row["p50_ms"] / base, 2) if base else None
    return {"requests_per_row": count, "rounds": rounds, "python": sys.version.split()[0], "rows": rows}


def main(argv: Any = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.keepalive", description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500, help="sequential requests per row (default 500)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    result = run(args.requests)
    print(f"{'keep-alive GET /health, one connection':<48} {'req/s':>8} {'p50 ms':>8} {'p95 ms':>8} "
          f"{'p99 ms':>8} {'x base':>7}")
    for name, row in result["rows"].items():
        print(f"{name:<48} {row['requests_per_second']:>8} {row['p50_ms']:>8} {row['p95_ms']:>8} "
              f"{row['p99_ms']:>8} {row['p50_vs_baseline']:>7}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
