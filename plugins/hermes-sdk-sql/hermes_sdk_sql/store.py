"""An IdempotencyStore on any SQLAlchemy database (PostgreSQL, MySQL, SQLite, ...).

One row per (capability_id, key), addressed by ``slot`` = SHA-256 of the two (the primary key, so
long keys fit every database's index limits). Ownership of a key is decided by one INSERT of that
primary key: the database's unique constraint makes it atomic across threads, processes and hosts.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Mapping, Optional, Union

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import URL, Engine

from hermes_sdk.plugin import COMPLETED, IdempotencyRecord, load_record
from hermes_sdk.plugin import CorruptRecordError as CoreCorruptRecordError

from .schema import CorruptRecordError, ensure_schema, make_engine, schema_table, sqlalchemy_url

COMPONENT = "idempotency"
SCHEMA_VERSION = 1


def _slot(capability_id: str, key: str) -> str:
    return hashlib.sha256(f"{capability_id}\n{key}".encode("utf-8")).hexdigest()


def _dumps(record: IdempotencyRecord) -> str:
    return json.dumps(attrs.asdict(record), separators=(",", ":"))


def _loads(raw: Any, slot: str) -> IdempotencyRecord:
    """Decode a row's record; anything undecodable, or filed under another key, is a CorruptRecordError."""
    details = {"hook": "idempotency_store", "store": "sql", "reason": "corrupt_record"}
    try:
        record = load_record(raw, "sql")
    except CoreCorruptRecordError as exc:
        raise CorruptRecordError(exc.message, details=details) from None
    if _slot(record.capability_id, record.key) != slot:
        raise CorruptRecordError("an idempotency record in the SQL store is filed under another key",
                                 details=details)
    return record


class SQLStore:
    """The store: give a store URL (``postgresql://…``), a SQLAlchemy URL, or an Engine.

    Args:
        url_or_engine: ``postgresql://user@host/db`` (psycopg 3), ``postgresql+psycopg://…``,
            ``mysql://…``, ``sql+sqlite:///app.db`` (any SQLAlchemy URL after ``sql+``), a
            ``sqlalchemy.engine.URL``, or an ``Engine`` (then the caller owns and disposes it).
        table: the table name (default ``hermes_idempotency``).
        engine_kwargs: passed to ``sqlalchemy.create_engine`` when this store makes the engine.

    The schema is created on first use and recorded in ``hermes_sdk_schema`` (component
    ``idempotency``, version 1).
    """

    def __init__(self, url_or_engine: Union[str, URL, Engine], *, table: str = "hermes_idempotency",
                 **engine_kwargs: Any) -> None:
        self.engine, self._owns = make_engine(url_or_engine, **engine_kwargs)
        self.metadata = sa.MetaData()
        schema_table(self.metadata)
        self.table = sa.Table(
            table, self.metadata,
            sa.Column("slot", sa.String(64), primary_key=True),
            sa.Column("capability_id", sa.Text, nullable=False),
            sa.Column("action_id", sa.String(200), nullable=False, index=True),
            sa.Column("state", sa.String(16), nullable=False),
            sa.Column("expires_at", sa.Float, nullable=True),
            sa.Column("record", sa.Text, nullable=False),
        )
        ensure_schema(self.engine, self.metadata, COMPONENT, SCHEMA_VERSION)

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        """Insert ``record`` (pending) unless a live record holds its key; None means this caller owns it.

        An expired record is deleted first, so it gives its key back.
        """
        t = self.table
        slot = _slot(record.capability_id, record.key)
        for _ in range(5):
            now = time.time()
            try:
                with self.engine.begin() as conn:
                    conn.execute(t.delete().where(t.c.slot == slot, t.c.expires_at.is_not(None),
                                                  t.c.expires_at <= now))
                    conn.execute(t.insert().values(slot=slot, capability_id=record.capability_id,
                                                   action_id=record.action_id, state=record.state,
                                                   expires_at=record.expires_at, record=_dumps(record)))
                return None
            except sa.exc.IntegrityError:
                pass  # somebody holds the key (the unique primary key decided it)
            with self.engine.connect() as conn:
                row = conn.execute(sa.select(t.c.record).where(t.c.slot == slot)).first()
            if row is not None:
                existing = _loads(row[0], slot)
                if not existing.expired():
                    return existing
            # The holder expired or was forgotten between our INSERT and SELECT: try again.
        raise RuntimeError("could not reserve the idempotency key (contention)")

    def complete(self, capability_id: str, key: str, result: Mapping[str, Any]) -> None:
        """Store the ActionResult JSON and mark the record completed, atomically (no-op if it is gone)."""
        t = self.table
        slot = _slot(capability_id, key)
        with self.engine.begin() as conn:
            row = conn.execute(sa.select(t.c.record).where(t.c.slot == slot).with_for_update()).first()
            if row is None:
                return
            record = attrs.evolve(_loads(row[0], slot), state=COMPLETED, result=dict(result),
                                  completed_at=time.time())
            conn.execute(t.update().where(t.c.slot == slot).values(state=COMPLETED, record=_dumps(record)))

    def _live(self, row: Any, slot: str) -> Optional[IdempotencyRecord]:
        if row is None:
            return None
        record = _loads(row[0], slot)
        return None if record.expired() else record

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The live record for the key, or None."""
        slot = _slot(capability_id, key)
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(self.table.c.record).where(self.table.c.slot == slot)).first()
        return self._live(row, slot)

    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        """The live record reserved by that action, or None."""
        t = self.table
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(t.c.record, t.c.slot).where(t.c.action_id == action_id)).first()
        if row is None:
            return None
        record = self._live(row, row[1])
        return record if record is not None and record.action_id == action_id else None

    def forget(self, capability_id: str, key: str) -> bool:
        """Delete the record; return whether one existed."""
        with self.engine.begin() as conn:
            result = conn.execute(self.table.delete().where(self.table.c.slot == _slot(capability_id, key)))
        return bool(result.rowcount)

    def purge_expired(self) -> int:
        """Delete every expired record (they are ignored anyway); return how many went."""
        t = self.table
        with self.engine.begin() as conn:
            result = conn.execute(t.delete().where(t.c.expires_at.is_not(None), t.c.expires_at <= time.time()))
        return int(result.rowcount or 0)

    def close(self) -> None:
        """Dispose of the engine's pool when this store created the engine."""
        if self._owns:
            self.engine.dispose()


def store_from_url(url: str) -> Optional[SQLStore]:
    """A store for ``postgresql://``, ``postgres://``, ``postgresql+<driver>://``, ``mysql://`` (and
    ``mysql+<driver>://``) and ``sql+<SQLAlchemy URL>``; None for any other URL (``sqlite:///`` stays
    the SDK's built-in store)."""
    if sqlalchemy_url(url) is None:
        return None
    return SQLStore(url)
