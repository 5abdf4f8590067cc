"""Small CLI slips a stranger hit (issue 41): an empty prompt is usage (2), a subcommand's usage
error shows that subcommand's usage, and ``keys set URL`` takes the server as llm's ``keys set NAME``
does. In-process, through ``main(argv)``: the process is not the point here."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_sdk._app.cli import main

KEY = "sk-slips-0123456789abcdefXYZ"


@pytest.fixture(autouse=True)
def state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("HERMES_ENDPOINT_ID", "HERMES_SDK_IDEMPOTENCY_STORE", "HERMES_API_KEY", "HERMES_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    return tmp_path / "state" / "hermes-sdk"


def run(capsys: pytest.CaptureFixture[str], *argv: str, stdin: str = "") -> tuple[int, str, str]:
    old = sys.stdin
    sys.stdin = io.StringIO(stdin)  # a pipe: not a terminal
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    finally:
        sys.stdin = old
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("text", ["", "   "])
def test_an_empty_prompt_is_usage_and_nothing_is_sent(hermes_emulator: Any, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    code, out, err = run(capsys, "chat", text)  # no server, no key: the prompt is refused first
    assert (code, out) == (2, "") and "no prompt" in err and "usage: hermes-sdk chat" in err
    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_API_KEY", hermes_emulator.api_key)
    before = len(hermes_emulator.requests_seen)
    assert run(capsys, "chat", text)[0] == 2
    assert run(capsys, "responses", "create", text)[0] == 2
    assert len(hermes_emulator.requests_seen) == before


@pytest.mark.parametrize("argv,usage", [
    (["chat", "--bogus", "hi"], "usage: hermes-sdk chat "),
    (["keys", "set", "--bogus"], "usage: hermes-sdk keys set "),
    (["responses", "create", "--bogus", "hi"], "usage: hermes-sdk responses create "),
    (["keys", "set"], "usage: hermes-sdk keys set "),  # a usage error found after parsing
])
def test_a_subcommands_usage_error_shows_its_own_usage(capsys: pytest.CaptureFixture[str], argv: list[str],
                                                       usage: str) -> None:
    code, _, err = run(capsys, *argv, stdin=KEY + "\n")
    assert code == 2 and err.startswith(usage), err
    assert "COMMAND ..." not in err  # not the top level's


def test_keys_set_and_remove_take_the_server_as_an_argument(capsys: pytest.CaptureFixture[str], state: Path) -> None:
    url = "http://127.0.0.1:8642"
    code, out, err = run(capsys, "keys", "set", url + "/", stdin=KEY + "\n")
    assert code == 0 and KEY not in out + err and f"key stored for {url}" in err
    assert json.loads((state / "keys.json").read_text()) == {"keys": {url: KEY}}
    code, _, err = run(capsys, "keys", "set", url, "--endpoint", "http://other:1", stdin=KEY + "\n")
    assert code == 2 and "two servers given" in err
    assert run(capsys, "keys", "set", url, "--endpoint", url, stdin=KEY + "\n")[0] == 0  # the same one: fine
    assert run(capsys, "keys", "remove", url)[0] == 0
    assert json.loads((state / "keys.json").read_text()) == {"keys": {}}
