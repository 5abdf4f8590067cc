"""``HERMES_SDK_LOG=debug|info`` turns on the SDK's redacted log lines on stderr (like OPENAI_LOG)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import pytest

from hermes_sdk import _logging

SCRIPT = """
import sys
from hermes_sdk._logging import configure_from_env
from hermes_sdk.testing import HermesEmulator

print("level", configure_from_env(), flush=True)
with HermesEmulator(api_key="canary-key-5521") as emu:
    with emu.client(load_entrypoints=False) as client:
        rid = client.responses(input="canary prompt 7731", store=True).id
        client.response_get(rid)
        print("rid", rid, flush=True)
"""


def run(level: Any) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_SDK_PLUGINS"] = ""
    if level is not None:
        env["HERMES_SDK_LOG"] = level
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


def test_debug_shows_redacted_attempt_and_action_lines() -> None:
    out, err = run("debug")
    rid = out.split("rid ", 1)[1].strip()
    assert "level 10" in out
    assert "DEBUG hermes_sdk: hermes_sdk.attempt" in err and "DEBUG hermes_sdk: hermes_sdk.action" in err
    assert '"method": "GET", "path": "/v1/responses/[REDACTED]"' in err
    assert "urllib3.connectionpool" in err  # debug shows the connection pool's lines too
    for secret in ("canary-key-5521", "canary prompt 7731", "ECHO", rid):
        assert secret not in err


def test_info_is_quiet_for_successful_calls_and_unset_changes_nothing() -> None:
    out, err = run("INFO")
    assert "level 20" in out and "DEBUG" not in err and "urllib3" not in err
    out, err = run(None)
    assert "level None" in out and err == ""


def test_an_unknown_value_is_reported_once_and_ignored() -> None:
    out, err = run("verbose")
    assert "level None" in out
    assert err.count("HERMES_SDK_LOG='verbose'") == 1 and "'debug' or 'info'" in err


def test_configure_is_idempotent(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("hermes_sdk")
    before_handlers, before_level = list(logger.handlers), logger.level
    try:
        assert _logging.configure_from_env({"HERMES_SDK_LOG": "debug"}) == logging.DEBUG
        assert _logging.configure_from_env({"HERMES_SDK_LOG": "info"}) == logging.INFO
        added = [h for h in logger.handlers if h not in before_handlers]
        assert len(added) == 1 and added[0].level == logging.INFO
        logger.info("hello from a test: Bearer sk-abcdefghijklmnop")
        err = capsys.readouterr().err
        assert "hello from a test" in err and "sk-abcdefghijklmnop" not in err
    finally:
        for h in list(logger.handlers):
            if h not in before_handlers:
                logger.removeHandler(h)
        logging.getLogger("urllib3.connectionpool").handlers[:] = [
            h for h in logging.getLogger("urllib3.connectionpool").handlers if h is not _logging._handler]
        logger.setLevel(before_level)
        _logging._handler = None
