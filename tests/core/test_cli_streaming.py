"""On a terminal a reply streams by default (``--no-stream`` turns it off); piped, it does not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_cli import subprocess_env
from test_cli_terminal import PtyProcess

from hermes_sdk.testing import HermesEmulator

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel"


def _chats(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.path == "/v1/chat/completions"]


def test_on_a_terminal_the_first_words_show_before_the_reply_ends(hermes_emulator: HermesEmulator,
                                                                  tmp_path: Path) -> None:
    hermes_emulator.token_delay = 0.4  # each piece of the reply a while after the one before
    term = PtyProcess(["chat", WORDS], subprocess_env(hermes_emulator, XDG_STATE_HOME=str(tmp_path / "state")))
    shown = term.expect("ECHO:")
    # Measured by what the terminal showed, not by a clock: when the first words arrived, the last
    # had not (a reply printed whole would show them together).
    assert "hotel" not in shown, shown
    shown = term.expect("hotel\r\n")  # the line's end too: it may come in a read of its own
    assert term.wait() == 0
    assert _chats(hermes_emulator)[-1].body.get("stream") is True
    assert shown.replace("\r\n", "\n").endswith(f"ECHO: {WORDS}\n")


def test_no_stream_on_a_terminal_and_piped_output_are_one_reply(hermes_emulator: HermesEmulator,
                                                                tmp_path: Path) -> None:
    env = subprocess_env(hermes_emulator, XDG_STATE_HOME=str(tmp_path / "state"))
    term = PtyProcess(["chat", "--no-stream", "whole"], env)
    term.expect("ECHO: whole")
    assert term.wait() == 0
    assert not _chats(hermes_emulator)[-1].body.get("stream")
    term = PtyProcess(["chat", "--json", "as json"], env)  # --json keeps its one JSON object on a terminal
    term.expect('"session_id"')
    assert term.wait() == 0 and not _chats(hermes_emulator)[-1].body.get("stream")
    piped = subprocess.run([sys.executable, "-m", "hermes_sdk", "chat", "piped"], env=env, capture_output=True,
                           text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert (piped.returncode, piped.stdout) == (0, "ECHO: piped\n")
    assert not _chats(hermes_emulator)[-1].body.get("stream")  # not a terminal: today's behaviour
    piped = subprocess.run([sys.executable, "-m", "hermes_sdk", "responses", "create", "--stream", "asked"], env=env,
                           capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert piped.returncode == 0 and piped.stdout == "ECHO: asked\n"


def test_responses_create_streams_on_a_terminal(hermes_emulator: HermesEmulator, tmp_path: Path) -> None:
    term = PtyProcess(["responses", "create", "streamed input"],
                      subprocess_env(hermes_emulator, XDG_STATE_HOME=str(tmp_path / "state")))
    term.expect("response id: resp_")
    assert term.wait() == 0
    posts = [r for r in hermes_emulator.requests_seen if r.path == "/v1/responses"]
    assert posts[-1].body.get("stream") is True
