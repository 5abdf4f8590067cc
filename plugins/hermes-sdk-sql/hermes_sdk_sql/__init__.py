"""Stores for hermes-sdk on any SQLAlchemy database: the idempotency store and the inbox's approval queue."""

from ._version import __version__ as __version__
from .plugin import SQLStorePlugin
from .queue import SQLApprovalQueue, queue_from_url
from .schema import MIGRATIONS, CorruptRecordError, SchemaVersionError, sqlalchemy_url
from .store import SQLStore, store_from_url

__all__ = ["MIGRATIONS", "CorruptRecordError", "SQLApprovalQueue", "SQLStore", "SQLStorePlugin",
           "SchemaVersionError", "queue_from_url", "sqlalchemy_url", "store_from_url"]
