"""The lenient reading of one JSON value Hermes sent: the value when it has the expected type,
else None (or the type's empty value). Result decoders (``convert``) and event parsers (``events``)
read every field this one way."""

from __future__ import annotations

from typing import Optional


def text(value: object) -> str:
    """A string as sent; anything else ``""``."""
    return value if isinstance(value, str) else ""


def opt_str(value: object) -> Optional[str]:
    """A string as sent; anything else None."""
    return value if isinstance(value, str) else None


def opt_float(value: object) -> Optional[float]:
    """A number (not a bool) as a float; anything else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def opt_int(value: object) -> Optional[int]:
    """An integer (not a bool); anything else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def opt_bool(value: object) -> Optional[bool]:
    """A bool as sent; anything else None."""
    return value if isinstance(value, bool) else None


def opt_object(value: object) -> Optional[dict[str, object]]:
    """A JSON object as sent; anything else None."""
    return value if isinstance(value, dict) else None


def opt_list(value: object) -> Optional[list[object]]:
    """A JSON array as sent; anything else None."""
    return value if isinstance(value, list) else None


def strings(value: object) -> tuple[str, ...]:
    """The strings of a JSON array, in order (other entries left out); anything else ``()``."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()
