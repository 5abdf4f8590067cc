"""What an approver is shown is what is approved (issue 22): whole commands, visible characters,
operator runs answered only through the operator's gate, lookups scoped to endpoint and tenant, and
a caller's bound on waiting kept whatever the approval provider does. Real sockets (the emulator)."""

from __future__ import annotations

import io
import re
import threading
import time
from pathlib import Path
from typing import Any, Optional

import pytest
from core_support import uniq
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_sdk import (
    ApprovalRequest,
    ExecutionContext,
    HermesClient,
    IdempotencyConflictError,
    InvalidInputError,
    OperatorRunError,
    Redactor,
)
from hermes_sdk._app.cli import main
from hermes_sdk._core.redaction import REDACTED, SECRET_CHARS, only_secrets_replaced
from hermes_sdk.plugin import visible
from hermes_sdk.testing import HermesEmulator

# Commands built to hide a dangerous tail behind something a credential pattern matches, and how
# the approver sees each: the secret's value replaced, every other byte there.
HIDING = [
    ("rm -r /tmp/cache && export TOKEN=x&&rm${IFS}-rf${IFS}/srv/data",
     "rm -r /tmp/cache && export TOKEN=[REDACTED]&&rm${IFS}-rf${IFS}/srv/data"),
    ("rm -r /tmp/c; mysql --password=hunter2;rm${IFS}-rf${IFS}/srv/data",
     "rm -r /tmp/c; mysql --password=[REDACTED];rm${IFS}-rf${IFS}/srv/data"),
    ("rm -r /tmp/c; export TOKEN=abc${IFS}&&${IFS}rm${IFS}-rf${IFS}/srv/data",
     "rm -r /tmp/c; export TOKEN=[REDACTED]${IFS}&&${IFS}rm${IFS}-rf${IFS}/srv/data"),
    ("rm -r /tmp/c; curl -X DELETE http://h/v1/responses/resp_0123456789abcdef/../../../srv/data",
     "rm -r /tmp/c; curl -X DELETE http://h/v1/responses/resp_0123456789abcdef/../../../srv/data"),  # an id is shown
    ("rm -r /tmp/c; curl https://ops:s3cr3t@h/x?token=t0k/../../srv/data;rm -rf /srv/data",
     "rm -r /tmp/c; curl https://ops:[REDACTED]@h/x?token=[REDACTED]/../../srv/data;rm -rf /srv/data"),
    ("rm -r /tmp/c; curl -H 'Authorization: Bearer eyJhbGciOi.eyJzdWIi.c2lnbmF0dXJl'&&rm -rf /srv/data",
     "rm -r /tmp/c; curl -H 'Authorization: Bearer [REDACTED]'&&rm -rf /srv/data"),
    ("rm -r /tmp/c; export PASSWORD='hunter2'\"$(rm -rf /srv/data)\"",
     "rm -r /tmp/c; export PASSWORD='[REDACTED]'\"$(rm -rf /srv/data)\""),
]


def approvals_sent(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.path.endswith("/approval")]


# ---------------------------------------------------------------- 1. a secret's value, never the text around it


@pytest.mark.parametrize("command, shown", HIDING)
def test_redaction_in_a_command_replaces_a_secrets_value_never_the_text_around_it(command: str, shown: str) -> None:
    assert Redactor().command(command) == shown
    assert only_secrets_replaced(command, shown)
    # a plugin's pattern and filter that stay within secrets keep it so
    custom = Redactor(patterns=[r"\bACME-[0-9]+"], filters=[lambda key, text: text.replace("hunter2", REDACTED)])
    tail = " ACME-123&&rm -rf /srv/other"
    assert custom.command(command + tail) == shown + " [REDACTED]&&rm -rf /srv/other"


def test_a_filter_that_changes_more_than_a_secret_leaves_nothing_shown_but_redacted() -> None:
    sly = Redactor(filters=[lambda key, text: text.replace("&&rm -rf /srv/data", "")])
    assert sly.command("ls /tmp&&rm -rf /srv/data") == REDACTED


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(["TOKEN=", "password: ", "Bearer ", "secret=", "/v1/responses/", "resp_",
                                 "sk-", "api_key=\"", "https://u:", "@", "&&", ";", "${IFS}", "$(", ")", "|",
                                 " ", "/srv/data", "rm", "-rf", "x", "abc123", "..", "/", "'", "\"", "=",
                                 "-", "_", ".", "+"]), max_size=30))
def test_every_byte_of_a_command_but_secret_values_is_shown(pieces: list[str]) -> None:
    command = "".join(pieces)
    shown = Redactor().command(command)
    assert only_secrets_replaced(command, shown), (command, shown)
    # independently: every character a secret's value cannot hold is shown, in order
    assert re.sub(f"[{SECRET_CHARS}]", "", shown.replace(REDACTED, "")) == re.sub(f"[{SECRET_CHARS}]", "", command)


def test_the_approval_request_of_a_run_shows_the_whole_command(tools_emu: HermesEmulator) -> None:
    seen: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        seen.append(request)
        return request.deny(approver="t", reason="looked")

    command, shown = HIDING[0]
    with tools_emu.client(load_entrypoints=False, approval_provider=provider) as client:
        result = client.run(f"TOOL:terminal:{command}", idempotency_key=uniq("hide")).wait(timeout=30)
    assert result.status == "completed" and [r.operation for r in seen] == ["run_approval"]
    assert seen[0].input_snapshot["command"] == shown
    assert tools_emu.files["/srv/data/keep.txt"] == "precious"


# ---------------------------------------------------------------- 2. characters shown, never interpreted


def test_visible_writes_controls_escapes_bidi_and_invisible_characters_out() -> None:
    assert visible("rm -rf /srv/data") == "rm -rf /srv/data"
    assert visible("héllo Дана José 漢字") == "héllo Дана José 漢字"
    assert visible("rm -rf /srv\x1b[2K\x1b[1Gls") == "rm -rf /srv\\x1b[2K\\x1b[1Gls"
    assert visible("a\x9b2Kb\x7f\x00") == "a\\x9b2Kb\\x7f\\x00"  # C1 CSI, DEL, NUL
    assert visible("ls \u202erm -rf\u202c") == "ls <U+202E>rm -rf<U+202C>"
    assert visible("r\u200bm\u2066\u2069\ufeff\u00a0\u2028\u3164") == \
        "r<U+200B>m<U+2066><U+2069><U+FEFF><U+00A0><U+2028><U+3164>"
    assert visible("a\nb\tc") == "a\\x0ab\\x09c" and visible("a\nb\tc", keep="\n\t") == "a\nb\tc"
    with pytest.raises(TypeError):
        visible(b"x")  # type: ignore[arg-type]


HOSTILE = "rm -rf /srv/data\x1b[2K\x1b[1Gls -l /tmp \u202ersu\u200b"


def test_the_approval_request_renders_agent_and_server_text_visibly(tools_emu: HermesEmulator) -> None:
    seen: list[ApprovalRequest] = []

    def provider(request: ApprovalRequest) -> Any:
        seen.append(request)
        return request.deny(approver="t", reason="looked")

    with tools_emu.client(load_entrypoints=False, approval_provider=provider) as client:
        client.run(f"TOOL:terminal:{HOSTILE}", idempotency_key=uniq("esc")).wait(timeout=30)
        request = client.runs.approval_request("run_x", HOSTILE, reason="danger\x1b[8m", pattern_key="k\u202e")
    shown = seen[0].input_snapshot["command"]
    assert shown == "rm -rf /srv/data\\x1b[2K\\x1b[1Gls -l /tmp <U+202E>rsu<U+200B>"
    assert request.reason == "danger\\x1b[8m" and request.identifiers["pattern_key"] == "k<U+202E>"
    # what the decision binds is the exact command, bytes and all
    assert request.input_hash == tools_emu.client(load_entrypoints=False).runs.approval_request(
        "run_x", HOSTILE).input_hash


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_cli_prompt_and_lines_show_escapes_visibly(tools_emu: HermesEmulator, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("HERMES_BASE_URL", tools_emu.base_url)
    monkeypatch.setenv("HERMES_API_KEY", tools_emu.api_key)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    monkeypatch.delenv("HERMES_SDK_IDEMPOTENCY_STORE", raising=False)
    monkeypatch.setattr("sys.stdin", _Tty("d\n"))
    command = f"{HIDING[0][0]}\x1b[2K\x1b[1G\u202e"
    code = main(["run", f"TOOL:terminal:{command}"])
    _, err = capsys.readouterr()
    assert code == 1 and "\x1b" not in err and "\u202e" not in err
    assert ("the agent wants to run: rm -r /tmp/cache && export TOKEN=[REDACTED]&&rm${IFS}-rf${IFS}/srv/data"
            "\\x1b[2K\\x1b[1G<U+202E>\n") in err
    assert "[tool] terminal: rm -r /tmp/cache && export TOKEN=x&&rm${IFS}-rf${IFS}/srv/data\\x1b[2K" in err


# ---------------------------------------------------------------- 3. an operator's run: only the operator's gate


def undecided(request: ApprovalRequest) -> None:
    return None


def operator_approval(client: HermesClient, objective: str) -> Any:
    return client.approval_request("operator", {"objective": objective}, reason="t").approve(
        approver="tester", policy_decision_id="pd-op", reason="t")


def test_an_operators_run_is_answered_only_through_the_operators_gate(tools_emu: HermesEmulator,
                                                                       tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'idem.db'}"
    objective = "TOOL:terminal:rm -rf /srv/data"
    with tools_emu.client(load_entrypoints=False, idempotency_store=store, approval_provider=undecided) as client, \
            tools_emu.client(load_entrypoints=False, idempotency_store=store) as other:
        waiting = client.operate(objective, idempotency_key=uniq("op"), approval=operator_approval(client, objective),
                                 reason="t")
        assert waiting.status == "requires_human" and waiting.run_id
        for who in (client, other):
            with pytest.raises(OperatorRunError) as caught:
                who.runs.approve(waiting.run_id, "once")
            assert caught.value.details["sent"] is False and caught.value.code == "hermes_sdk.operator_run"
            result = who.invoke("cap:hermes_agent:default:run_approval", {"run_id": waiting.run_id, "choice": "once"})
            assert result.status == "failed" and isinstance(result.error, OperatorRunError)
        assert approvals_sent(tools_emu) == [] and tools_emu.files["/srv/data/keep.txt"] == "precious"
        # the operator's gate: an approval bound to the resume
        resume = {"resume": {"source_action_id": waiting.action_id, "choice": "deny", "resolve_all": False}}
        decision = client.approval_request("operator", resume, reason="r").approve(
            approver="ops", policy_decision_id="pd", reason="r")
        done = client.operate(resume=waiting.action_id, choice="deny", idempotency_key=uniq("res"),
                              approval=decision, reason="r")
        assert done.status == "completed" and [r.body for r in approvals_sent(tools_emu)] == [{"choice": "deny"}]


# ---------------------------------------------------------------- 4. lookups scoped to endpoint and tenant


def test_another_tenants_operator_action_is_not_found_not_resumed(tools_emu: HermesEmulator, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'shared.db'}"
    url, key = tools_emu.base_url, tools_emu.api_key
    objective = "TOOL:terminal:rm -rf /srv/data"
    a = HermesClient(url, key, load_entrypoints=False, idempotency_store=store, approval_provider=undecided,
                     context=ExecutionContext(tenant_id="tenant-a"))
    b = HermesClient(url, key, load_entrypoints=False, idempotency_store=store,
                     context=ExecutionContext(tenant_id="tenant-b"))
    b_own = HermesClient(url, key, endpoint_id="b", load_entrypoints=False, idempotency_store=store)
    try:
        start_key = uniq("op")
        waiting = a.operate(objective, idempotency_key=start_key, approval=operator_approval(a, objective), reason="t")
        assert waiting.status == "requires_human"
        for other, endpoint in ((b, "default"), (b_own, "b")):
            resume = {"resume": {"source_action_id": waiting.action_id, "choice": "once", "resolve_all": False}}
            approval = other.approval_request("operator", resume, reason="r").approve(
                approver="b-ops", policy_decision_id="pd-b", reason="r")
            with pytest.raises(InvalidInputError) as caught:
                other.operate(resume=waiting.action_id, choice="once", idempotency_key=uniq("res"),
                              approval=approval, reason="r", endpoint=endpoint)
            assert caught.value.details["reason"] == "not_found"
            with pytest.raises(InvalidInputError):
                other.operate(resume=waiting.action_id, endpoint=endpoint)  # not even followed
        # tenant B reusing tenant A's key: refused, not A's run replayed
        runs_before = len([r for r in tools_emu.requests_seen if r.path == "/v1/runs"])
        with pytest.raises(IdempotencyConflictError):
            b.operate(objective, idempotency_key=start_key, approval=operator_approval(b, objective), reason="t")
        assert len([r for r in tools_emu.requests_seen if r.path == "/v1/runs"]) == runs_before
        assert approvals_sent(tools_emu) == [] and tools_emu.files["/srv/data/keep.txt"] == "precious"
        # A's own follow-up finds it, and so does another client of tenant A on the same endpoint and store
        assert a.operate(resume=waiting.action_id).status == "requires_human"
        a2 = HermesClient(url, key, load_entrypoints=False, idempotency_store=store)
        resume = {"resume": {"source_action_id": waiting.action_id, "choice": "deny", "resolve_all": False}}
        approval = a2.approval_request("operator", resume, reason="r").approve(
            approver="a-ops", policy_decision_id="pd-a", reason="r")
        done = a2.operate(resume=waiting.action_id, choice="deny", idempotency_key=uniq("res"), approval=approval,
                          reason="r", execution_context=ExecutionContext(tenant_id="tenant-a"))
        a2.close()
        assert done.status == "completed" and [r.body for r in approvals_sent(tools_emu)] == [{"choice": "deny"}]
    finally:
        for client in (a, b, b_own):
            client.close()


# ---------------------------------------------------------------- 6. the caller's bound on waiting is kept


class SlowPerson:
    """An approval provider that waits for a person (like the inbox) until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.asked: list[float] = []
        self.waited_out = False  # the person's wait ended by its limit, not by a decision

    def __call__(self, request: ApprovalRequest) -> Optional[Any]:
        self.asked.append(time.time())
        self.waited_out = not self.release.wait(60)
        return request.approve(approver="person", policy_decision_id="pd", reason="checked")


def test_wait_returns_within_its_bound_while_the_provider_keeps_waiting(tools_emu: HermesEmulator) -> None:
    person = SlowPerson()
    with tools_emu.client(load_entrypoints=False, approval_provider=person) as client:
        run = client.run("TOOL:terminal:rm -rf /srv/data", idempotency_key=uniq("slow"))
        first = run.wait(timeout=3)
        assert not person.waited_out  # it returned on its 3 s bound while the person still waited (60 s)
        assert not first.done and person.asked and approvals_sent(tools_emu) == []
        person.release.set()  # the person decides after wait() returned
        final = run.wait(timeout=60)
    assert final.status == "completed" and [r.body for r in approvals_sent(tools_emu)] == [{"choice": "once"}]
    assert "/srv/data/keep.txt" not in tools_emu.files
