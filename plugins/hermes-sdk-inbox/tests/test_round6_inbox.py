"""Round 6 (issue 38): what the inbox shows and stores — a run's error without the key (item 15),
the real input of a call's approval (item 11), a command that is not a string (item 12)."""

from __future__ import annotations

import html
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask
from hermes_sdk_inbox import Inbox, InboxProvider, inbox_blueprint
from hermes_sdk_inbox.cli import main as cli_main
from hermes_sdk_inbox.inbox import InvalidDecision
from inbox_support import csrf_of

from hermes_sdk import ApprovalRequest, ApprovalRequiredError, HermesClient

KEY = "sk-round6-Inbox7Hq2Wm9Rt4Lp"
USER = {"X-User": "alice"}
RUN_ID = "run_round6failed01"


class _Failed(BaseHTTPRequestHandler):
    """Hermes reporting the run failed, its error echoing the key."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        body = json.dumps({"object": "hermes.run", "run_id": RUN_ID, "status": "failed",
                           "error": f"provider refused the key {KEY} (401)"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hermes() -> Iterator[HermesClient]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with HermesClient(f"http://127.0.0.1:{server.server_address[1]}", api_key=KEY,
                          load_entrypoints=False) as client:
            yield client
    finally:
        server.shutdown()
        server.server_close()


def _app(inbox: Inbox, hermes: Any = None) -> Flask:
    app = Flask("host")
    app.config["SECRET_KEY"] = "host-secret"
    app.register_blueprint(inbox_blueprint(inbox, authenticate=lambda r: r.headers.get("X-User"), hermes=hermes),
                           url_prefix="/inbox")
    return app


def _run_request() -> ApprovalRequest:
    now = time.time()
    return ApprovalRequest(id="aprq_r6", action_id="act_r6", capability_id="cap:hermes_agent:default:run_approval",
                           input_snapshot={"run_id": RUN_ID, "command": "rm -rf /scratch/x"}, input_hash="ab" * 32,
                           reason="recursive delete", requested_at=now, expires_at=now + 600,
                           operation="run_approval", identifiers={"run_id": RUN_ID})


def test_a_failed_runs_error_is_shown_and_kept_without_the_key(hermes: HermesClient, tmp_path: Path) -> None:
    path = tmp_path / "inbox.db"
    inbox = Inbox(f"sqlite:///{path}")
    entry = inbox.submit(_run_request(), run={"command": "rm -rf /scratch/x", "choices": ["once", "deny"]})
    inbox.decide(entry["id"], decision="denied", approver="alice", reason="no", input_hash=entry["input_hash"])
    page = _app(inbox, hermes).test_client().get(f"/inbox/{entry['id']}", headers=USER).get_data()
    assert b'data-status="failed"' in page and b"provider refused the key" in page
    assert KEY.encode() not in page
    stored = Inbox(f"sqlite:///{path}").get(entry["id"])["outcome"]
    assert stored["status"] == "failed" and KEY not in json.dumps(stored)
    inbox.close()
    for side in tmp_path.iterdir():
        assert KEY.encode() not in side.read_bytes(), side.name


# --- item 11: a call's approval shows its input; what a policy hides is said, and not approvable -------

JOB = {"name": "nightly digest", "schedule": "0 3 * * *", "prompt": "Summarise <the> day & delete /srv/old"}


def _queued_job(emulator: Any, provider: InboxProvider, **client_options: Any) -> dict[str, Any]:
    with HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False, plugins=[provider],
                      **client_options) as client:
        with pytest.raises(ApprovalRequiredError) as info:
            client.jobs.create(**JOB, idempotency_key="r6-inbox-job", reason="ticket OPS-6")
    return provider.inbox.get(info.value.details["inbox_entry_id"])


def test_the_page_and_the_list_show_what_a_jobs_approval_approves(
        hermes_emulator: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    provider = InboxProvider(store)
    try:
        entry = _queued_job(hermes_emulator, provider)
        assert entry["input_snapshot"] == JOB and entry["fully_shown"] is True
        page = _app(provider.inbox).test_client().get(f"/inbox/{entry['id']}", headers=USER).text
        shown = html.unescape(re.search(r'<code id="input">(.*?)</code>', page, re.S).group(1))  # type: ignore[union-attr]
        assert json.loads(shown) == JOB
        assert 'id="approve-once"' in page and "not-fully-shown" not in page
        assert cli_main(["--store", store, "list"]) == 0
        assert json.dumps(JOB, sort_keys=True) in capsys.readouterr().out
    finally:
        provider.close()


def test_a_calls_input_a_policy_hides_is_said_and_cannot_be_approved(hermes_emulator: Any) -> None:
    provider = InboxProvider("memory:")
    try:
        entry = _queued_job(hermes_emulator, provider, redaction_patterns=[r"\bold\b"])
        assert entry["fully_shown"] is False and "prompt" in entry["not_shown"]
        assert entry["input_snapshot"]["prompt"] == "Summarise <the> day & delete /srv/[REDACTED]"
        web = _app(provider.inbox).test_client()
        page = web.get(f"/inbox/{entry['id']}", headers=USER).text
        assert 'id="not-fully-shown"' in page and 'id="approve-once"' not in page
        assert "(not fully shown)" in web.get("/inbox/", headers=USER).text
        with pytest.raises(InvalidDecision, match="not fully shown"):
            provider.inbox.decide(entry["id"], decision="approved", approver="alice", reason="r",
                                  input_hash=entry["input_hash"])
        answer = web.post(f"/inbox/{entry['id']}/decide", headers=USER, data={
            "csrf_token": csrf_of(page), "input_hash": entry["input_hash"], "operator": "", "reason": "r",
            "action": "approve_once"})
        assert answer.status_code >= 400 and provider.inbox.get(entry["id"])["state"] == "pending"
    finally:
        provider.close()


# --- item 12: a run's command that is not a string ------------------------------------------------------

def test_a_run_command_that_is_not_a_string_is_shown_as_json_and_only_deniable(hermes_emulator: Any) -> None:
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False) as client:
        request = client.runs.approval_request(RUN_ID, ["rm", "-rf", "/srv"])
    inbox = Inbox("memory:")
    entry = inbox.submit(request, run={"command": request.input_snapshot["command"], "choices": ["once", "deny"]})
    page = _app(inbox).test_client().get(f"/inbox/{entry['id']}", headers=USER).text
    assert html.unescape(re.search(r'<code id="command">(.*?)</code>', page).group(1)) == '["rm", "-rf", "/srv"]'  # type: ignore[union-attr]
    assert 'id="not-fully-shown"' in page and "not known" in html.unescape(page)
    assert 'id="approve-once"' not in page
