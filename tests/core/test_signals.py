"""Long-running commands stop cleanly on SIGINT and SIGTERM whatever disposition they inherited.

``cmd &`` in a script starts the command with SIGINT ignored; these tests start each command
with every combination (ignored, default) explicitly, so they do not depend on the disposition
the test run itself inherited."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = {
    "hermes-sdk emulator": [sys.executable, "-m", "hermes_sdk", "emulator", "--api-key", "sig-key"],
    "python -m hermes_sdk.testing": [sys.executable, "-m", "hermes_sdk.testing", "--port", "0",
                                     "--api-key", "sig-key"],
}

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGTERM") or os.name != "posix", reason="POSIX signals")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def _inherit(disposition: Any) -> Callable[[], None]:
    """A preexec_fn giving the child SIGINT and SIGTERM with ``disposition`` (as ``cmd &`` gives SIGINT)."""
    def preexec() -> None:
        signal.signal(signal.SIGINT, disposition)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return preexec


def _base_url(proc: "subprocess.Popen[str]") -> str:
    assert proc.stdout is not None
    first = proc.stdout.readline().strip()
    return first.split("=", 1)[1] if first.startswith("export ") else first


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("inherited", ["ignored", "default"])
@pytest.mark.parametrize("stop", ["SIGINT", "SIGTERM"])
def test_the_emulator_stops_cleanly_whatever_it_inherited(command: str, inherited: str, stop: str) -> None:
    disposition = signal.SIG_IGN if inherited == "ignored" else signal.default_int_handler
    proc = subprocess.Popen(COMMANDS[command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_env(), preexec_fn=_inherit(disposition))
    returncode: Optional[int] = None
    try:
        url = _base_url(proc)
        assert url.startswith("http://127.0.0.1:"), url
        assert requests.get(url + "/health", timeout=10).status_code == 200
        proc.send_signal(getattr(signal, stop))
        returncode = proc.wait(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    _, err = proc.communicate()
    assert returncode == 0, (returncode, err)  # stopped by its own clean-up, not killed by the signal
    assert "Traceback" not in err
    with pytest.raises(requests.ConnectionError):
        requests.get(url + "/health", timeout=2)  # the listener is gone


def test_a_command_run_with_sigint_ignored_is_still_interrupted(hermes_emulator_factory: Any) -> None:
    emulator = hermes_emulator_factory()  # its own: the interrupted turn must not outlive this test
    env = dict(_env(), HERMES_BASE_URL=emulator.base_url, HERMES_API_KEY=emulator.api_key)
    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", "chat", "SLOW:20 wait for it"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_inherit(signal.SIG_IGN))
    deadline = time.time() + 30
    while emulator.active_runs == 0 and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err


def test_the_handlers_are_given_back_in_process() -> None:
    from hermes_sdk._core._signals import interrupt_on_signals

    before = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    with interrupt_on_signals():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGTERM)
            while True:  # until the handler raises (at once): no sleep decides it
                time.sleep(0.01)
    assert (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)) == before
