"""``hermes-sdk sessions ...`` and ``hermes-sdk jobs ...`` against the emulator (approvals as for deletes)."""

from __future__ import annotations

import io
import json
import os
import sys
from typing import Any

import pytest

from hermes_sdk._app.cli import main

P = "connector.hermes_agent."


@pytest.fixture
def env(hermes_emulator: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Any:
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))  # never the real terminal
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_API_KEY", hermes_emulator.api_key)
    monkeypatch.delenv("HERMES_ENDPOINT_ID", raising=False)
    monkeypatch.delenv("HERMES_SDK_IDEMPOTENCY_STORE", raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    monkeypatch.setattr(sys, "stdin", open(os.devnull))  # noqa: SIM115  (not a terminal: nobody to ask)
    return hermes_emulator


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _session(env: Any, capsys: pytest.CaptureFixture[str]) -> str:
    assert run(capsys, "chat", "my name is Ada")[0] == 0
    with env.client(load_entrypoints=False) as client:
        return client.sessions.list().data[0].id  # type: ignore[no-any-return]


# ---------------------------------------------------------------- sessions


def test_sessions_list_get_and_messages(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _session(env, capsys)
    code, out, _ = run(capsys, "sessions", "list")
    first = out.splitlines()[0].split("\t")
    assert code == 0 and first[0] == sid and first[1] == "(untitled)" and first[2] == "2 messages"
    code, out, _ = run(capsys, "sessions", "list", "--json", "--all")
    assert code == 0 and [s["id"] for s in json.loads(out)] == [sid]
    code, out, _ = run(capsys, "sessions", "get", sid)
    assert code == 0 and f"id: {sid}\n" in out and "message_count: 2\n" in out and "source: api_server\n" in out
    assert json.loads(run(capsys, "sessions", "get", sid, "--json")[1])["id"] == sid
    code, out, err = run(capsys, "sessions", "messages", sid)
    assert (code, out, err) == (0, "user: my name is Ada\nassistant: ECHO: my name is Ada\n", "")
    doc = json.loads(run(capsys, "sessions", "messages", sid, "--json")[1])
    assert doc["session_id"] == sid and [m["role"] for m in doc["messages"]] == ["user", "assistant"]


def test_sessions_list_pages(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    for n in range(3):
        assert run(capsys, "chat", f"turn {n}")[0] == 0
    code, out, err = run(capsys, "sessions", "list", "--limit", "2")
    assert code == 0 and len(out.splitlines()) == 2 and "more sessions: --offset 2 (or --all)" in err
    assert len(run(capsys, "sessions", "list", "--all")[1].splitlines()) == 3


def test_messages_of_a_forked_parent_say_whose_transcript_it_is(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _session(env, capsys)
    with env.client(load_entrypoints=False) as client:
        fork = client.sessions.fork(sid, idempotency_key="fork-1")
    code, out, err = run(capsys, "sessions", "messages", sid)
    assert code == 0 and out.startswith("user: my name is Ada")
    assert err == f"hermes-sdk: Hermes answered with session {fork.id} (the newest fork of {sid})\n"


def test_sessions_chat_continues_the_stored_history(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    sid = _session(env, capsys)
    assert run(capsys, "sessions", "chat", sid, "what", "is", "my", "name?") == (0, "ECHO: what is my name?\n", "")
    code, out, _ = run(capsys, "sessions", "chat", sid, "--stream", "streamed", "words")
    assert code == 0 and out == "ECHO: streamed words\n"
    code, out, _ = run(capsys, "sessions", "chat", sid, "as json", "--json")
    assert code == 0 and json.loads(out)["session_id"] == sid
    assert len(env.session_messages(sid)) == 8
    code, _, err = run(capsys, "sessions", "get", "no such session")
    assert code == 1 and err.startswith(P)


# ---------------------------------------------------------------- jobs


def _create(capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code, out, err = run(capsys, "jobs", "create", "--name", "nightly", "--schedule", "every 2h", "--prompt",
                         "Summarise the tickets", "--reason", "OPS-7 report", "--yes", "--json", *extra)
    assert code == 0, err
    return json.loads(out)["id"]  # type: ignore[no-any-return]


def _mutations(env: Any) -> list[tuple[str, str]]:
    return [(r.method, r.path) for r in env.requests_seen if r.path.startswith("/api/jobs") and r.method != "GET"]


def test_jobs_lifecycle_with_yes(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    jid = _create(capsys, "--skill", "triage", "--repeat", "3")
    code, out, _ = run(capsys, "jobs", "list")
    assert code == 0 and out.split("\t")[:4] == [jid, "nightly", "every 120m", "scheduled"]
    code, out, _ = run(capsys, "jobs", "get", jid)
    assert code == 0 and "prompt: Summarise the tickets\n" in out and "skills: triage\n" in out
    code, out, _ = run(capsys, "jobs", "pause", jid, "--reason", "freeze", "--yes")
    assert code == 0 and "\tpaused\t" in out
    assert run(capsys, "jobs", "list")[1] == ""  # paused: listed only with --all
    assert jid in run(capsys, "jobs", "list", "--all")[1]
    assert "\tscheduled\t" in run(capsys, "jobs", "resume", jid, "--reason", "thaw", "--yes")[1]
    code, out, err = run(capsys, "jobs", "run", jid, "--reason", "now please", "--yes")
    assert code == 0 and out.startswith(jid) and "runs it on its next tick" in err
    code, out, _ = run(capsys, "jobs", "delete", jid, "--reason", "done", "--yes")
    assert code == 0 and json.loads(out) == {"id": jid, "deleted": True}
    assert _mutations(env) == [("POST", "/api/jobs"), ("POST", f"/api/jobs/{jid}/pause"),
                               ("POST", f"/api/jobs/{jid}/resume"), ("POST", f"/api/jobs/{jid}/run"),
                               ("DELETE", f"/api/jobs/{jid}")]
    code, _, err = run(capsys, "jobs", "get", jid, "--json")
    assert code == 1 and json.loads(err)["code"].startswith(P)


@pytest.mark.parametrize("argv", [
    ["jobs", "create", "--name", "n", "--schedule", "every 1h", "--reason", "r"],
    ["jobs", "pause", "0123456789ab", "--reason", "r"], ["jobs", "resume", "0123456789ab", "--reason", "r"],
    ["jobs", "run", "0123456789ab", "--reason", "r"], ["jobs", "delete", "0123456789ab", "--reason", "r"]])
def test_without_yes_or_a_terminal_nothing_is_sent(env: Any, capsys: pytest.CaptureFixture[str],
                                                   argv: list[str]) -> None:
    code, _, err = run(capsys, *argv)
    why, error = err.splitlines()
    assert code == 1 and why.endswith("; pass --yes to confirm") and error.startswith("hermes_sdk.approval_required: ")
    assert _mutations(env) == []


def test_the_operator_confirms_at_the_prompt(env: Any, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    jid = _create(capsys)
    monkeypatch.setattr(sys, "stdin", _Terminal("n\n"))
    code, _, err = run(capsys, "jobs", "delete", jid, "--reason", "cleanup")
    assert code == 1 and f"Delete cron job {jid} and its output? Reason: cleanup. [y/N] " in err
    assert "hermes_sdk.approval_denied: approval was denied by " in err and "declined at the terminal" in err
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    code, out, err = run(capsys, "jobs", "pause", jid, "--reason", "freeze")
    assert code == 0 and f"Pause cron job {jid}? Reason: freeze. [y/N] " in err and "\tpaused\t" in out
    assert _mutations(env)[-1] == ("POST", f"/api/jobs/{jid}/pause")
    assert ("DELETE", f"/api/jobs/{jid}") not in _mutations(env)


def test_a_bad_job_id_or_schedule_is_refused(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "jobs", "pause", "NOT-HEX", "--reason", "r", "--yes")
    assert code == 1 and err.startswith(P + "configuration_or_input: ") and _mutations(env) == []
    code, _, err = run(capsys, "jobs", "create", "--name", "n", "--schedule", "whenever", "--reason", "r", "--yes",
                       "--json")
    error = json.loads(err)
    assert code == 1 and error["retryable"] is False and error["uncertain_outcome"] is False
    assert run(capsys, "jobs", "list", "--all")[1] == ""  # nothing was stored
