"""The page through Flask's test client: authentication, CSRF, the input-hash binding, expiry, filters,
the audit trail, and the standalone app's token."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from flask import Flask
from hermes_sdk_inbox import Inbox, MemoryQueue, create_app, inbox_blueprint
from inbox_support import csrf_of, host_app

from hermes_sdk import HermesClient

TOKEN = "t0ken-for-the-tests-0123456789"


@pytest.fixture
def sdk() -> Any:
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    yield client
    client.close()


def queue_delete(inbox: Inbox, sdk: HermesClient, rid: str = "resp_1", reason: str = "cleanup") -> dict[str, Any]:
    return inbox.submit(sdk.approval_request("response_delete", {"response_id": rid}, reason=reason))


def queue_run(inbox: Inbox, sdk: HermesClient, command: str = "rm -rf /scratch/victim") -> dict[str, Any]:
    request = sdk.runs.approval_request("run_1234567890", command, reason="delete in root path",
                                        pattern_key="delete in root path")
    return inbox.submit(request, run={"command": command, "pattern_key": "delete in root path",
                                      "choices": ["once", "session", "always", "deny"], "deadline": None})


def test_every_page_needs_the_host_login(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    entry = queue_delete(inbox, sdk)
    web = host_app(inbox).test_client()
    assert web.get("/inbox/").status_code == 401
    assert web.get(f"/inbox/{entry['id']}").status_code == 401
    assert web.post(f"/inbox/{entry['id']}/decide", data={}).status_code == 401
    resp = web.get("/inbox/", headers={"X-User": "alice"})
    assert resp.status_code == 200 and entry["id"] in resp.text
    assert resp.headers["Cache-Control"] == "no-store" and resp.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]


def test_detail_shows_what_an_operator_decides_on(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    entry = queue_run(inbox, sdk)
    web = host_app(inbox).test_client()
    html = web.get(f"/inbox/{entry['id']}", headers={"X-User": "alice"}).text
    for shown in ("run_approval", "rm -rf /scratch/victim", "delete in root path", entry["input_hash"],
                  "approve-once", "approve-session", "deny", "pending"):
        assert shown in html
    # the ids it acts on are shown in clear (ApprovalRequest.identifiers), once: "Acts on", not again
    # under the input (which holds them too: the approver's view is the input, issue 38 item 11)
    assert re.search(r'data-name="run_id">run_id=<code>run_1234567890</code>', html)
    assert html.count("delete in root path") == 1  # the pattern has its own row, not again under "Acts on"
    assert entry["input_snapshot"] == {"run_id": "run_1234567890", "command": "rm -rf /scratch/victim"}
    assert html.count("run_1234567890") == 1
    call = queue_delete(inbox, sdk, reason="<script>alert(1)</script>")
    html = web.get(f"/inbox/{call['id']}", headers={"X-User": "alice"}).text
    assert "approve-session" not in html and "<script>alert(1)" not in html and "&lt;script&gt;" in html


def test_approve_with_a_valid_form(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    entry = queue_run(inbox, sdk)
    web = host_app(inbox).test_client()
    user = {"X-User": "alice"}
    csrf = csrf_of(web.get(f"/inbox/{entry['id']}", headers=user).text)
    resp = web.post(f"/inbox/{entry['id']}/decide", headers=user, data={
        "csrf_token": csrf, "input_hash": entry["input_hash"], "operator": "Alice Ops",
        "reason": "expected cleanup", "action": "approve_session"})
    assert resp.status_code == 303
    decided = inbox.get(entry["id"])
    assert decided["state"] == "approved"
    assert decided["decision"] | {"decided_at": 0, "approval_id": ""} == {
        "decision": "approved", "approver": "alice", "authenticated_as": "alice", "display_name": "Alice Ops",
        "reason": "expected cleanup", "scope": "session", "input_hash": entry["input_hash"], "decided_at": 0,
        "approval_id": ""}
    html = web.get(f"/inbox/{entry['id']}", headers=user).text
    assert "Alice Ops" in html and "expected cleanup" in html and 'id="decide"' not in html
    # the audit trail: decided entries stay listed under their state
    assert entry["id"] in web.get("/inbox/?state=approved", headers=user).text
    assert entry["id"] not in web.get("/inbox/", headers=user).text
    # deciding twice is refused
    again = web.post(f"/inbox/{entry['id']}/decide", headers=user, data={
        "csrf_token": csrf, "input_hash": entry["input_hash"], "operator": "x", "reason": "y", "action": "deny"})
    assert again.status_code == 409 and inbox.get(entry["id"])["state"] == "approved"


def test_forged_forms_are_refused(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    target, other = queue_delete(inbox, sdk, "resp_target"), queue_delete(inbox, sdk, "resp_other")
    web = host_app(inbox).test_client()
    alice, mallory = {"X-User": "alice"}, {"X-User": "mallory"}
    good = {"operator": "a", "reason": "r", "action": "approve_once"}
    url = f"/inbox/{target['id']}/decide"
    # no token, a made-up one, one signed with another key
    assert web.post(url, headers=alice, data={**good, "input_hash": target["input_hash"]}).status_code == 400
    assert web.post(url, headers=alice, data={**good, "csrf_token": "abc",
                                              "input_hash": target["input_hash"]}).status_code == 400
    # a token issued for another entry, or to another operator
    other_csrf = csrf_of(web.get(f"/inbox/{other['id']}", headers=alice).text)
    assert web.post(url, headers=alice, data={**good, "csrf_token": other_csrf,
                                              "input_hash": other["input_hash"]}).status_code == 400
    csrf = csrf_of(web.get(f"/inbox/{target['id']}", headers=alice).text)
    assert web.post(url, headers=mallory, data={**good, "csrf_token": csrf,
                                                "input_hash": target["input_hash"]}).status_code == 400
    # the right token with another input's hash: the decision is bound to the entry's input
    assert web.post(url, headers=alice, data={**good, "csrf_token": csrf,
                                              "input_hash": other["input_hash"]}).status_code == 400
    assert web.post(url, headers=alice, data={**good, "csrf_token": csrf, "input_hash": target["input_hash"],
                                              "action": "approve_everything"}).status_code == 400
    assert web.post(url, headers=alice, data={**good, "csrf_token": csrf, "input_hash": target["input_hash"],
                                              "action": "approve_session"}).status_code == 400  # not a run
    assert web.post(url, headers=alice, data={**good, "csrf_token": csrf, "input_hash": target["input_hash"],
                                              "reason": ""}).status_code == 400
    assert inbox.get(target["id"])["state"] == "pending" and inbox.get(other["id"])["state"] == "pending"
    assert web.post(url, headers=alice, data={**good, "csrf_token": csrf,
                                              "input_hash": target["input_hash"]}).status_code == 303


def test_authorize_hook_can_refuse(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    entry = queue_delete(inbox, sdk)
    web = host_app(inbox, authorize=lambda who, e, decision: who == "boss" or decision == "denied").test_client()
    user = {"X-User": "intern"}
    csrf = csrf_of(web.get(f"/inbox/{entry['id']}", headers=user).text)
    data = {"csrf_token": csrf, "input_hash": entry["input_hash"], "operator": "i", "reason": "r"}
    url = f"/inbox/{entry['id']}/decide"
    assert web.post(url, headers=user, data={**data, "action": "approve_once"}).status_code == 403
    assert web.post(url, headers=user, data={**data, "action": "deny"}).status_code == 303


def test_expired_entries_are_shown_as_such_and_cannot_be_approved(sdk: HermesClient) -> None:
    clock = [time.time()]
    inbox = Inbox(MemoryQueue(), clock=lambda: clock[0])
    entry = queue_delete(inbox, sdk)
    web = host_app(inbox).test_client()
    user = {"X-User": "alice"}
    csrf = csrf_of(web.get(f"/inbox/{entry['id']}", headers=user).text)
    clock[0] = entry["expires_at"] + 1
    # the page reads the real clock for display; the inbox's rules use its own
    inbox_entry = inbox.entries(state="expired")
    assert [e["id"] for e in inbox_entry] == [entry["id"]]
    listing = web.get("/inbox/?state=expired", headers=user).text
    assert entry["id"] in listing and "state-expired" in listing
    resp = web.post(f"/inbox/{entry['id']}/decide", headers=user, data={
        "csrf_token": csrf, "input_hash": entry["input_hash"], "operator": "a", "reason": "r",
        "action": "approve_once"})
    assert resp.status_code == 409 and "expired" in resp.text and inbox.get(entry["id"])["state"] == "pending"


def test_filters(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    call, run = queue_delete(inbox, sdk), queue_run(inbox, sdk)
    web = host_app(inbox).test_client()
    user = {"X-User": "alice"}
    assert call["id"] in web.get("/inbox/?kind=call", headers=user).text
    assert run["id"] not in web.get("/inbox/?kind=call", headers=user).text
    assert run["id"] in web.get("/inbox/?operation=run_approval", headers=user).text
    assert call["id"] not in web.get("/inbox/?operation=run_approval", headers=user).text
    both = web.get("/inbox/?state=all", headers=user).text
    assert call["id"] in both and run["id"] in both
    # by id: any identifier of the entry (or the entry's own id)
    by_response = web.get("/inbox/?id=resp_1", headers=user).text
    assert call["id"] in by_response and run["id"] not in by_response
    by_run = web.get("/inbox/?id=run_1234567890", headers=user).text
    assert run["id"] in by_run and call["id"] not in by_run and "resp_1" in by_response
    assert call["id"] in web.get(f"/inbox/?id={call['id']}", headers=user).text
    assert "Nothing here" in web.get("/inbox/?id=resp_nope", headers=user).text
    assert web.get("/inbox/inb_nope", headers=user).status_code == 404


def test_the_standalone_app_needs_its_token() -> None:
    with pytest.raises(ValueError):
        create_app("memory:", token="short")
    app = create_app("memory:", token=TOKEN)
    sdk = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    entry = queue_delete(app.inbox, sdk)  # type: ignore[attr-defined]
    web = app.test_client()
    assert web.get("/").status_code == 303 and "/login" in web.get("/").headers["Location"]
    assert web.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 303
    assert web.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    login = web.get("/login")
    csrf = csrf_of(login.text)
    assert web.post("/login", data={"token": TOKEN}).status_code == 400  # no CSRF token
    csrf = csrf_of(web.get("/login").text)  # each form is bound to the nonce cookie it came with
    wrong = web.post("/login", data={"token": "nope", "csrf_token": csrf})
    assert wrong.status_code == 400 and "Wrong token" in wrong.text
    csrf = csrf_of(wrong.text)
    resp = web.post("/login", data={"token": TOKEN, "csrf_token": csrf})
    assert resp.status_code == 303 and "HttpOnly" in resp.headers["Set-Cookie"]
    assert "SameSite=Strict" in resp.headers["Set-Cookie"]
    page = web.get("/")
    assert page.status_code == 200 and entry["id"] in page.text
    fresh = app.test_client()  # a login form fetched by another browser does not work here
    assert fresh.post("/login", data={"token": TOKEN, "csrf_token": csrf}).status_code == 400
    sdk.close()


def test_the_blueprint_needs_a_secret(sdk: HermesClient) -> None:
    app = Flask("nosecret")
    inbox = Inbox(MemoryQueue())
    entry = queue_delete(inbox, sdk)
    app.register_blueprint(inbox_blueprint(inbox, authenticate=lambda r: "a"))
    app.config["PROPAGATE_EXCEPTIONS"] = True
    with pytest.raises(RuntimeError, match="SECRET_KEY"):
        app.test_client().get(f"/{entry['id']}")


def test_on_decision_hears_each_stored_decision(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    entry = queue_delete(inbox, sdk)
    heard: list[dict[str, Any]] = []

    def on_decision(decided: dict[str, Any]) -> None:
        heard.append(decided)
        raise RuntimeError("the task queue is down")  # logged; the decision stands

    app = Flask("host")
    app.config["SECRET_KEY"] = "s"
    app.register_blueprint(inbox_blueprint(inbox, authenticate=lambda r: "alice", on_decision=on_decision))
    web = app.test_client()
    csrf = csrf_of(web.get(f"/{entry['id']}").text)
    resp = web.post(f"/{entry['id']}/decide", data={"csrf_token": csrf, "input_hash": entry["input_hash"],
                                                    "operator": "Alice", "reason": "ok", "action": "deny"})
    assert resp.status_code == 303 and inbox.get(entry["id"])["state"] == "denied"
    assert [h["id"] for h in heard] == [entry["id"]] and heard[0]["decision"]["approver"] == "alice"
