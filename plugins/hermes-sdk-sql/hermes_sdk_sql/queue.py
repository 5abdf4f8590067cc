"""The approval queue of hermes-sdk-inbox on any SQLAlchemy database (the inbox's queue protocol).

Entries are JSON documents with a few indexed columns. Two rules make the queue safe with many
processes: ``open_key`` is unique (an entry holds it while pending or decided and not yet used, so
one input has one open entry), and every change is a compare-and-set on ``version``.
"""

from __future__ import annotations

import json
from typing import Any, Optional, Union

import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine

from hermes_sdk.plugin import exact_pages, like_identifier

from .schema import CorruptRecordError, ensure_schema, make_engine, schema_table, sqlalchemy_url

COMPONENT = "approval_queue"
SCHEMA_VERSION = 1


def _load(raw: Any, entry_id: str) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
        if not isinstance(doc, dict) or doc.get("id") != entry_id:
            raise ValueError("not this entry")
    except (TypeError, ValueError):
        raise CorruptRecordError("an approval queue entry in the SQL store is corrupt",
                                 details={"store": "sql", "reason": "corrupt_entry"}) from None
    return doc


class SQLApprovalQueue:
    """The queue: a store URL (``postgresql://…``, ``sql+sqlite:///…``), a SQLAlchemy URL or an Engine.

    Args:
        url_or_engine: as for :class:`~hermes_sdk_sql.SQLStore` (the same database may hold both).
        table: the table name (default ``hermes_approval_queue``).
    """

    def __init__(self, url_or_engine: Union[str, URL, Engine], *, table: str = "hermes_approval_queue",
                 **engine_kwargs: Any) -> None:
        self.engine, self._owns = make_engine(url_or_engine, **engine_kwargs)
        self.metadata = sa.MetaData()
        schema_table(self.metadata)
        self.table = sa.Table(
            table, self.metadata,
            sa.Column("id", sa.String(64), primary_key=True),
            sa.Column("version", sa.Integer, nullable=False),
            sa.Column("state", sa.String(16), nullable=False, index=True),
            sa.Column("capability_id", sa.Text, nullable=False),
            sa.Column("open_key", sa.String(64), nullable=True, unique=True),
            sa.Column("requested_at", sa.Float, nullable=False, index=True),
            sa.Column("expires_at", sa.Float, nullable=False),
            sa.Column("doc", sa.Text, nullable=False),
        )
        ensure_schema(self.engine, self.metadata, COMPONENT, SCHEMA_VERSION)

    def _values(self, entry: dict[str, Any]) -> dict[str, Any]:
        return {"id": entry["id"], "version": int(entry["version"]), "state": entry["state"],
                "capability_id": entry["capability_id"], "open_key": entry.get("open_key"),
                "requested_at": float(entry["requested_at"]), "expires_at": float(entry["expires_at"]),
                "doc": json.dumps(entry, separators=(",", ":"), sort_keys=True)}

    def add(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Insert ``entry`` unless an open entry holds its ``open_key``; return the stored entry."""
        t = self.table
        for _ in range(5):
            try:
                with self.engine.begin() as conn:
                    conn.execute(t.insert().values(**self._values(entry)))
                return dict(entry)
            except sa.exc.IntegrityError:
                pass
            with self.engine.connect() as conn:
                row = conn.execute(sa.select(t.c.id, t.c.doc).where(t.c.open_key == entry.get("open_key"))).first()
            if row is not None:
                return _load(row[1], row[0])
        raise RuntimeError("could not add the approval queue entry (contention)")

    def get(self, entry_id: str) -> Optional[dict[str, Any]]:
        """The entry, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(self.table.c.doc).where(self.table.c.id == entry_id)).first()
        return None if row is None else _load(row[0], entry_id)

    def update(self, entry: dict[str, Any], version: int) -> bool:
        """Replace the entry if its stored version is still ``version`` (``entry["version"]`` is the new one)."""
        t = self.table
        values = self._values(entry)
        values.pop("id")
        try:
            with self.engine.begin() as conn:
                result = conn.execute(t.update().where(t.c.id == entry["id"], t.c.version == version)
                                      .values(**values))
        except sa.exc.IntegrityError:
            return False  # its open_key is held by another entry
        return bool(result.rowcount)

    def list(self, *, state: Optional[str] = None, limit: int = 100, offset: int = 0,
             identifier: Optional[str] = None) -> list[dict[str, Any]]:
        """Entries, newest first (``state`` filters on the stored state; ``identifier`` in the query,
        over every row: the entry's id, or a ``LIKE`` on its document narrowed to exact matches)."""
        t = self.table
        query = sa.select(t.c.id, t.c.doc).order_by(t.c.requested_at.desc(), t.c.id)
        if state is not None:
            query = query.where(t.c.state == state)
        if identifier is not None:
            query = query.where(sa.or_(t.c.id == identifier,
                                       t.c.doc.like(like_identifier(identifier), escape="\\")))

        def fetch(start: int, size: int) -> list[dict[str, Any]]:
            with self.engine.connect() as conn:
                return [_load(row[1], row[0]) for row in conn.execute(query.limit(size).offset(start))]

        return fetch(offset, limit) if identifier is None else exact_pages(fetch, identifier, limit, offset)

    def close(self) -> None:
        """Dispose of the engine's pool when this queue created the engine."""
        if self._owns:
            self.engine.dispose()


def queue_from_url(url: str) -> Optional[SQLApprovalQueue]:
    """A queue for the URLs this package claims (see :func:`~hermes_sdk_sql.store_from_url`), else None."""
    if sqlalchemy_url(url) is None:
        return None
    return SQLApprovalQueue(url)
