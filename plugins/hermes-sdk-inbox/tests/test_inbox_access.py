"""Who can use the page: any identity the host's login returns decides; login cookies can be taken back."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlencode

import pytest
from flask import Flask
from hermes_sdk_inbox import Inbox, MemoryQueue, create_app, inbox_blueprint
from hermes_sdk_inbox.cli import main as cli_main

from hermes_sdk import HermesClient

TOKEN = "t0ken-for-the-tests-0123456789"
PEOPLE: dict[str, Any] = {"jose": "José", "dana": "Дана", "emoji": "ops 🚀", "number": 42, "mallory": "Mallory"}


@pytest.fixture
def sdk() -> Any:
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    yield client
    client.close()


def csrf_of(html: str, form: str = "decide") -> str:
    match = re.search(r'<form[^>]*id="%s".*?name="csrf_token" value="([^"]+)"' % form, html, re.S) or \
        re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, html
    return match.group(1)


def host(inbox: Inbox) -> Flask:
    app = Flask("host")
    app.config["SECRET_KEY"] = "host-secret"

    def authenticate(request: Any) -> Optional[Any]:
        return PEOPLE.get(request.headers.get("X-User", ""))  # whatever the host's login returns

    app.register_blueprint(inbox_blueprint(inbox, authenticate=authenticate), url_prefix="/inbox")
    return app


@pytest.mark.parametrize("user", ["jose", "dana", "emoji", "number"])
def test_any_identity_the_login_returns_can_decide(sdk: HermesClient, user: str) -> None:
    inbox = Inbox(MemoryQueue())
    entry = inbox.submit(sdk.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup"))
    web = host(inbox).test_client()
    who = {"X-User": user}
    page = web.get(f"/inbox/{entry['id']}", headers=who)
    assert page.status_code == 200 and str(PEOPLE[user]) in page.text
    resp = web.post(f"/inbox/{entry['id']}/decide", headers=who, data={
        "csrf_token": csrf_of(page.text), "input_hash": entry["input_hash"], "operator": str(PEOPLE[user]),
        "reason": "geprüft", "action": "approve_once"})
    assert resp.status_code == 303, resp.text
    assert inbox.get(entry["id"])["decision"]["authenticated_as"] == str(PEOPLE[user])


def test_a_form_for_one_operator_is_refused_to_another_and_a_foreign_hash_is_a_400(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    entry = inbox.submit(sdk.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup"))
    web = host(inbox).test_client()
    csrf = csrf_of(web.get(f"/inbox/{entry['id']}", headers={"X-User": "dana"}).text)
    url = f"/inbox/{entry['id']}/decide"
    form = {"csrf_token": csrf, "input_hash": entry["input_hash"], "operator": "x", "reason": "r",
            "action": "approve_once"}
    assert web.post(url, headers={"X-User": "jose"}, data=form).status_code == 400  # Дана's form
    for posted in ("é" * 64, "哈希", entry["input_hash"] + "é"):
        resp = web.post(url, headers={"X-User": "dana"}, data={**form, "input_hash": posted})
        assert resp.status_code == 400 and "CSRF" in resp.text, posted
    raw = urlencode({**form, "input_hash": "x"}).replace("input_hash=x", "input_hash=%ff%fe%c3")  # not UTF-8
    resp = web.post(url, headers={"X-User": "dana"}, data=raw, content_type="application/x-www-form-urlencoded")
    assert resp.status_code == 400 and "CSRF" in resp.text
    assert inbox.get(entry["id"])["state"] == "pending"
    assert web.post(url, headers={"X-User": "dana"}, data=form).status_code == 303


def _sign_in(web: Any, token: str = TOKEN) -> Any:
    csrf = csrf_of(web.get("/login").text)
    resp = web.post("/login", data={"token": token, "csrf_token": csrf})
    assert resp.status_code == 303
    return resp


def _cookie(web: Any) -> str:
    if hasattr(web, "get_cookie"):
        cookie = web.get_cookie("hermes_inbox_auth")
    else:  # Werkzeug < 2.3 (Flask 2.0): the client's cookie jar
        cookie = next((c for c in web.cookie_jar if c.name == "hermes_inbox_auth"), None)
    assert cookie is not None
    return str(cookie.value)


def _with_cookie(app: Flask, value: str) -> Any:
    other = app.test_client()
    if hasattr(other, "get_cookie"):
        other.set_cookie("hermes_inbox_auth", value)
    else:  # Werkzeug < 2.3 (Flask 2.0) takes the server name first
        other.set_cookie("localhost", "hermes_inbox_auth", value)
    return other


def test_sign_out_takes_the_cookie_back_on_the_server() -> None:
    app = create_app("memory:", token=TOKEN, operator="Дана")
    web = app.test_client()
    _sign_in(web)
    page = web.get("/")
    assert page.status_code == 200 and 'id="sign-out"' in page.text and "Дана" in page.text
    stolen = _cookie(web)
    # a sign-out form must come from this session (a cross-site post cannot sign anyone out)
    assert web.post("/logout", data={"csrf_token": "forged"}).status_code == 400
    assert web.get("/").status_code == 200
    resp = web.post("/logout", data={"csrf_token": csrf_of(page.text, "sign-out")})
    assert resp.status_code == 303 and resp.headers["Location"].endswith("/login")  # nowhere else
    assert resp.headers["X-Frame-Options"] == "DENY" and resp.headers["Cache-Control"] == "no-store"
    assert web.get("/").status_code == 303
    # a copy of the cookie taken before the sign-out is refused too: the server remembers it
    assert _with_cookie(app, stolen).get("/").status_code == 303
    _sign_in(web)  # a new sign-in is a new session
    assert web.get("/").status_code == 200
    assert web.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_every_session_ends_from_the_page_in_every_process(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    first = create_app(store, token=TOKEN, secret_key="shared-secret")
    second = create_app(store, token=TOKEN, secret_key="shared-secret")  # another process, same store
    a, b = first.test_client(), second.test_client()
    _sign_in(a)
    _sign_in(b)
    b_cookie = _cookie(b)
    assert _with_cookie(first, b_cookie).get("/").status_code == 200  # one cookie, either process
    page = a.get("/")
    assert a.post("/sessions/end", data={"csrf_token": "forged"}).status_code == 400
    assert b.get("/").status_code == 200
    resp = a.post("/sessions/end", data={"csrf_token": csrf_of(page.text, "end-sessions")})
    assert resp.status_code == 303
    for web in (a, b, _with_cookie(first, b_cookie)):
        assert web.get("/").status_code == 303
    _sign_in(b)
    assert b.get("/").status_code == 200


def test_every_session_ends_from_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    app = create_app(store, token=TOKEN)
    web = app.test_client()
    _sign_in(web)
    assert web.get("/").status_code == 200
    assert cli_main(["--store", store, "end-sessions"]) == 0
    assert "every login session ended" in capsys.readouterr().err
    assert web.get("/").status_code == 303
    # the token itself still works (change it to take it back), and the record is never listed
    assert web.get("/?state=all", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert "inb_sessions" not in web.get("/?state=all", headers={"Authorization": f"Bearer {TOKEN}"}).text
    assert all(e["id"] != "inb_sessions" for e in app.inbox.entries(state=None))  # type: ignore[attr-defined]
    # an API client ends them with its bearer token (no form, no cookie)
    _sign_in(web)
    assert web.get("/").status_code == 200
    assert app.test_client().post("/sessions/end", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 303
    assert web.get("/").status_code == 303
