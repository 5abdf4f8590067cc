"""``hermes-sdk keys``: keys stored per server (0600), read from stdin or a file; the order a key is found in."""

from __future__ import annotations

import io
import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_sdk._app._cli_keys import PS_WARNING
from hermes_sdk._app.cli import main
from hermes_sdk.testing import HermesEmulator

KEY = "sk-stored-0123456789abcdefXYZ"


@pytest.fixture(autouse=True)
def state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("HERMES_ENDPOINT_ID", "HERMES_SDK_IDEMPOTENCY_STORE", "HERMES_API_KEY", "HERMES_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    return tmp_path / "state" / "hermes-sdk"


@pytest.fixture
def emu() -> Any:
    with HermesEmulator(api_key=KEY) as emulator:
        yield emulator


def run(capsys: pytest.CaptureFixture[str], *argv: str, stdin: str = "") -> tuple[int, str, str]:
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)  # a pipe: not a terminal
    try:
        code = main(list(argv))
    finally:
        sys.stdin = old
    out, err = capsys.readouterr()
    return code, out, err


def test_a_stored_key_is_used_for_its_server(emu: HermesEmulator, capsys: pytest.CaptureFixture[str],
                                             state: Path) -> None:
    code, out, err = run(capsys, "keys", "set", "--endpoint", emu.base_url + "/", stdin=KEY + "\n")
    assert code == 0 and KEY not in out + err and "key stored for " + emu.base_url in err
    path = state / "keys.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(state.stat().st_mode) == 0o700
    assert json.loads(path.read_text()) == {"keys": {emu.base_url: KEY}}
    code, out, _ = run(capsys, "keys", "list")
    assert code == 0 and out == f"{emu.base_url}\t********{KEY[-4:]}\n"  # masked
    assert KEY not in run(capsys, "keys", "list", "--json")[1]
    assert run(capsys, "keys", "path")[1].strip() == str(path)
    # no flag, no HERMES_API_KEY: the key stored for this base URL, however it is spelt
    assert run(capsys, "chat", "--base-url", emu.base_url.upper().replace("HTTP", "http"), "hello") == (
        0, "ECHO: hello\n", "")
    assert emu.requests_seen[-1].headers["Authorization"] == f"Bearer {KEY}"
    assert run(capsys, "keys", "remove", "--base-url", emu.base_url)[0] == 0
    code, _, err = run(capsys, "chat", "--base-url", emu.base_url, "hello")
    assert code == 1 and "missing_credential" in err and "hermes-sdk keys set" in err
    assert run(capsys, "keys", "remove", "--endpoint", emu.base_url)[0] == 1  # nothing left to remove


def test_keys_set_from_a_file_and_a_refused_stored_key_says_where_it_came_from(
        emu: HermesEmulator, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    secret = tmp_path / "key.txt"
    secret.write_text("sk-wrong-key-000000000000\n")
    assert run(capsys, "keys", "set", "--endpoint", emu.base_url, "--file", str(secret))[0] == 0
    code, _, err = run(capsys, "chat", "--base-url", emu.base_url, "hi")
    assert code == 1 and "authentication" in err and "the key stored for" in err and "wrong-key-000" not in err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert run(capsys, "keys", "set", "--endpoint", emu.base_url, "--file", str(empty))[0] == 2
    assert run(capsys, "keys", "set")[0] == 2  # which server?


def test_the_order_flag_then_environment_then_stored(emu: HermesEmulator, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run(capsys, "keys", "set", "--endpoint", emu.base_url, stdin="sk-stale-stored-0000000000\n")
    monkeypatch.setenv("HERMES_BASE_URL", emu.base_url)
    monkeypatch.setenv("HERMES_API_KEY", KEY)
    assert run(capsys, "chat", "env wins") == (0, "ECHO: env wins\n", "")  # the environment over the stored key
    monkeypatch.setenv("HERMES_API_KEY", "sk-stale-env-000000000000")
    right = tmp_path / "right.key"
    right.write_text(KEY)
    assert run(capsys, "chat", "--api-key-file", str(right), "file wins") == (0, "ECHO: file wins\n", "")
    assert run(capsys, "--api-key", "-", "chat", "stdin wins", stdin=KEY + "\n") == (0, "ECHO: stdin wins\n", "")
    assert KEY not in json.dumps(emu.requests_seen[-1].body)  # stdin was the key, never a prompt
    assert run(capsys, "--api-key", "-", "chat", stdin=KEY + "\n")[0] == 2  # and no prompt is read after it
    code, out, err = run(capsys, "chat", "--api-key", KEY, "flag wins")
    assert (code, out) == (0, "ECHO: flag wins\n") and err == PS_WARNING + "\n"  # visible in ps: said
    assert run(capsys, "chat", "--api-key", KEY, "--api-key-file", str(right), "x")[0] == 2


def test_keys_set_on_a_terminal_does_not_echo(emu: HermesEmulator, tmp_path: Path) -> None:
    pytest.importorskip("termios")
    from test_cli import subprocess_env
    from test_cli_terminal import PtyProcess

    env = subprocess_env(emu, XDG_STATE_HOME=str(tmp_path / "state"))
    env.pop("HERMES_API_KEY")
    term = PtyProcess(["keys", "set"], env)
    term.expect("API key: ")
    term.type(KEY + "\n")
    shown = term.expect("key stored for")
    assert term.wait() == 0 and KEY not in shown
    stored = json.loads((tmp_path / "state" / "hermes-sdk" / "keys.json").read_text())
    assert stored == {"keys": {emu.base_url: KEY}}
