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
import time
from typing import Any, Callable, Optional, Union

from flask import Blueprint, Flask, Response, abort, current_app, redirect, render_template_string, request, url_for
from itsdangerous import BadSignature, URLSafeTimedSerializer

from hermes_sdk.plugin import visible_value

from .inbox import PER_PAGE, Inbox, InboxError, display_state
from .outcome import describe, run_outcome
from .queue import ApprovalQueue, identifiers_of
from .sessions import LoginSessions

Authenticate = Callable[[Any], Optional[str]]
Authorize = Callable[[str, dict[str, Any], str], bool]
OnDecision = Callable[[dict[str, Any]], None]
CSRF_MAX_AGE = 3600
log = logging.getLogger("hermes_sdk_inbox")

_BASE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
{% if refresh %}<meta http-equiv="refresh" content="{{ refresh }}">{% endif %}
<style>
body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.4rem;text-align:left;vertical-align:top}
.state{font-weight:bold}.state-pending{color:#b35c00}.state-approved{color:#19713a}.state-denied{color:#a40e26}
.state-expired{color:#666}code{word-break:break-all}form.decide{margin:.5rem 0;padding:.5rem;border:1px solid #ccc}
.error{color:#a40e26;font-weight:bold}.left{font-weight:bold;color:#b35c00}.note{color:#555;font-size:.9em}label{display:block;margin:.3rem 0}form.account{display:inline;margin-left:1rem}
</style></head><body>
<p><a href="{{ url_for(bp + '.index') }}">{{ title }}</a> &middot; signed in as <span id="operator">{{ identity }}</span>{{ account|safe }}</p>
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
<p class="note" id="refresh-note">This list reloads itself every {{ refresh }} seconds.</p>
{% if no_outcomes and entries|selectattr("run")|list %}<p class="note" id="no-outcomes">{{ no_outcomes }}</p>{% endif %}
<p id="count"><b id="total">{{ total }}</b> {{ state if state != "all" else "" }} entr{{ "y" if total == 1 else "ies" }}{% if entries %}; showing {{ first }}&ndash;{{ last }}{% if state == "pending" %}, soonest to lapse first{% endif %}{% endif %}.
{% if number > 1 %}<a id="prev-page" href="{{ url_for(bp + '.index', page=number - 1, **query) }}">Previous page</a>{% endif %}
{% if last < total %}<a id="next-page" href="{{ url_for(bp + '.index', page=number + 1, **query) }}">Next page</a>{% endif %}</p>
<table id="entries"><tr><th>Entry</th><th>State</th><th>Operation</th><th>Tenant / principal</th><th>What</th><th>Caller's reason</th><th>Requested</th><th>Time left</th></tr>
{% for e in entries %}<tr class="entry" data-entry="{{ e.id }}">
<td><a href="{{ url_for(bp + '.detail', entry_id=e.id) }}">{{ e.id }}</a></td>
<td class="state state-{{ e.display_state }}">{{ e.display_state }}{% if e.outcome and e.outcome.status %}<br><small class="outcome">run {{ e.outcome.status }}</small>{% endif %}</td>
<td>{{ e.operation }} <small>({{ e.kind }})</small></td>
<td class="who">{{ e.tenant_id or '-' }} / {{ e.principal_id or '-' }}</td>
<td>{% if e.run %}<code>{{ e.run.command }}</code>{% if e.fully_shown is false %} <b class="state-denied">(not fully shown)</b>{% endif %}{% if e.run.pattern_key %} <small>[{{ e.run.pattern_key }}]</small>{% endif %}<br>{% endif %}
{% for k, v in shown_ids(e).items() %}<small class="id">{{ k }}=<code>{{ v }}</code></small> {% endfor %}{% if not e.run and e.fully_shown is false %} <b class="state-denied">(not fully shown)</b>{% endif %}</td>
<td>{% if not e.run or e.reason != e.run.pattern_key %}{{ e.reason or '' }}{% endif %}</td><td>{{ fmt(e.requested_at) }}</td>
<td>{% set s = left(e) %}{% if s is not none %}<span class="left" data-seconds="{{ s }}">{{ duration(s) }}</span>{% if e.kind != 'call' %} <small>until Hermes blocks it</small>{% endif %}{% else %}{{ fmt(e.expires_at) }}{% endif %}</td></tr>
{% else %}<tr><td colspan="8" id="empty">Nothing here.</td></tr>{% endfor %}</table>"""

_DETAIL = """<h1>Entry <code id="entry-id">{{ e.id }}</code></h1>
<p>State: <span id="state" class="state state-{{ state }}">{{ state }}</span></p>
<table id="fields">
<tr><th>Operation</th><td id="operation">{{ e.operation }} ({{ e.kind }}) on endpoint {{ e.endpoint_id }}</td></tr>
<tr><th>Endpoint</th><td id="endpoint">{{ e.endpoint_id or '-' }}</td></tr>
<tr><th>Tenant</th><td id="tenant">{{ e.tenant_id or '-' }}</td></tr>
<tr><th>Principal</th><td id="principal">{{ e.principal_id or '-' }}</td></tr>
<tr><th>Capability</th><td><code>{{ e.capability_id }}</code></td></tr>
{% if e.run %}<tr><th>What the run was asked to do</th><td id="objective">{% if e.objective %}{{ e.objective }}{% else %}<i>not known to the inbox</i>{% endif %}</td></tr>
<tr><th>Session</th><td id="session">{% if e.identifiers.session_id and e.identifiers.session_id == e.identifiers.run_id %}the run's own (named after the run){% else %}{{ e.identifiers.session_id or '-' }}{% endif %}</td></tr>
<tr><th>Command</th><td><code id="command">{{ e.run.command }}</code>{% if e.fully_shown is false %}
<br><b id="not-fully-shown" class="state-denied">Not fully shown: {{ e.not_shown or 'part of it is hidden' }}. It cannot be approved here, only denied.</b>{% endif %}</td></tr>
<tr><th>Hermes' pattern</th><td id="pattern">{{ e.run.pattern_key or e.identifiers.pattern_key or 'unknown' }}</td></tr>
{% set described = e.run.description or e.reason %}{% if described and described != (e.run.pattern_key or e.identifiers.pattern_key) %}
<tr><th>Hermes' description</th><td id="description">{{ described }}</td></tr>{% endif %}
{% if state == "pending" %}<tr><th>Hermes blocks it</th><td>{% if left_s is not none %}in <span id="time-left" class="left" data-seconds="{{ left_s }}">{{ duration(left_s) }}</span>, {% endif %}at {{ fmt(e.expires_at) }}
<span class="note">(its approval timeout{% if e.run.deadline %} or the run's deadline, {{ fmt(e.run.deadline) }}{% endif %}: silence is not consent)</span></td></tr>{% endif %}
<tr><th>Hermes accepts</th><td id="choices">{{ (e.run.choices or [])|join(', ') }}{% if not e.run.choices_observed %} <span class="note">(assumed: the inbox did not see Hermes' request; a session approval Hermes does not offer is sent as once)</span>{% endif %}
{% if 'always' in (e.run.choices or []) %}<br><span class="note">"always" is not offered here: it makes Hermes allow the pattern in every later run and rewrites its config.</span>{% endif %}</td></tr>{% endif %}
<tr><th>Acts on</th><td id="identifiers">{% for k, v in shown_ids(e).items() %}<span class="id" data-name="{{ k }}">{{ k }}=<code>{{ v }}</code></span> {% endfor %}</td></tr>
{% if e.operator %}<tr><th>Operator action</th><td><code id="operator-action">{{ e.operator.action_id }}</code>: the decision resumes it
{% if e.operator.resumed %}<br><span id="resumed">resumed at {{ fmt(e.operator.resumed.at) }} with <b>{{ e.operator.resumed.choice }}</b>: {{ e.operator.resumed.status }}</span>{% endif %}</td></tr>{% endif %}
{% if snapshot %}<tr><th>Input</th><td><code id="input">{{ snapshot }}</code></td></tr>{% endif %}
{% if not e.run and e.fully_shown is false %}<tr><th>Not fully shown</th><td><b id="not-fully-shown" class="state-denied">{{ e.not_shown or 'part of it is hidden' }}. It cannot be approved here, only denied.</b></td></tr>{% endif %}
<tr><th>Input hash</th><td><code id="input-hash">{{ e.input_hash }}</code></td></tr>
{% if not e.run %}<tr><th>Caller's reason</th><td id="reason">{{ e.reason or '' }}</td></tr>{% endif %}
<tr><th>Requested</th><td>{{ fmt(e.requested_at) }}</td></tr>
{% if not e.run %}<tr><th>Expires</th><td id="expires">{% if left_s is not none %}in <span id="time-left" class="left" data-seconds="{{ left_s }}">{{ duration(left_s) }}</span>, {% endif %}at {{ fmt(e.expires_at) }}</td></tr>{% endif %}
{% if e.decision %}<tr><th>Decision</th><td id="decision">{{ e.decision.decision }}{% if e.decision.scope %} ({{ e.decision.scope }}){% endif %}
by <b id="approver">{{ e.decision.authenticated_as or e.decision.approver }}</b>{% if e.decision.display_name %}
(<span id="display-name">{{ e.decision.display_name }}</span>){% elif e.decision.authenticated_as and e.decision.authenticated_as != e.decision.approver %}
(typed as {{ e.decision.approver }}){% endif %} at {{ fmt(e.decision.decided_at) }}: <span id="decision-reason">{{ e.decision.reason }}</span>;
on input hash <code>{{ e.decision.input_hash }}</code></td></tr>{% endif %}
{% if e.used %}<tr><th>Sent to Hermes</th><td id="used">{{ fmt(e.used.at) }}{% if e.run %}, to the run{% else %}, by action <code>{{ e.used.action_id }}</code>{% endif %}</td></tr>{% endif %}
{% if outcome %}<tr><th>The run</th><td id="run-outcome" data-status="{{ outcome.status or '' }}">{{ describe(outcome) }}{% if outcome.checked_at %}
<span class="note">(as Hermes reported it at {{ fmt(outcome.checked_at) }})</span>{% endif %}</td></tr>{% endif %}
{% if e.run and no_outcomes and not outcome %}<tr><th>The run</th><td id="no-outcomes">{{ no_outcomes }}</td></tr>{% endif %}
{% if e.closed_reason %}<tr><th>Closed</th><td>{{ e.closed_reason }}</td></tr>{% endif %}
</table>
{% if state == "pending" %}
<form method="post" class="decide" id="decide" action="{{ url_for(bp + '.decide', entry_id=e.id) }}">
<input type="hidden" name="csrf_token" value="{{ csrf }}">
<input type="hidden" name="input_hash" value="{{ e.input_hash }}">
<p>You decide as <b>{{ identity }}</b> (the signed-in operator is recorded as the approver).</p>
<label>Display name (optional, shown beside it) <input name="operator" id="operator-name"></label>
<label>Reason <input name="reason" id="decision-reason-input" required size="60"></label>
{% if e.fully_shown is not false %}<button type="submit" name="action" value="approve_once" id="approve-once">Approve{% if e.run %} once (this command){% endif %}</button>{% endif %}
{% if e.run and e.fully_shown is not false and 'session' in (e.run.choices or []) %}
<button type="submit" name="action" value="approve_session" id="approve-session">Approve this pattern for the rest of the run (session)</button>{% endif %}
<button type="submit" name="action" value="deny" id="deny">Deny</button>
</form>{% elif state == "expired" %}<p id="expired-note">This entry expired; it can no longer be approved.</p>{% endif %}"""


#: Seconds between the list's own reloads (a meta refresh: no script, which the page's CSP forbids).
LIST_REFRESH_SECONDS = 5
#: What a page without a Hermes client says where a run's outcome would be.
NO_OUTCOMES = ("What became of the runs cannot be shown here: this inbox has no Hermes client. Serve it with "
               "HERMES_BASE_URL and HERMES_API_KEY set (hermes-sdk-inbox), or give inbox_blueprint(hermes=client).")


def _left(entry: dict[str, Any]) -> Optional[int]:
    """Whole seconds until a pending entry expires (for a run's command: Hermes blocks it), else None."""
    if display_state(entry) != "pending":
        return None
    return max(0, int(float(entry["expires_at"]) - time.time()))


def shown_ids(entry: dict[str, Any]) -> dict[str, str]:
    """The ids an entry acts on, each once: the pattern key has its own place, and a session named
    after its run (Hermes' default) is the run id again."""
    ids = dict(entry.get("identifiers") or identifiers_of(entry))
    ids.pop("pattern_key", None) if entry.get("run") else None
    if ids.get("session_id") is not None and ids.get("session_id") == ids.get("run_id"):
        ids.pop("session_id")
    return ids


def shown_input(entry: dict[str, Any]) -> str:
    """The input as the approver is shown it (``ApprovalRequest.input_snapshot``: every value but a
    secret's), without what the page shows elsewhere: the ids (under "Acts on") and a run's command."""
    snapshot = dict(entry.get("input_snapshot") or {})
    for name in identifiers_of(entry):
        snapshot.pop(name, None)
    if entry.get("run"):
        snapshot.pop("command", None)
    return json.dumps(snapshot, sort_keys=True) if snapshot else ""


def _page_number(value: Optional[str]) -> int:
    """The ``page`` argument as a page number from 1 (anything else: the first page)."""
    return int(value) if value and value.isdigit() and 0 < int(value) < 10**6 else 1


def _duration(seconds: int) -> str:
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _fmt(ts: Any) -> str:
    if not isinstance(ts, (int, float)):
        return "-"
    return _dt.datetime.fromtimestamp(float(ts), _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _same(a: Any, b: Any) -> bool:
    """A timing-safe equality of two texts, whatever their characters (``compare_digest`` refuses
    non-ASCII ``str``: an operator named "José" must not turn every decision into a 500)."""
    if not isinstance(a, str) or not isinstance(b, str):
        return False
    return hmac.compare_digest(a.encode("utf-8", "surrogatepass"), b.encode("utf-8", "surrogatepass"))


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
                    on_decision: Optional[OnDecision] = None,
                    account: Optional[Callable[[], str]] = None, hermes: Any = None) -> Blueprint:
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
        account: ``account() -> html``: markup shown beside the operator's name (the standalone
            app's sign-out forms); it must escape what it includes.
        on_decision: ``on_decision(entry)`` after each decision is stored, e.g. to enqueue a task
            that runs :func:`~hermes_sdk_inbox.resume_decided` for an ``operator`` entry. What it
            raises is logged; the decision stands.
        hermes: a ``HermesClient``: a decided run's entry then shows what became of the run
            (asked of Hermes, kept once final; see :mod:`hermes_sdk_inbox.outcome`).
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
        body = render_template_string(body_template, bp=name, fmt=_fmt, left=_left, duration=_duration,
                                      shown_ids=shown_ids, describe=describe,
                                      no_outcomes=NO_OUTCOMES if hermes is None else "", **ctx)
        html = render_template_string(_BASE, body=body, bp=name, title=title, error=error, refresh=ctx.get("refresh"),
                                      identity=ctx.get("identity", ""), account=account() if account else "")
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
        number = _page_number(request.args.get("page"))
        entries, total = inbox.page(state=None if state == "all" else state, kind=kind, operation=operation,
                                    identifier=identifier, number=number, per_page=PER_PAGE)
        first = (number - 1) * PER_PAGE + 1
        query = {k: v for k, v in (("state", state), ("kind", kind), ("operation", operation), ("id", identifier)) if v}
        return page(_LIST, heading=f"Approvals: {state}", entries=entries, state=state, kind=kind,
                    operation=operation, identifier=identifier, identity=who, refresh=LIST_REFRESH_SECONDS,
                    total=total, number=number, first=first, last=first + len(entries) - 1, query=query)

    def render_detail(entry_id: str, who: str, status: int = 200, error: Optional[str] = None) -> Response:
        try:
            entry = inbox.get(entry_id)
        except InboxError as exc:
            return page("<p>{{ message }}</p>", status=exc.status, message=str(exc), identity=who)
        csrf = serializer().dumps({"o": who, "e": entry["id"], "h": entry["input_hash"]})
        entry = {**entry, "identifiers": identifiers_of(entry)}
        return page(_DETAIL, status=status, error=error, e=entry, state=display_state(entry), csrf=csrf,
                    left_s=_left(entry), outcome=run_outcome(inbox, entry, hermes),
                    snapshot=shown_input(entry), identity=who)

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
        if not (isinstance(token, dict) and _same(token.get("o"), who)
                and token.get("e") == entry_id and _same(token.get("h"), posted_hash)):
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
#: How long a login cookie is good for (unless its session is signed out or every session is ended).
SESSION_SECONDS = 12 * 3600

_ACCOUNT = """<form method="post" class="account" action="{{ logout }}"><input type="hidden" name="csrf_token" value="{{ csrf }}">
<button type="submit" id="sign-out">Sign out</button></form>
<form method="post" class="account" action="{{ end }}"><input type="hidden" name="csrf_token" value="{{ csrf }}">
<button type="submit" id="end-sessions">End every session</button></form>"""


def create_app(store: Union[str, ApprovalQueue, Inbox], *, token: str, secret_key: Optional[str] = None,
               operator: str = "operator", url_prefix: str = "",
               on_decision: Optional[OnDecision] = None, hermes: Any = None) -> Flask:
    """The standalone inbox (``hermes-sdk-inbox --store URL``): every request needs ``token``.

    Send it as ``Authorization: Bearer <token>``, or sign in once at ``/login`` (an HttpOnly,
    SameSite=Strict cookie signed with ``secret_key`` follows, good for 12 hours). ``POST
    /logout`` signs that cookie out for good (on the server, not only in the browser);
    ``POST /sessions/end`` (or ``hermes-sdk-inbox end-sessions``) ends every session issued so
    far, in every process serving the store (see :mod:`hermes_sdk_inbox.sessions`); the page
    offers both. The signed-in identity is ``operator``, recorded as the approver of each decision
    (a name typed into the form is kept beside it as a display name). ``on_decision`` is the
    blueprint's hook (``hermes-sdk-inbox serve --resume`` gives a :class:`ResumeWorker`'s ``wake``);
    ``hermes`` its Hermes client, which shows what became of each decided run.
    """
    if not token or len(token) < 16:
        raise ValueError("the standalone inbox needs an access token of at least 16 characters")
    app = Flask(__name__)
    app.config["SECRET_KEY"] = secret_key or secrets.token_hex(32)
    cookies = URLSafeTimedSerializer(app.config["SECRET_KEY"], salt="hermes-sdk-inbox.login")
    actions = URLSafeTimedSerializer(app.config["SECRET_KEY"], salt="hermes-sdk-inbox.account")
    inbox = store if isinstance(store, Inbox) else Inbox(store)
    sessions = LoginSessions(inbox.queue)

    def bearer(req: Any) -> bool:
        header = req.headers.get("Authorization", "")
        return header.startswith("Bearer ") and _same(header[7:], token)

    def session_of(req: Any) -> Optional[str]:
        """The id of the request's login session while it is good, else None."""
        try:
            data = cookies.loads(req.cookies.get(COOKIE, ""), max_age=SESSION_SECONDS)
        except BadSignature:
            return None
        if not isinstance(data, dict) or not sessions.valid(data.get("g"), data.get("s")):
            return None
        return str(data["s"])

    def authenticate(req: Any) -> Optional[str]:
        return operator if bearer(req) or session_of(req) is not None else None

    def account() -> str:
        sid = session_of(request)
        if sid is None:
            return ""
        return render_template_string(_ACCOUNT, csrf=actions.dumps(sid), logout=url_for("logout"),
                                      end=url_for("end_sessions"))

    def form_for_session(sid: str) -> bool:
        try:
            return _same(actions.loads(request.form.get("csrf_token", ""), max_age=CSRF_MAX_AGE), sid)
        except BadSignature:
            return False

    def signed_out() -> Response:
        resp = redirect(url_for("login"), code=303)
        resp.delete_cookie(COOKIE)
        return _headers(resp)

    bp = inbox_blueprint(inbox, authenticate=authenticate, on_decision=on_decision, account=account,
                         hermes=hermes)
    app.register_blueprint(bp, url_prefix=url_prefix or None)
    app.inbox = bp.inbox  # type: ignore[attr-defined]
    app.sessions = sessions  # type: ignore[attr-defined]

    @app.errorhandler(401)
    def unauthorized(_: Any) -> Any:
        return redirect(url_for("login"), code=303)

    @app.route(f"{url_prefix}/logout", methods=["POST"])
    def logout() -> Any:
        sid = session_of(request)
        if sid is not None:
            if not form_for_session(sid):
                return _headers(Response("The form was not issued for this session (CSRF).", status=400))
            sessions.sign_out(sid, time.time() + SESSION_SECONDS)
        return signed_out()

    @app.route(f"{url_prefix}/sessions/end", methods=["POST"])
    def end_sessions() -> Any:
        sid = session_of(request)
        if not bearer(request):
            if sid is None:
                return redirect(url_for("login"), code=303)
            if not form_for_session(sid):
                return _headers(Response("The form was not issued for this session (CSRF).", status=400))
        generation = sessions.end_all()
        log.info("hermes-sdk-inbox: every login session ended (generation %d)", generation)
        return signed_out()

    @app.route(f"{url_prefix}/login", methods=["GET", "POST"])
    def login() -> Any:
        error = None
        if request.method == "POST":
            nonce = request.cookies.get(NONCE_COOKIE, "")
            try:
                ok = bool(nonce) and _same(cookies.loads(request.form.get("csrf_token", ""), max_age=CSRF_MAX_AGE),
                                           nonce)
            except BadSignature:
                ok = False
            if not ok:
                error = "The form expired or was not issued here (CSRF)."
            elif _same(request.form.get("token", ""), token):
                resp = redirect(url_for(bp.name + ".index"), code=303)
                session = {"s": secrets.token_urlsafe(16), "g": sessions.generation()}
                resp.set_cookie(COOKIE, cookies.dumps(session), httponly=True, samesite="Strict",
                                secure=request.is_secure, max_age=SESSION_SECONDS)
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
