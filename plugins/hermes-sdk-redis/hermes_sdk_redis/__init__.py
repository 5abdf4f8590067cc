"""Redis-backed idempotency store for hermes-sdk."""

from ._version import __version__ as __version__
from .plugin import RedisStorePlugin
from .store import RedisStore, store_from_url

__all__ = ["RedisStore", "RedisStorePlugin", "store_from_url"]
