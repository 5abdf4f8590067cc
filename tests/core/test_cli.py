"""The ``hermes-sdk`` command against the emulator: output, exit codes, and the env configuration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import pytest

from hermes_sdk._app.cli import main

P = "connector.hermes_agent."


@pytest.fixture(autouse=True)
def no_terminal_and_a_private_state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """In-process commands never reach for the real terminal of whoever runs the tests (the /dev/tty
    paths are tested in a pty, test_cli_terminal.py), nor write the real ~/.local/state."""
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


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
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [line["type"] for line in lines] == ["event"] * (len(lines) - 1) + ["result"]
    assert lines[-1]["status"] == "completed" and lines[-1]["text"] == "ECHO: x" and "events" not in lines[-1]
    assert lines[-2]["data"] == "[DONE]" and lines[-2]["terminal"] is True


def test_a_failed_stream_exits_1_with_its_code(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "chat", "FAIL500 now", "--stream")
    assert code == 1 and err == P + "stream_failed: the chat stream finished with finish_reason 'error'\n"


def test_a_partial_chat_says_its_finish_reason(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "chat", "TRUNCATE me")
    assert code == 1 and out == "ECHO-PART" * 4 + "\n"
    assert err == "finish_reason: length (the agent did not complete)\n"


@pytest.mark.parametrize("prompt", ["FAIL500 now", "TRUNCATE me"])
def test_an_agent_failure_exits_1_with_and_without_stream(env: Any, capsys: pytest.CaptureFixture[str],
                                                         prompt: str) -> None:
    for extra in ([], ["--stream"], ["--json"], ["--stream", "--json"]):
        code, _, err = run(capsys, "chat", prompt, *extra)
        assert code == 1 and err, (extra, err)
    assert run(capsys, "chat", "fine")[0] == 0 and run(capsys, "chat", "fine", "--stream")[0] == 0


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
    code, out, err = run(capsys, "responses", "create", "a", "--conversation", "cli-conv", "--stream")
    assert (code, out) == (0, "ECHO: a\n") and err.startswith("response id: resp_")
    code, out, err = run(capsys, "responses", "create", "b", "--conversation", "cli-conv")
    assert code == 0 and out == "ECHO: b\n"
    assert [c["roles"] for c in env.upstream_calls][-1] == ["system", "user", "assistant", "user"]


def test_delete_without_confirmation_sends_nothing(env: Any, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", open(os.devnull))  # not a terminal: nobody can confirm
    code, _, err = run(capsys, "responses", "delete", "resp_x", "--idempotency-key", "k", "--reason", "r")
    why, error = err.splitlines()
    assert code == 1 and error.startswith("hermes_sdk.approval_required: ")
    assert why == ("hermes-sdk: no terminal to ask: stdin is not a terminal and /dev/tty cannot be opened "
                   "(cron, CI, a detached process); pass --yes to confirm")
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


@pytest.mark.parametrize("argv", [[], ["responses"], ["responses", "delete", "resp_1"],
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
    from hermes_sdk._app.builtin import BUILTIN_SPECS

    assert code == 0
    assert [c["capability_id"] for c in caps] == [f"cap:hermes_agent:default:{op}" for op in BUILTIN_SPECS]
    assert list(BUILTIN_SPECS)[:7] == ["chat", "chat_stream", "responses", "responses_stream", "response_get",
                                       "response_delete", "run_start"]
    monkeypatch.delenv("HERMES_BASE_URL")
    monkeypatch.setenv("HERMES_ENDPOINT_ID", "Prod-EU")
    code, out, _ = run(capsys, "capabilities")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(BUILTIN_SPECS)
    assert lines[list(BUILTIN_SPECS).index("toolsets")].startswith("cap:hermes_agent:prod-eu:toolsets")
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


def test_emulator_command_prints_export_lines_and_serves_until_interrupted() -> None:
    import signal
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", "emulator", "--api-key", "cli-key"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first, second = proc.stdout.readline().strip(), proc.stdout.readline().strip()
        assert first.startswith("export HERMES_BASE_URL=http://127.0.0.1:")
        assert second == "export HERMES_API_KEY=cli-key"
        assert "paste the lines above" in proc.stderr.readline()
        base = first.split("=", 1)[1]
        request = urllib.request.Request(base + "/v1/models", headers={"Authorization": "Bearer cli-key"})
        with urllib.request.urlopen(request, timeout=10) as reply:
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


# ---------------------------------------------------------------- parity with llm / openai habits


_STATE = tempfile.TemporaryDirectory(prefix="hermes-cli-state-")  # removed when the test process ends


def subprocess_env(emulator: Any, **extra: str) -> dict[str, str]:
    """The environment of a ``hermes-sdk`` subprocess: this checkout first, a throwaway state dir."""
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    root = str(Path(__file__).resolve().parents[2])
    env.update(HERMES_BASE_URL=emulator.base_url, HERMES_API_KEY=emulator.api_key, HERMES_SDK_PLUGINS="",
               PYTHONPATH=os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p),
               XDG_STATE_HOME=os.environ.get("XDG_STATE_HOME") or _STATE.name)  # the test's own (conftest)
    env.update(extra)
    return env


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_sdk import __version__

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"hermes-sdk {__version__}\n"


def test_a_piped_prompt_is_read_from_stdin(env: Any) -> None:
    out = subprocess.run([sys.executable, "-m", "hermes_sdk", "chat"], input="piped words\n", capture_output=True,
                         text=True, timeout=60, env=subprocess_env(env))
    assert (out.returncode, out.stdout, out.stderr) == (0, "ECHO: piped words\n", "")
    out = subprocess.run([sys.executable, "-m", "hermes_sdk", "responses", "create"], input="as input",
                         capture_output=True, text=True, timeout=60, env=subprocess_env(env))
    assert out.returncode == 0 and out.stdout == "ECHO: as input\n"


def test_dash_reads_stdin_and_no_text_on_a_terminal_is_a_usage_error(
        env: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("from stdin\n"))
    assert run(capsys, "chat", "-") == (0, "ECHO: from stdin\n", "")

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal())  # chat would start its interactive loop here
    code, out, err = run(capsys, "responses", "create")
    assert code == 2 and out == "" and "usage: hermes-sdk" in err and "no input" in err
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run(capsys, "chat", "-")
    assert code == 2 and "stdin was empty" in err
    assert len(env.requests_seen) == 1  # only the first call sent anything


def test_model_and_system_options(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "chat", "hi", "-m", "my-model", "--system", "Be terse.")[0] == 0
    body = env.requests_seen[-1].body
    assert body["model"] == "my-model"
    assert body["messages"] == [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "hi"}]
    assert run(capsys, "responses", "create", "hi", "--model", "m2", "--system", "Be kind.")[0] == 0
    body = env.requests_seen[-1].body
    assert body["model"] == "m2" and body["instructions"] == "Be kind." and body["input"] == "hi"


def test_base_url_and_api_key_options(env: Any, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_BASE_URL")
    monkeypatch.delenv("HERMES_API_KEY")
    from hermes_sdk._app._cli_keys import PS_WARNING

    flags = ["--base-url", env.base_url, "--api-key", env.api_key]
    # a key on the command line works, and says it is visible in `ps`
    assert run(capsys, "chat", "after", *flags) == (0, "ECHO: after\n", PS_WARNING + "\n")
    assert run(capsys, *flags, "chat", "before") == (0, "ECHO: before\n", PS_WARNING + "\n")
    code, _, err = run(capsys, "chat", "x", "--base-url", env.base_url, "--api-key", "wrong-key-0099")
    err = err.replace(PS_WARNING + "\n", "")
    assert code == 1 and err.startswith(P + "authentication: ") and "wrong-key-0099" not in err


def _options(parser: Any, path: str = "hermes-sdk") -> list[tuple[str, Any]]:
    import argparse

    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += _options(child, f"{path} {name}")
        elif not isinstance(action, argparse._HelpAction):
            found.append((f"{path} {'/'.join(action.option_strings) or action.dest}", action.help))
    return found


def test_every_option_has_help_text() -> None:
    from hermes_sdk._app.cli import build_parser

    options = _options(build_parser())
    assert len(options) > 30
    assert [name for name, text in options if not text] == []


def test_streamed_json_is_json_lines_as_events_arrive(env: Any) -> None:
    env.token_delay = 0.4
    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", "chat", "one two three four five six seven",
                             "--stream", "--json"], stdout=subprocess.PIPE, text=True, env=subprocess_env(env))
    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())
    assert first["type"] == "event" and proc.poll() is None  # printed while the stream still runs
    rest = [json.loads(line) for line in proc.stdout]
    assert proc.wait(30) == 0
    assert rest[-1]["type"] == "result" and rest[-1]["text"] == "ECHO: one two three four five six seven"


def test_a_streamed_response_reports_its_id_so_turns_chain(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "responses", "create", "first turn", "--stream")
    assert code == 0 and out == "ECHO: first turn\n" and err.startswith("response id: resp_")
    rid = err.split(": ", 1)[1].strip()
    code, out, _ = run(capsys, "responses", "create", "second turn", "--stream", "--json",
                       "--previous-response-id", rid)
    result = json.loads(out.splitlines()[-1])
    assert code == 0 and result["type"] == "result" and result["response_id"].startswith("resp_")
    assert result["response_id"] != rid
    code, out, _ = run(capsys, "responses", "create", "third", "--previous-response-id", result["response_id"])
    assert code == 0 and env.requests_seen[-1].body["previous_response_id"] == result["response_id"]


def test_errors_on_stderr_are_scrubbed_of_ids(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "responses", "create", "x", "--previous-response-id", "resp_secret0123456789")
    assert code == 1 and err.startswith(P + "remote_rejected: ") and "resp_secret0123456789" not in err
    code, _, err = run(capsys, "responses", "get", "resp_other0123456789")
    assert code == 1 and "resp_other0123456789" not in err


def test_ctrl_c_exits_130(hermes_emulator_factory: Any) -> None:
    import signal
    import time

    emulator = hermes_emulator_factory()  # its own server: the interrupted run must not outlive this test
    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", "chat", "SLOW:20 wait for it"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(emulator))
    deadline = time.time() + 30
    while emulator.active_runs == 0 and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "Traceback" not in err


def test_emulator_help_documents_its_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["emulator", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for default in ("(default: 127.0.0.1)", "(default: 0, a free port", "(default: test-key)",
                    "export HERMES_BASE_URL=... HERMES_API_KEY=..."):
        assert default in text


def test_emulator_on_a_taken_port_fails_in_one_line() -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        out = subprocess.run([sys.executable, "-m", "hermes_sdk", "emulator", "--port", str(port)],
                             capture_output=True, text=True, timeout=60)
    finally:
        taken.close()
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}: the address is already in use" \
        in out.stderr
@pytest.mark.parametrize("fault", ["status_401_secret", "status_500_secret", "status_404_secret"])
def test_cli_errors_never_print_a_secret_the_server_echoes(fault: str, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_sdk.testing import FaultServer

    with FaultServer(fault=fault) as server:
        monkeypatch.setenv("HERMES_BASE_URL", server.base_url)
        monkeypatch.setenv("HERMES_API_KEY", server.api_key)
        monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
        monkeypatch.delenv("HERMES_SDK_IDEMPOTENCY_STORE", raising=False)
        for argv in (["chat", "hi"], ["responses", "get", "resp_0123456789abcdef0123456789abcdef"],
                     ["chat", "hi", "--stream"]):
            code, out, err = run(capsys, *argv)
            assert code == 1 and err.startswith(P)
            for text in (out, err):
                assert server.api_key not in text and server.secret not in text
                assert "resp_0123456789abcdef0123456789abcdef" not in text


# ---------------------------------------------------------------- at llm's level


def test_models_health_and_toolsets(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "models") == (0, "hermes-agent\n", "")
    code, out, _ = run(capsys, "models", "--json")
    assert code == 0 and json.loads(out)[0]["id"] == "hermes-agent"
    assert run(capsys, "health") == (0, "ok (hermes-agent, 0.19.0)\n", "")
    assert json.loads(run(capsys, "health", "--json")[1])["status"] == "ok"
    code, out, _ = run(capsys, "toolsets")
    rows = {line.split()[0]: line.split()[1] for line in out.splitlines()}
    assert code == 0 and rows["terminal"] == "disabled" and rows["web"] == "disabled"  # the peer default: no tools
    env.toolsets = ("terminal",)
    code, out, _ = run(capsys, "toolsets", "--json")
    by_name = {t["name"]: t for t in json.loads(out)}
    assert by_name["terminal"]["enabled"] is True and "terminal" in by_name["terminal"]["tools"]


def test_health_needs_no_key_and_exits_1_when_not_ok(env: Any, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_API_KEY")
    assert run(capsys, "health") == (0, "ok (hermes-agent, 0.19.0)\n", "")  # no "has no API key" warning either
    from core_support import RawServer, json_response

    server = RawServer(lambda sock, request, srv: sock.sendall(json_response(200, b'{"status": "degraded"}')))
    try:
        monkeypatch.setenv("HERMES_BASE_URL", server.base_url)
        code, out, err = run(capsys, "health", "--json")
        assert code == 1 and json.loads(out) == {"status": "degraded"}
        assert json.loads(err)["code"] == "hermes_sdk.unhealthy"
        code, out, err = run(capsys, "health")
        assert (code, out) == (1, "degraded\n")
        assert err == "hermes_sdk.unhealthy: the server says 'degraded', not 'ok'\n"
    finally:
        server.close()


def test_provider_options_with_dash_o(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "chat", "hi", "-o", "temperature", "0.2", "-o", "max_tokens", "50",
                       "-o", "stop", '["END"]', "-o", "user", "ops team")
    body = env.requests_seen[-1].body
    assert code == 0 and out == "ECHO: hi\n"
    assert body["temperature"] == 0.2 and body["max_tokens"] == 50 and body["stop"] == ["END"]
    assert body["user"] == "ops team"  # not JSON: sent as the text
    assert run(capsys, "responses", "create", "x", "-o", "temperature", "0", "--stream")[0] == 0
    assert env.requests_seen[-1].body["temperature"] == 0
    code, _, err = run(capsys, "chat", "hi", "-o", "model", "m")  # has its own flag
    assert code == 2 and "-o model: use -m/--model for that" in err


def test_a_prompt_of_several_words_needs_no_quotes(env: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "chat", "hello", "world") == (0, "ECHO: hello world\n", "")
    assert run(capsys, "chat", "hello", "world", "--stream")[1] == "ECHO: hello world\n"
    code, out, _ = run(capsys, "responses", "create", "three", "small", "words")
    assert code == 0 and out == "ECHO: three small words\n"


def test_json_errors_are_one_scrubbed_object_on_stderr(env: Any, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(capsys, "responses", "get", "resp_other0123456789", "--json")
    error = json.loads(err)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert error["code"] == P + "remote_rejected" and error["http_status"] == 404 and error["retryable"] is False
    assert {"message", "category", "uncertain_outcome", "details", "action_id"} <= set(error)
    assert "resp_other0123456789" not in err
    monkeypatch.setenv("HERMES_API_KEY", "wrong-key-0099")
    code, _, err = run(capsys, "chat", "hi", "--json")
    assert code == 1 and json.loads(err)["code"] == P + "authentication" and "wrong-key-0099" not in err
    monkeypatch.setenv("HERMES_API_KEY", env.api_key)
    code, out, err = run(capsys, "chat", "TRUNCATE me", "--json")  # an incomplete agent turn
    assert code == 1 and json.loads(err) == {"code": "hermes_sdk.agent_incomplete", "finish_reason": "length",
                                             "message": "the agent did not complete (finish_reason length)"}
    code, _, err = run(capsys, "chat", "x", "--stream", "--json", "--session-id", "s", "-c")
    assert code == 2 and json.loads(err)["code"] == "hermes_sdk.usage"


def test_without_a_key_the_cli_names_the_flag(env: Any, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_API_KEY")
    code, _, err = run(capsys, "chat", "hi")
    assert code == 1 and err.startswith(P + "missing_credential: no API key: pass --api-key KEY or set HERMES_API_KEY")
    assert err.count("\n") == 1 and env.requests_seen == []
    monkeypatch.delenv("HERMES_BASE_URL")
    monkeypatch.setenv("HERMES_API_KEY", "k")
    code, _, err = run(capsys, "models")
    assert code == 1 and "no Hermes URL: pass --base-url URL or set HERMES_BASE_URL" in err


def test_continue_the_last_session_from_a_private_state_file(env: Any, capsys: pytest.CaptureFixture[str],
                                                             tmp_path: Any) -> None:
    import stat

    code, _, err = run(capsys, "chat", "-c", "hi")
    assert code == 2 and "no earlier chat session" in err
    assert run(capsys, "chat", "my name is Ada")[0] == 0
    first = env.requests_seen[-1]
    assert "X-Hermes-Session-Id" not in first.headers  # Hermes names the session
    state = tmp_path / "state" / "hermes-sdk" / "state.json"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600 and stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    session = json.loads(state.read_text())["last_session"][env.base_url]["session_id"]
    assert run(capsys, "chat", "--continue", "what", "is", "my", "name?")[0] == 0
    assert env.requests_seen[-1].headers["X-Hermes-Session-Id"] == session
    assert [m["content"] for m in env.session_messages(session)][:2] == ["my name is Ada", "ECHO: my name is Ada"]
    assert run(capsys, "chat", "-c", "--stream", "again")[0] == 0
    assert env.requests_seen[-1].headers["X-Hermes-Session-Id"] == session


def test_the_emulator_command_takes_tools_and_asks_for_approval() -> None:
    import signal

    from hermes_sdk import HermesClient
    from hermes_sdk.types import ApprovalRequested

    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk", "emulator", "--tools", "--approval-timeout", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.getcwd()})
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip().split("=", 1)[1]
        proc.stdout.readline()
        seen: list[Any] = []

        def deny(request: Any) -> Any:
            seen.append(request)
            return request.deny(approver="test", reason="no")

        with HermesClient(base, "test-key", approval_provider=deny, load_entrypoints=False) as client:
            result = client.run("TOOL:terminal:rm -rf build", idempotency_key="emu-tools").wait(timeout=30)
            toolsets = {t.name: t.enabled for t in client.toolsets()}
        assert toolsets["terminal"] and toolsets["file"] and toolsets["todo"]
        assert [e.command for e in result.events if isinstance(e, ApprovalRequested)] == ["rm -rf build"]
        assert seen[0].operation == "run_approval"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(15)
