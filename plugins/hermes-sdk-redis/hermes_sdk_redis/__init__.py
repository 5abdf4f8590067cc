"""Redis-backed idempotency store for hermes-sdk."""

from .plugin import RedisStorePlugin
from .store import RedisStore, store_from_url

__all__ = ["RedisStore", "RedisStorePlugin", "store_from_url"]
