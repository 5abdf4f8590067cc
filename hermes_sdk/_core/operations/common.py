"""Shared pieces of input validation and request mapping."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Collection, Optional

import attrs

from ...errors import CONFIGURATION_OR_INPUT, InvalidInputError, PayloadTooLargeError
from .._constants import (
    MAX_INPUT_DEPTH,
    MAX_MAX_EVENTS,
    MAX_PATH_ID_BYTES,
    MAX_REQUEST_BODY_BYTES,
    MAX_SAFE_INTEGER,
    MAX_SESSION_VALUE_CHARS,
)
from ..endpoints import validate_header_value


@attrs.frozen
class RequestParts:
    """What an operation's builder derives from a valid input; its spec adds method and path."""

    headers: dict[str, str]
    body: Optional[bytes] = None
    max_events: int = 0
    path_params: Mapping[str, str] = attrs.field(factory=dict)
    #: Query parameters, in order (each name and value percent-encoded; a space is ``%20``).
    query: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class ProviderRequest:
    """What one capability invocation sends: built once, before any I/O."""

    method: str
    path: str
    headers: dict[str, str]
    body: Optional[bytes] = None
    stream: bool = False
    max_events: int = 0
    #: The path parameters as sent (validated by :func:`path_id`), for checks of the reply.
    path_params: Mapping[str, str] = attrs.field(factory=dict, eq=False)


def bad(field: str, message: str, **details: object) -> InvalidInputError:
    """An :class:`~hermes_sdk.InvalidInputError` naming the offending ``field``, for the caller to raise."""
    return InvalidInputError(message, details={"field": field, **details})


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def path_id(field: str, value: object) -> str:
    """The one rule for an id that becomes a path segment, in every family (the connector's):
    a non-blank string of valid Unicode, at most 512 bytes, without control characters, and not
    a dot segment (``.``/``..``, which HTTP stacks resolve away from the route). Anything else,
    ``/`` and spaces included, is sent percent-encoded as one segment and round-trips."""
    if not isinstance(value, str) or not value.strip():
        raise bad(field, f"'{field}' must be a non-blank string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise bad(field, f"'{field}' holds text that is not valid Unicode (a lone surrogate)") from None
    if size > MAX_PATH_ID_BYTES:
        raise bad(field, f"'{field}' is longer than {MAX_PATH_ID_BYTES} bytes", limit_bytes=MAX_PATH_ID_BYTES)
    if _CONTROL.search(value):
        raise bad(field, f"'{field}' must not contain control characters")
    if value in (".", ".."):
        raise bad(field, f"'{field}' must not be a dot segment")
    return value


def require_mapping(value: object, field: str = "input") -> Mapping[str, object]:
    """``value`` if it is a JSON object (a mapping), else an InvalidInputError naming ``field``."""
    if not isinstance(value, Mapping):
        raise bad(field, f"{field} must be a JSON object")
    return value


def require_input(value: object) -> Mapping[str, object]:
    """The whole input: a JSON object whose tree JSON, hashing and redaction can all walk."""
    data = require_mapping(value)
    check_tree(data)
    return data


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _plain_tree(value: object) -> bool:
    """The fast check, level by level on exact types, without paths: True when the tree is fine.
    False sends ``check_tree`` down its slow path, which names the field (or finds nothing)."""
    leaves = _LEAVES
    level = [value]
    for _ in range(MAX_INPUT_DEPTH):
        children: list[object] = []
        for node in level:
            kind = type(node)
            if kind is dict:
                for key in node:  # type: ignore[attr-defined]
                    if type(key) is not str or not (key.isascii() or _utf8(key)):
                        return False
                children.extend(node.values())  # type: ignore[attr-defined]
            elif kind is list or kind is tuple:
                children.extend(node)  # type: ignore[arg-type]
            elif isinstance(node, Mapping):
                return False  # another mapping type: the slow path handles it
        level = [child for child in children if type(child) not in leaves]
        if not level:
            return True
    return False


def check_tree(value: object, field: str = "input") -> None:
    """Refuse, before any I/O, what would escape later as a raw exception: objects nested deeper
    than MAX_INPUT_DEPTH (recursion in the encoder, the input hash and the redactor) and object
    keys that are not strings (JSON would turn ``1`` into ``"1"``; sorting mixed keys for the
    input hash raises). Iterative, so no depth can break the check itself."""
    if not _plain_tree(value):
        error = tree_error(value, field)
        if error is not None:
            raise error


def tree_error(value: object, field: str = "input") -> Optional[InvalidInputError]:
    """The slow path of ``check_tree``: the first problem, with the path of its field, or None."""
    stack: list[tuple[object, str, int]] = [(value, field, 0)]
    while stack:
        node, path, depth = stack.pop()
        children: Iterable[tuple[object, object]]
        if isinstance(node, Mapping):
            children = node.items()
        elif isinstance(node, (list, tuple)):
            children = ((f"[{i}]", v) for i, v in enumerate(node))
        else:
            continue
        if depth >= MAX_INPUT_DEPTH:
            return bad(path, f"{path} is nested more than {MAX_INPUT_DEPTH} levels deep", limit=MAX_INPUT_DEPTH)
        for key, child in children:
            if isinstance(node, Mapping):
                if not isinstance(key, str):
                    return bad(path, f"{path} has a key that is not a string: {type(key).__name__}")
                if not (key.isascii() or _utf8(key)):
                    # A key's value may never reach the body (None is dropped), but the input hash
                    # and the durable record encode every key.
                    return bad(path, f"{path} has a key that is not valid Unicode (a lone surrogate)")
                sub = f"{path}.{_label(key)}" if len(path) < 200 else path
            else:
                sub = f"{path}{key}" if len(path) < 200 else path  # key: the "[i]" made above
            if isinstance(child, (Mapping, list, tuple)):
                stack.append((child, sub, depth + 1))
    return None


def _utf8(text: str) -> bool:
    """Whether ``text`` can be encoded as UTF-8 (no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _label(key: str) -> str:
    """A key as it appears in a field path: plain names as they are, anything else JSON-escaped
    (ASCII, so a lone surrogate or a control character cannot break a log line or a JSON record)."""
    if key.isascii() and key.replace("_", "a").replace("-", "a").isalnum():
        return key[:64]
    return json.dumps(key[:64])


def is_number(value: object) -> bool:
    """A finite JSON number every decoder reads as such: no bool, NaN, infinity or huge integer."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER
    return isinstance(value, float) and math.isfinite(value)


def check_numbers(body: Mapping[str, object], prefix: str = "", skip: Collection[str] = ()) -> None:
    """Top-level numbers of a provider body (sampling controls: temperature, top_p, max_tokens,
    penalties, seed...) must be finite and at most 2**53 in size: Hermes' decoder and the model
    provider behind it would overflow or refuse them after the key was spent."""
    for name, value in body.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and not is_number(value) \
                and name not in skip:
            raise bad(prefix + name, f"'{name}' must be a finite number of at most 2**53 in size")


def session_value(field: str, value: object) -> Optional[str]:
    """Hermes session headers: at most 256 characters, no CR, LF or NUL, sendable as a header."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise bad(field, f"{field} must be a non-empty string")
    if len(value) > MAX_SESSION_VALUE_CHARS:
        raise bad(field, f"{field} is longer than {MAX_SESSION_VALUE_CHARS} characters")
    if any(c in value for c in "\r\n\x00"):
        raise bad(field, f"{field} must not contain CR, LF or NUL")
    return validate_header_value(field, value)


def idempotency_value(value: object) -> Optional[str]:
    """An idempotency key as it is sent in ``Idempotency-Key`` (a valid header value), or None."""
    if value is None:
        return None
    return validate_header_value("idempotency_key", value)


def split_key(input: object, given_key: Optional[str]) -> tuple[Optional[str], dict[str, object]]:
    """The one place a call's idempotency key is taken off its input: the keyword's key, else the
    input's ``idempotency_key`` (validated), and the input without it. Builders never see the key;
    the policy stage sends it as ``Idempotency-Key``."""
    if not isinstance(input, Mapping):
        raise InvalidInputError("input must be a JSON object", details={"field": "input"})
    key = idempotency_value(given_key if given_key is not None else input.get("idempotency_key"))
    return key, {k: v for k, v in input.items() if k != "idempotency_key"}


def control_headers(fields: Mapping[str, object], with_session_id: bool = False) -> dict[str, str]:
    """Validate the control fields that travel as headers and map them (never into the JSON body;
    the idempotency key is not one of them: :func:`split_key` took it off the input)."""
    headers: dict[str, str] = {}
    pairs = (("session_id", "X-Hermes-Session-Id"),) if with_session_id else ()
    for field, header in pairs + (("session_key", "X-Hermes-Session-Key"),):
        value = session_value(field, fields.get(field))
        if value is not None:
            headers[header] = value
    return headers


def max_events_value(value: object, default: int) -> int:
    """``max_events`` as an integer from 1 to 100,000, or ``default`` when not given."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_MAX_EVENTS:
        raise bad("max_events", f"max_events must be an integer from 1 to {MAX_MAX_EVENTS}")
    return value


#: Built once: ``json.dumps`` with options builds an encoder per call (~1 us of every request).
_BODY_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def encode_body(body: Mapping[str, object]) -> bytes:
    """Encode once; refuse locally what Hermes would refuse with 413, so nothing is sent."""
    try:
        data = _BODY_ENCODER.encode(body).encode("utf-8")
    except UnicodeEncodeError:
        raise bad("input", "input holds text that is not valid Unicode (a lone surrogate)") from None
    except (TypeError, ValueError, RecursionError) as exc:
        raise bad("input", f"input is not JSON-serialisable: {type(exc).__name__}: {str(exc)[:200]}") from None
    if len(data) > MAX_REQUEST_BODY_BYTES:
        # Refused locally, so the code is the input one; the class matches Hermes' own 413.
        raise PayloadTooLargeError(
            f"provider request body is {len(data)} bytes; Hermes accepts at most {MAX_REQUEST_BODY_BYTES}",
            code=CONFIGURATION_OR_INPUT,
            details={"field": "input", "body_bytes": len(data), "limit_bytes": MAX_REQUEST_BODY_BYTES,
                     "sent": False},
        )
    return data


def visible_text(content: object) -> bool:
    """Whether a message content carries something Hermes treats as a visible payload."""
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str) and part.strip():
                return True
            if isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str) and text.strip():
                    return True
                if part.get("type") in ("image_url", "input_image"):
                    return True
    return False


def check_message(field: str, message: object) -> Mapping[str, object]:
    """Check one ``role``/``content`` message object and return it; InvalidInputError names ``field``."""
    if not isinstance(message, Mapping):
        raise bad(field, f"{field} must be an object with 'role' and 'content'")
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise bad(field, f"{field} needs a string 'role'")
    if "content" not in message:
        raise bad(field, f"{field} needs a 'content'")
    content = message["content"]
    if content is not None and not isinstance(content, (str, list)):
        raise bad(field, f"{field}.content must be a string or a list of content parts")
    return message
