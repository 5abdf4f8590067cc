"""response_get / response_delete: one stored Responses object by id."""

from __future__ import annotations

import re

from .._constants import MAX_RESPONSE_ID_BYTES
from .common import RequestParts, bad, control_headers, require_mapping

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def response_id_value(value: object) -> str:
    return path_id_value("response_id", value)


def path_id_value(field: str, value: object) -> str:
    """An id that becomes one path segment: a non-empty string, bounded, no control characters."""
    if not isinstance(value, str) or not value.strip():
        raise bad(field, f"'{field}' must be a non-empty string")
    if len(value.encode("utf-8")) > MAX_RESPONSE_ID_BYTES:
        raise bad(field, f"'{field}' is longer than {MAX_RESPONSE_ID_BYTES} bytes")
    if _CONTROL.search(value):
        raise bad(field, f"'{field}' must not contain control characters")
    if value in (".", ".."):
        # A dot segment is not a resource name: servers and proxies resolve it away from the route.
        raise bad(field, f"'{field}' must not be a dot segment")
    return value


def build(operation: str, raw: object) -> RequestParts:
    data = require_mapping(raw)
    value = data.get("response_id")
    if value is None and isinstance(data.get("body"), dict):
        value = data["body"].get("response_id")
    response_id = response_id_value(value)
    return RequestParts(control_headers(data), path_params={"response_id": response_id})
