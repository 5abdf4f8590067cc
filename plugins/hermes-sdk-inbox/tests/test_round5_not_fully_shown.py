"""A command the client's redaction policy hid part of (round 5): the inbox tells the operator it is
not fully shown and lets them deny it, never approve it. Against the emulator (real sockets)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hermes_sdk_inbox import InboxProvider
from hermes_sdk_inbox.cli import main as cli_main
from hermes_sdk_inbox.inbox import InvalidDecision
from inbox_support import csrf_of, host_app

from hermes_sdk import HermesClient
from hermes_sdk.testing import HermesEmulator

VICTIM = "/scratch/victim"  # the tools_emulator fixture seeds a file under it


def test_a_command_not_fully_shown_can_be_denied_never_approved(
        tools_emulator: HermesEmulator, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    provider = InboxProvider(store, poll_interval=0.05)
    client = HermesClient(tools_emulator.base_url, tools_emulator.api_key, load_entrypoints=False,
                          plugins=[provider], redaction_patterns=[r"\bvictim\b"])
    try:
        run = client.run(f"TOOL:terminal:rm -rf {VICTIM}", idempotency_key="hidden-1")
        deadline = time.monotonic() + 30
        while not provider.inbox.entries(kind="run") and time.monotonic() < deadline:
            run.wait(timeout=0.5)
        [entry] = provider.inbox.entries(kind="run")
        assert entry["run"]["command"] == "rm -rf /scratch/[REDACTED]"
        assert entry["fully_shown"] is False and "redaction pattern" in entry["not_shown"]

        with pytest.raises(InvalidDecision, match="not fully shown"):
            provider.inbox.decide(entry["id"], decision="approved", approver="alice", reason="r",
                                  input_hash=entry["input_hash"])
        web = host_app(provider.inbox).test_client()
        assert "(not fully shown)" in web.get("/inbox/", headers={"X-User": "alice"}).text
        page = web.get(f"/inbox/{entry['id']}", headers={"X-User": "alice"}).text
        assert 'id="not-fully-shown"' in page and 'id="approve-once"' not in page and 'id="deny"' in page
        forged = web.post(f"/inbox/{entry['id']}/decide", headers={"X-User": "alice"}, data={
            "csrf_token": csrf_of(page), "input_hash": entry["input_hash"], "operator": "",
            "reason": "approve anyway", "action": "approve_once"})
        assert forged.status_code == 400 and provider.inbox.get(entry["id"])["state"] == "pending"

        assert cli_main(["--store", store, "list"]) == 0
        assert "[not fully shown: can only be denied]" in capsys.readouterr().out

        provider.inbox.decide(entry["id"], decision="denied", approver="alice", reason="cannot see it",
                              input_hash=entry["input_hash"])
        result = run.wait(timeout=60)
        assert result.status == "completed"
        assert [r.body for r in tools_emulator.requests_seen if r.path.endswith("/approval")] == [{"choice": "deny"}]
        assert tools_emulator.files[f"{VICTIM}/keep.txt"] == "precious"
    finally:
        client.close()
        provider.close()
