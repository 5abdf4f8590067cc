"""The pluggy plugin: claims ``postgresql://``, ``mysql://`` and ``sql+<SQLAlchemy URL>`` store URLs."""

from __future__ import annotations

from typing import Any, Optional

from hermes_sdk import hookimpl

from .store import SQLStore, store_from_url


class SQLStorePlugin:
    """Registered under the ``hermes_sdk`` entry-point group as ``hermes-sdk-sql``."""

    @hookimpl
    def hermes_idempotency_store(self, url: str, client: Any) -> Optional[SQLStore]:
        return store_from_url(url)
