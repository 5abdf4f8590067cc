"""``hermes-sdk doctor --json`` against the emulator and the real Hermes (0.19, 0.20.1, 0.22.2; issue 33).

The command runs as an operator runs it, in a process of its own configured by the environment;
its findings must say the same about both servers: healthy, the release, the features the SDK
will use on it, the key accepted, the tools that can ask for approval, no clock skew.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from conformance_helpers import SERVER_VERSION, Target
from runs_helpers import RunsTarget

V19, V22 = SERVER_VERSION == "0.19.0", SERVER_VERSION == "0.22.2"
NAMES = ["config", "dns", "tcp", "tls", "proxy", "health", "features", "auth", "approvals", "clock",
         "idempotency_store", "plugins"]


def doctor(target: Any, tmp_path: Path, api_key: str = "") -> tuple[int, dict[str, Any]]:
    """``python -m hermes_sdk doctor --json`` with HERMES_BASE_URL and HERMES_API_KEY; the code and findings."""
    env = {k: v for k, v in os.environ.items()
           if not k.upper().endswith("_PROXY") and not k.startswith("HERMES_") and k not in
           ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")}
    env.update(HERMES_BASE_URL=target.base_url, HERMES_API_KEY=api_key or target.api_key, HERMES_SDK_PLUGINS="",
               XDG_STATE_HOME=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-m", "hermes_sdk", "doctor", "--json", "--timeout", "10"],
                          env=env, capture_output=True, text=True, timeout=120)
    body = json.loads(done.stdout)
    assert body["exit_code"] == done.returncode
    assert [f["name"] for f in body["findings"]] == NAMES
    assert (api_key or target.api_key) not in done.stdout + done.stderr
    return done.returncode, {f["name"]: f for f in body["findings"]}


def test_doctor_finds_the_server_healthy_and_names_its_features(server: Target, tmp_path: Path) -> None:
    code, found = doctor(server, tmp_path)
    assert code == 0, found
    assert {name: f["status"] for name, f in found.items()} == dict.fromkeys(NAMES, "ok")
    assert found["health"]["data"]["platform"] == "hermes-agent"
    assert found["health"]["data"]["version"].startswith(SERVER_VERSION)
    features = found["features"]["data"]
    assert features["version"].startswith(SERVER_VERSION)
    assert {k: features[k] for k in ("stream_approvals", "resumable_run_events", "steer", "runs_idempotency",
                                     "exact_approvals")} == {
        "stream_approvals": V22, "resumable_run_events": V22, "steer": not V19, "runs_idempotency": V22,
        "exact_approvals": V22}
    assert found["auth"]["data"]["models"] == ["hermes-agent"]
    assert found["approvals"]["data"]["enabled_toolsets"] == []  # the peer default: no tools, nothing asks
    assert abs(found["clock"]["data"]["skew_seconds"]) < 5  # the same machine's clock


def test_doctor_sees_the_tools_that_can_ask_for_approval(runs_target: RunsTarget, tmp_path: Path) -> None:
    code, found = doctor(runs_target, tmp_path)
    assert code == 0, found
    approvals = found["approvals"]
    assert approvals["status"] == "ok" and approvals["data"]["approval_events"] is True
    # the configured three (real 0.20.1 also lists its own "bfl" toolset as enabled)
    assert {"file", "terminal", "todo"} <= set(approvals["data"]["enabled_toolsets"])
    assert approvals["detail"].startswith("runs can ask for approval")


def test_doctor_names_a_refused_key(server: Target, tmp_path: Path) -> None:
    code, found = doctor(server, tmp_path, api_key="not-the-key-0123")
    assert code == 9 and [n for n, f in found.items() if f["status"] == "fail"] == ["auth"]
    assert found["auth"]["data"]["code"] == ("invalid_api_key" if V19 else "gateway_auth_failed")
