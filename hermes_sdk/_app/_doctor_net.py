"""The doctor's network checks: DNS, TCP, TLS and the proxies in effect, each bounded by a deadline.

The proxies and the CA bundle are read as the SDK's transport reads them
(``requests.Session().merge_environment_settings``); DNS and TCP check the host the SDK connects
to: the proxy when one applies, else the server.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import time
from typing import Optional, Union
from urllib.parse import urlsplit

import attrs
import requests
import requests.utils

from ._doctor_base import FAIL, OK, SKIP, WARN, Finding, StepTimeout, bounded, mask_url

NAMES = ("dns", "tcp", "tls", "proxy")
PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
#: A certificate that expires within this many days is a warning.
EXPIRY_WARN_DAYS = 14


@attrs.frozen
class Route:
    """How the SDK reaches an origin: directly or through a proxy, and the CA bundle in effect."""

    origin: str
    scheme: str
    host: str
    port: int
    proxy: Optional[str]
    proxy_var: Optional[str]
    bypassed: bool
    verify: Union[bool, str]

    @property
    def via(self) -> tuple[str, int]:
        """The host and port the SDK opens a connection to."""
        if self.proxy is None:
            return self.host, self.port
        parts = urlsplit(self.proxy if "://" in self.proxy else "http://" + self.proxy)
        return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


def route(origin: str) -> Route:
    parts = urlsplit(origin)
    scheme, host = parts.scheme, parts.hostname or ""
    env = requests.Session().merge_environment_settings(origin, {}, None, None, None)
    proxies = {k: v for k, v in (env.get("proxies") or {}).items() if v}
    proxy = requests.utils.select_proxy(origin, proxies)
    var = None
    if proxy:
        names = (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY")
        var = next((n for n in names if os.environ.get(n) == proxy), "the environment")
    return Route(origin, scheme, host, parts.port or (443 if scheme == "https" else 80), proxy or None, var,
                 bool(requests.utils.should_bypass_proxies(origin, no_proxy=None)), _verify(env.get("verify")))


def _verify(value: object) -> Union[bool, str]:
    return value if isinstance(value, (bool, str)) else True


@attrs.frozen
class NetResult:
    findings: list[Finding]
    connected: bool
    route: Route


def check(origin: str, timeout: float) -> NetResult:
    way = route(origin)
    dns, addresses = _dns(way, timeout)
    tcp = _tcp(way, addresses, timeout) if addresses else Finding("tcp", SKIP, "not checked: dns failed")
    proxy = _proxy(way, timeout) if tcp.status == OK else Finding("proxy", SKIP, "not checked: tcp failed",
                                                                   data=_proxy_env())
    tls = _tls(way, addresses, timeout, proxy) if tcp.status == OK else Finding("tls", SKIP, "not checked: tcp failed")
    findings = [dns, tcp, tls, proxy]
    return NetResult(findings, all(f.status in (OK, WARN) for f in findings), way)


def _target(way: Route) -> str:
    host, port = way.via
    return f"the proxy {host}:{port}" if way.proxy else f"{host}:{port}"


def _dns(way: Route, timeout: float) -> tuple[Finding, list[str]]:
    host, port = way.via
    try:
        ipaddress.ip_address(host)
        return Finding("dns", OK, f"{host} is an address: nothing to resolve", data={"addresses": [host]}), [host]
    except ValueError:
        pass
    began = time.monotonic()
    try:
        infos = bounded(lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout)
    except (OSError, StepTimeout) as exc:
        what = "the proxy's host" if way.proxy else "the server's host"
        return Finding("dns", FAIL, f"{what} {host!r} does not resolve: {exc}",
                       "check the host name (a typo? a VPN or /etc/hosts entry missing?); `getent hosts "
                       f"{host}` shows what this machine resolves"), []
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    took = round((time.monotonic() - began) * 1000)
    return Finding("dns", OK, f"{host} resolves to {', '.join(addresses)} ({took} ms)",
                   data={"addresses": addresses, "ms": took}), addresses


def _tcp(way: Route, addresses: list[str], timeout: float) -> Finding:
    _, port = way.via
    errors = []
    deadline = time.monotonic() + timeout
    for address in addresses:
        left = deadline - time.monotonic()
        if left <= 0:
            errors.append(f"{address}: no time left")
            break
        began = time.monotonic()
        try:
            socket.create_connection((address, port), timeout=left).close()
        except socket.timeout:
            errors.append(f"{address}: no answer within {timeout:g} s")
            continue
        except OSError as exc:
            errors.append(f"{address}: {exc.strerror or exc}")
            continue
        took = round((time.monotonic() - began) * 1000)
        return Finding("tcp", OK, f"connected to {_target(way)} at {address} ({took} ms)",
                       data={"address": address, "port": port, "ms": took})
    refused = any("refused" in e.lower() for e in errors)
    fix = ("nothing listens there: start the proxy, or fix HTTP(S)_PROXY" if way.proxy else
           "nothing listens there: start Hermes (`hermes gateway run` with API_SERVER_ENABLED=true) or fix the "
           "port (Hermes' API server: API_SERVER_PORT, 8642 by default)") if refused else (
           "a firewall or a security group drops the connection: check the route to that port")
    return Finding("tcp", FAIL, f"cannot connect to {_target(way)}: {'; '.join(errors)}", fix,
                   data={"port": port, "errors": errors})


def ca_bundle(verify: Union[bool, str]) -> tuple[Optional[str], str]:
    """The CA file or directory requests verifies with, and where that choice came from."""
    if verify is False:
        return None, "verification off"
    if isinstance(verify, str):
        var = next((n for n in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE") if os.environ.get(n) == verify), "verify=")
        return verify, var
    return requests.utils.DEFAULT_CA_BUNDLE_PATH, "certifi"


def _tls(way: Route, addresses: list[str], timeout: float, proxy: Finding) -> Finding:
    bundle, source = ca_bundle(way.verify)
    data: dict[str, object] = {"ca_bundle": bundle, "ca_source": source}
    ignored = os.environ.get("SSL_CERT_FILE")
    if ignored and source == "certifi":
        data["ssl_cert_file_ignored"] = ignored
    if way.scheme == "http":
        local = way.host == "localhost" or _loopback(addresses[0] if not way.proxy else way.host)
        if local:
            return Finding("tls", OK, "plain http on loopback: no TLS", data=data)
        return Finding("tls", WARN, f"plain http to {way.host}: the API key crosses the network unencrypted",
                       "serve Hermes behind a TLS-terminating proxy and use an https:// base URL", data)
    if bundle is None:
        return Finding("tls", WARN, "certificate verification is off (verify=False)",
                       "unset CURL_CA_BUNDLE='' or the session's verify=False; trust a private CA with "
                       "REQUESTS_CA_BUNDLE=/path/ca.pem instead", data)
    if way.proxy:
        return _tls_via_proxy(proxy, data)
    return _handshake(way, addresses[0], bundle, source, timeout, data)


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _tls_via_proxy(proxy: Finding, data: dict[str, object]) -> Finding:
    """Through a proxy the TLS session is the tunnel the proxy step's request opened."""
    error = proxy.data.get("tls_error")
    if error:
        return Finding("tls", FAIL, f"TLS through the proxy failed: {error}", _tls_fix(data), data)
    if proxy.status == FAIL:
        return Finding("tls", SKIP, "not checked: the proxy did not open a tunnel", data=data)
    return Finding("tls", OK, f"verified through the proxy's tunnel with {data['ca_bundle']} ({data['ca_source']})",
                   data=data)


def _tls_fix(data: dict[str, object]) -> str:
    fix = ("if the certificate is self-signed or from a private CA, point REQUESTS_CA_BUNDLE at that CA's PEM "
           "file; if it expired or names another host, renew it")
    if data.get("ssl_cert_file_ignored"):
        fix += f" (requests does not read SSL_CERT_FILE: set REQUESTS_CA_BUNDLE={data['ssl_cert_file_ignored']})"
    return fix


def _handshake(way: Route, address: str, bundle: str, source: str, timeout: float,
               data: dict[str, object]) -> Finding:
    try:
        if os.path.isdir(bundle):
            context = ssl.create_default_context(capath=bundle)
        else:
            context = ssl.create_default_context(cafile=bundle)
    except (OSError, ssl.SSLError) as exc:
        return Finding("tls", FAIL, f"the CA bundle {bundle} ({source}) cannot be loaded: {exc}",
                       "point REQUESTS_CA_BUNDLE at a readable PEM file", data)
    try:
        with socket.create_connection((address, way.port), timeout=timeout) as raw, \
                context.wrap_socket(raw, server_hostname=way.host) as tls:
            cert = tls.getpeercert() or {}
            data["protocol"] = tls.version()
    except ssl.SSLCertVerificationError as exc:
        return Finding("tls", FAIL, f"the certificate of {way.host} is not trusted: {exc.verify_message} "
                       f"(verified with {bundle}, {source})", _tls_fix(data), data)
    except (OSError, ssl.SSLError) as exc:
        plain = "WRONG_VERSION_NUMBER" in str(exc) or "wrong version number" in str(exc)
        return Finding("tls", FAIL, f"TLS handshake with {way.host} failed: {exc}",
                       "the server speaks plain HTTP on this port: use an http:// base URL" if plain
                       else _tls_fix(data), data)
    subject = dict(pair[0] for pair in cert.get("subject", ()) if pair)  # type: ignore[misc]
    expires = str(cert.get("notAfter", ""))
    data.update(subject=subject.get("commonName"), expires=expires)
    detail = f"{data['protocol']}, certificate for {subject.get('commonName', '?')} verified with {bundle} ({source})"
    if expires:
        days = int((ssl.cert_time_to_seconds(expires) - time.time()) // 86400)
        data["days_left"] = days
        detail += f", expires {expires} ({days} days)"
        if days < EXPIRY_WARN_DAYS:
            return Finding("tls", WARN, detail, "renew the server's certificate", data)
    return Finding("tls", OK, detail, data=data)


def _proxy_env() -> dict[str, object]:
    """The proxy variables set, masked (lower case wins where both are set, as in urllib)."""
    found: dict[str, object] = {}
    for name in PROXY_VARS:
        for spelling in (name.lower(), name):
            value = os.environ.get(spelling)
            if value:
                found[spelling] = value if name == "NO_PROXY" else mask_url(value)
                break
    return {"environment": found}


def _proxy(way: Route, timeout: float) -> Finding:
    data = _proxy_env()
    data["trust_env"] = True
    if way.proxy is None:
        why = " (NO_PROXY covers it)" if way.bypassed and data["environment"] else ""
        return Finding("proxy", OK, f"no proxy applies to {way.origin}{why}", data=data)
    shown = mask_url(way.proxy)
    data.update(proxy=shown, source=way.proxy_var)
    session = requests.Session()
    session.trust_env = False  # exactly the proxy and bundle found above
    try:
        reply = bounded(lambda: session.get(way.origin + "/health", proxies={way.scheme: way.proxy or ""},
                                            verify=way.verify, timeout=(timeout, timeout), allow_redirects=False),
                        timeout)
    except requests.exceptions.SSLError as exc:
        data["tls_error"] = str(exc)
        return Finding("proxy", OK, f"{shown} (from {way.proxy_var}) opened a tunnel to {way.origin}", data=data)
    except (requests.RequestException, StepTimeout) as exc:
        return Finding("proxy", FAIL, f"the request to {way.origin} through {shown} (from {way.proxy_var}) "
                       f"failed: {_reason(exc)}",
                       f"fix or restart the proxy, or let the SDK reach Hermes directly: add {way.host} to NO_PROXY",
                       data)
    finally:
        session.close()
    data["status"] = reply.status_code
    return Finding("proxy", OK, f"{shown} (from {way.proxy_var}) forwarded GET /health to {way.origin}: "
                   f"HTTP {reply.status_code}", data=data)


def _reason(exc: BaseException) -> str:
    """The innermost cause of a requests error: what the socket saw."""
    text = str(exc)
    while exc.__context__ is not None or (exc.args and isinstance(exc.args[0], BaseException)):
        inner = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else exc.__context__
        if inner is None or inner is exc:
            break
        exc = inner
    inner_text = str(exc)
    if "RemoteDisconnected" in text or "closed connection" in inner_text.lower() or "reset" in inner_text.lower():
        return f"the proxy closed the connection without answering ({inner_text or type(exc).__name__})"
    return inner_text or text
