"""Endpoints and the trusted execution context: validated once, at construction."""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from typing import Callable, Iterable, Optional, Sequence, Tuple, Union
from urllib.parse import urlsplit

import attrs

from ..errors import InvalidInputError, MissingCredentialError
from ._constants import (
    MAX_API_KEY_BYTES,
    MAX_DEADLINE_EPOCH,
    MAX_ENDPOINT_ID_CHARS,
    MAX_HEADER_VALUE_BYTES,
    MAX_TENANT_ID_CHARS,
    MIN_DEADLINE_EPOCH,
)

_ENDPOINT_ID = re.compile(r"[A-Za-z0-9_-]+\Z")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

Deadline = Union[float, int, _dt.datetime, None]


def _bad(field: str, message: str) -> InvalidInputError:
    return InvalidInputError(message, details={"field": field})


def normalize_endpoint_id(value: object) -> str:
    """Trim, check 1..128 of ``[A-Za-z0-9_-]``, lower-case: the connector's rule."""
    if not isinstance(value, str):
        raise _bad("endpoint_id", "endpoint id must be a string")
    text = value.strip()
    if not 1 <= len(text) <= MAX_ENDPOINT_ID_CHARS or not _ENDPOINT_ID.match(text):
        raise _bad("endpoint_id", "endpoint id must be 1-128 ASCII letters, digits, '-' or '_'")
    return text.lower()


def normalize_base_url(value: object) -> str:
    """Accept only a bare http(s) origin, so no input can smuggle a path or credentials."""
    if not isinstance(value, str) or not value.strip():
        raise _bad("base_url", "base_url is required (or set HERMES_BASE_URL)")
    text = value.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise _bad("base_url", f"base_url is not a valid URL: {exc}") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise _bad("base_url", "base_url must use http or https")
    if not parts.hostname:
        raise _bad("base_url", "base_url needs a host")
    if parts.username is not None or parts.password is not None:
        raise _bad("base_url", "base_url must not contain credentials")
    host = parts.hostname
    if ":" in host:
        host = f"[{host}]"
    origin = f"{parts.scheme.lower()}://{host}" + (f":{port}" if port is not None else "")
    if parts.path.rstrip("/").lower() in ("/v1", "/v1/chat/completions", "/v1/responses"):
        # The openai habit: the SDK adds /v1/... itself.
        raise _bad("base_url", f"base_url must be a bare origin: drop /v1 (use {origin!r}); "
                               "the SDK adds the /v1/... paths itself")
    if parts.path not in ("", "/") or parts.query or parts.fragment or text.endswith(("?", "#")):
        raise _bad("base_url", f"base_url must be a bare origin such as {origin!r} (no path, query or fragment)")
    return origin


def validate_api_key(value: object) -> Optional[str]:
    """The API key as given, or None for a missing or empty one (a call then raises MissingCredentialError).

    Raises:
        InvalidInputError: not a string, over 16 KiB, or with whitespace or control characters.
    """
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _bad("api_key", "api_key must be a string")
    if len(value) > MAX_API_KEY_BYTES or any(c.isspace() for c in value) or _CONTROL.search(value):
        raise _bad("api_key", "api_key must be at most 16 KiB with no whitespace or control characters")
    if not _latin1(value):
        # It travels as "Authorization: Bearer <key>", which http.client encodes as latin-1.
        raise _bad("api_key", "api_key must be a latin-1 (in practice ASCII) header value")
    return value


def _latin1(value: str) -> bool:
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:  # also every lone surrogate
        return False
    return True


def validate_tenant_id(value: object, field: str = "tenant_id") -> Optional[str]:
    """The tenant id as given, or None.

    Raises:
        InvalidInputError: empty, over 512 characters, or with surrounding whitespace or control
            characters; ``details["field"]`` is ``field``.
    """
    if value is None:
        return None
    if (not isinstance(value, str) or not value or value != value.strip()
            or len(value) > MAX_TENANT_ID_CHARS or _CONTROL.search(value)):
        raise _bad(field, f"{field} must be non-empty, at most 512 characters, without surrounding "
                          "whitespace or control characters")
    return value


def validate_header_value(field: str, value: object) -> str:
    """The value as given, if it is a valid header value: non-empty latin-1, at most 16 KiB, no control characters."""
    if not isinstance(value, str) or not value:
        raise _bad(field, f"{field} must be a non-empty string")
    if len(value) > MAX_HEADER_VALUE_BYTES:  # latin-1: one byte a character
        raise _bad(field, f"{field} is longer than 16 KiB")
    if _CONTROL.search(value.replace("\t", "")) or value != value.strip():
        raise _bad(field, f"{field} is not a valid header value")
    if not _latin1(value):
        raise _bad(field, f"{field} must be a latin-1 header value (no lone surrogates or wider characters)")
    return value


def _repr_secret(value: Optional[str]) -> str:
    return "None" if value is None else "'***'"


@attrs.frozen(repr=False)
class Endpoint:
    """One admitted Hermes endpoint: its normalised id, bare origin, Bearer key and owning tenant.

    ``key_source`` says where the key came from, for the message of a refused key (default: the
    Endpoint's api_key; ``HermesClient`` sets ``the api_key argument`` or ``HERMES_API_KEY``).
    """

    id: str = attrs.field(converter=normalize_endpoint_id)
    base_url: str = attrs.field(converter=normalize_base_url)
    api_key: Optional[str] = attrs.field(default=None, converter=validate_api_key)
    tenant_id: Optional[str] = attrs.field(default=None, converter=validate_tenant_id)
    #: Where the key was read (``the api_key argument``, ``HERMES_API_KEY``, ``--api-key``), named by a 401.
    key_source: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)

    def __repr__(self) -> str:
        return (f"Endpoint(id={self.id!r}, base_url={self.base_url!r}, api_key={_repr_secret(self.api_key)}, "
                f"tenant_id={self.tenant_id!r})")

    def require_key(self) -> str:
        """The endpoint's API key; checked when a call is made, so a client can be built without one.

        Raises:
            MissingCredentialError: the endpoint has no key (set ``HERMES_API_KEY`` or pass ``api_key``).
        """
        if not self.api_key:
            raise MissingCredentialError(f"endpoint {self.id!r} has no API key: pass HermesClient(base_url, api_key) "
                                         "or set HERMES_API_KEY (for the emulator: see `hermes-sdk emulator`)",
                                         details={"endpoint_id": self.id})
        return self.api_key


#: The largest relative time the SDK accepts anywhere (about 31 years): more is a mistake.
MAX_SECONDS = 1e9


def seconds_value(value: object, field: str, *, positive: bool = False) -> float:
    """A relative time in seconds: a finite real number >= 0 (> 0 when ``positive``), at most 1e9.

    Every time argument that is not a :class:`~hermes_sdk.Timeout` or a deadline comes through
    here, so NaN (which compares false with everything: a loop bounded by it never ends),
    infinities, negative numbers, bools and strings are an InvalidInputError before any I/O.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(field, f"{field} must be a number of seconds, not {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise _bad(field, f"{field} must be a finite number of seconds, not {value!r}")
    if value < 0 or (positive and value == 0) or value > MAX_SECONDS:
        bound = "> 0" if positive else ">= 0"
        raise _bad(field, f"{field} must be {bound} and at most {MAX_SECONDS:g} seconds, not {value!r}")
    return float(value)


def deadline_epoch(value: Deadline) -> Optional[float]:
    """Absolute deadline as epoch seconds; a naive datetime is taken as local time.

    Refused before any I/O: NaN, infinities and huge numbers, dates past 9999, and small numbers
    (before 2001), which are a relative timeout passed by mistake.
    """
    if value is None:
        return None
    if isinstance(value, _dt.datetime):
        try:
            epoch = value.timestamp()
        except (OverflowError, ValueError, OSError):
            raise _bad("deadline", "deadline is a datetime out of range") from None
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad("deadline", "deadline must be absolute epoch seconds (a number) or a datetime")
    else:
        if isinstance(value, float) and not math.isfinite(value):
            raise _bad("deadline", "deadline must be a finite number of epoch seconds")
        if isinstance(value, int) and abs(value) > MAX_DEADLINE_EPOCH:
            raise _bad("deadline", "deadline is too far in the future (past year 9999)")
        epoch = float(value)
    if not MIN_DEADLINE_EPOCH <= epoch <= MAX_DEADLINE_EPOCH:
        if epoch < MIN_DEADLINE_EPOCH and not isinstance(value, _dt.datetime):
            raise _bad("deadline", f"deadline={value!r} is not a point in time: deadline is absolute epoch "
                                   f"seconds (e.g. time.time() + {value!r}); for a relative bound in "
                                   f"seconds use timeout={value!r}")
        raise _bad("deadline", "deadline must be between 2001 and the year 9999")
    return epoch


def _optional_header(field: str) -> Callable[[object, "attrs.Attribute[Optional[str]]", Optional[str]], None]:
    def check(_: object, attribute: "attrs.Attribute[Optional[str]]", value: Optional[str]) -> None:
        if value is not None:
            validate_header_value(field, value)
    return check


def _as_chain(value: Optional[Iterable[str]]) -> Tuple[str, ...]:
    """The chain as a tuple (None, like the other fields' None, is no chain). A Python function, not
    ``tuple`` itself: attrs reads a converter's signature, and for a builtin that compiles the
    tokenizer's pattern (~8 ms of a process's first call)."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise _bad("delegation_chain", "delegation_chain must be a sequence of strings")
    return tuple(value)


def _chain(_: object, attribute: "attrs.Attribute[Tuple[str, ...]]", value: Tuple[object, ...]) -> None:
    """Each delegate is a string; the chain travels as one JSON header, checked here, not at send."""
    if not all(isinstance(item, str) for item in value):
        raise _bad("delegation_chain", "delegation_chain must be a sequence of strings")
    if value:
        validate_header_value("delegation_chain", json.dumps(list(value), separators=(",", ":")))


@attrs.frozen
class ExecutionContext:
    """Trusted AIP execution context; each set value becomes an ``X-AIP-*`` header."""

    principal_id: Optional[str] = attrs.field(default=None, validator=_optional_header("principal_id"))
    tenant_id: Optional[str] = attrs.field(default=None, validator=_optional_header("tenant_id"))
    authentication_issuer: Optional[str] = attrs.field(
        default=None, validator=_optional_header("authentication_issuer"))
    trace_id: Optional[str] = attrs.field(default=None, validator=_optional_header("trace_id"))
    correlation_id: Optional[str] = attrs.field(default=None, validator=_optional_header("correlation_id"))
    delegation_chain: Tuple[str, ...] = attrs.field(default=(), converter=_as_chain, validator=_chain)
    aip_session_id: Optional[str] = attrs.field(default=None, validator=_optional_header("aip_session_id"))
    deadline: Optional[float] = attrs.field(default=None, converter=deadline_epoch)

    def headers(self, deadline: Optional[float]) -> dict[str, str]:
        """The context headers; the AIP session id is never copied into X-Hermes-Session-Id."""
        out: dict[str, str] = {}
        pairs: Sequence[Tuple[str, Optional[str]]] = (
            ("X-AIP-Session-Id", self.aip_session_id),
            ("X-AIP-Correlation-Id", self.correlation_id or self.trace_id),
            ("X-AIP-Principal-Id", self.principal_id),
            ("X-AIP-Tenant-Id", self.tenant_id),
            ("X-AIP-Authentication-Issuer", self.authentication_issuer),
            ("X-AIP-Trace-Id", self.trace_id),
        )
        for name, value in pairs:
            if value is not None:
                out[name] = value
        if self.delegation_chain:
            out["X-AIP-Delegation-Chain"] = validate_header_value(
                "delegation_chain", json.dumps(list(self.delegation_chain), separators=(",", ":")))
        if deadline is not None:
            out["X-AIP-Deadline-Unix-Ms"] = str(int(deadline * 1000))
        return out
