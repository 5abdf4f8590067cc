"""The pluggy plugin: claims ``redis://`` and ``rediss://`` idempotency store URLs.

Only a URL it claims imports the store (and redis-py): an installed plugin costs a client that
uses another store nothing but this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional
from urllib.parse import urlsplit

from hermes_sdk import hookimpl

if TYPE_CHECKING:
    from .store import RedisStore

SCHEMES = ("redis", "rediss")


def claims(url: str) -> bool:
    """Whether ``url`` is one this package's store takes (the one check: ``store_from_url`` makes it too)."""
    return urlsplit(url).scheme.lower() in SCHEMES


class RedisStorePlugin:
    """Registered under the ``hermes_sdk`` entry-point group as ``hermes-sdk-redis``."""

    @hookimpl
    def hermes_idempotency_store(self, url: str, client: Any) -> Optional[RedisStore]:
        if not claims(url):
            return None
        from .store import store_from_url

        return store_from_url(url)
