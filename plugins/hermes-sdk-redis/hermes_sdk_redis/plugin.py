"""The pluggy plugin: claims ``redis://`` and ``rediss://`` idempotency store URLs."""

from __future__ import annotations

from typing import Any, Optional

from hermes_sdk import hookimpl

from .store import RedisStore, store_from_url


class RedisStorePlugin:
    """Registered under the ``hermes_sdk`` entry-point group as ``hermes-sdk-redis``."""

    @hookimpl
    def hermes_idempotency_store(self, url: str, client: Any) -> Optional[RedisStore]:
        return store_from_url(url)
