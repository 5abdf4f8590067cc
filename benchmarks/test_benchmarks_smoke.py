"""CI smoke test: ``python -m benchmarks --quick`` runs end to end and its numbers are sane.

It checks that every measurement ran and produced plausible figures, not how fast anything is.
Run with ``python -m pytest benchmarks -q``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_quick_benchmark_runs_and_is_sane(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res["quick"] is True and res["sanity_problems"] == []
    for op in ("chat", "responses"):
        assert {"http.client", "requests", "hermes-sdk", "hermes-sdk + no-op plugin",
                "hermes-sdk + idempotency key (sqlite)",
                "hermes-sdk + idempotency key (memory)"} <= set(res["calls"][op])
    assert {"requests", "hermes-sdk"} <= set(res["first_call"])  # import + client + chat, fresh processes
    assert all(len(v["samples"]) == res["params"]["first_call_processes"] for v in res["first_call"].values())
    default = res["memory"]["hermes-sdk keep_events=True (default), max_events=N"]
    assert default["bytes_per_event"] == default["peak_growth_bytes"] / default["events_seen"]
    assert {"keyed chat (memory store) / requests (trust_env=False)", "first call: sdk / requests",
            "chat: sdk / httpx"} <= {t["target"] for t in res["targets"]}
    assert res["stream"]["hermes-sdk"]["events_seen"] == res["stream"]["hermes-sdk"]["events_sent"]
    assert set(res["first_event"]) == {"chunked", "close"}
    assert res["reuse"]["hermes-sdk"]["new_connections"] == 0  # a functional property, not a timing
    assert {t["target"] for t in res["targets"]}
    assert "Targets" in proc.stdout


def test_server_serves_both_framings():
    import http.client

    from benchmarks.server import BenchServer

    server = BenchServer().start()
    try:
        for framing in ("chunked", "close"):
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
            conn.request("POST", "/_bench/config", json.dumps({"events": 3, "framing": framing}))
            conn.getresponse().read()
            conn.request("POST", "/v1/chat/completions", b'{"stream": true}')
            body = conn.getresponse().read()
            assert body.count(b"data: ") == 5 and body.endswith(b"data: [DONE]\n\n")
            conn.close()
        assert server.connections == 2
    finally:
        server.stop()


def test_keepalive_benchmark_runs_and_reuses_one_connection(tmp_path):
    out = tmp_path / "keepalive.json"
    proc = subprocess.run([sys.executable, "-m", "benchmarks.keepalive", "--requests", "30", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads(out.read_text())["rows"]
    assert set(rows) == {"requests -> baseline (http.server, TCP_NODELAY)", "requests -> emulator",
                         "requests -> emulator, Nagle on (before)", "hermes-sdk client.health() -> emulator"}
    for name, row in rows.items():
        assert row["requests"] == 30 and row["p50_ms"] > 0, name
        if name.startswith("requests"):
            assert row["connections_opened"] == 1, name  # keep-alive: the figures are per reused connection
    assert "x base" in proc.stdout
