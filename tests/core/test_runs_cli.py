"""``hermes-sdk run`` against the emulator: live text and tool lines, approvals, JSON, exit codes."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from hermes_sdk._app.cli import main
from hermes_sdk.testing.emulator import TOOLSETS

VICTIM = "/scratch/victim"


@pytest.fixture
def env(hermes_emulator: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    # In-process runs never reach for the real terminal of whoever runs the tests (the /dev/tty
    # paths are tested in a pty, see test_cli_terminal.py).
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_API_KEY", hermes_emulator.api_key)
    monkeypatch.delenv("HERMES_ENDPOINT_ID", raising=False)
    monkeypatch.delenv("HERMES_SDK_IDEMPOTENCY_STORE", raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    hermes_emulator.toolsets = TOOLSETS
    hermes_emulator.files[f"{VICTIM}/keep.txt"] = "precious"
    return hermes_emulator


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["run", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def approvals(emu: Any) -> list[Any]:
    return [json.loads(r.raw_body) for r in emu.requests_seen if r.path.endswith("/approval")]


def test_plain_run_prints_its_text(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "hello there")
    assert code == 0 and out == "ECHO: hello there\n" and err.startswith("run id: run_")


def test_tool_lines_go_to_stderr(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "TOOL:terminal:echo from-cli")
    assert code == 0 and "DONE:" in out
    assert "[tool] terminal: echo from-cli\n" in err and "[tool] terminal done in " in err


def test_approve_deny_keeps_the_file_and_exits_1(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, f"TOOL:terminal:rm -rf {VICTIM}", "--approve", "deny")
    assert code == 1 and "[approval] denied (--approve deny)" in err and "[tool] terminal failed" in err
    assert err.endswith(f"hermes_sdk.run: run completed, but the agent's command was not approved: rm -rf {VICTIM}\n")
    assert approvals(env) == [{"choice": "deny"}] and env.files[f"{VICTIM}/keep.txt"] == "precious"


def test_approve_once(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, f"TOOL:terminal:rm -rf {VICTIM}", "--approve", "once")
    assert code == 0 and "[approval] answered: once" in err and approvals(env) == [{"choice": "once"}]
    assert f"{VICTIM}/keep.txt" not in env.files


def test_ask_without_a_terminal_denies(env: Any, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("o\n"))
    code, _, err = run(capsys, f"TOOL:terminal:rm -rf {VICTIM}")
    assert code == 1 and approvals(env) == [{"choice": "deny"}]
    assert "[approval] no terminal to ask: stdin is not a terminal and " in err
    assert "denied (decide up front with --approve once or --approve deny)" in err


def test_ask_prompts_at_the_terminal(env: Any, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", _Terminal("maybe\ns\n"))
    code, _, err = run(capsys, f"TOOL:terminal:rm -rf {VICTIM}/a||TOOL:terminal:rm -rf {VICTIM}/b")
    assert code == 0 and err.count("Allow? [o]nce / [s]ession (this run) / [d]eny: ") == 2  # "maybe" re-asks
    assert f"the agent wants to run: rm -rf {VICTIM}/a" in err
    assert approvals(env) == [{"choice": "session"}]  # the second command is covered by the session


def test_json_output_is_json_lines(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "TOOL:terminal:echo js", "--json", "--idempotency-key", "cli-json")
    lines = [json.loads(line) for line in out.splitlines()]
    first, events, doc = lines[0], lines[1:-1], lines[-1]
    assert first["type"] == "run" and first["run_id"].startswith("run_") and first["replayed"] is False
    assert {line["type"] for line in events} == {"event"} and events[-1]["event"] == "run.completed"
    assert [e["event"] for e in events][:2] == ["tool.started", "tool.completed"]
    assert events[0]["data"]["tool"] == "terminal" and events[0]["run_id"] == first["run_id"]
    assert code == 0 and doc["type"] == "result" and doc["status"] == "completed" and doc["events_complete"] is True
    assert doc["events_note"] is None
    assert doc["output"].startswith("DONE:") and doc["usage"]["total_tokens"] > 0
    assert doc["unapproved_commands"] == []


def test_a_failed_run_exits_1(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "FAIL400")
    assert code == 1 and "hermes_sdk.run: run failed" in err
    code, out, err = run(capsys, "FAIL400", "--json")
    error = json.loads(err.splitlines()[-1])  # one JSON object on stderr
    assert code == 1 and error["code"] == "hermes_sdk.run" and error["status"] == "failed"
    assert json.loads(out.splitlines()[-1])["status"] == "failed"


def test_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["run", "x", "--approve", "always"])
    assert info.value.code == 2


def test_a_replayed_key_prints_the_output(env: Any, capsys: pytest.CaptureFixture[str], tmp_path: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_SDK_IDEMPOTENCY_STORE", f"sqlite:///{tmp_path / 'keys.db'}")
    assert run(capsys, "once please", "--idempotency-key", "cli-replay")[0] == 0
    code, out, err = run(capsys, "once please", "--idempotency-key", "cli-replay")
    assert code == 0 and out == "ECHO: once please\n" and "(replayed)" in err and "were not all seen" in err
    assert len([r for r in env.requests_seen if r.path == "/v1/runs"]) == 1
    code, out, _ = run(capsys, "once please", "--idempotency-key", "cli-replay", "--json")
    doc = json.loads(out.splitlines()[-1])
    assert code == 0 and doc["events_complete"] is False and doc["events_note"]  # says why, as the text says it


def test_a_task_of_several_words_needs_no_quotes(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "clean", "the", "build", "dir")
    assert code == 0 and out == "ECHO: clean the build dir\n"


def test_run_json_lines_arrive_while_the_run_goes_on(hermes_emulator_factory: Any) -> None:
    import subprocess
    import sys

    from test_cli import subprocess_env

    emulator = hermes_emulator_factory(toolsets=TOOLSETS, tool_followup_delay=3.0)
    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", "run", "--json", "TOOL:terminal:echo live"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=subprocess_env(emulator))
    assert proc.stdout is not None
    first, second = json.loads(proc.stdout.readline()), json.loads(proc.stdout.readline())
    assert first["type"] == "run" and second == {**second, "type": "event", "event": "tool.started"}
    assert proc.poll() is None  # printed while the model's follow-up call (3 s) still runs
    rest = [json.loads(line) for line in proc.stdout]
    proc.communicate(timeout=30)
    assert proc.returncode == 0 and rest[-1]["type"] == "result" and rest[-1]["status"] == "completed"
