"""response_get / response_delete: one stored Responses object by id."""

from __future__ import annotations

import re
from typing import Any, Mapping

from .._constants import MAX_RESPONSE_ID_BYTES
from .common import RequestParts, bad, control_headers, require_input

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def response_id_value(value: object) -> str:
    """A response id fit for one path segment: non-empty, at most 512 bytes, no control characters.

    ``.`` and ``..`` are refused: servers and proxies would resolve them away from ``/v1/responses/``.
    """
    return path_id_value("response_id", value)


def path_id_value(field: str, value: object) -> str:
    """An id that becomes one path segment (``response_id``, ``run_id``): non-empty, at most 512
    bytes, valid Unicode, no control characters, not a dot segment."""
    if not isinstance(value, str) or not value.strip():
        raise bad(field, f"'{field}' must be a non-empty string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise bad(field, f"'{field}' holds text that is not valid Unicode (a lone surrogate)") from None
    if size > MAX_RESPONSE_ID_BYTES:
        raise bad(field, f"'{field}' is longer than {MAX_RESPONSE_ID_BYTES} bytes")
    if _CONTROL.search(value):
        raise bad(field, f"'{field}' must not contain control characters")
    if value in (".", ".."):
        # A dot segment is not a resource name: servers and proxies resolve it away from the route.
        raise bad(field, f"'{field}' must not be a dot segment")
    return value


def _requested(data: Mapping[str, Any]) -> Any:
    value = data.get("response_id")
    if value is None and isinstance(data.get("body"), dict):
        value = data["body"].get("response_id")
    return value


def names_another(input: Mapping[str, Any], reply: Any) -> bool:
    """Whether a stored object or a delete receipt names another response id than the one requested."""
    named = reply.get("id") if isinstance(reply, Mapping) else None
    return named is not None and named != _requested(input)


def build(operation: str, raw: object) -> RequestParts:
    """Validate a response_get or response_delete input: ``response_id`` (or ``body.response_id``) is the path."""
    data = require_input(raw)
    response_id = response_id_value(_requested(data))
    return RequestParts(control_headers(data), path_params={"response_id": response_id})
