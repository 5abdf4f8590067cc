"""``hermes-sdk doctor``: what an on-call engineer checks first, in order, each with a fix.

:func:`diagnose` runs the checks and returns typed :class:`Finding` objects; the command prints
them (or ``--json``) and exits with the code of the first failed check (:data:`EXIT_CODES`; 0 when
none failed, warnings included). Every network step is bounded by ``timeout`` seconds.

The network checks live in :mod:`._doctor_net`, the server's in :mod:`._doctor_server`, the local
ones (idempotency store, plugins) in :mod:`._doctor_local`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Optional

from .._core.redaction import register_secret, scrub
from . import _doctor_local, _doctor_net, _doctor_server
from ._doctor_base import DEFAULT_TIMEOUT, FAIL, OK, SKIP, WARN, DoctorSettings, Finding, mask_key

if TYPE_CHECKING:
    from .cli import Subcommands

#: The exit code of each check that can fail; the first failed check (in this order) decides.
EXIT_CODES = {"config": 3, "dns": 4, "tcp": 5, "tls": 6, "proxy": 7, "health": 8, "features": 8, "auth": 9,
              "idempotency_store": 10, "plugins": 11}


def check_config(settings: DoctorSettings) -> tuple[Finding, Optional[str]]:
    """Where the base URL and the key came from; the normalised origin, or None when there is none."""
    from .._core.endpoints import normalize_base_url
    from ..errors import InvalidInputError

    data: dict[str, object] = {"base_url_source": settings.base_url_source, "key_source": settings.key_source}
    if not settings.base_url:
        return Finding("config", FAIL, "no Hermes URL", "pass --base-url URL or set HERMES_BASE_URL "
                       "(e.g. http://127.0.0.1:8642)", data), None
    try:
        origin = normalize_base_url(settings.base_url)
    except InvalidInputError as exc:
        return Finding("config", FAIL, f"the base URL from {settings.base_url_source} is not usable: {exc.message}",
                       "give the server's bare origin, e.g. http://127.0.0.1:8642", data), None
    data["base_url"] = origin
    where = f"base URL {origin} (from {settings.base_url_source})"
    if not settings.api_key:
        return Finding("config", FAIL, f"{where}; no API key", "pass --api-key KEY or set HERMES_API_KEY to the "
                       "server's API_SERVER_KEY", data), origin
    register_secret(settings.api_key)
    data["key"] = mask_key(settings.api_key)
    return Finding("config", OK, f"{where}; API key from {settings.key_source} ({mask_key(settings.api_key)})",
                   None, data), origin


def diagnose(settings: DoctorSettings) -> list[Finding]:
    """Every check, in order: config, dns, tcp, tls, proxy, health, features, auth, approvals, clock,
    idempotency_store, plugins. The server's checks are skipped once the connection failed."""
    config, origin = check_config(settings)
    findings = [config]
    if origin is None:
        findings += [Finding(name, SKIP, "not checked: no usable base URL") for name in _doctor_net.NAMES
                     + _doctor_server.NAMES]
    else:
        net = _doctor_net.check(origin, settings.timeout)
        findings += net.findings
        if net.connected:
            findings += _doctor_server.check(settings, origin, net.route)
        else:
            failed = next(f.name for f in net.findings if f.status == FAIL)
            findings += [Finding(name, SKIP, f"not checked: {failed} failed") for name in _doctor_server.NAMES]
    findings += _doctor_local.check(settings.timeout)
    return findings


def exit_code(findings: list[Finding]) -> int:
    """0 when no check failed (warnings allowed); else the code of the first failed check."""
    return next((EXIT_CODES.get(f.name, 1) for f in findings if f.status == FAIL), 0)


# ---------------------------------------------------------------- the command


def _positive(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {value!r}") from None
    if not 0 < seconds <= 600:
        raise argparse.ArgumentTypeError("--timeout must be more than 0 and at most 600 seconds")
    return seconds


def settings_from(args: argparse.Namespace) -> DoctorSettings:
    """As every other command reads them: the flags (``--api-key``, ``--api-key-file``, ``--api-key -``),
    then the environment, then the key ``hermes-sdk keys set`` stored for the server."""
    from ._cli_keys import resolve_key

    url, url_source = getattr(args, "base_url", None), "--base-url"
    if not url:
        url, url_source = os.environ.get("HERMES_BASE_URL"), "HERMES_BASE_URL"
    key, key_source = resolve_key(args)
    if not key:
        key, key_source = os.environ.get("HERMES_API_KEY"), "HERMES_API_KEY"
    return DoctorSettings(url or None, url_source if url else None, key or None, key_source if key else None,
                          os.environ.get("HERMES_ENDPOINT_ID") or "default", args.timeout)


def _print_text(findings: list[Finding], code: int) -> None:
    from .._core.display import visible

    for finding in findings:
        sys.stdout.write(visible(f"[{finding.status:<4}] {finding.name}: {scrub(finding.detail)}") + "\n")
        if finding.fix and finding.status in (WARN, FAIL):
            sys.stdout.write(visible(f"       fix: {scrub(finding.fix)}") + "\n")
    failed = [f.name for f in findings if f.status == FAIL]
    warned = [f.name for f in findings if f.status == WARN]
    summary = f"failed: {', '.join(failed)}" if failed else "all checks passed"
    if warned:
        summary += f" ({len(warned)} warning{'s' if len(warned) > 1 else ''}: {', '.join(warned)})"
    sys.stdout.write(f"{summary}; exit {code}\n")


def cmd_doctor(args: argparse.Namespace) -> int:
    findings = diagnose(settings_from(args))
    code = exit_code(findings)
    if args.json:
        from ._cli_support import json_visible

        body = {"exit_code": code, "findings": [f.to_json() for f in findings]}
        sys.stdout.write(json_visible(json.dumps(body, indent=2, ensure_ascii=False, default=str)) + "\n")
    else:
        _print_text(findings, code)
    return code


def add_doctor_parser(sub: Subcommands, conn: argparse.ArgumentParser) -> None:
    """``hermes-sdk doctor [--json] [--timeout SECONDS]``."""
    codes = ", ".join(f"{code} {name}" for name, code in EXIT_CODES.items() if name != "features")
    doctor = sub.add_parser(
        "doctor", parents=[conn], help="check the configuration, the connection and the server, each with a fix",
        description="Check, in order: where the URL and key came from, DNS, TCP, TLS, the proxies in effect, "
                    "the server's health, version and features, the key, whether runs ask for approvals, the "
                    "clock, the idempotency store and the plugins. Each finding says how to fix it.",
        epilog=f"Exit codes: 0 no check failed (warnings allowed); else the first failed check's: {codes}; "
               "2 usage.")
    doctor.add_argument("--json", action="store_true",
                        help="print {exit_code, findings: [{name, status, detail, fix, data}]} as JSON")
    doctor.add_argument("--timeout", type=_positive, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help="the limit of each network step (default: %(default)s)")
    doctor.set_defaults(func=cmd_doctor)


__all__ = ["EXIT_CODES", "DoctorSettings", "Finding", "add_doctor_parser", "diagnose", "exit_code"]
