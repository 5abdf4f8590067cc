"""Saved templates (``-t NAME``), several lines as one turn in the chat loop, and ``hermes-sdk operate``."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from hermes_sdk._app._cli_input import read_turn
from hermes_sdk._app.cli import main
from hermes_sdk.testing import HermesEmulator


@pytest.fixture(autouse=True)
def state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("HERMES_ENDPOINT_ID", "HERMES_SDK_IDEMPOTENCY_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    return tmp_path / "state" / "hermes-sdk"


def _point_at(emu: HermesEmulator, monkeypatch: pytest.MonkeyPatch) -> HermesEmulator:
    monkeypatch.setenv("HERMES_BASE_URL", emu.base_url)
    monkeypatch.setenv("HERMES_API_KEY", emu.api_key)
    return emu


@pytest.fixture
def env(hermes_emulator: HermesEmulator, monkeypatch: pytest.MonkeyPatch) -> HermesEmulator:
    return _point_at(hermes_emulator, monkeypatch)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_saved_template_fills_what_the_command_leaves_out(env: HermesEmulator, state: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "templates", "save", "terse", "-s", "Answer in one line.", "-m", "m2",
               "-o", "temperature", "0.2")[0] == 0
    path = state / "templates.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert run(capsys, "templates", "path")[1].strip() == str(path)
    assert run(capsys, "templates", "list")[1] == "terse\t-m m2  Answer in one line.\n"
    assert json.loads(run(capsys, "templates", "show", "terse")[1]) == {
        "name": "terse", "system": "Answer in one line.", "model": "m2", "options": [["temperature", "0.2"]]}
    assert run(capsys, "chat", "-t", "terse", "hi")[0] == 0
    body = env.requests_seen[-1].body
    assert body["messages"][0] == {"role": "system", "content": "Answer in one line."}
    assert body["model"] == "m2" and body["temperature"] == 0.2
    # the command line wins over the template
    assert run(capsys, "chat", "-t", "terse", "-s", "Be verbose.", "-m", "m3", "-o", "temperature", "0.9", "hi")[0] == 0
    body = env.requests_seen[-1].body
    assert body["messages"][0]["content"] == "Be verbose." and body["model"] == "m3" and body["temperature"] == 0.9
    assert run(capsys, "responses", "create", "-t", "terse", "an input")[0] == 0
    body = env.requests_seen[-1].body
    assert body["instructions"] == "Answer in one line." and body["model"] == "m2" and body["temperature"] == 0.2
    # mistakes are usage, and nothing is sent
    sent = len(env.requests_seen)
    code, _, err = run(capsys, "chat", "-t", "missing", "hi")
    assert code == 2 and "no such template (the templates: terse" in err
    assert run(capsys, "templates", "save", "bad", "-o", "temperature", "hot")[0] == 2
    assert run(capsys, "templates", "save", "empty")[0] == 2
    assert run(capsys, "templates", "save", "../x", "-s", "s")[0] == 2
    assert len(env.requests_seen) == sent
    assert run(capsys, "templates", "remove", "terse")[0] == 0 and run(capsys, "templates", "list")[1] == ""
    assert run(capsys, "templates", "remove", "terse")[0] == 1


def _reader(lines: list[str]) -> Any:
    feed: Iterator[str] = iter(lines)
    prompts: list[str] = []

    def read(prompt: str) -> str:
        prompts.append(prompt)
        for line in feed:
            return line
        raise EOFError

    read.prompts = prompts  # type: ignore[attr-defined]
    return read


def test_one_turn_may_span_lines() -> None:
    read = _reader(["!multi", "line one", "", "  indented", "!end", "next"])
    assert read_turn(read) == "line one\n\n  indented"
    assert read.prompts == ["> ", "... ", "... ", "... ", "... "]
    assert read_turn(_reader(["!multi EOT", "has !end inside", "!end", "!end EOT"])) == "has !end inside\n!end"
    assert read_turn(_reader(["first \\", "second \\", "third"])) == "first \nsecond \nthird"
    assert read_turn(_reader(["!multi", "cut short"])) == "cut short"  # Ctrl-D ends the block
    assert read_turn(_reader(["plain"])) == "plain"
    with pytest.raises(EOFError):
        read_turn(_reader([]))


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
def test_the_chat_loop_sends_a_multi_block_as_one_turn(hermes_emulator: HermesEmulator, tmp_path: Path) -> None:
    from test_cli import subprocess_env
    from test_cli_terminal import PtyProcess

    term = PtyProcess(["chat"], subprocess_env(hermes_emulator, XDG_STATE_HOME=str(tmp_path / "state")))
    term.expect("> ")
    term.type("!multi\n")
    term.expect("... ")
    term.type("dear Hermes,\n")
    term.type("two lines\n")
    term.type("!end\n")
    term.expect("ECHO: dear Hermes,")
    term.type("a long \\\n")
    term.type("line\n")
    term.expect("ECHO: a long ")
    term.type("exit\n")
    term.expect("continue with")
    assert term.wait() == 0
    chats = [r for r in hermes_emulator.requests_seen if r.path == "/v1/chat/completions"]
    assert [c.body["messages"][-1]["content"] for c in chats] == ["dear Hermes,\ntwo lines", "a long \nline"]


VICTIM = "/srv/data"


def test_operate_from_the_command_line(tools_emu: HermesEmulator, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    _point_at(tools_emu, monkeypatch)
    code, out, err = run(capsys, "operate", "--yes", "--reason", "ops-1", "summarise", "the", "day")
    assert code == 0 and "summarise the day" in out and "operator action: act_" in err and "(completed" in err
    # nobody to ask and no --yes: nothing is sent
    runs = len([r for r in tools_emu.requests_seen if r.path == "/v1/runs"])
    code, _, err = run(capsys, "operate", "--reason", "ops-2", "anything")
    assert code == 1 and "approval_required" in err
    assert len([r for r in tools_emu.requests_seen if r.path == "/v1/runs"]) == runs
    assert run(capsys, "operate", "--yes", "x")[0] == 2  # --reason is evidence: required
    # the agent's command waits for a person, and a later invocation answers it
    code, out, err = run(capsys, "operate", "--yes", "--reason", "ops-3", "--json", f"TOOL:terminal:rm -rf {VICTIM}")
    waiting = json.loads(out)
    assert code == 1 and waiting["status"] == "requires_human" and VICTIM in waiting["pending_approval"]["command"]
    assert f"--resume {waiting['action_id']}" in err
    code, out, err = run(capsys, "operate", "--resume", waiting["action_id"], "--choice", "deny", "--yes",
                         "--reason", "not today")
    assert code == 0 and "(completed" in err
    assert tools_emu.files.get(f"{VICTIM}/keep.txt") == "precious"  # denied: not run
    assert [r.body for r in tools_emu.requests_seen if r.path.endswith("/approval")] == [{"choice": "deny"}]
    code, out, err = run(capsys, "operate", "--resume", waiting["action_id"])  # follow only: the saved end
    assert code == 0 and "(completed" in err
    logged = json.loads(run(capsys, "logs", "--json", "-n", "4")[1])
    assert [e["command"] for e in logged] == ["operate"] * 4
    assert logged[1]["approvals"] == [{"answered": "deny"}] and logged[1]["action_id"] == waiting["action_id"]
    assert VICTIM in logged[2]["approvals"][0]["requested"] and logged[2]["status"] == "requires_human"
