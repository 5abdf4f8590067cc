"""The pytest plugin fixtures and the command-line entry of the emulator."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_fixtures_share_one_server_and_reset(tmp_path: Path) -> None:
    (tmp_path / "test_inner.py").write_text(
        textwrap.dedent("""
        import requests

        PORTS = []

        def _chat(emu, text):
            return requests.post(emu.base_url + "/v1/chat/completions",
                                 json={"messages": [{"role": "user", "content": text}]},
                                 headers={"Authorization": "Bearer " + emu.api_key})

        def test_one(hermes_emulator):
            hermes_emulator.script("scripted")
            assert _chat(hermes_emulator, "x").json()["choices"][0]["message"]["content"] == "scripted"
            assert hermes_emulator.executions == 1
            PORTS.append(hermes_emulator.port)

        def test_two(hermes_emulator):
            assert hermes_emulator.executions == 0 and hermes_emulator.requests_seen == []
            assert _chat(hermes_emulator, "x").json()["choices"][0]["message"]["content"] == "ECHO: x"
            assert PORTS == [hermes_emulator.port]

        def test_factory(hermes_emulator_factory, hermes_emulator):
            extra = hermes_emulator_factory(api_key="other", max_concurrent_runs=1)
            assert extra.port != hermes_emulator.port and extra.api_key == "other"
            assert _chat(extra, "y").status_code == 200
    """)
    )
    # Block the entry-point copy (if installed) and load the module explicitly.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hermes_sdk",
            "-p",
            "hermes_sdk.testing.pytest_plugin",
            str(tmp_path / "test_inner.py"),
        ],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "3 passed" in result.stdout


def test_python_m_serves_until_interrupted() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes_sdk.testing", "--port", "0", "--api-key", "cli-key"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        health = requests.get(url + "/health", timeout=5)
        assert health.json()["status"] == "ok"
        denied = requests.get(url + "/v1/models", headers={"Authorization": "Bearer x"}, timeout=5)
        assert denied.status_code == 401
        ok = requests.get(url + "/v1/models", headers={"Authorization": "Bearer cli-key"}, timeout=5)
        assert ok.status_code == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
