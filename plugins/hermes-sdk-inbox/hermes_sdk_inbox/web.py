# ruff: noqa: E501  (the HTML templates keep their lines whole)
"""The inbox page: a Flask blueprint for an existing app, and a standalone app guarded by a token.

Safe by default:

* every request is authenticated by the host application's ``authenticate(request)`` hook, which
  returns the operator's identity or None (401); ``authorize(identity, entry, decision)`` may
  refuse a decision (403);
* every form carries a CSRF token signed with ``itsdangerous`` and bound to the operator, the entry
  and its input hash; a decision is refused unless the posted input hash is the entry's, so a
  forged form cannot approve something else;
* an expired entry cannot be approved; a decided one cannot be decided again;
* pages are ``no-store``, cannot be framed, and load nothing from elsewhere.
"""

from __future__ import annotations

import datetime as _dt
import hmac
import json
import logging
import os
import secrets
from typing import Any, Callable, Optional, Union

from flask import Blueprint, Flask, Response, abort, current_app, redirect, render_template_string, request, url_for
from itsdangerous import BadSignature, URLSafeTimedSerializer

from hermes_sdk.plugin import visible_value

from .inbox import Inbox, InboxError, display_state, identifiers_of
from .queue import ApprovalQueue

Authenticate = Callable[[Any], Optional[str]]
Authorize = Callable[[str, dict[str, Any], str], bool]
OnDecision = Callable[[dict[str, Any]], None]
CSRF_MAX_AGE = 3600
log = logging.getLogger("hermes_sdk_inbox")

_BASE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}
.state{font-weight:bold}.state-pending{color:#b35c00}.state-approved{color:#19713a}.state-denied{color:#a40e26}
.state-expired{color:#666}code{word-break:break-all}form.decide{margin:.5rem 0;padding:.5rem;border:1px solid #ccc}
.error{color:#a40e26;font-weight:bold}label{display:block;margin:.3rem 0}
</style></head><body>
<p><a href="{{ url_for(bp + '.index') }}">{{ title }}</a> &middot; signed in as <span id="operator">{{ identity }}</span></p>
{% if error %}<p class="error" id="error">{{ error }}</p>{% endif %}
{{ body|safe }}
</body></html>"""

_LIST = """<h1>{{ heading }}</h1>
<form method="get" id="filters">
<label>State <select name="state">{% for s in ["pending", "approved", "denied", "expired", "all"] %}
<option value="{{ s }}" {% if s == state %}selected{% endif %}>{{ s }}</option>{% endfor %}</select></label>
<label>Kind <select name="kind"><option value="">any</option>{% for k in ["run", "operator", "call"] %}
<option value="{{ k }}" {% if k == kind %}selected{% endif %}>{{ k }}</option>{% endfor %}</select></label>
<label>Operation <input name="operation" value="{{ operation or '' }}"></label>
<label>Id <input name="id" value="{{ identifier or '' }}" placeholder="resp_…, job id, session id, run_…, act_…"></label>
<button type="submit">Filter</button></form>
<table id="entries"><tr><th>Entry</th><th>State</th><th>Operation</th><th>What</th><th>Reason</th><th>Requested</th><th>Expires</th></tr>
{% for e in entries %}<tr class="entry" data-entry="{{ e.id }}">
<td><a href="{{ url_for(bp + '.detail', entry_id=e.id) }}">{{ e.id }}</a></td>
<td class="state state-{{ e.display_state }}">{{ e.display_state }}</td>
<td>{{ e.operation }} <small>({{ e.kind }})</small></td>
<td>{% if e.run %}<code>{{ e.run.command }}</code>{% if e.run.pattern_key %} <small>[{{ e.run.pattern_key }}]</small>{% endif %}<br>{% endif %}
{% for k, v in e.identifiers.items() %}{% if k != 'pattern_key' %}<small class="id">{{ k }}=<code>{{ v }}</code></small> {% endif %}{% endfor %}</td>
<td>{{ e.reason or '' }}</td><td>{{ fmt(e.requested_at) }}</td><td>{{ fmt(e.expires_at) }}</td></tr>
{% else %}<tr><td colspan="7" id="empty">Nothing here.</td></tr>{% endfor %}</table>"""

_DETAIL = """<h1>Entry <code id="entry-id">{{ e.id }}</code></h1>
<p>State: <span id="state" class="state state-{{ state }}">{{ state }}</span></p>
<table id="fields">
<tr><th>Operation</th><td id="operation">{{ e.operation }} ({{ e.kind }}) on endpoint {{ e.endpoint_id }}</td></tr>
<tr><th>Capability</th><td><code>{{ e.capability_id }}</code></td></tr>
{% if e.run %}<tr><th>Command</th><td><code id="command">{{ e.run.command }}</code></td></tr>
<tr><th>Pattern</th><td id="pattern">{{ e.run.pattern_key or e.identifiers.pattern_key or e.run.description or 'unknown' }}</td></tr>
{% if e.run.deadline %}<tr><th>Run deadline</th><td>{{ fmt(e.run.deadline) }}</td></tr>{% endif %}
<tr><th>Choices</th><td>{{ (e.run.choices or [])|join(', ') }}</td></tr>{% endif %}
<tr><th>Acts on</th><td id="identifiers">{% for k, v in e.identifiers.items() %}<span class="id" data-name="{{ k }}">{{ k }}=<code>{{ v }}</code></span> {% endfor %}</td></tr>
{% if e.operator %}<tr><th>Operator action</th><td><code id="operator-action">{{ e.operator.action_id }}</code>: the decision resumes it
{% if e.operator.resumed %}<br><span id="resumed">resumed at {{ fmt(e.operator.resumed.at) }} with <b>{{ e.operator.resumed.choice }}</b>: {{ e.operator.resumed.status }}</span>{% endif %}</td></tr>{% endif %}
<tr><th>Input (redacted)</th><td><code>{{ snapshot }}</code></td></tr>
<tr><th>Input hash</th><td><code id="input-hash">{{ e.input_hash }}</code></td></tr>
<tr><th>Caller's reason</th><td id="reason">{{ e.reason or '' }}</td></tr>
<tr><th>Principal / tenant</th><td>{{ e.principal_id or '-' }} / {{ e.tenant_id or '-' }}</td></tr>
<tr><th>Requested</th><td>{{ fmt(e.requested_at) }}</td></tr>
<tr><th>Expires</th><td id="expires">{{ fmt(e.expires_at) }}</td></tr>
{% if e.decision %}<tr><th>Decision</th><td id="decision">{{ e.decision.decision }}{% if e.decision.scope %} ({{ e.decision.scope }}){% endif %}
by <b id="approver">{{ e.decision.authenticated_as or e.decision.approver }}</b>{% if e.decision.display_name %}
(<span id="display-name">{{ e.decision.display_name }}</span>){% elif e.decision.authenticated_as and e.decision.authenticated_as != e.decision.approver %}
(typed as {{ e.decision.approver }}){% endif %} at {{ fmt(e.decision.decided_at) }}: <span id="decision-reason">{{ e.decision.reason }}</span>;
on input hash <code>{{ e.decision.input_hash }}</code></td></tr>{% endif %}
{% if e.used %}<tr><th>Used</th><td>{{ fmt(e.used.at) }} by action <code>{{ e.used.action_id }}</code></td></tr>{% endif %}
{% if e.closed_reason %}<tr><th>Closed</th><td>{{ e.closed_reason }}</td></tr>{% endif %}
</table>
{% if state == "pending" %}
<form method="post" class="decide" id="decide" action="{{ url_for(bp + '.decide', entry_id=e.id) }}">
<input type="hidden" name="csrf_token" value="{{ csrf }}">
<input type="hidden" name="input_hash" value="{{ e.input_hash }}">
<p>You decide as <b>{{ identity }}</b> (the signed-in operator is recorded as the approver).</p>
<label>Display name (optional, shown beside it) <input name="operator" id="operator-name"></label>
<label>Reason <input name="reason" id="decision-reason-input" required size="60"></label>
<button type="submit" name="action" value="approve_once" id="approve-once">Approve{% if e.run %} once{% endif %}</button>
{% if e.run and 'session' in (e.run.choices or []) %}
<button type="submit" name="action" value="approve_session" id="approve-session">Approve for this run's session</button>{% endif %}
<button type="submit" name="action" value="deny" id="deny">Deny</button>
</form>{% elif state == "expired" %}<p id="expired-note">This entry expired; it can no longer be approved.</p>{% endif %}"""


def _fmt(ts: Any) -> str:
    if not isinstance(ts, (int, float)):
        return "-"
    return _dt.datetime.fromtimestamp(float(ts), _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _headers(resp: Response) -> Response:
    resp.headers.setdefault("Cache-Control", "no-store")
    resp.headers.setdefault("X-Frame-Options", "DENY")
    resp.headers.setdefault("X-Content-Type-Options", "nosniff")
    resp.headers.setdefault("Referrer-Policy", "no-referrer")
    resp.headers.setdefault("Content-Security-Policy",
                            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'")
    return resp


def inbox_blueprint(store: Union[str, ApprovalQueue, Inbox], *, authenticate: Authenticate,
                    authorize: Optional[Authorize] = None, secret_key: Optional[Union[str, bytes]] = None,
                    name: str = "hermes_inbox", title: str = "Approval inbox",
                    on_decision: Optional[OnDecision] = None) -> Blueprint:
    """A blueprint serving the inbox; mount it with ``app.register_blueprint(bp, url_prefix="/inbox")``.

    Args:
        store: a store URL, an ApprovalQueue or an Inbox.
        authenticate: ``authenticate(flask.request) -> identity | None``: your application's login
            (a session user, a header set by your proxy, ...). None answers 401.
        authorize: ``authorize(identity, entry, decision) -> bool`` (decision ``approved`` or
            ``denied``); False answers 403. Default: every authenticated operator may decide.
        secret_key: signs the CSRF tokens; default the app's ``SECRET_KEY`` (required then).
        name: the blueprint's name (``url_for(name + ".index")``).
        title: the page title.
        on_decision: ``on_decision(entry)`` after each decision is stored, e.g. to enqueue a task
            that runs :func:`~hermes_sdk_inbox.resume_decided` for an ``operator`` entry. What it
            raises is logged; the decision stands.
    """
    inbox = store if isinstance(store, Inbox) else Inbox(store)
    bp = Blueprint(name, __name__)
    bp.inbox = inbox  # type: ignore[attr-defined]

    def serializer() -> URLSafeTimedSerializer:
        key = secret_key or current_app.config.get("SECRET_KEY")
        if not key:
            raise RuntimeError("the inbox blueprint needs secret_key= or the app's SECRET_KEY to sign CSRF tokens")
        return URLSafeTimedSerializer(key, salt="hermes-sdk-inbox.csrf")

    def identity() -> str:
        who = authenticate(request)
        if not who:
            abort(401)
        return str(who)

    def page(body_template: str, status: int = 200, error: Optional[str] = None, **ctx: Any) -> Response:
        # Every text shown is visible(): an entry's command, reasons and ids, the operator's identity.
        ctx = {k: visible_value(v) for k, v in ctx.items()}
        body = render_template_string(body_template, bp=name, fmt=_fmt, **ctx)
        html = render_template_string(_BASE, body=body, bp=name, title=title, error=error,
                                      identity=ctx.get("identity", ""))
        return Response(html, status=status, mimetype="text/html")

    @bp.after_request
    def secure(resp: Response) -> Response:
        return _headers(resp)

    @bp.route("/", methods=["GET"])
    def index() -> Response:
        who = identity()
        state = request.args.get("state", "pending")
        kind = request.args.get("kind") or None
        operation = (request.args.get("operation") or "").strip() or None
        identifier = (request.args.get("id") or "").strip() or None
        entries = inbox.entries(state=None if state == "all" else state, kind=kind, operation=operation,
                                identifier=identifier)
        return page(_LIST, heading=f"Approvals: {state}", entries=entries, state=state, kind=kind,
                    operation=operation, identifier=identifier, identity=who)

    def render_detail(entry_id: str, who: str, status: int = 200, error: Optional[str] = None) -> Response:
        try:
            entry = inbox.get(entry_id)
        except InboxError as exc:
            return page("<p>{{ message }}</p>", status=exc.status, message=str(exc), identity=who)
        csrf = serializer().dumps({"o": who, "e": entry["id"], "h": entry["input_hash"]})
        entry = {**entry, "identifiers": identifiers_of(entry)}
        return page(_DETAIL, status=status, error=error, e=entry, state=display_state(entry), csrf=csrf,
                    snapshot=json.dumps(entry.get("input_snapshot"), sort_keys=True), identity=who)

    @bp.route("/<entry_id>", methods=["GET"])
    def detail(entry_id: str) -> Response:
        return render_detail(entry_id, identity())

    @bp.route("/<entry_id>/decide", methods=["POST"])
    def decide(entry_id: str) -> Any:
        who = identity()
        form = request.form
        try:
            token = serializer().loads(form.get("csrf_token", ""), max_age=CSRF_MAX_AGE)
        except BadSignature:
            return render_detail(entry_id, who, status=400, error="The form expired or was not issued here (CSRF).")
        posted_hash = form.get("input_hash", "")
        if not (isinstance(token, dict) and hmac.compare_digest(str(token.get("o")), who)
                and token.get("e") == entry_id and hmac.compare_digest(str(token.get("h")), posted_hash)):
            return render_detail(entry_id, who, status=400, error="The form was not issued for this entry (CSRF).")
        action = form.get("action", "")
        decision, scope = {"approve_once": ("approved", "once"), "approve_session": ("approved", "session"),
                           "deny": ("denied", None)}.get(action, (None, None))
        if decision is None:
            return render_detail(entry_id, who, status=400, error="Unknown action.")
        if authorize is not None:
            try:
                entry = inbox.get(entry_id)
            except InboxError as exc:
                return render_detail(entry_id, who, status=exc.status, error=str(exc))
            if not authorize(who, entry, decision):
                return render_detail(entry_id, who, status=403, error="You may not decide this entry.")
        try:
            decided = inbox.decide(entry_id, decision=decision, approver=who, reason=form.get("reason", ""),
                                   input_hash=posted_hash, scope=scope, authenticated_as=who,
                                   display_name=form.get("operator", ""))
        except InboxError as exc:
            return render_detail(entry_id, who, status=exc.status, error=str(exc))
        if on_decision is not None:
            try:
                on_decision(decided)
            except Exception:
                log.exception("hermes-sdk-inbox: on_decision failed for %s; the decision stands", entry_id)
        return redirect(url_for(name + ".detail", entry_id=entry_id), code=303)

    return bp


# ---------------------------------------------------------------- standalone


_LOGIN = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Approval inbox: sign in</title></head>
<body><h1>Approval inbox</h1>{% if error %}<p id="error">{{ error }}</p>{% endif %}
<form method="post" id="login"><input type="hidden" name="csrf_token" value="{{ csrf }}">
<label>Access token <input type="password" name="token" id="token" required></label>
<button type="submit" id="sign-in">Sign in</button></form></body></html>"""

COOKIE = "hermes_inbox_auth"
NONCE_COOKIE = "hermes_inbox_login"


def create_app(store: Union[str, ApprovalQueue, Inbox], *, token: str, secret_key: Optional[str] = None,
               operator: str = "operator", url_prefix: str = "",
               on_decision: Optional[OnDecision] = None) -> Flask:
    """The standalone inbox (``hermes-sdk-inbox --store URL``): every request needs ``token``.

    Send it as ``Authorization: Bearer <token>``, or sign in once at ``/login`` (an HttpOnly,
    SameSite=Strict cookie signed with ``secret_key`` follows). The signed-in identity is
    ``operator``, recorded as the approver of each decision (a name typed into the form is kept
    beside it as a display name). ``on_decision`` is
    the blueprint's hook (``hermes-sdk-inbox serve --resume`` gives a :class:`ResumeWorker`'s
    ``wake``).
    """
    if not token or len(token) < 16:
        raise ValueError("the standalone inbox needs an access token of at least 16 characters")
    app = Flask(__name__)
    app.config["SECRET_KEY"] = secret_key or secrets.token_hex(32)
    cookies = URLSafeTimedSerializer(app.config["SECRET_KEY"], salt="hermes-sdk-inbox.login")

    def authenticate(req: Any) -> Optional[str]:
        header = req.headers.get("Authorization", "")
        if header.startswith("Bearer ") and hmac.compare_digest(header[7:].encode(), token.encode()):
            return operator
        try:
            if cookies.loads(req.cookies.get(COOKIE, ""), max_age=12 * 3600) == "ok":
                return operator
        except BadSignature:
            pass
        return None

    bp = inbox_blueprint(store, authenticate=authenticate, on_decision=on_decision)
    app.register_blueprint(bp, url_prefix=url_prefix or None)
    app.inbox = bp.inbox  # type: ignore[attr-defined]

    @app.errorhandler(401)
    def unauthorized(_: Any) -> Any:
        return redirect(url_for("login"), code=303)

    @app.route(f"{url_prefix}/login", methods=["GET", "POST"])
    def login() -> Any:
        error = None
        if request.method == "POST":
            nonce = request.cookies.get(NONCE_COOKIE, "")
            try:
                ok = bool(nonce) and hmac.compare_digest(str(cookies.loads(request.form.get("csrf_token", ""),
                                                                           max_age=CSRF_MAX_AGE)), nonce)
            except BadSignature:
                ok = False
            if not ok:
                error = "The form expired or was not issued here (CSRF)."
            elif hmac.compare_digest(request.form.get("token", "").encode(), token.encode()):
                resp = redirect(url_for(bp.name + ".index"), code=303)
                resp.set_cookie(COOKIE, cookies.dumps("ok"), httponly=True, samesite="Strict",
                                secure=request.is_secure, max_age=12 * 3600)
                resp.delete_cookie(NONCE_COOKIE)
                return _headers(resp)
            else:
                error = "Wrong token."
        nonce = secrets.token_urlsafe(16)
        resp = Response(render_template_string(_LOGIN, csrf=cookies.dumps(nonce), error=error),
                        status=400 if error else 200, mimetype="text/html")
        resp.set_cookie(NONCE_COOKIE, nonce, httponly=True, samesite="Strict", secure=request.is_secure)
        return _headers(resp)

    return app


def token_from_env() -> Optional[str]:
    """``HERMES_SDK_INBOX_TOKEN``, the standalone command's token when ``--token`` is not given."""
    return os.environ.get("HERMES_SDK_INBOX_TOKEN") or None
