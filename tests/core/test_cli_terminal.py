"""``hermes-sdk`` at a real terminal: a pty as the controlling terminal of a CLI subprocess.

The interactive chat loop, and approvals asked on /dev/tty while stdin is a pipe; a process with no
controlling terminal at all is refused in one clear line.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import subprocess
import sys
import termios
import time
from typing import Any, Optional

import pytest
from test_cli import subprocess_env

from hermes_sdk.testing.emulator import TOOLSETS

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a pty")
VICTIM = "/scratch/victim"


class PtyProcess:
    """A CLI subprocess whose controlling terminal is a new pty; ``on_pty`` names the fds on it."""

    def __init__(self, argv: list[str], env: dict[str, str], *, on_pty: tuple[int, ...] = (0, 1, 2),
                 stdin_data: Optional[str] = None) -> None:
        self.master, slave = pty.openpty()
        tty_fd = on_pty[0]

        def controlling_terminal() -> None:  # runs in the child after setsid (start_new_session)
            fcntl.ioctl(tty_fd, termios.TIOCSCTTY, 0)

        streams: dict[str, Any] = {name: (slave if fd in on_pty else subprocess.PIPE)
                                   for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr"))}
        self.proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", *argv], env=env, start_new_session=True,
                                     preexec_fn=controlling_terminal, **streams)
        os.close(slave)
        if stdin_data is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(stdin_data.encode())
            self.proc.stdin.close()
        self.seen = ""

    def expect(self, text: str, timeout: float = 30.0) -> str:
        """Read the terminal until ``text`` appeared; returns everything read so far."""
        end = time.monotonic() + timeout
        while text not in self.seen:
            left = end - time.monotonic()
            assert left > 0, f"{text!r} never appeared on the terminal; it showed:\n{self.seen}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    data = os.read(self.master, 4096)
                except OSError:  # the child closed the terminal
                    data = b""
                assert data, f"the terminal closed before {text!r}; it showed:\n{self.seen}"
                self.seen += data.decode("utf-8", "replace")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode())

    def wait(self, timeout: float = 30.0) -> int:
        try:
            code = self.proc.wait(timeout)
        finally:
            os.close(self.master)
        return code


def _env(emulator: Any, tmp_path: Any) -> dict[str, str]:
    return subprocess_env(emulator, XDG_STATE_HOME=str(tmp_path / "state"))


def test_interactive_chat_keeps_its_session(hermes_emulator: Any, tmp_path: Any) -> None:
    term = PtyProcess(["chat"], _env(hermes_emulator, tmp_path))
    term.expect("Type 'exit' or press Ctrl-D to quit.")
    term.expect("> ")
    term.type("my name is Ada\n")
    term.expect("ECHO: my name is Ada")
    term.type("what is my name\n")
    term.expect("ECHO: what is my name")
    term.type("exit\n")
    shown = term.expect("continue with: hermes-sdk chat -c")
    assert term.wait() == 0
    chats = [r for r in hermes_emulator.requests_seen if r.path == "/v1/chat/completions"]
    assert len(chats) == 2 and "X-Hermes-Session-Id" not in chats[0].headers
    session = chats[1].headers["X-Hermes-Session-Id"]
    assert f"session id: {session}" in shown
    assert [m["content"] for m in hermes_emulator.session_messages(session)] == [
        "my name is Ada", "ECHO: my name is Ada", "what is my name", "ECHO: what is my name"]
    state = json.loads((tmp_path / "state" / "hermes-sdk" / "state.json").read_text())
    assert state["last_session"][hermes_emulator.base_url]["session_id"] == session

    again = PtyProcess(["chat", "-c"], _env(hermes_emulator, tmp_path))  # Ctrl-D ends it too
    again.expect(f"(session {session})")
    again.expect("> ")
    again.type("and now?\n")
    again.expect("ECHO: and now?\r\n> ")  # the next prompt: readline now reads the terminal
    again.type("\x04")
    assert again.wait() == 0
    assert hermes_emulator.requests_seen[-1].headers["X-Hermes-Session-Id"] == session


def test_the_chat_loop_edits_lines_and_keeps_a_history(hermes_emulator: Any, tmp_path: Any) -> None:
    import stat

    left, right, up = "\x1b[D", "\x1b[C", "\x1b[A"
    term = PtyProcess(["chat"], _env(hermes_emulator, tmp_path))
    term.expect("> ")
    term.type("hllo world" + left * 10 + right + "e\n")  # a typo mended in the middle of the line
    term.expect("ECHO: hello world\r\n> ")
    term.type(up + "\n")  # the line before, again
    term.expect("ECHO: hello world\r\n> ")
    term.type("exit\n")
    assert term.wait() == 0
    chats = [r.body["messages"][-1]["content"] for r in hermes_emulator.requests_seen
             if r.path == "/v1/chat/completions"]
    assert chats == ["hello world", "hello world"]
    history = tmp_path / "state" / "hermes-sdk" / "chat_history"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600 and "hello world" in history.read_text()

    again = PtyProcess(["chat"], _env(hermes_emulator, tmp_path))  # the history outlives the process
    again.expect("> ")
    again.type(up + up + "\n")  # "exit" is the newest line kept; one more up: hello world
    again.expect("ECHO: hello world\r\n> ")
    again.type("\x04")
    assert again.wait() == 0


@pytest.fixture
def tools(hermes_emulator: Any) -> Any:
    hermes_emulator.toolsets = TOOLSETS
    hermes_emulator.files[f"{VICTIM}/keep.txt"] = "precious"
    return hermes_emulator


def test_run_with_a_piped_task_asks_on_dev_tty(tools: Any, tmp_path: Any) -> None:
    term = PtyProcess(["run"], _env(tools, tmp_path), on_pty=(2,), stdin_data=f"TOOL:terminal:rm -rf {VICTIM}\n")
    term.expect(f"the agent wants to run: rm -rf {VICTIM}")
    term.expect("Allow? [o]nce / [s]ession (this run) / [d]eny: ")
    term.type("o\n")
    assert term.wait() == 0
    assert term.proc.stdout is not None and "DONE:" in term.proc.stdout.read().decode()
    assert f"{VICTIM}/keep.txt" not in tools.files
    assert [json.loads(r.raw_body) for r in tools.requests_seen if r.path.endswith("/approval")] == [
        {"choice": "once"}]


def test_a_denied_answer_on_dev_tty_exits_1(tools: Any, tmp_path: Any) -> None:
    term = PtyProcess(["run", "-"], _env(tools, tmp_path), on_pty=(2,), stdin_data=f"TOOL:terminal:rm -rf {VICTIM}")
    term.expect("Allow? [o]nce / [s]ession (this run) / [d]eny: ")
    term.type("d\n")
    shown = term.expect("was not approved")
    assert term.wait() == 1 and tools.files[f"{VICTIM}/keep.txt"] == "precious"
    assert f"hermes_sdk.run: run completed, but the agent's command was not approved: rm -rf {VICTIM}" in shown


def test_delete_with_stdin_a_pipe_confirms_on_dev_tty(hermes_emulator: Any, tmp_path: Any) -> None:
    client = hermes_emulator.client(load_entrypoints=False)
    rid = client.responses(input="to delete", store=True).id
    argv = ["responses", "delete", rid, "--idempotency-key", "tty-del", "--reason", "cleanup"]
    term = PtyProcess(argv, _env(hermes_emulator, tmp_path), on_pty=(2,), stdin_data="")
    term.expect(f"Delete stored response {rid!r}? Reason: cleanup. [y/N] ")
    term.type("y\n")
    assert term.wait() == 0
    assert term.proc.stdout is not None and json.loads(term.proc.stdout.read())["deleted"] is True
    assert hermes_emulator.stored_response(rid) is None


def test_no_terminal_at_all_is_a_clear_refusal(tools: Any, tmp_path: Any) -> None:
    # A detached process (cron, CI): stdin is a pipe and there is no controlling terminal.
    out = subprocess.run([sys.executable, "-m", "hermes_sdk", "run", f"TOOL:terminal:rm -rf {VICTIM}"],
                         input="", capture_output=True, text=True, timeout=60, start_new_session=True,
                         env=_env(tools, tmp_path))
    assert out.returncode == 1 and tools.files[f"{VICTIM}/keep.txt"] == "precious"
    assert ("[approval] no terminal to ask: stdin is not a terminal and /dev/tty cannot be opened (cron, CI, a "
            "detached process): denied (decide up front with --approve once or --approve deny)") in out.stderr
    out = subprocess.run([sys.executable, "-m", "hermes_sdk", "responses", "delete", "resp_x", "--idempotency-key",
                          "k", "--reason", "r"], input="", capture_output=True, text=True, timeout=60,
                         start_new_session=True, env=_env(tools, tmp_path))
    assert out.returncode == 1 and "pass --yes to confirm" in out.stderr
    assert "hermes_sdk.approval_required" in out.stderr


def test_a_job_change_with_stdin_a_pipe_confirms_on_dev_tty(hermes_emulator: Any, tmp_path: Any) -> None:
    def approve(request: Any) -> Any:
        return request.approve(approver="t", policy_decision_id="p", reason="setup")

    with hermes_emulator.client(load_entrypoints=False, approval_provider=approve) as client:
        job = client.jobs.create(name="nightly", schedule="every 2h", prompt="hi", idempotency_key="tty-job")
    term = PtyProcess(["jobs", "pause", job.id, "--reason", "freeze"], _env(hermes_emulator, tmp_path),
                      on_pty=(2,), stdin_data="")
    term.expect(f"Pause cron job {job.id}? Reason: freeze. [y/N] ")
    term.type("yes\n")
    assert term.wait() == 0
    assert term.proc.stdout is not None and "\tpaused\t" in term.proc.stdout.read().decode()
