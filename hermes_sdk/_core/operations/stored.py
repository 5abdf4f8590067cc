"""response_get / response_delete: one stored Responses object by id."""

from __future__ import annotations

from typing import Mapping

from .common import RequestParts, control_headers, path_id, require_input


def response_id_value(value: object) -> str:
    """A response id fit for one path segment: non-empty, at most 512 bytes, no control characters.

    ``.`` and ``..`` are refused: servers and proxies would resolve them away from ``/v1/responses/``.
    """
    return path_id_value("response_id", value)


def path_id_value(field: str, value: object) -> str:
    """An id that becomes one path segment: :func:`~hermes_sdk._core.operations.common.path_id`."""
    return path_id(field, value)


def _requested(data: Mapping[str, object]) -> object:
    value = data.get("response_id")
    body = data.get("body")
    if value is None and isinstance(body, dict):
        value = body.get("response_id")
    return value


def build(operation: str, raw: object) -> RequestParts:
    """Validate a response_get or response_delete input: ``response_id`` (or ``body.response_id``) is the path."""
    data = require_input(raw)
    response_id = response_id_value(_requested(data))
    return RequestParts(control_headers(data), path_params={"response_id": response_id})
