"""Sentinels for keyword defaults, so ``help()`` says what they mean."""

from __future__ import annotations

from typing import Any


class _Required:
    """The default of a keyword that must be given (``help()`` shows ``<required>``)."""

    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()


class _Unchanged:
    """The default of a keyword left as it is (``help()`` shows ``<unchanged>``)."""

    def __repr__(self) -> str:
        return "<unchanged>"


UNCHANGED: Any = _Unchanged()
