"""The doctor's server checks, made through the SDK itself: health, version and features, the key,
whether runs ask for approvals, and the clock against the server's ``Date``."""

from __future__ import annotations

import email.utils
import logging
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator, Optional

import requests

from .._core.server_features import ServerFeatures, parse_version
from ..errors import AuthenticationError, HermesError, InvalidResponseError, TransportError
from ._doctor_base import FAIL, OK, SKIP, WARN, DoctorSettings, Finding, StepTimeout, bounded

if TYPE_CHECKING:
    from ._doctor_net import Route
    from .client import HermesClient

NAMES = ("health", "features", "auth", "approvals", "clock")
#: The releases this SDK was tested against (spec/hermes-next.md).
TESTED = ("0.19.0", "0.20.1", "0.22.2")
#: From 0.21 the wire carries approvals on streamed chat and numbered, resumable run events.
WIRE_FEATURES_FROM = (0, 21, 0)
#: Upstream 0.20.6 classified the whole API server as unattended (issue #98728); the 0.22 line scopes
#: that to turns without an approval notifier, so /v1/runs asks again.
UNATTENDED_FROM, UNATTENDED_UNTIL = (0, 20, 6), (0, 22, 0)
#: More than this between the server's Date and this machine's clock is a warning.
SKEW_WARN_SECONDS = 30.0


@contextmanager
def _no_key_warning() -> Iterator[None]:
    """The client warns that an endpoint has no key; the config finding already says so."""
    class Quiet(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return "has no API key" not in str(record.msg)

    quiet, log = Quiet(), logging.getLogger("hermes_sdk")
    log.addFilter(quiet)
    try:
        yield
    finally:
        log.removeFilter(quiet)


def _client(settings: DoctorSettings, origin: str) -> HermesClient:
    from .._core.endpoints import Endpoint
    from .client import HermesClient

    endpoint = Endpoint(settings.endpoint_id, origin, settings.api_key, key_source=settings.key_source)
    with _no_key_warning():  # one attempt per check, each within the timeout; no store is touched
        return HermesClient(endpoints=[endpoint], timeout=settings.timeout, max_attempts=1,
                            idempotency_store="memory:")


def check(settings: DoctorSettings, origin: str, way: Route) -> list[Finding]:
    try:
        client = _client(settings, origin)
    except HermesError as exc:  # a plugin that fails to load: the plugins check says which
        return [Finding(name, SKIP, f"not checked: the client cannot be built ({exc.message})") for name in NAMES]
    with client:
        health = _health(client, origin)
        if health.status == FAIL:
            return [health] + [Finding(name, SKIP, "not checked: health failed") for name in NAMES[1:]]
        features, found = _features(client)
        auth = _auth(client, settings)
        approvals = _approvals(client, found) if found is not None else Finding(
            "approvals", SKIP, "not checked: the server's features are unknown (see features)")
    return [health, features, auth, approvals, _clock(way, settings.timeout)]


def _health(client: HermesClient, origin: str) -> Finding:
    try:
        health = client.health()
    except InvalidResponseError as exc:
        return Finding("health", FAIL, f"{origin}/health did not answer as Hermes does: {exc.message}",
                       "is this the API server's port (API_SERVER_PORT, 8642 by default), not the dashboard's "
                       "or another service's?")
    except TransportError as exc:
        return Finding("health", FAIL, f"GET /health failed after connecting: {exc.message}",
                       "the server accepts connections but does not answer HTTP: check its log "
                       "(`hermes gateway run -v`)")
    except HermesError as exc:
        return Finding("health", FAIL, f"GET /health failed: {exc.message}", "check the server's log")
    data: dict[str, object] = {"status": health.status, "platform": health.platform, "version": health.version}
    if not health.ok:
        return Finding("health", FAIL, f"the server says {health.status!r}, not 'ok'",
                       "check `hermes-sdk health` and the server's /health/detailed readiness checks", data)
    if health.platform not in (None, "hermes-agent"):
        return Finding("health", WARN, f"ok, but the platform is {health.platform!r}, not 'hermes-agent'",
                       "check that the base URL points at Hermes' API server", data)
    return Finding("health", OK, f"ok ({health.platform or 'platform unknown'} {health.version or ''})".rstrip(),
                   data=data)


def uses(features: ServerFeatures) -> dict[str, bool]:
    """What the SDK will use on this server. Steer and run idempotency come from ``/v1/capabilities``;
    approvals on streamed chat and resumable run events are read from the wire when they appear,
    which Hermes does from 0.21."""
    at = features.version_tuple
    wire = at is not None and at >= WIRE_FEATURES_FROM
    return {"stream_approvals": wire, "resumable_run_events": wire, "steer": features.run_steer,
            "runs_idempotency": features.runs_idempotency, "exact_approvals": features.exact_approvals}


_SAYS = {"stream_approvals": "approvals on streamed chat", "resumable_run_events": "resumable run events",
         "steer": "steer", "runs_idempotency": "server-side run idempotency",
         "exact_approvals": "approvals answered by request_id"}


def _features(client: HermesClient) -> tuple[Finding, Optional[ServerFeatures]]:
    try:
        found = client.server_features(refresh=True)
    except AuthenticationError:
        return Finding("features", SKIP, "not checked: /v1/capabilities needs an accepted key (see auth)"), None
    except HermesError as exc:
        return Finding("features", FAIL, f"GET /v1/capabilities failed: {exc.message}", "check the server's log"), None
    on = uses(found)
    data: dict[str, object] = {"version": found.version, **on}
    used = [_SAYS[k] for k, v in on.items() if v]
    detail = (f"Hermes {found.version or '(version not reported)'}; the SDK will use: "
              f"{', '.join(used) if used else 'none of the 0.20+ features (0.19 behaviour)'}")
    at = found.version_tuple
    if at is None:
        return Finding("features", WARN, detail, "the server reports no version: the SDK assumes 0.19 behaviour",
                       data), found
    if at > (parse_version(TESTED[-1]) or at):
        tested = ", ".join(TESTED)
        return Finding("features", WARN, detail + f"; newer than the releases the SDK was tested on ({tested})",
                       "check the SDK's changelog for a release that covers this server", data), found
    return Finding("features", OK, detail, data=data), found


def _auth(client: HermesClient, settings: DoctorSettings) -> Finding:
    if not settings.api_key:
        return Finding("auth", SKIP, "not checked: no API key (see config)")
    try:
        models = client.models()
    except AuthenticationError as exc:
        error = exc.details.get("provider_error")
        code = error.get("code") if isinstance(error, dict) else None
        return Finding("auth", FAIL, f"the server refused the key from {settings.key_source} (HTTP 401"
                       + (f" {code})" if code else ")"),
                       (f"pass the server's API_SERVER_KEY with {settings.key_source}" if
                        str(settings.key_source).startswith("--") else
                        f"set {settings.key_source} to the server's API_SERVER_KEY")
                       + " (from the server's environment or ~/.hermes/.env)",
                       {"code": code})
    except HermesError as exc:
        return Finding("auth", FAIL, f"GET /v1/models failed: {exc.message}", "check the server's log")
    names = [m.id for m in models]
    return Finding("auth", OK, f"the key is accepted (GET /v1/models: {', '.join(names) or 'no models'})",
                   data={"models": names})


def _approvals(client: HermesClient, found: ServerFeatures) -> Finding:
    """Whether a run's dangerous command asks a person: the API shows whether approval events exist and
    which tools the agent has; ``approvals.mode`` itself is not exposed."""
    try:
        tools = [t.name for t in client.toolsets() if t.enabled]
    except HermesError:
        tools = None
    data: dict[str, object] = {"approval_events": found.supports("approval_events"), "enabled_toolsets": tools}
    at = found.version_tuple
    if at is not None and UNATTENDED_FROM <= at < UNATTENDED_UNTIL:
        data["unattended"] = "possible"
        return Finding("approvals", WARN, f"Hermes {found.version} may run the API server unattended (upstream "
                       "issue #98728): a dangerous command is decided by approvals.unattended_mode (deny by "
                       "default) and the SDK's approval provider is never asked",
                       "check approvals.unattended_mode in the server's config.yaml, or upgrade to a release "
                       "that asks on /v1/runs (0.22)", data)
    if not data["approval_events"]:
        return Finding("approvals", WARN, "the server does not list approval_events: runs will not ask for approval",
                       "expect no ApprovalRequested events from this server", data)
    if tools == []:
        return Finding("approvals", OK, "the agent has no tools on this server (platform_toolsets.api_server is "
                       "empty): no command runs, so nothing asks for approval", data=data)
    detail = (f"runs can ask for approval (toolsets: {', '.join(tools) if tools else 'unknown'}); whether a "
              "command asks depends on the server's approvals.mode (manual and smart ask, off never)")
    if at is not None and at >= UNATTENDED_UNTIL:
        detail += "; non-streamed chat and responses never ask (approvals.unattended_mode decides them)"
    return Finding("approvals", OK, detail, data=data)


def _clock(way: Route, timeout: float) -> Finding:
    session = requests.Session()
    session.trust_env = False  # the proxies and bundle the network checks found
    proxies = {way.scheme: way.proxy} if way.proxy else {}
    sent = time.time()
    try:
        reply = bounded(lambda: session.get(way.origin + "/health", proxies=proxies, verify=way.verify,
                                            timeout=(timeout, timeout), allow_redirects=False), timeout)
    except (requests.RequestException, StepTimeout) as exc:
        return Finding("clock", WARN, f"not measured: GET /health failed ({exc})")
    finally:
        session.close()
    return skew_finding(reply.headers.get("Date"), sent, time.time())


def skew_finding(date: Optional[str], sent: float, received: float) -> Finding:
    """The server's ``Date`` against the middle of the request (``Date`` has one-second resolution)."""
    if not date:
        return Finding("clock", WARN, "the server sent no Date header: skew not measured")
    try:
        server = email.utils.parsedate_to_datetime(date).timestamp()
    except (TypeError, ValueError):
        return Finding("clock", WARN, f"the server's Date header is not a date: {date!r}")
    skew = server - (sent + received) / 2
    data: dict[str, object] = {"skew_seconds": round(skew, 1), "date": date}
    detail = f"the server's clock is {abs(skew):.1f} s {'ahead of' if skew > 0 else 'behind'} this machine's"
    if abs(skew) > SKEW_WARN_SECONDS:
        return Finding("clock", WARN, detail + " (approval expiries and key retention are reckoned in wall time)",
                       "synchronise the clocks (NTP: `timedatectl set-ntp true`, `chronyc tracking`)", data)
    return Finding("clock", OK, detail, data=data)
