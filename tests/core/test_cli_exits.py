"""Exit codes a script relies on: an option value of the wrong kind is usage (2), and a reader that
goes away (``| head``) ends the command quietly, for ``hermes-sdk`` and ``hermes-sdk-inbox``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_cli import subprocess_env

from hermes_sdk import HermesClient
from hermes_sdk._app.cli import main
from hermes_sdk.testing import HermesEmulator

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env(hermes_emulator: HermesEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> HermesEmulator:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_API_KEY", hermes_emulator.api_key)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    return hermes_emulator


@pytest.mark.parametrize("argv", [
    ["chat", "-o", "temperature", "hot", "hi"],
    ["chat", "-o", "max_tokens", "1.5", "hi"],
    ["chat", "-o", "logprobs", "yes", "hi"],
    ["chat", "-o", "metadata", "[1]", "hi"],
    ["chat", "-o", "stop", "3", "hi"],
    ["responses", "create", "-o", "store", "maybe", "hi"],
    ["responses", "create", "-o", "max_output_tokens", "many", "hi"],
])
def test_an_option_value_of_the_wrong_kind_is_usage(env: HermesEmulator, capsys: pytest.CaptureFixture[str],
                                                    argv: list[str]) -> None:
    before = len(env.requests_seen)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"-o {argv[argv.index('-o') + 1]} {argv[argv.index('-o') + 2]}: the value must be" in err
    assert len(env.requests_seen) == before  # refused before anything is sent
    assert main([*argv, "--json"]) == 2
    assert json.loads(capsys.readouterr().err)["code"] == "hermes_sdk.usage"


def test_option_values_of_the_right_kind_are_sent(env: HermesEmulator, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chat", "-o", "temperature", "0.2", "-o", "max_tokens", "20", "-o", "stop", "END", "-o", "stop",
                 "x", "hi"]) == 2  # given twice: usage too
    assert main(["chat", "-o", "temperature", "1", "-o", "max_tokens", "20", "-o", "stop", '["END"]',
                 "-o", "tool_choice", "auto", "-o", "logprobs", "false", "hi"]) == 0
    body = env.requests_seen[-1].body
    assert (body["temperature"], body["max_tokens"], body["stop"], body["tool_choice"]) == (1, 20, ["END"], "auto")


def _quiet_after_head(command: str, env: dict[str, str]) -> tuple[str, str, int]:
    """``command | head -1`` in a shell: what head printed, the command's stderr and its exit status."""
    script = f"{command} 2>err.txt | head -1; echo ${{PIPESTATUS[0]}} > status.txt"
    cwd = Path(env["XDG_STATE_HOME"]).parent
    done = subprocess.run(["bash", "-c", script], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return done.stdout, (cwd / "err.txt").read_text(), int((cwd / "status.txt").read_text())


def test_hermes_sdk_json_into_head_ends_quietly(hermes_emulator: HermesEmulator, tmp_path: Path) -> None:
    env = subprocess_env(hermes_emulator, XDG_STATE_HOME=str(tmp_path / "state"))
    chat = subprocess.run([sys.executable, "-m", "hermes_sdk", "chat", "hello"], env=env, capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert chat.returncode == 0
    db = sqlite3.connect(str(tmp_path / "state" / "hermes-sdk" / "logs.db"))  # more than a pipe holds
    with db:
        db.executemany("INSERT INTO log (datetime_utc, command, prompt, reply) VALUES (?, ?, ?, ?)",
                       [("2026-01-01T00:00:00Z", "chat", f"p{i}", "r" * 2000) for i in range(200)])
    db.close()
    # 141 when the closed pipe surfaced as BrokenPipeError; 0 when the kernel took one large write
    # in part and Python reported no error (the reader had what it wanted either way)
    head, err, status = _quiet_after_head(f"{sys.executable} -m hermes_sdk logs --json -n 0", env)
    assert head == "[\n" and err == "" and status in (0, 141)
    head, err, status = _quiet_after_head(f"{sys.executable} -m hermes_sdk logs -n 0", env)
    assert head.startswith("# ") and err == "" and status == 141  # one write per entry: the pipe breaks


def test_the_inbox_list_json_into_head_ends_quietly(tmp_path: Path) -> None:
    pytest.importorskip("hermes_sdk_inbox")
    from hermes_sdk_inbox.inbox import Inbox

    url = f"sqlite:///{tmp_path / 'inbox.db'}"
    inbox = Inbox(url)
    with HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False) as client:
        for i in range(50):  # about 140 kB of JSON lines: more than a pipe holds
            inbox.submit(client.approval_request("response_delete", {"response_id": f"resp_{i}"}, reason="r" * 2000))
    inbox.close()
    env: dict[str, Any] = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(XDG_STATE_HOME=str(tmp_path / "state"), HERMES_SDK_PLUGINS="",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "plugins" / "hermes-sdk-inbox"),
                                           env.get("PYTHONPATH", "")]))
    head, err, status = _quiet_after_head(f"{sys.executable} -m hermes_sdk_inbox.cli --store {url} list --json "
                                          "--state all", env)
    assert head.startswith("{") and err == "" and status == 141, err  # a line each: the pipe breaks
    head, err, status = _quiet_after_head(f"{sys.executable} -m hermes_sdk_inbox.cli --store {url} list", env)
    assert head.startswith("inb_") and err == "" and status in (0, 141), err  # short: may all fit the pipe
