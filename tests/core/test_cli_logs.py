"""``hermes-sdk logs``: the history of prompts, replies, sessions, runs and approvals, against the emulator."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from hermes_sdk._app.cli import main
from hermes_sdk.testing import HermesEmulator

KEY = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"


@pytest.fixture(autouse=True)
def state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for name in ("HERMES_ENDPOINT_ID", "HERMES_SDK_IDEMPOTENCY_STORE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    return tmp_path / "state" / "hermes-sdk"


@pytest.fixture
def env(hermes_emulator: HermesEmulator, monkeypatch: pytest.MonkeyPatch) -> HermesEmulator:
    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_API_KEY", hermes_emulator.api_key)
    return hermes_emulator


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def entries(capsys: pytest.CaptureFixture[str], *extra: str) -> list[dict[str, Any]]:
    code, out, _ = run(capsys, "logs", "--json", *extra)
    assert code == 0
    found: list[dict[str, Any]] = json.loads(out)
    return found


def test_every_chat_is_logged_newest_first(env: HermesEmulator, capsys: pytest.CaptureFixture[str]) -> None:
    assert entries(capsys) == []  # nothing yet, and no file made by looking
    for word in ("first", "second", "third", "fourth"):
        assert run(capsys, "chat", word)[0] == 0
    found = entries(capsys, "-n", "0")
    assert [e["prompt"] for e in found] == ["fourth", "third", "second", "first"]
    assert found[0]["reply"] == "ECHO: fourth" and found[0]["command"] == "chat" and found[0]["model"] == "hermes-agent"
    assert found[0]["session_id"] and found[0]["status"] == "stop" and found[0]["base_url"] == env.base_url
    assert [e["prompt"] for e in entries(capsys)] == ["fourth", "third", "second"]  # -n 3 by default, as llm
    assert [e["prompt"] for e in entries(capsys, "-n", "1")] == ["fourth"]
    # a streamed turn and a Responses call are logged too, with their ids
    assert run(capsys, "chat", "--stream", "streamed")[0] == 0
    assert run(capsys, "responses", "create", "an input", "-s", "Be brief.")[0] == 0
    newest, before = entries(capsys, "-n", "2")
    assert newest["command"] == "responses" and newest["reply"] == "ECHO: an input"
    assert newest["response_id"].startswith("resp_") and newest["system"] == "Be brief."
    assert before["prompt"] == "streamed" and before["reply"] == "ECHO: streamed" and before["status"] == "completed"


def test_search_and_show(env: HermesEmulator, capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("the lighthouse keeper", "a 100% match_here", "something else"):
        run(capsys, "chat", text)
    assert [e["prompt"] for e in entries(capsys, "-q", "LIGHTHOUSE")] == ["the lighthouse keeper"]
    assert [e["prompt"] for e in entries(capsys, "-q", "100%")] == ["a 100% match_here"]  # % and _ are literal
    assert entries(capsys, "-q", "h_re") == []  # a literal _, else it matches "here"
    one = entries(capsys, "-q", "keeper")[0]
    code, out, _ = run(capsys, "logs", "show", str(one["id"]), "--json")
    assert code == 0 and json.loads(out) == one
    code, out, _ = run(capsys, "logs", "show", str(one["id"]))
    assert code == 0 and "## Prompt\n\nthe lighthouse keeper" in out
    assert "## Reply\n\nECHO: the lighthouse keeper" in out
    code, out, _ = run(capsys, "logs", "-q", "keeper")  # the text listing
    assert code == 0 and out.startswith("# ") and f"(id {one['id']})" in out
    assert run(capsys, "logs", "show", "9999")[0] == 1


def test_logs_off_on_status_and_no_log(env: HermesEmulator, capsys: pytest.CaptureFixture[str], state: Path) -> None:
    run(capsys, "chat", "kept")
    code, out, _ = run(capsys, "logs", "status")
    assert code == 0 and "Logging is on" in out and "(1 entries)" in out
    assert run(capsys, "logs", "off")[1].startswith("Logging is off")
    assert (state / "logs-off").exists()
    run(capsys, "chat", "not kept")
    assert run(capsys, "logs", "on")[1].startswith("Logging is on")
    run(capsys, "chat", "--no-log", "not kept either")
    run(capsys, "chat", "kept again")
    assert [e["prompt"] for e in entries(capsys, "-n", "0")] == ["kept again", "kept"]
    assert run(capsys, "logs", "path")[1].strip() == str(state / "logs.db")


def test_a_run_is_logged_with_its_approvals(tools_emu: HermesEmulator, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HERMES_BASE_URL", tools_emu.base_url)
    monkeypatch.setenv("HERMES_API_KEY", tools_emu.api_key)
    code, _, _ = run(capsys, "run", "--approve", "deny", "TOOL:terminal:rm -rf /srv/data")
    assert code == 1  # denied
    entry = entries(capsys, "-n", "1")[0]
    assert entry["command"] == "run" and entry["prompt"] == "TOOL:terminal:rm -rf /srv/data"
    assert entry["run_id"].startswith("run_") and entry["status"] == "completed"
    assert entry["approvals"] == [{"requested": "rm -rf /srv/data"}, {"answered": "deny"}]
    code, out, _ = run(capsys, "logs", "-q", "rm -rf")
    assert "## Approvals\n\n- asked: rm -rf /srv/data\n- answered: deny" in out


def test_the_log_is_redacted_private_and_never_holds_the_key(monkeypatch: pytest.MonkeyPatch, state: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "hermes-demo")  # a plugin's redaction filter applies too
    with HermesEmulator(api_key=KEY) as emu:
        monkeypatch.setenv("HERMES_BASE_URL", emu.base_url)
        monkeypatch.setenv("HERMES_API_KEY", KEY)  # the key in the environment...
        prompt = f"my key is {KEY}, password=hunter2hunter2 and demo-secret-42"  # ...and in the prompt
        assert run(capsys, "chat", prompt)[0] == 0
        assert run(capsys, "chat", "--stream", prompt)[0] == 0
    for entry in entries(capsys):
        for field in ("prompt", "reply"):
            assert KEY not in entry[field] and "hunter2" not in entry[field] and "demo-secret-42" not in entry[field]
            assert "[REDACTED]" in entry[field] and "[DEMO-SECRET]" in entry[field]
    files = sorted(p.name for p in state.iterdir())
    for name in files:  # the database, and any journal SQLite left
        data = (state / name).read_bytes()
        assert KEY.encode() not in data and b"hunter2" not in data, name
    db = state / "logs.db"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600 and stat.S_IMODE(state.stat().st_mode) == 0o700
    assert b"my key is [REDACTED]" in db.read_bytes()


def test_an_existing_wide_log_file_is_narrowed(env: HermesEmulator, capsys: pytest.CaptureFixture[str],
                                               state: Path) -> None:
    state.mkdir(parents=True)
    (state / "logs.db").touch()
    os.chmod(state / "logs.db", 0o644)
    run(capsys, "chat", "hi")
    assert stat.S_IMODE((state / "logs.db").stat().st_mode) == 0o600
