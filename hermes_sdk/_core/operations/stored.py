"""The one rule of an id that becomes a path segment, under the name the builders import it by
(``hermes_sdk.plugin.path_id``)."""

from __future__ import annotations

from .common import path_id


def path_id_value(field: str, value: object) -> str:
    """An id that becomes one path segment: :func:`~hermes_sdk._core.operations.common.path_id`."""
    return path_id(field, value)
