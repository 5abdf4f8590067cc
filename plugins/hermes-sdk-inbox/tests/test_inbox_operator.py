"""client.operate with the inbox: the start waits for a person (sync path), the agent's command comes back
``requires_human`` as an ``operator`` entry, and the person's decision resumes the action, from another
process (the console script's ``resume``) or the in-process worker; against the emulator with tools on."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Optional

import pytest
from flask import Flask
from hermes_sdk_inbox import Inbox, InboxProvider, ResumeWorker, inbox_blueprint, resume_decided

from hermes_sdk import ApprovalRequiredError, HermesClient
from hermes_sdk.testing import HermesEmulator

VICTIM = "/scratch/victim"  # the tools_emulator fixture seeds {VICTIM}/keep.txt
# the objective reaches the agent as JSON: the todo directive ends the command before the closing quote
DANGEROUS = f"TOOL:terminal:rm -rf {VICTIM}||TOOL:todo:report"
ROOT = Path(__file__).resolve().parents[3]
PATHS = os.pathsep.join(str(p) for p in (ROOT, ROOT / "plugins" / "hermes-sdk-inbox",
                                         ROOT / "plugins" / "hermes-sdk-sql"))


def approvals_sent(emulator: HermesEmulator) -> list[Any]:
    return [r.body for r in emulator.requests_seen if r.method == "POST" and r.path.endswith("/approval")]


def web_client(emulator: HermesEmulator, provider: InboxProvider, store: str) -> HermesClient:
    """The application process: the inbox as its approval provider, a shared idempotency store."""
    return HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False, idempotency_store=store,
                        plugins=[provider])


def decide_in_page(inbox: Inbox, entry_id: str, action: str, reason: str,
                   on_decision: Optional[Any] = None) -> None:
    """Decide through the blueprint (CSRF token, input hash), as the page's form does."""
    app = Flask("host")
    app.config["SECRET_KEY"] = "host-secret"
    app.register_blueprint(inbox_blueprint(inbox, authenticate=lambda r: "olga", on_decision=on_decision))
    web = app.test_client()
    html = web.get(f"/{entry_id}").text
    assert "operator-action" in html
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)  # type: ignore[union-attr]
    entry = inbox.get(entry_id)
    resp = web.post(f"/{entry_id}/decide", data={"csrf_token": csrf, "input_hash": entry["input_hash"],
                                                 "operator": "Olga Operator", "reason": reason, "action": action})
    assert resp.status_code == 303, resp.text


def start_waiting(client: HermesClient, provider: InboxProvider, key: str) -> tuple[Any, dict[str, Any]]:
    """Start the operator action through the inbox's sync path; return it waiting, and its command's entry."""
    with pytest.raises(ApprovalRequiredError) as info:
        client.operate(DANGEROUS, idempotency_key=key, reason="cleanup ticket 12")
    start = provider.inbox.get(info.value.details["inbox_entry_id"])
    assert start["operation"] == "operator" and start["kind"] == "call"
    provider.inbox.decide(start["id"], decision="approved", approver="alice", reason="cleanup agreed",
                          input_hash=start["input_hash"])
    waiting = client.operate(DANGEROUS, idempotency_key=key, reason="cleanup ticket 12")
    # the web request is not held for the command's decision (held, Hermes' timeout would end the run)
    assert waiting.status == "requires_human" and waiting.run_id
    entries = provider.inbox.entries(kind="operator")
    assert len(entries) == 1
    return waiting, entries[0]


def test_the_decision_resumes_the_operator_action_from_another_process(tools_emulator: HermesEmulator,
                                                                        tmp_path: Path) -> None:
    store, queue = f"sqlite:///{tmp_path / 'idem.db'}", f"sqlite:///{tmp_path / 'inbox.db'}"
    provider = InboxProvider(queue)
    client = web_client(tools_emulator, provider, store)
    waiting, entry = start_waiting(client, provider, "op-approve")

    # what the operator sees: the action, the run, the command and its pattern key, all in clear
    assert entry["operation"] == "run_approval" and entry["operator"]["action_id"] == waiting.action_id
    assert entry["identifiers"] == {"run_id": waiting.run_id, "pattern_key": "delete in root path",
                                    "operator_action_id": waiting.action_id,
                                    "session_id": f"aip-operator-{waiting.action_id}"}
    assert entry["objective"] == DANGEROUS and entry["reason"] is None  # Hermes gives no caller's reason
    assert entry["run"]["description"] == "delete in root path" and entry["run"]["choices_observed"] is True
    assert entry["run"]["command"] == f"rm -rf {VICTIM}" and entry["run"]["pattern_key"] == "delete in root path"
    assert "session" in entry["run"]["choices"] and entry["expires_at"] <= entry["requested_at"] + 60.5
    assert [e["id"] for e in provider.inbox.entries(identifier=waiting.action_id)] == [entry["id"]]
    assert tools_emulator.pending_approvals(waiting.run_id) and approvals_sent(tools_emulator) == []

    decide_in_page(provider.inbox, entry["id"], "approve_once", "the scratch dir is disposable")
    decided_at = provider.inbox.get(entry["id"])["decision"]["decided_at"]
    env = {**os.environ, "PYTHONPATH": PATHS, "HERMES_BASE_URL": tools_emulator.base_url,
           "HERMES_API_KEY": tools_emulator.api_key}
    env.pop("HERMES_SDK_INBOX_STORE", None)
    out = subprocess.run([sys.executable, "-m", "hermes_sdk_inbox.cli", "--store", queue, "resume",
                          "--idempotency-store", store], capture_output=True, text=True, timeout=120, env=env)
    finished_at = time.time()
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines == [{"entry_id": entry["id"], "action_id": waiting.action_id, "choice": "once",
                      "status": "completed", "run_id": waiting.run_id, "skipped": None, "error": None}]
    assert approvals_sent(tools_emulator) == [{"choice": "once"}]
    assert f"{VICTIM}/keep.txt" not in tools_emulator.files  # approved: the command ran

    # the first process sees the outcome; the entry keeps the audit trail of the resume
    seen = client.operate(resume=waiting.action_id)
    assert seen.status == "completed" and seen.replayed and seen.run_id == waiting.run_id
    done = provider.inbox.get(entry["id"])
    assert done["state"] == "approved" and done["open_key"] is None
    assert done["used"]["action_id"] == f"hermes-sdk-inbox:{entry['id']}"
    assert done["operator"]["resumed"]["status"] == "completed" and done["operator"]["resumed"]["choice"] == "once"
    # sending again does nothing: the decision was used
    assert resume_decided(client, provider.inbox) == [] and len(approvals_sent(tools_emulator)) == 1
    print(f"operate resume (other process): enqueue->decision {decided_at - entry['requested_at']:.3f}s "
          f"(test), decision->action completed {finished_at - decided_at:.3f}s (includes interpreter start)")
    client.close()
    provider.close()


def test_a_denial_is_sent_by_the_worker_once_and_the_file_survives(tools_emulator: HermesEmulator,
                                                                   tmp_path: Path) -> None:
    store, queue = f"sqlite:///{tmp_path / 'idem.db'}", f"sqlite:///{tmp_path / 'inbox.db'}"
    provider = InboxProvider(queue)
    client = web_client(tools_emulator, provider, store)
    waiting, entry = start_waiting(client, provider, "op-deny")

    # the worker: its own client and inbox over the same stores, woken by the page's on_decision hook
    worker_client = HermesClient(tools_emulator.base_url, tools_emulator.api_key, load_entrypoints=False,
                                 idempotency_store=store)
    worker = ResumeWorker(worker_client, queue, interval=30)
    looked, first_look = threading.Event(), worker.run_once

    def look() -> Any:
        try:
            return first_look()
        finally:
            looked.set()

    worker.run_once = look  # type: ignore[method-assign]
    worker.start()
    assert looked.wait(60)  # its first look found nothing decided: only the wake can find the decision
    decide_in_page(provider.inbox, entry["id"], "deny", "not on a Friday", on_decision=worker.wake)
    decided_at = provider.inbox.get(entry["id"])["decision"]["decided_at"]
    deadline = time.time() + 30
    while not worker.resumed and time.time() < deadline:
        time.sleep(0.01)
    resumed_at = time.time()
    worker.stop(10)
    assert [(r.entry_id, r.choice, r.result.status if r.result else None) for r in worker.resumed] == [
        (entry["id"], "deny", "completed")]
    assert approvals_sent(tools_emulator) == [{"choice": "deny"}]
    assert tools_emulator.files.get(f"{VICTIM}/keep.txt") == "precious"  # denied: it survives
    # another worker racing for the same decision finds it taken
    assert resume_decided(worker_client, queue) == []
    assert provider.inbox.get(entry["id"])["operator"]["resumed"]["status"] == "completed"
    print(f"operate resume (worker, woken): decision->action completed {resumed_at - decided_at:.3f}s")
    assert resumed_at - decided_at < 5
    worker_client.close()
    client.close()
    provider.close()


def test_two_workers_send_a_decision_once(tools_emulator: HermesEmulator, tmp_path: Path) -> None:
    store, queue = f"sqlite:///{tmp_path / 'idem.db'}", f"sqlite:///{tmp_path / 'inbox.db'}"
    provider = InboxProvider(queue)
    client = web_client(tools_emulator, provider, store)
    waiting, entry = start_waiting(client, provider, "op-race")
    provider.inbox.decide(entry["id"], decision="approved", approver="a", reason="ok",
                          input_hash=entry["input_hash"])
    results: list[Any] = []
    barrier = threading.Barrier(4)

    def work() -> None:
        with HermesClient(tools_emulator.base_url, tools_emulator.api_key, load_entrypoints=False,
                          idempotency_store=store) as mine:
            barrier.wait()
            results.extend(resume_decided(mine, Inbox(queue)))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    sent = [r for r in results if r.skipped is None]
    assert len(sent) == 1 and sent[0].result is not None and sent[0].result.status == "completed"
    assert approvals_sent(tools_emulator) == [{"choice": "once"}]
    client.close()
    provider.close()


def test_a_decision_too_late_for_hermes_is_not_sent(tools_emulator: HermesEmulator, tmp_path: Path) -> None:
    """Hermes blocks a command at its approval timeout; an answer sent after it would land on the
    run's next request (Hermes answers oldest first, with no id), so it is closed unsent."""
    store = f"sqlite:///{tmp_path / 'idem.db'}"
    offset = [0.0]
    inbox = Inbox(f"sqlite:///{tmp_path / 'inbox.db'}", clock=lambda: time.time() + offset[0])
    provider = InboxProvider(inbox)
    client = web_client(tools_emulator, provider, store)
    waiting, entry = start_waiting(client, provider, "op-late")
    inbox.decide(entry["id"], decision="approved", approver="a", reason="ok", input_hash=entry["input_hash"])
    offset[0] = entry["expires_at"] - time.time() + 1  # the worker runs after Hermes' approval timeout
    [late] = resume_decided(client, inbox)
    assert late.result is None and late.skipped is not None and "approval timeout" in late.skipped
    assert approvals_sent(tools_emulator) == []
    closed = inbox.get(entry["id"])
    assert closed["open_key"] is None and "nothing was sent" in closed["closed_reason"]
    assert resume_decided(client, inbox) == []
    client.close()
    provider.close()
