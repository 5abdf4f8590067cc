"""The pluggy plugin: claims ``postgresql://``, ``mysql://`` and ``sql+<SQLAlchemy URL>`` store URLs.

Only a URL that may be one of those imports the store (and SQLAlchemy): an installed plugin costs a
client that uses another store nothing but this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from hermes_sdk import hookimpl

if TYPE_CHECKING:
    from .store import SQLStore

#: The schemes claimed without the ``sql+`` prefix (``+<driver>`` allowed).
SCHEMES = ("postgresql", "postgres", "mysql")


def may_claim(url: str) -> bool:
    """Whether ``url`` names a scheme this package claims (the one check: ``schema.sqlalchemy_url``
    starts with it, then decides whether SQLAlchemy can read the rest)."""
    text = url.strip().lower()
    return text.startswith("sql+") or text.split(":", 1)[0].split("+", 1)[0] in SCHEMES


class SQLStorePlugin:
    """Registered under the ``hermes_sdk`` entry-point group as ``hermes-sdk-sql``."""

    @hookimpl
    def hermes_idempotency_store(self, url: str, client: Any) -> Optional[SQLStore]:
        if not may_claim(url):
            return None
        from .store import store_from_url

        return store_from_url(url)
