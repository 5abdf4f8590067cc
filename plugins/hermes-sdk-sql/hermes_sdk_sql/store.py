"""An IdempotencyStore on any SQLAlchemy database (PostgreSQL, MySQL, SQLite, ...).

One row per (capability_id, key), addressed by ``slot`` = SHA-256 of the two (the primary key, so
long keys fit every database's index limits). Ownership of a key is decided by one INSERT of that
primary key: the database's unique constraint makes it atomic across threads, processes and hosts.

Within a call, the SDK runs each store call on a worker thread it stops waiting for at the call's
deadline; the store also bounds its own transaction by that deadline (PostgreSQL ``lock_timeout``
and ``statement_timeout``, SQLite ``busy_timeout``), so an abandoned call ends soon after, rolled
back. A database out of reach is raised as ``ConnectionError`` (``TimeoutError`` for a lock or
statement timeout), which the SDK reports as retryable with nothing sent. Expired rows are pruned
as keys are reserved, a bounded batch at a time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import time
from typing import Any, Callable, Iterator, Mapping, Optional, TypeVar, Union

import attrs
import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine

from hermes_sdk.plugin import COMPLETED, IdempotencyRecord, load_record
from hermes_sdk.plugin import CorruptRecordError as CoreCorruptRecordError

from . import schema
from .schema import CorruptRecordError, ensure_schema, make_engine, schema_table, sqlalchemy_url

COMPONENT = "idempotency"
SCHEMA_VERSION = 1
#: PostgreSQL SQLSTATEs of a lock or statement timeout, and of a server shutting down or starting.
_TIMED_OUT = {"55P03", "57014"}
_UNAVAILABLE = {"57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006"}

F = TypeVar("F", bound=Callable[..., Any])


def _outage_kind(exc: sa.exc.SQLAlchemyError) -> Optional[type[Exception]]:
    """TimeoutError or ConnectionError when ``exc`` says the database is out of reach, else None."""
    if isinstance(exc, sa.exc.TimeoutError):  # the pool had no connection in time
        return TimeoutError
    if not isinstance(exc, sa.exc.DBAPIError):
        return None
    orig = exc.orig
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    text = str(orig).lower()
    if state in _TIMED_OUT or "database is locked" in text or "database is busy" in text:
        return TimeoutError
    if exc.connection_invalidated or state in _UNAVAILABLE or isinstance(exc, (sa.exc.OperationalError,
                                                                              sa.exc.InterfaceError)):
        return ConnectionError
    return None


def _typed_outage(method: F) -> F:
    """The database out of reach as the builtin errors every store raises for an outage."""
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except sa.exc.SQLAlchemyError as exc:
            kind = _outage_kind(exc)
            if kind is None:
                raise
            raise kind(f"the SQL store is out of reach: {type(exc).__name__}") from exc
    return wrapper  # type: ignore[return-value]


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
    ``idempotency``, version 1). Every :attr:`PRUNE_EVERY` reservations, at most
    :attr:`PRUNE_BATCH` expired rows are deleted (bounded work per call; :meth:`purge_expired`
    takes all).
    """

    PRUNE_EVERY = 8
    PRUNE_BATCH = 32

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
            sa.Column("expires_at", sa.Float, nullable=True, index=True),
            sa.Column("record", sa.Text, nullable=False),
        )
        ensure_schema(self.engine, self.metadata, COMPONENT, SCHEMA_VERSION)
        self._reserves = 0  # approximate across threads: it only paces the pruning
        #: Expired rows pruned so far by reservations.
        self.pruned = 0

    @contextlib.contextmanager
    def _begin(self) -> Iterator[Connection]:
        """A transaction that ends by the call's deadline, when there is one (the database's own
        timeouts: PostgreSQL here, SQLite's busy_timeout in the engine's begin hook)."""
        with self.engine.begin() as conn:
            deadline = schema.store_deadline()
            if deadline is not None and conn.dialect.name == "postgresql":
                ms = "%dms" % max(1, math.ceil((deadline - time.time()) * 1000))
                conn.execute(sa.text("SELECT set_config('lock_timeout', :ms, true),"
                                     " set_config('statement_timeout', :ms, true)"), {"ms": ms})
            yield conn

    def _prune(self, conn: Connection, now: float) -> None:
        self._reserves += 1
        if self._reserves % self.PRUNE_EVERY:
            return
        t = self.table
        expired = t.c.expires_at.is_not(None) & (t.c.expires_at <= now)
        slots = [row[0] for row in conn.execute(sa.select(t.c.slot).where(expired).limit(self.PRUNE_BATCH))]
        if slots:
            result = conn.execute(t.delete().where(t.c.slot.in_(slots), expired))
            self.pruned += int(result.rowcount or 0)

    @_typed_outage
    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        """Insert ``record`` (pending) unless a live record holds its key; None means this caller owns it.

        An expired record is deleted first, so it gives its key back.
        """
        t = self.table
        slot = _slot(record.capability_id, record.key)
        for _ in range(5):
            now = time.time()
            try:
                with self._begin() as conn:
                    self._prune(conn, now)  # rolled back with a failed INSERT: a later reserve prunes
                    conn.execute(t.delete().where(t.c.slot == slot, t.c.expires_at.is_not(None),
                                                  t.c.expires_at <= now))
                    conn.execute(t.insert().values(slot=slot, capability_id=record.capability_id,
                                                   action_id=record.action_id, state=record.state,
                                                   expires_at=record.expires_at, record=_dumps(record)))
                return None
            except sa.exc.IntegrityError:
                pass  # somebody holds the key (the unique primary key decided it)
            with self._begin() as conn:
                row = conn.execute(sa.select(t.c.record).where(t.c.slot == slot)).first()
            if row is not None:
                existing = _loads(row[0], slot)
                if not existing.expired():
                    return existing
            # The holder expired or was forgotten between our INSERT and SELECT: try again.
        raise RuntimeError("could not reserve the idempotency key (contention)")

    @_typed_outage
    def complete(self, capability_id: str, key: str, result: Mapping[str, Any]) -> None:
        """Store the ActionResult JSON and mark the record completed, atomically (no-op if it is gone)."""
        t = self.table
        slot = _slot(capability_id, key)
        with self._begin() as conn:
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

    @_typed_outage
    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The live record for the key, or None."""
        slot = _slot(capability_id, key)
        with self._begin() as conn:
            row = conn.execute(sa.select(self.table.c.record).where(self.table.c.slot == slot)).first()
        return self._live(row, slot)

    @_typed_outage
    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        """The live record reserved by that action, or None."""
        t = self.table
        with self._begin() as conn:
            row = conn.execute(sa.select(t.c.record, t.c.slot).where(t.c.action_id == action_id)).first()
        if row is None:
            return None
        record = self._live(row, row[1])
        return record if record is not None and record.action_id == action_id else None

    @_typed_outage
    def forget(self, capability_id: str, key: str) -> bool:
        """Delete the record; return whether one existed."""
        with self._begin() as conn:
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
