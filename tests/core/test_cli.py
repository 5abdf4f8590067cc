"""The ``hermes-sdk`` command against the emulator: output, exit codes, and the env configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from hermes_sdk.cli import main

P = "connector.hermes_agent."


@pytest.fixture
def env(hermes_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_API_KEY", hermes_emulator.api_key)
    monkeypatch.delenv("HERMES_ENDPOINT_ID", raising=False)
    monkeypatch.delenv("HERMES_SDK_IDEMPOTENCY_STORE", raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")  # installed entry points stay out of these runs
    return hermes_emulator


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_chat_prints_the_text(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "chat", "hello there") == (0, "ECHO: hello there\n", "")


def test_chat_json_carries_the_session_id(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "chat", "hi", "--session-id", "sess-cli", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["session_id"] == "sess-cli"
    assert doc["choices"][0]["message"]["content"] == "ECHO: hi"
    assert env.requests_seen[-1].headers["X-Hermes-Session-Id"] == "sess-cli"


def test_chat_stream_prints_as_it_arrives(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "chat", "one two three four", "--stream") == (0, "ECHO: one two three four\n", "")
    code, out, _ = run(capsys, "chat", "x", "--stream", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["status"] == "completed" and doc["text"] == "ECHO: x"


def test_a_failed_stream_exits_1_with_its_code(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "chat", "FAIL500 now", "--stream")
    assert code == 1 and err.startswith(P + "stream_failed: stream failed")


def test_a_partial_chat_says_its_finish_reason(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "chat", "TRUNCATE me")
    assert code == 0 and out == "ECHO-PART" * 4 + "\n" and err == "finish_reason: length\n"


def test_responses_create_get_delete(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "responses", "create", "first")
    assert code == 0 and out == "ECHO: first\n" and err.startswith("response id: resp_")
    rid = err.split(": ", 1)[1].strip()
    code, out, _ = run(capsys, "responses", "create", "second", "--previous-response-id", rid, "--json")
    assert code == 0 and json.loads(out)["output"][0]["content"][0]["text"] == "ECHO: second"
    assert run(capsys, "responses", "get", rid) == (0, "ECHO: first\n", "")
    code, out, _ = run(capsys, "responses", "get", rid, "--json")
    assert json.loads(out)["id"] == rid
    code, out, _ = run(capsys, "responses", "delete", rid, "--idempotency-key", "del-1", "--reason", "cleanup",
                       "--yes")
    assert code == 0 and json.loads(out) == {"id": rid, "object": "response", "deleted": True}
    code, _, err = run(capsys, "responses", "get", rid)
    assert code == 1 and err.startswith(P + "remote_rejected: ")


def test_responses_stream_and_conversation(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "responses", "create", "a", "--conversation", "cli-conv", "--stream") == (0, "ECHO: a\n", "")
    code, out, err = run(capsys, "responses", "create", "b", "--conversation", "cli-conv")
    assert code == 0 and out == "ECHO: b\n"
    assert [c["roles"] for c in env.upstream_calls][-1] == ["system", "user", "assistant", "user"]


def test_delete_without_confirmation_sends_nothing(env: Any, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", open(os.devnull))  # not a terminal: nobody can confirm
    code, _, err = run(capsys, "responses", "delete", "resp_x", "--idempotency-key", "k", "--reason", "r")
    assert code == 1 and err.startswith("hermes_sdk.approval_required: ")
    assert env.requests_seen == []


def test_errors_print_code_and_message_and_exit_1(env: Any, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_API_KEY", "wrong-key")
    code, out, err = run(capsys, "chat", "hi")
    assert code == 1 and out == "" and err.startswith(P + "authentication: ")
    assert "wrong-key" not in err
    monkeypatch.delenv("HERMES_BASE_URL")
    code, _, err = run(capsys, "chat", "hi")
    assert code == 1 and err.startswith(P)


@pytest.mark.parametrize("argv", [[], ["chat"], ["responses"], ["responses", "delete", "resp_1"],
                                  ["responses", "create", "x", "--conversation", "c", "--previous-response-id", "r"],
                                  ["nonsense"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2 and "usage: hermes-sdk" in capsys.readouterr().err


def test_capabilities_with_and_without_a_server(env: Any, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(capsys, "capabilities", "--json")
    caps = json.loads(out)
    assert code == 0 and [c["capability_id"] for c in caps] == [
        f"cap:hermes_agent:default:{op}" for op in
        ("chat", "chat_stream", "responses", "responses_stream", "response_get", "response_delete", "run_start",
         "run_get", "run_events", "run_approval", "run_stop", "health", "models", "server_capabilities", "toolsets")]
    monkeypatch.delenv("HERMES_BASE_URL")
    monkeypatch.setenv("HERMES_ENDPOINT_ID", "Prod-EU")
    code, out, _ = run(capsys, "capabilities")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 15 and lines[-1].startswith("cap:hermes_agent:prod-eu:toolsets")
    assert "approval=yes" in lines[5] and "key=required" in lines[5]


def test_plugins_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plugins")
    assert code == 0 and isinstance(json.loads(out), (list, dict))


def test_a_closed_pipe_is_quiet() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", "capabilities", "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={k: v for k, v in os.environ.items() if not k.startswith("HERMES_BASE")})
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()  # like `| head -c 10`
    err = proc.stderr.read().decode()
    proc.wait(30)
    assert "Traceback" not in err and "Exception ignored" not in err and proc.returncode in (0, 141)


def test_demo_runs_end_to_end() -> None:
    out = subprocess.run([sys.executable, "-m", "hermes_sdk", "demo"], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "HERMES_SDK_PLUGINS": ""})
    assert out.returncode == 0, out.stderr
    assert "ECHO: Tell me a short story about a lighthouse keeper" in out.stdout
    assert "status=completed" in out.stdout and "> response_get: 'ECHO: Summarize the incident notes'" in out.stdout


def test_emulator_command_serves_until_interrupted() -> None:
    import signal
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", "emulator", "--api-key", "cli-key"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(base + "/health", timeout=10) as reply:
            assert reply.status == 200
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(15)
    assert proc.returncode == 0


def test_a_repeated_delete_key_is_recognised_with_a_durable_store(env: Any, capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Any) -> None:
    monkeypatch.setenv("HERMES_SDK_IDEMPOTENCY_STORE", f"sqlite:///{tmp_path}/keys.db")
    code, _, err = run(capsys, "responses", "create", "to delete")
    rid = err.split(": ", 1)[1].strip()
    argv = ("responses", "delete", rid, "--idempotency-key", "cli-del", "--reason", "cleanup", "--yes")
    first = run(capsys, *argv)
    again = run(capsys, *argv)  # a new client, as a new process would be: the receipt is replayed
    assert first == again and first[0] == 0 and json.loads(first[1])["deleted"] is True
    assert len([r for r in env.requests_seen if r.method == "DELETE"]) == 1
