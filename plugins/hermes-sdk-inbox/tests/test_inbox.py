"""The queue protocol on every backend, the inbox's rules, and the provider against the emulator."""

from __future__ import annotations

import threading
import time
from typing import Any

import attrs
import pytest
from hermes_sdk_inbox import (
    EntryExpired,
    EntryNotFound,
    EntryNotPending,
    Inbox,
    InboxPlugin,
    InboxProvider,
    InputHashMismatch,
    InvalidDecision,
    MemoryQueue,
    queue_from_url,
)
from hermes_sdk_inbox.cli import main as cli_main

from hermes_sdk import ApprovalDeniedError, ApprovalRequiredError, HermesClient, plugins
from hermes_sdk.testing import HermesEmulator

VICTIM = "/scratch/victim"  # the tools_emulator fixture seeds a file under it

DELETE = "cap:hermes_agent:default:response_delete"


def make_queue(queue_url: Any) -> Any:
    return queue_from_url(queue_url) if isinstance(queue_url, str) else queue_url


def client_for(emulator: HermesEmulator, provider: InboxProvider, **kw: Any) -> HermesClient:
    return HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False, plugins=[provider], **kw)


def test_queue_protocol(queue_url: Any) -> None:
    queue = make_queue(queue_url)
    now = time.time()
    entry = {"id": "inb_1", "version": 1, "state": "pending", "capability_id": DELETE, "open_key": "ok1",
             "requested_at": now, "expires_at": now + 60, "note": "x"}
    assert queue.add(entry) == entry
    assert queue.add({**entry, "id": "inb_2"})["id"] == "inb_1"  # one open entry per open key
    assert queue.get("inb_1") == entry and queue.get("nope") is None
    assert queue.update({**entry, "version": 2, "state": "approved"}, 1) is True
    assert queue.update({**entry, "version": 2, "state": "denied"}, 1) is False  # a stale copy loses
    assert queue.get("inb_1")["state"] == "approved"
    assert queue.update({**entry, "version": 3, "state": "approved", "open_key": None}, 2) is True
    assert queue.add({**entry, "id": "inb_2", "requested_at": now + 1})["id"] == "inb_2"  # key given back
    assert queue.update({**entry, "version": 4, "open_key": "ok1"}, 3) is False  # held by inb_2 now
    assert [e["id"] for e in queue.list()] == ["inb_2", "inb_1"]
    assert [e["id"] for e in queue.list(state="approved")] == ["inb_1"]
    assert [e["id"] for e in queue.list(limit=1, offset=1)] == ["inb_1"]
    queue.close()


def test_one_open_entry_per_input_across_threads(queue_url: Any) -> None:
    queue = make_queue(queue_url)
    inbox = Inbox(queue)
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    request = client.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup")
    ids: list[str] = []
    barrier = threading.Barrier(8)

    def submit() -> None:
        barrier.wait()
        ids.append(inbox.submit(request)["id"])

    threads = [threading.Thread(target=submit) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and len(queue.list()) == 1
    # a decision is made once, by whoever is first
    entry = inbox.get(ids[0])
    wins: list[str] = []

    def decide(who: str) -> None:
        try:
            inbox.decide(entry["id"], decision="approved", approver=who, reason="ok", input_hash=entry["input_hash"])
            wins.append(who)
        except EntryNotPending:
            pass

    threads = [threading.Thread(target=decide, args=(f"op{i}",)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and inbox.get(entry["id"])["decision"]["approver"] == wins[0]
    client.close()
    queue.close()


def test_decisions_the_inbox_refuses() -> None:
    clock = [1000.0]
    inbox = Inbox(MemoryQueue(), clock=lambda: clock[0])
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    request = client.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup")
    clock[0] = request.requested_at
    entry = inbox.submit(request)
    h = entry["input_hash"]
    with pytest.raises(EntryNotFound):
        inbox.decide("inb_nope", decision="approved", approver="a", reason="r", input_hash=h)
    with pytest.raises(InputHashMismatch):  # a form for another input cannot approve this one
        inbox.decide(entry["id"], decision="approved", approver="a", reason="r", input_hash="0" * 64)
    with pytest.raises(InvalidDecision):
        inbox.decide(entry["id"], decision="approved", approver=" ", reason="r", input_hash=h)
    with pytest.raises(InvalidDecision):
        inbox.decide(entry["id"], decision="approved", approver="a", reason="", input_hash=h)
    with pytest.raises(InvalidDecision):  # session is for runs
        inbox.decide(entry["id"], decision="approved", approver="a", reason="r", input_hash=h, scope="session")
    with pytest.raises(InvalidDecision):
        inbox.decide(entry["id"], decision="maybe", approver="a", reason="r", input_hash=h)
    clock[0] = entry["expires_at"] + 1
    assert inbox.entries(state="expired")[0]["id"] == entry["id"] and inbox.entries() == []
    with pytest.raises(EntryExpired):  # no approval once the expiry passed
        inbox.decide(entry["id"], decision="approved", approver="a", reason="r", input_hash=h)
    # the same call asking again gets a fresh entry; the expired one stays as history
    later = attrs.evolve(request, requested_at=clock[0], expires_at=clock[0] + 900)
    again = inbox.submit(later)
    assert again["id"] != entry["id"] and inbox.get(entry["id"])["state"] == "expired"
    decided = inbox.decide(again["id"], decision="denied", approver="bob", reason="no", input_hash=h)
    with pytest.raises(EntryNotPending):
        inbox.decide(again["id"], decision="approved", approver="a", reason="r", input_hash=h)
    assert decided["decision"]["decision"] == "denied" and decided["decision"]["scope"] is None
    client.close()


def test_a_call_is_queued_then_resumed_by_the_decision(queue_url: Any, hermes_emulator: Any) -> None:
    provider = InboxProvider(make_queue(queue_url), inbox_url="https://ops.example/inbox")
    client = client_for(hermes_emulator, provider)
    created = client.responses(input="remember this")
    with pytest.raises(ApprovalRequiredError) as info:
        client.response_delete(created.id, idempotency_key="del-1", reason="GDPR request 7")
    entry_id = info.value.details["inbox_entry_id"]
    assert info.value.details["inbox_url"] == f"https://ops.example/inbox/{entry_id}" and entry_id in str(info.value)
    with pytest.raises(ApprovalRequiredError) as again:  # asking again finds the same entry
        client.response_delete(created.id, idempotency_key="del-1", reason="GDPR request 7")
    assert again.value.details["inbox_entry_id"] == entry_id
    entry = provider.inbox.get(entry_id)
    assert entry["operation"] == "response_delete" and entry["kind"] == "call"
    # the id it acts on in clear (ApprovalRequest.identifiers), and the input as approved (issue 38 item 11)
    assert entry["identifiers"] == {"response_id": created.id} and entry["reason"] == "GDPR request 7"
    assert entry["input_snapshot"] == {"response_id": created.id} and entry["fully_shown"] is True
    assert [e["id"] for e in provider.inbox.entries(identifier=created.id)] == [entry_id]
    assert provider.inbox.entries(identifier="resp_other") == []

    provider.inbox.decide(entry_id, decision="approved", approver="alice", reason="verified the request",
                          input_hash=entry["input_hash"])
    receipt = client.response_delete(created.id, idempotency_key="del-1", reason="GDPR request 7")
    assert receipt.deleted  # the decision on file was used: no wait for a person
    used = provider.inbox.get(entry_id)
    assert used["used"]["action_id"] == receipt.action_id and used["open_key"] is None
    evidence = client.action_result(receipt.action_id)
    assert evidence.status == "completed"
    # a replay answers from the record; a new delete of another id needs its own approval
    assert client.response_delete(created.id, idempotency_key="del-1", reason="GDPR request 7").replayed
    with pytest.raises(ApprovalRequiredError):
        client.response_delete("resp_other", idempotency_key="del-2", reason="x")
    client.close()


def test_a_denied_call_raises_and_the_audit_trail_stays(hermes_emulator: Any) -> None:
    provider = InboxProvider("memory:")
    client = client_for(hermes_emulator, provider)
    created = client.responses(input="keep me")
    with pytest.raises(ApprovalRequiredError) as info:
        client.response_delete(created.id, idempotency_key="del-d", reason="cleanup")
    entry = provider.inbox.get(info.value.details["inbox_entry_id"])
    provider.inbox.decide(entry["id"], decision="denied", approver="bob", reason="still needed",
                          input_hash=entry["input_hash"])
    with pytest.raises(ApprovalDeniedError):
        client.response_delete(created.id, idempotency_key="del-d", reason="cleanup")
    assert client.response_get(created.id).id == created.id  # not deleted
    audit = provider.inbox.entries(state="denied")
    assert [e["id"] for e in audit] == [entry["id"]]
    assert audit[0]["decision"]["approver"] == "bob" and audit[0]["decision"]["reason"] == "still needed"
    assert audit[0]["decision"]["input_hash"] == entry["input_hash"] and audit[0]["used"]
    client.close()


def test_wait_lets_a_quick_decision_through(hermes_emulator: Any) -> None:
    provider = InboxProvider("memory:", wait=10, poll_interval=0.05)
    client = client_for(hermes_emulator, provider)
    created = client.responses(input="short-lived")

    def operator() -> None:  # decides once the call waits in the inbox
        while not provider.inbox.entries():
            time.sleep(0.01)
        entry = provider.inbox.entries()[0]
        provider.inbox.decide(entry["id"], decision="approved", approver="carol", reason="ok",
                              input_hash=entry["input_hash"])

    worker = threading.Thread(target=operator)
    worker.start()
    receipt = client.response_delete(created.id, idempotency_key="del-w", reason="tidy")
    worker.join()
    assert receipt.deleted  # the waiting call took the decision (past wait=10 it is refused)


def test_a_decision_is_used_once_and_lapses(hermes_emulator: Any) -> None:
    clock = [time.time()]
    inbox = Inbox(MemoryQueue(), clock=lambda: clock[0])
    provider = InboxProvider(inbox)
    client = client_for(hermes_emulator, provider)
    request = client.approval_request("response_delete", {"response_id": "resp_x"}, reason="r")
    entry = inbox.submit(request)
    inbox.decide(entry["id"], decision="approved", approver="a", reason="r", input_hash=entry["input_hash"])
    clock[0] += 16 * 60  # unused for longer than the approval TTL: a fresh entry is queued instead
    assert inbox.submit(request)["id"] != entry["id"]
    assert inbox.get(entry["id"])["closed_reason"] == "the decision was not used within 15 minutes"
    client.close()


def test_a_run_waits_for_the_operator_and_a_session_approval_answers_session(tools_emulator: HermesEmulator) -> None:
    provider = InboxProvider("memory:", poll_interval=0.05)
    client = client_for(tools_emulator, provider)
    seen: dict[str, Any] = {}

    def operator() -> None:
        while not provider.inbox.entries(kind="run"):
            time.sleep(0.02)
        entry = seen["entry"] = provider.inbox.entries(kind="run")[0]
        provider.inbox.decide(entry["id"], decision="approved", approver="dana", reason="expected cleanup",
                              input_hash=entry["input_hash"], scope="session")

    worker = threading.Thread(target=operator)
    worker.start()
    prompt = f"TOOL:terminal:rm -rf {VICTIM}/a||TOOL:terminal:rm -rf {VICTIM}/b"
    result = client.run(prompt, idempotency_key="run-s").wait(timeout=30)
    worker.join()
    assert result.status == "completed"
    entry = seen["entry"]
    assert entry["operation"] == "run_approval" and entry["run"]["command"] == f"rm -rf {VICTIM}/a"
    assert entry["run"]["pattern_key"] == "delete in root path" and "session" in entry["run"]["choices"]
    # the pattern key comes from the request itself, the run id in clear beside it
    assert entry["identifiers"]["pattern_key"] == "delete in root path"
    assert entry["identifiers"]["run_id"] == result.run_id and entry["kind"] == "run"
    assert entry["expires_at"] <= entry["requested_at"] + 60.5  # Hermes' approval timeout bounds it
    choices = [r.body for r in tools_emulator.requests_seen if r.path.endswith("/approval")]
    assert choices == [{"choice": "session"}]  # the second command was covered by the session
    assert len(provider.inbox.entries(state="approved")) == 1
    client.close()


def test_a_denied_run_command_never_runs(tools_emulator: HermesEmulator) -> None:
    provider = InboxProvider("memory:", poll_interval=0.05)
    client = client_for(tools_emulator, provider)

    def operator() -> None:
        while not provider.inbox.entries(kind="run"):
            time.sleep(0.02)
        entry = provider.inbox.entries(kind="run")[0]
        provider.inbox.decide(entry["id"], decision="denied", approver="erin", reason="not today",
                              input_hash=entry["input_hash"])

    worker = threading.Thread(target=operator)
    worker.start()
    result = client.run(f"TOOL:terminal:rm -rf {VICTIM}", idempotency_key="run-d").wait(timeout=30)
    worker.join()
    assert result.status == "completed" and "BLOCKED: Command denied" in str(result.output)
    assert f"{VICTIM}/keep.txt" in tools_emulator.files


def test_an_unanswered_run_approval_expires_at_the_deadline(tools_emulator: HermesEmulator) -> None:
    provider = InboxProvider("memory:", approval_timeout=60, poll_interval=0.05)
    client = client_for(tools_emulator, provider)
    deadline = time.time() + 1.0
    run = client.run(f"TOOL:terminal:rm -rf {VICTIM}", idempotency_key="run-t",
                     approval_provider=provider.until(deadline))
    for event in run.events():
        if type(event).__name__ == "ApprovalRequested":
            break
    entry = provider.inbox.entries(state="expired", kind="run")[0]
    assert abs(entry["expires_at"] - deadline) < 0.01 and "deadline" in entry["closed_reason"]
    assert run.pending_approval is not None  # left to Hermes, which blocks it at its own timeout
    run.stop()
    client.close()


def test_entry_point_plugin_is_configured_by_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Any,
                                                        hermes_emulator: Any) -> None:
    names = {ep.name: ep.value for ep, _ in plugins._entry_points()}
    if "hermes-sdk-inbox" in names:
        assert names["hermes-sdk-inbox"] == "hermes_sdk_inbox.plugin:InboxPlugin"
    plugin = InboxPlugin()
    monkeypatch.delenv("HERMES_SDK_INBOX_STORE", raising=False)
    assert plugin.hermes_approval_provider(client=None) is None
    monkeypatch.setenv("HERMES_SDK_INBOX_STORE", f"sqlite:///{tmp_path / 'env.db'}")
    provider = plugin.hermes_approval_provider(client=None)
    assert isinstance(provider, InboxProvider) and plugin.hermes_approval_provider(client=None) is provider
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False,
                      plugins=[plugin]) as client:
        with pytest.raises(ApprovalRequiredError) as info:
            client.response_delete("resp_abc", idempotency_key="k", reason="r")
    assert provider.inbox.get(info.value.details["inbox_entry_id"])


def test_cli_lists_entries(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    inbox = Inbox(url)
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    inbox.submit(client.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup"))
    assert cli_main(["--store", url, "list"]) == 0
    out = capsys.readouterr().out
    assert "pending" in out and "response_delete" in out
    assert cli_main(["--store", url, "list", "--json", "--state", "all"]) == 0
    assert '"operation": "response_delete"' in capsys.readouterr().out
    client.close()


def test_cli_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main(["--help"])
    shown = capsys.readouterr().out
    assert "``" not in shown and "Serve the approval inbox" in shown and "HERMES_SDK_INBOX_TOKEN" in shown
    from hermes_sdk_inbox.cli import build_parser

    args = build_parser().parse_args(["--port", "9000", "--token", "t" * 16, "serve"])  # before the subcommand
    assert (args.port, args.token) == (9000, "t" * 16)
    assert build_parser().parse_args(["serve", "--port", "7"]).port == 7


def test_cli_serves_with_the_token_from_the_environment(tmp_path: Any) -> None:
    """The secret never needs to be on the command line (where ``ps`` shows it to every user)."""
    import os
    import subprocess
    import sys

    import requests

    token = "env-token-" + "x" * 16
    env = {**os.environ, "HERMES_SDK_INBOX_TOKEN": token, "HERMES_SDK_PLUGINS": ""}
    argv = [sys.executable, "-m", "hermes_sdk_inbox.cli", "--store", f"sqlite:///{tmp_path / 'served.db'}",
            "--port", "0"]
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("hermes-sdk-inbox: serving http://"), line  # no random token was made
        base = line.split("serving ", 1)[1].strip()
        if sys.platform.startswith("linux"):
            assert token not in open(f"/proc/{proc.pid}/cmdline").read()
        with requests.Session() as http:
            assert http.get(base, headers={"Authorization": f"Bearer {token}"}, timeout=30).status_code == 200
            refused = http.get(base, headers={"Authorization": "Bearer wrong-token-000000"}, timeout=30,
                               allow_redirects=False)
            assert refused.status_code == 303 and refused.headers["Location"].endswith("/login")
    finally:
        proc.terminate()
        proc.wait(30)
