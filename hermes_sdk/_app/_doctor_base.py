"""What every doctor check shares: the finding, the settings, a bounded step and masking."""

from __future__ import annotations

import hashlib
import threading
from typing import Callable, Optional, TypeVar
from urllib.parse import urlsplit, urlunsplit

import attrs

from .._core.redaction import scrub

T = TypeVar("T")
OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
DEFAULT_TIMEOUT = 5.0


@attrs.frozen
class Finding:
    """One check's result: ``status`` is ok, warn, fail or skip (not checked: an earlier step failed)."""

    name: str
    status: str
    detail: str
    fix: Optional[str] = None
    data: dict[str, object] = attrs.field(factory=dict)

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "status": self.status, "detail": scrub(self.detail),
                "fix": scrub(self.fix) if self.fix else None, "data": _scrubbed(self.data)}


def _scrubbed(value: object) -> object:
    """``value`` with every string scrubbed as the text report is (a server may echo the key anywhere)."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(str(k)): _scrubbed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v) for v in value]
    return value


@attrs.frozen
class DoctorSettings:
    """What the command was given, and where each value came from (a flag or a variable's name)."""

    base_url: Optional[str]
    base_url_source: Optional[str]
    api_key: Optional[str] = attrs.field(default=None, repr=False)
    key_source: Optional[str] = None
    endpoint_id: str = "default"
    timeout: float = DEFAULT_TIMEOUT


def mask_key(key: str) -> str:
    """A key's length and a short digest: enough to compare two keys, never the key."""
    return f"{len(key)} characters, sha256 {hashlib.sha256(key.encode('utf-8')).hexdigest()[:8]}"


class StepTimeout(Exception):
    """A bounded step did not finish in time."""


def bounded(fn: Callable[[], T], timeout: float) -> T:
    """``fn()`` on a daemon thread, given up on after ``timeout`` (getaddrinfo has no timeout of its own)."""
    values: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            values.append(fn())
        except BaseException as exc:  # handed to the caller
            errors.append(exc)

    thread = threading.Thread(target=run, name="hermes-sdk-doctor", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise StepTimeout(f"no answer within {timeout:g} s")
    if errors:
        raise errors[0]
    return values[0]


def mask_url(url: str) -> str:
    """A URL with its user name and password replaced by one ``***``."""
    try:
        parts = urlsplit(url)
        if parts.username is None and parts.password is None:
            return url
        host = parts.hostname or ""
        host = f"[{host}]" if ":" in host else host
        # one "***", no colon: the redactor would rewrite a "***:***@" again
        netloc = "***@" + host + (f":{parts.port}" if parts.port else "")
        return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        return "<unparseable URL, not shown>"
