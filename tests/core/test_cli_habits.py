"""``hermes-sdk`` measured against ``llm``: piped text and a prompt together, ``-s``, a misspelt
``-o`` refused with the close match, line editing and history in the chat loop, ``-c`` whatever
spelling of the server's URL, and idempotency keys kept across invocations."""

# ruff: noqa: F811  (the fixtures imported from test_cli are parameters here)
from __future__ import annotations

import io
import json
import stat
import subprocess
import sys
from typing import Any

import pytest
from test_cli import env, no_terminal_and_a_private_state_dir, run, subprocess_env  # noqa: F401  (fixtures)

from hermes_sdk._app._cli_support import server_key


def _cli(emulator: Any, *argv: str, stdin: str = "", **env_extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hermes_sdk", *argv], input=stdin, capture_output=True, text=True,
                          timeout=60, env=subprocess_env(emulator, **env_extra))


def test_piped_text_and_the_prompt_are_both_sent(env: Any, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    out = _cli(env, "chat", "summarize", stdin="line one\nline two\n")  # cat notes.txt | hermes-sdk chat summarize
    assert out.returncode == 0, out.stderr
    assert env.requests_seen[-1].body["messages"][-1]["content"] == "line one\nline two\n\nsummarize"
    assert out.stdout == "ECHO: line one\nline two\n\nsummarize\n"
    for argv, field in ((("responses", "create", "what", "now"), "input"), (("run", "what", "now"), "input")):
        monkeypatch.setattr(sys, "stdin", io.StringIO("the notes\n"))
        assert run(capsys, *argv)[0] == 0
        sent = [r for r in env.requests_seen if r.method == "POST"][-1].body
        assert sent[field] == "the notes\n\nwhat now"
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))  # an empty pipe adds nothing
    assert run(capsys, "chat", "just", "this") == (0, "ECHO: just this\n", "")


def test_dash_s_is_the_system_prompt(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "chat", "hi", "-s", "Be terse.")[0] == 0
    assert env.requests_seen[-1].body["messages"][0] == {"role": "system", "content": "Be terse."}
    assert run(capsys, "responses", "create", "hi", "-s", "Be kind.")[0] == 0
    assert env.requests_seen[-1].body["instructions"] == "Be kind."
    with env.client(load_entrypoints=False) as client:
        session = client.sessions.list().data[0].id
    assert run(capsys, "sessions", "chat", session, "hi", "-s", "Be brief.")[0] == 0
    assert "Be brief." in json.dumps(env.requests_seen[-1].body)


def test_a_misspelt_dash_o_is_refused_with_a_suggestion(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "chat", "hi", "-o", "temprature", "0.2")
    assert (code, out) == (2, "") and "-o temprature: unknown option (did you mean 'temperature'?" in err
    code, _, err = run(capsys, "responses", "create", "hi", "-o", "max_output_token", "5")
    assert code == 2 and "did you mean 'max_output_tokens'?" in err
    code, _, err = run(capsys, "chat", "hi", "-o", "colour", "blue")  # nothing close: the options are listed
    assert code == 2 and "did you mean" not in err and "the options: frequency_penalty, " in err
    assert "messages" not in err.split("the options:")[1]  # names with their own flag are not offered
    assert env.requests_seen == []  # refused before anything was sent
    assert run(capsys, "chat", "hi", "-o", "temperature", "0.2")[0] == 0


def test_continue_finds_the_session_whatever_the_url_spelling(env: Any, capsys: pytest.CaptureFixture[str],
                                                              monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("HERMES_BASE_URL", env.base_url + "/")
    assert run(capsys, "chat", "my name is Ada")[0] == 0
    state = tmp_path / "state" / "hermes-sdk" / "state.json"
    session = json.loads(state.read_text())["last_session"][env.base_url]["session_id"]  # one spelling kept
    for spelling in (env.base_url, env.base_url.replace("http://", "HTTP://")):
        assert run(capsys, "chat", "-c", "again", "--base-url", spelling)[0] == 0
        assert env.requests_seen[-1].headers["X-Hermes-Session-Id"] == session
    assert server_key("http://Example.COM:80/") == server_key("HTTP://example.com") == "http://example.com"
    assert server_key("https://h.example:443") == "https://h.example"
    assert server_key("https://h.example:8443/") == "https://h.example:8443"
    assert server_key("http://[::1]:80/") == "http://[::1]"


def test_cli_keeps_idempotency_keys_across_invocations(env: Any, tmp_path: Any) -> None:
    state = tmp_path / "own-state"
    first = _cli(env, "run", "--idempotency-key", "nightly-1", "--approve", "deny", "count", "to", "three",
                 XDG_STATE_HOME=str(state))
    again = _cli(env, "run", "--idempotency-key", "nightly-1", "--approve", "deny", "count", "to", "three",
                 XDG_STATE_HOME=str(state))
    assert first.returncode == again.returncode == 0, first.stderr + again.stderr
    run_id = first.stderr.split("run id: ", 1)[1].split()[0]
    assert f"run id: {run_id} (replayed)" in again.stderr  # the second process replays the first run
    assert len([r for r in env.requests_seen if r.method == "POST" and r.path == "/v1/runs"]) == 1
    db = state / "hermes-sdk" / "idempotency.db"
    assert stat.S_IMODE(db.stat().st_mode) == 0o600 and stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    for side in db.parent.glob("idempotency.db-*"):
        assert stat.S_IMODE(side.stat().st_mode) == 0o600, side
    # HERMES_SDK_IDEMPOTENCY_STORE still chooses the store: a key kept elsewhere is a new run here.
    other = _cli(env, "run", "--idempotency-key", "nightly-1", "--approve", "deny", "count", "to", "three",
                 XDG_STATE_HOME=str(state), HERMES_SDK_IDEMPOTENCY_STORE=f"sqlite:///{tmp_path}/other.db")
    assert other.returncode == 0 and "(replayed)" not in other.stderr


def test_a_key_that_cannot_be_kept_is_refused(env: Any, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    code, _, err = run(capsys, "run", "--idempotency-key", "k1", "hello")
    assert code == 1 and "cannot keep the idempotency key" in err and "HERMES_SDK_IDEMPOTENCY_STORE" in err
    assert env.requests_seen == []
    assert run(capsys, "chat", "no key, no store needed")[0] == 0  # without a key nothing needs keeping


def test_state_dir_is_narrowed_to_the_user(env: Any, capsys: pytest.CaptureFixture[str], tmp_path: Any) -> None:
    folder = tmp_path / "state" / "hermes-sdk"
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)
    assert run(capsys, "chat", "hi")[0] == 0
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert json.loads((folder / "state.json").read_text())["last_session"]
