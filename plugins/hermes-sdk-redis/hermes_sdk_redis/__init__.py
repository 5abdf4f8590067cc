"""Redis-backed idempotency store for hermes-sdk."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .plugin import RedisStorePlugin

if TYPE_CHECKING:
    from .store import RedisStore, store_from_url

__all__ = ["RedisStore", "RedisStorePlugin", "store_from_url"]

#: Names that live in a module importing redis-py: imported on first use (PEP 562), so an installed
#: plugin whose store no client asks for costs no redis-py import.
_LAZY = {"RedisStore": "store", "store_from_url": "store"}
_SUBMODULES = frozenset({"store"})


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
