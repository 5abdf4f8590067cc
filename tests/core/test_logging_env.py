"""``HERMES_SDK_LOG=debug|info`` turns on the SDK's redacted log lines on stderr (like OPENAI_LOG)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import pytest

from hermes_sdk._core import _logging

SCRIPT = """
import sys
from hermes_sdk._core._logging import configure_from_env
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
    assert "urllib3" not in err  # the SDK's lines, not urllib3's (which repeat them, noisier)
    for secret in ("canary-key-5521", "canary prompt 7731", "ECHO", rid):
        assert secret not in err


def test_debug_urllib3_adds_the_connection_pool_lines_redacted() -> None:
    out, err = run("debug,urllib3")
    rid = out.split("rid ", 1)[1].strip()
    assert "level 10" in out
    assert "DEBUG hermes_sdk: hermes_sdk.attempt" in err
    assert "DEBUG urllib3.connectionpool: Starting new HTTP connection" in err
    assert '"GET /v1/responses/[REDACTED] HTTP/1.1" 200' in err
    for secret in ("canary-key-5521", "canary prompt 7731", rid):
        assert secret not in err


def test_debug_leaves_urllib3_quiet_even_when_the_root_logger_prints() -> None:
    # An application that configured the root logger at WARNING (the common case) must not get
    # urllib3's DEBUG lines through it either: HERMES_SDK_LOG=debug does not lower urllib3's level.
    script = "import logging; logging.basicConfig(level=logging.WARNING)\n" + SCRIPT
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HERMES_SDK_PLUGINS="", HERMES_SDK_LOG="debug")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "hermes_sdk.attempt" in proc.stderr and "urllib3" not in proc.stderr


def test_info_is_quiet_for_successful_calls_and_unset_changes_nothing() -> None:
    out, err = run("INFO")
    assert "level 20" in out and "DEBUG" not in err and "urllib3" not in err
    out, err = run(None)
    assert "level None" in out and err == ""


def test_an_unknown_value_is_reported_once_and_ignored() -> None:
    out, err = run("verbose")
    assert "level None" in out
    assert err.count("HERMES_SDK_LOG='verbose'") == 1 and "'debug' or 'info'" in err
    out, err = run("debug,requests")
    assert "level None" in out and "'debug,urllib3'" in err


def test_urllib3_goes_back_to_its_own_level_when_no_longer_asked_for() -> None:
    pool, logger = logging.getLogger("urllib3.connectionpool"), logging.getLogger("hermes_sdk")
    before, before_sdk = pool.level, logger.level
    try:
        assert _logging.configure_from_env({"HERMES_SDK_LOG": "debug,urllib3"}) == logging.DEBUG
        assert pool.level == logging.DEBUG and _logging._handler in pool.handlers
        assert _logging.configure_from_env({"HERMES_SDK_LOG": "debug"}) == logging.DEBUG
        assert pool.level == before and _logging._handler not in pool.handlers
    finally:
        for lg in (logger, pool):
            if _logging._handler in lg.handlers:
                lg.removeHandler(_logging._handler)
        pool.setLevel(before)
        logger.setLevel(before_sdk)
        _logging._handler = None
        _logging._saved_levels.clear()


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
        _logging._saved_levels.clear()
