"""Round 6 (issue 38): what the inbox shows and stores — a run's error without the key (item 15),
the real input of a call's approval (item 11), a command that is not a string (item 12)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from flask import Flask
from hermes_sdk_inbox import Inbox, inbox_blueprint
from inbox_support import csrf_of

from hermes_sdk import ApprovalRequest, HermesClient

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
