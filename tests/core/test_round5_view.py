"""What the approver sees (round 5): an empty secret never hides the next word, ids, paths and names
are shown (only logs hide them), a command a policy hid part of is not approved blind, and no text
a server sends reaches the CLI's terminal raw. Real sockets: the emulator and a small hostile server."""

from __future__ import annotations

import io
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from core_support import uniq
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_sdk import ApprovalDeniedError, ApprovalRequest, Redactor
from hermes_sdk._app.cli import main
from hermes_sdk._core.approval import check
from hermes_sdk._core.redaction import REDACTED, scrub
from hermes_sdk.plugin import visible
from hermes_sdk.testing import HermesEmulator


def approvals_sent(emu: HermesEmulator) -> list[Any]:
    return [r.body for r in emu.requests_seen if r.path.endswith("/approval")]


# ---------------------------------------------------------------- 1. an empty secret never takes the next word

EMPTY_THEN_COMMAND = [
    "TOKEN= rm -rf /srv/data",
    "password:\tmkfs.ext4 /dev/sda1",
    "export TOKEN=\nrm -rf /srv/data",
    "curl -H 'Authorization: Bearer\nrm -rf /srv/data'",
    "Bearer\trm -rf /srv/data",
    "API_KEY=\t\trm -rf /srv/data",
    "api_key=\"\" rm -rf /srv/data",
    "SECRET='' shred /dev/sda",
    "password:  dd if=/dev/zero of=/dev/sda",
    "{\"token\":\n\"x\"} ; rm -rf /srv/data",
]


@pytest.mark.parametrize("command", EMPTY_THEN_COMMAND)
def test_an_empty_secret_value_never_takes_the_next_word(command: str) -> None:
    assert Redactor().command(command) == command
    assert scrub(command) == command  # logs neither: nothing there is a secret's value


SECRETS = [  # (command, as the approver sees it, as logs show it)
    ("TOKEN=abc123 rm x", "TOKEN=[REDACTED] rm x", "TOKEN=[REDACTED] rm x"),
    # a value after a space is hidden from the approver only when shaped like a token (below)
    ("Authorization: Bearer abc", "Authorization: Bearer abc", "Authorization: [REDACTED]"),
    ("password: hunter2", "password: hunter2", "password: [REDACTED]"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNz' x", "curl -H 'Authorization: Basic dXNlcjpwYXNz' x",
     "curl -H 'Authorization: Basic [REDACTED]' x"),
    ('{"password": "hunter2"}', '{"password": "[REDACTED]"}', '{"password": "[REDACTED]"}'),
    ("TOKEN=x&&rm -rf /srv", "TOKEN=[REDACTED]&&rm -rf /srv", "TOKEN=[REDACTED]&&rm -rf /srv"),
    ("TOKEN=abc$(rm -rf /srv)", "TOKEN=[REDACTED]$(rm -rf /srv)", "TOKEN=[REDACTED]$(rm -rf /srv)"),
    ("git clone https://ops:s3cr3t@git.example/r", "git clone https://ops:[REDACTED]@git.example/r",
     "git clone https://ops:[REDACTED]@git.example/r"),
]


def test_a_real_secret_value_stays_redacted_and_nothing_else_does() -> None:
    # (the Basic credential, the Bearer scheme word and the shell operators are what the old patterns got wrong)
    assert [(Redactor().command(c), scrub(c)) for c, _, _ in SECRETS] == [(a, b) for _, a, b in SECRETS]


NAMES = st.sampled_from(["TOKEN", "GITHUB_TOKEN", "API_KEY", "api-key", "apikey", "PASSWORD", "db_password",
                         "SECRET", "client_secret", "AUTHORIZATION", "Authorization", "\"token\"", "'password'"])
WORD = st.from_regex(r"[a-z/.~][a-z0-9./_~-]{0,12}", fullmatch=True)
OPERATOR = st.sampled_from(["&&", "||", ";", "|", ">", "<", "$(", ")", "`", "&", "2>&1"])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(NAMES, st.sampled_from(["=", ":"]), st.text(alphabet=" \t\n\r", min_size=1, max_size=4),
       st.lists(st.one_of(WORD, OPERATOR), min_size=1, max_size=6))
def test_every_command_word_after_an_empty_secret_stays_visible(name: str, sep: str, space: str,
                                                              words: list[str]) -> None:
    # (a word after ": " or a scheme word is shown too: none of these words is shaped like a token)
    command = f"{name}{sep}{space}" + " ".join(words)
    shown = Redactor().command(command)
    assert shown == command, (command, shown)
    if sep == ":" and space[0] == " " and space[1:2] not in ("\t", "\n", "\r", " "):
        return  # (logs take a word after ": " for a value, as in YAML and headers: over-hiding there is safe)
    logged = scrub(command)
    for word in words:
        if scrub(word) == word:  # (an id-shaped word is hidden in logs, on purpose)
            assert word in logged, (command, logged)


SPACED = [  # a token-shaped value after a space: hidden, and the approver is told the command is not whole
    "curl -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.x4Z' https://api.example/v1",
    "curl -H 'X-Api-Key: 0123456789abcdefghij' https://api.example/v1",
    "Token: production2024customers01",
]


@pytest.mark.parametrize("command", SPACED)
def test_a_token_after_a_space_is_hidden_and_the_command_is_not_fully_shown(command: str) -> None:
    # (such a word could be the next shell word, an argument: hiding it silently would be a blind approval)
    view = Redactor().command_view(command)
    assert REDACTED in view.text and not view.fully_shown and "after a space" in (view.not_shown or "")


@pytest.mark.parametrize("command", ["Token: rm -rf /srv", "x-api-key: rm -rf /", "password: mkfs.ext4 /dev/sda1",
                                     "authorization=basic rm -rf /", "X=Bearer rm -rf /srv"])
def test_a_command_word_after_a_space_is_never_taken_for_a_value(command: str) -> None:
    view = Redactor().command_view(command)
    assert view.text == command and view.fully_shown


# ---------------------------------------------------------------- 2. ids, paths and names are shown; hiding is told

TARGETS = [
    "rm -rf /srv/sk-payments-production",
    "kubectl delete namespace run_production2024",
    "rm -rf /srv/resp_archive2024 /srv/chatcmpl-backups",
    "rm -rf /var/lib/docker/volumes/0b5e8a2c-6f43-4a1d-9c1e-2b7f3d9e8a11",
    "dropdb msg_queue_primary && rm -rf /srv/api-0123456789abcdef",
]


@pytest.mark.parametrize("command", TARGETS)
def test_ids_paths_and_names_are_shown_to_the_approver_and_hidden_in_logs(command: str) -> None:
    assert Redactor().command(command) == command
    assert REDACTED in scrub(command)  # logs keep hiding ids


def test_the_run_approval_request_shows_the_target_whole(tools_emu: HermesEmulator) -> None:
    seen: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        seen.append(request)
        return request.deny(approver="t", reason="looked")

    with tools_emu.client(load_entrypoints=False, approval_provider=provider) as client:
        for command in (TARGETS[0], TARGETS[2]):  # (the emulator asks about rm -r, not kubectl)
            client.run(f"TOOL:terminal:{command}", idempotency_key=uniq("tgt")).wait(timeout=30)
    assert [r.input_snapshot["command"] for r in seen] == [TARGETS[0], TARGETS[2]]
    assert all(r.fully_shown and r.not_shown is None for r in seen)


def test_a_key_shaped_word_is_hidden_and_the_command_is_not_fully_shown() -> None:
    view = Redactor().command_view("curl -u sk-AbCdEf1234567890GhIjKlMn: https://api.example/v1")
    assert view.text == "curl -u [REDACTED]: https://api.example/v1"
    assert view.fully_shown is False and "API key" in str(view.not_shown)
    # a client's own pattern or filter hiding a word: told too
    assert Redactor(patterns=[r"\bdata\b"]).command_view("rm -rf /srv/data") == (
        "rm -rf /srv/[REDACTED]", False, "a redaction pattern of the client hides part of the command")
    hide = Redactor(filters=[lambda key, text: text.replace("prod", REDACTED)])
    assert hide.command_view("rm -rf /prod").fully_shown is False
    # a pattern that only meets a credential's value already hidden changes nothing: fully shown
    assert Redactor(patterns=[r"hunter2"]).command_view("mysql --password=hunter2") == (
        "mysql --password=[REDACTED]", True, None)


def test_an_approval_of_a_command_not_fully_shown_does_not_stand_unless_blind(tools_emu: HermesEmulator) -> None:
    with tools_emu.client(load_entrypoints=False, redaction_patterns=[r"\bdata\b"]) as client:
        request = client.runs.approval_request("run_x", "rm -rf /srv/data")
    assert request.input_snapshot["command"] == "rm -rf /srv/[REDACTED]" and request.fully_shown is False
    with pytest.raises(ApprovalDeniedError) as caught:
        check(request.approve(approver="a", policy_decision_id="pd", reason="r"), request)
    assert caught.value.details["reason"] == "not_fully_shown"
    assert check(request.approve(approver="a", policy_decision_id="pd", reason="r", blind=True), request).blind


def test_a_run_whose_command_a_policy_hid_is_answered_deny(tools_emu: HermesEmulator) -> None:
    seen: list[ApprovalRequest] = []

    def approve_all(request: ApprovalRequest) -> Any:
        seen.append(request)
        return request.approve(approver="bot", policy_decision_id="pd", reason="looks fine")

    with tools_emu.client(load_entrypoints=False, approval_provider=approve_all,
                          redaction_patterns=[r"\bdata\b"]) as client:
        result = client.run("TOOL:terminal:rm -rf /srv/data", idempotency_key=uniq("hid")).wait(timeout=30)
    assert seen[0].input_snapshot["command"] == "rm -rf /srv/[REDACTED]" and not seen[0].fully_shown
    assert result.status == "completed" and approvals_sent(tools_emu) == [{"choice": "deny"}]
    assert tools_emu.files["/srv/data/keep.txt"] == "precious"

    def blind(request: ApprovalRequest) -> Any:
        return request.approve(approver="bot", policy_decision_id="pd", reason="policy", blind=True)

    with tools_emu.client(load_entrypoints=False, approval_provider=blind,
                          redaction_patterns=[r"\bdata\b"]) as client:
        client.run("TOOL:terminal:rm -rf /srv/data", idempotency_key=uniq("blind")).wait(timeout=30)
    assert approvals_sent(tools_emu) == [{"choice": "deny"}, {"choice": "once"}]


# ---------------------------------------------------------------- 6. no server text reaches the terminal raw

HOSTILE = "run_\x1b[8m\u202e\x9b2J\u200b\nFAKE"
HOSTILE_SHOWN = "run_\\x1b[8m<U+202E>\\x9b2J<U+200B>\\x0aFAKE"
# A run id the SDK can follow (it refuses control characters in a path): bidi and zero-width only.
FOLLOWED = "run_\u202eevil\u200b"


def _raw(text: str) -> list[str]:
    """The characters in CLI output a terminal would interpret (newlines and tabs are the CLI's own)."""
    return sorted({ch for ch in text if ch not in "\n\t" and visible(ch) != ch})


class _Hostile(BaseHTTPRequestHandler):
    """A Hermes whose ids, names, statuses and texts carry escapes, C1 controls, bidi and newlines."""

    protocol_version = "HTTP/1.1"
    run_id = HOSTILE

    def log_message(self, *args: object) -> None:
        return None

    def _json(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/v1/runs":
            self._json(202, {"run_id": self.run_id, "status": "started"})
        else:
            self._json(404, {"error": {"message": "not found", "code": "not_found"}})

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/api/jobs":
            self._json(200, {"jobs": [{"id": HOSTILE, "name": HOSTILE, "schedule_display": HOSTILE,
                                       "state": HOSTILE, "enabled": True, "next_run_at": HOSTILE}]})
        elif path == "/api/sessions":
            self._json(200, {"object": "list", "data": [{"id": HOSTILE, "title": HOSTILE, "message_count": 1,
                                                         "end_reason": HOSTILE, "started_at": 1.0}],
                             "limit": 20, "offset": 0, "has_more": False})
        elif path == "/v1/models":
            self._json(200, {"object": "list", "data": [{"id": HOSTILE, "object": "model"}]})
        elif path == "/health":
            self._json(200, {"status": "ok", "platform": HOSTILE, "version": "0.19.0"})
        elif path.startswith("/v1/runs/") and path.endswith("/events"):
            events = [{"event": "message.delta", "delta": f"hi {HOSTILE}"},
                      {"event": "tool.started", "tool": HOSTILE, "preview": HOSTILE},
                      {"event": "tool.completed", "tool": HOSTILE, "duration": 0.1, "error": False},
                      {"event": "run.completed", "output": f"hi {HOSTILE}"}]
            body = b"".join(b"data: " + json.dumps({**e, "run_id": self.run_id, "timestamp": 1.0}).encode() + b"\n\n"
                            for e in events)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif path.startswith("/v1/runs/"):
            self._json(200, {"object": "hermes.run", "run_id": self.run_id, "status": "completed",
                             "output": f"hi {HOSTILE}"})
        else:
            self._json(404, {"error": {"message": f"no {HOSTILE}", "code": "not_found"}})


@pytest.fixture(params=[HOSTILE, FOLLOWED], ids=["escape-id", "bidi-id"])
def hostile(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    handler = type("Hostile", (_Hostile,), {"run_id": request.param})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", request.param
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("argv", [["run", "--approve", "deny", "hello"], ["run", "--json", "hello"],
                                  ["models"], ["models", "--json"], ["health"], ["jobs", "list"],
                                  ["jobs", "list", "--json"], ["sessions", "list"]])
def test_no_server_text_reaches_the_terminal_raw(argv: list[str], hostile: tuple[str, str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    hostile_url, run_id = hostile
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("HERMES_BASE_URL", hostile_url)
    monkeypatch.setenv("HERMES_API_KEY", "k-hostile-test")
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    monkeypatch.delenv("HERMES_SDK_IDEMPOTENCY_STORE", raising=False)
    out, err = _Tty(), _Tty()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("sys.stdin", _Tty(""))
    main(argv)
    shown = out.getvalue() + err.getvalue()
    assert _raw(shown) == [], shown
    # an id's newline is not a line of its own (the agent's text, on stdout of a run, keeps its lines)
    lines = err.getvalue() if argv[0] == "run" else shown
    assert "FAKE" in shown and not re.search(r"(?m)^FAKE", lines)
    if argv == ["run", "--approve", "deny", "hello"]:
        assert f"run id: {visible(run_id)}\n" in err.getvalue()
        if run_id == FOLLOWED:  # a run the SDK follows: its events' texts are shown visibly too
            assert f"[tool] {HOSTILE_SHOWN}: {HOSTILE_SHOWN}" in err.getvalue()
            assert f"hi {visible(HOSTILE, keep=chr(10))}" in out.getvalue()
    if argv == ["models"]:
        assert out.getvalue() == HOSTILE_SHOWN + "\n"
