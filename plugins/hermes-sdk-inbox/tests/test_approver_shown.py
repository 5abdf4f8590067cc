"""What the inbox's operator is shown is what is approved (issue 22): the whole command but its
secrets' values, every character visible, the signed-in operator recorded as the approver, and a
run's wait() bounded while the inbox waits for the person. Against the emulator (real sockets)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hermes_sdk_inbox import InboxProvider
from hermes_sdk_inbox.cli import main as cli_main
from inbox_support import csrf_of, host_app

from hermes_sdk import ApprovalRequiredError, HermesClient, InvalidInputError
from hermes_sdk.testing import HermesEmulator

VICTIM = "/scratch/victim"  # the tools_emulator fixture seeds a file under it
# A tail hidden behind TOKEN= and ${IFS}, then terminal escapes that would erase the line and a
# right-to-left override that would reorder what follows.
COMMAND = f"rm -r {VICTIM}/cache && export TOKEN=x&&rm${{IFS}}-rf${{IFS}}{VICTIM}\x1b[2K\x1b[1Gls \u202e"
SHOWN = f"rm -r {VICTIM}/cache && export TOKEN=[REDACTED]&&rm${{IFS}}-rf${{IFS}}{VICTIM}\\x1b[2K\\x1b[1Gls <U+202E>"


def test_a_run_command_is_shown_whole_and_visible_and_wait_keeps_its_bound(
        tools_emulator: HermesEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    provider = InboxProvider(store, poll_interval=0.05)  # waits up to Hermes' approval timeout (60 s)
    client = HermesClient(tools_emulator.base_url, tools_emulator.api_key, load_entrypoints=False,
                          plugins=[provider])
    try:
        run = client.run(f"TOOL:terminal:{COMMAND}", idempotency_key="shown-1")
        first = run.wait(timeout=3)  # item 6: the inbox waits for a person; the caller does not
        assert not first.done  # had it waited for the person, Hermes' 60 s timeout would have ended the run
        [entry] = provider.inbox.entries(kind="run")
        assert entry["run"]["command"] == SHOWN and entry["input_snapshot"]["command"] == SHOWN

        web = host_app(provider.inbox).test_client()
        user = {"X-User": "alice"}
        for page in (web.get("/inbox/", headers=user).text, web.get(f"/inbox/{entry['id']}", headers=user).text):
            assert "\x1b" not in page and "\u202e" not in page
            escaped = "TOKEN=[REDACTED]&amp;&amp;rm${IFS}-rf${IFS}/scratch/victim\\x1b[2K\\x1b[1Gls &lt;U+202E&gt;"
            assert escaped in page

        assert cli_main(["--store", store, "list"]) == 0
        listed = capsys.readouterr().out
        assert "\x1b" not in listed and "\u202e" not in listed and SHOWN in listed

        # the person decides after wait() returned; the next wait sends it and the run ends
        page = web.get(f"/inbox/{entry['id']}", headers=user).text
        answer = web.post(f"/inbox/{entry['id']}/decide", headers=user, data={
            "csrf_token": csrf_of(page), "input_hash": entry["input_hash"], "operator": "",
            "reason": "read the whole command", "action": "deny"})
        assert answer.status_code == 303
        result = run.wait(timeout=60)
        assert result.status == "completed"
        assert [r.body for r in tools_emulator.requests_seen if r.path.endswith("/approval")] == [{"choice": "deny"}]
        assert tools_emulator.files[f"{VICTIM}/keep.txt"] == "precious"
    finally:
        client.close()


def test_the_signed_in_operator_is_the_approver_a_typed_name_only_a_display_name(hermes_emulator: Any) -> None:
    provider = InboxProvider("memory:")
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False,
                          plugins=[provider])
    try:
        rid = client.responses(input="a customer's data", store=True).id
        with pytest.raises(ApprovalRequiredError) as asked:
            client.response_delete(rid, idempotency_key="erase-1", reason="GDPR request")
        entry_id = asked.value.details["inbox_entry_id"]
        entry = provider.inbox.get(entry_id)
        web = host_app(provider.inbox).test_client()
        user = {"X-User": "dpo"}
        page = web.get(f"/inbox/{entry_id}", headers=user).text
        answer = web.post(f"/inbox/{entry_id}/decide", headers=user, data={
            "csrf_token": csrf_of(page), "input_hash": entry["input_hash"], "operator": "the CEO",
            "reason": "verified the requester", "action": "approve_once"})
        assert answer.status_code == 303
        decision = provider.inbox.get(entry_id)["decision"]
        assert decision["approver"] == "dpo" and decision["authenticated_as"] == "dpo"
        assert decision["display_name"] == "the CEO"
        shown = web.get(f"/inbox/{entry_id}", headers=user).text
        assert '<b id="approver">dpo</b>' in shown and "the CEO" in shown

        receipt = client.response_delete(rid, idempotency_key="erase-1", reason="GDPR request")
        evidence = client.action_result(receipt.action_id).approval  # type: ignore[union-attr]
        assert receipt.deleted and evidence["approver"] == "dpo"
    finally:
        client.close()


def test_a_decision_resumes_the_action_under_the_tenant_it_was_started_in(tools_emulator: HermesEmulator,
                                                                           tmp_path: Path) -> None:
    from hermes_sdk_inbox import resume_decided

    from hermes_sdk import ExecutionContext

    store = f"sqlite:///{tmp_path / 'idem.db'}"
    provider = InboxProvider("memory:")
    objective = f"TOOL:terminal:rm -rf {VICTIM}||TOOL:todo:report"
    app = HermesClient(tools_emulator.base_url, tools_emulator.api_key, load_entrypoints=False,
                       idempotency_store=store, plugins=[provider], context=ExecutionContext(tenant_id="t-1"))
    worker = HermesClient(tools_emulator.base_url, tools_emulator.api_key, load_entrypoints=False,
                          idempotency_store=store)  # a worker for every tenant: no context of its own
    try:
        start = app.approval_request("operator", {"objective": objective}, reason="r").approve(
            approver="alice", policy_decision_id="pd", reason="r")
        waiting = app.operate(objective, idempotency_key="t-1-op", approval=start, reason="r")
        assert waiting.status == "requires_human"
        [entry] = provider.inbox.entries(kind="operator")
        assert entry["tenant_id"] == "t-1"
        with pytest.raises(InvalidInputError):  # the worker's own scope does not hold the action
            worker.operate(resume=waiting.action_id)
        provider.inbox.decide(entry["id"], decision="denied", approver="olga", reason="not today",
                              input_hash=entry["input_hash"], authenticated_as="olga")
        [done] = resume_decided(worker, provider.inbox)
        assert done.error is None and done.result is not None and done.result.status == "completed"
        assert [r.body for r in tools_emulator.requests_seen if r.path.endswith("/approval")] == [{"choice": "deny"}]
        assert tools_emulator.files[f"{VICTIM}/keep.txt"] == "precious"
    finally:
        app.close()
        worker.close()
