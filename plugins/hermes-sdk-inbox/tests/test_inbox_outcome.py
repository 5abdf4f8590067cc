"""The inbox closes the loop (issue 33): a decided run's entry says who decided, when, and what became
of the run; the list names the tenant and principal; the pattern and the run id appear once each.
Against the emulator (real sockets); the standalone server says which WSGI server it runs on."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional

import pytest
from flask import Flask
from hermes_sdk_inbox import Inbox, InboxProvider, inbox_blueprint
from inbox_support import csrf_of

from hermes_sdk import ExecutionContext, HermesClient
from hermes_sdk.testing import HermesEmulator

VICTIM = "/scratch/victim"
USER = {"X-User": "alice"}


def _app(inbox: Inbox, hermes: Any = None) -> Flask:
    app = Flask("host")
    app.config["SECRET_KEY"] = "host-secret"

    def authenticate(request: Any) -> Optional[str]:
        return request.headers.get("X-User")

    app.register_blueprint(inbox_blueprint(inbox, authenticate=authenticate, hermes=hermes), url_prefix="/inbox")
    return app


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _pending_run(emulator: HermesEmulator, store: str) -> tuple[HermesClient, InboxProvider, Any, dict[str, Any]]:
    provider = InboxProvider(store, poll_interval=0.05)
    client = HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False, plugins=[provider],
                          context=ExecutionContext(principal_id="user-7", tenant_id="acme"))
    run = client.run(f"TOOL:terminal:rm -rf {VICTIM}", idempotency_key="outcome-1")
    end = time.monotonic() + 30
    while not provider.inbox.entries(kind="run") and time.monotonic() < end:
        run.wait(timeout=0.2)
    [entry] = provider.inbox.entries(kind="run")
    return client, provider, run, entry


def test_the_list_has_a_tenant_and_principal_column_and_shows_the_pattern_and_run_id_once(
        tools_emulator: HermesEmulator, tmp_path: Path) -> None:
    client, provider, run, entry = _pending_run(tools_emulator, f"sqlite:///{tmp_path / 'inbox.db'}")
    try:
        web = _app(provider.inbox).test_client()
        listing = web.get("/inbox/", headers=USER).text
        header = re.search(r"<tr><th>Entry</th>.*?</tr>", listing).group(0)  # type: ignore[union-attr]
        assert "<th>Tenant / principal</th>" in header
        row = _text(listing.split('class="entry"', 1)[1].split("</tr>", 1)[0])
        assert "acme / user-7" in row
        assert row.count("delete in root path") == 1  # the pattern, once (Hermes' description is the same text)
        assert row.count(run.id) == 1  # its session is named after it: not shown twice

        page = _text(web.get(f"/inbox/{entry['id']}", headers=USER).text)
        assert page.count("delete in root path") == 1
        assert page.count(run.id) == 1 and "[REDACTED]" not in page  # ids are shown to the approver, once
        assert "Hermes blocks it" in page  # while pending
    finally:
        run.stop()
        client.close()
        provider.close()


def test_a_decided_run_shows_who_decided_when_and_what_became_of_the_run(
        tools_emulator: HermesEmulator, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    client, provider, run, entry = _pending_run(tools_emulator, store)
    hermes = HermesClient(tools_emulator.base_url, tools_emulator.api_key, load_entrypoints=False)
    try:
        web = _app(Inbox(store), hermes).test_client()
        page = web.get(f"/inbox/{entry['id']}", headers=USER).text
        assert 'id="run-outcome"' not in page  # nothing decided yet
        answer = web.post(f"/inbox/{entry['id']}/decide", headers=USER, data={
            "csrf_token": csrf_of(page), "input_hash": entry["input_hash"], "operator": "",
            "reason": "cleanup is due", "action": "approve_once"})
        assert answer.status_code == 303
        assert run.wait(timeout=30).status == "completed"

        page = web.get(f"/inbox/{entry['id']}", headers=USER).text
        text = _text(page)
        assert re.search(r'id="run-outcome" data-status="completed"', page)
        assert "The run completed" in text and "as Hermes reported it at" in text
        assert re.search(r"approved \(once\) by alice at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", text)
        assert "Hermes blocks it" not in text and "by action act_" not in text
        # kept with the entry once final: the list and a client-less inbox show it without asking
        assert Inbox(store).get(entry["id"])["outcome"]["status"] == "completed"
        seen = len(tools_emulator.requests_seen)
        offline = _app(Inbox(store)).test_client()
        assert 'data-status="completed"' in offline.get(f"/inbox/{entry['id']}", headers=USER).text
        assert "run completed" in _text(offline.get("/inbox/?state=all", headers=USER).text)
        assert len(tools_emulator.requests_seen) == seen
    finally:
        hermes.close()
        client.close()
        provider.close()


def test_a_decided_run_without_a_hermes_client_says_the_outcome_is_not_known(
        tools_emulator: HermesEmulator, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    client, provider, run, entry = _pending_run(tools_emulator, store)
    try:
        web = _app(Inbox(store)).test_client()
        page = web.get(f"/inbox/{entry['id']}", headers=USER).text
        web.post(f"/inbox/{entry['id']}/decide", headers=USER, data={
            "csrf_token": csrf_of(page), "input_hash": entry["input_hash"], "operator": "",
            "reason": "no", "action": "deny"})
        assert run.wait(timeout=30).status == "completed"
        text = _text(web.get(f"/inbox/{entry['id']}", headers=USER).text)
        assert "not known to the inbox: it was not given a Hermes client" in text
    finally:
        client.close()
        provider.close()


def _started(args: list[str], tmp_path: Path) -> tuple[str, str]:
    """Start the standalone command, read its stderr up to the serving line, stop it by its PID."""
    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk_inbox.cli", "--store",
                             f"sqlite:///{tmp_path / 'inbox.db'}", "--port", "0",
                             "--token", "outcome-test-token-0123456789", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        end = time.monotonic() + 30
        while time.monotonic() < end:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if "served by" in line or "WARNING" in line:  # the line after the serving line
                break
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    serving = next((line for line in lines if "serving http://" in line), "")
    assert serving, "".join(lines)
    return "".join(lines), serving


def test_the_development_server_is_named_and_warned_about(tmp_path: Path) -> None:
    out, serving = _started(["--server", "werkzeug"], tmp_path)
    assert re.fullmatch(r"hermes-sdk-inbox: serving http://127\.0\.0\.1:\d+/\n", serving)  # as scripts read it
    assert "Werkzeug's development server, which is not for production" in out
    assert "hermes-sdk-inbox[production]" in out and "inbox_blueprint" in out


def test_waitress_serves_the_standalone_inbox_when_installed(tmp_path: Path) -> None:
    pytest.importorskip("waitress", reason="pip install 'hermes-sdk-inbox[production]'")
    out, serving = _started([], tmp_path)  # auto: waitress when installed
    assert "served by waitress" in out and "not for production" not in out
