"""Stores for hermes-sdk on any SQLAlchemy database: the idempotency store and the inbox's approval queue."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .plugin import SQLStorePlugin

if TYPE_CHECKING:
    from .queue import SQLApprovalQueue, queue_from_url
    from .schema import MIGRATIONS, CorruptRecordError, SchemaVersionError, sqlalchemy_url
    from .store import SQLStore, store_from_url

__all__ = ["MIGRATIONS", "CorruptRecordError", "SQLApprovalQueue", "SQLStore", "SQLStorePlugin",
           "SchemaVersionError", "queue_from_url", "sqlalchemy_url", "store_from_url"]

#: Names that live in modules importing SQLAlchemy: imported on first use (PEP 562), so an installed
#: plugin whose store no client asks for costs no SQLAlchemy import.
_LAZY = {"SQLApprovalQueue": "queue", "queue_from_url": "queue", "MIGRATIONS": "schema",
         "CorruptRecordError": "schema", "SchemaVersionError": "schema", "sqlalchemy_url": "schema",
         "SQLStore": "store", "store_from_url": "store"}
_SUBMODULES = frozenset({"queue", "schema", "store", "testing"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
