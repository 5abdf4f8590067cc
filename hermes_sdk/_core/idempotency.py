"""Durable, capability-scoped idempotency records (``return_original_result``).

A call with a key first *reserves* a pending record atomically. Only the reserving caller
executes; it then *completes* the record with the ActionResult. A pending record that is never
completed (the process died mid-call) stops every later call with that key: the outcome is
unknown and the model work is never replayed blindly. Operators reconcile with ``resolve()`` or
``forget()``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
import time
from typing import TYPE_CHECKING, Iterator, Mapping, Optional, Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

import attrs

from ..errors import PluginError
from . import _fork
from .endpoints import seconds_value
from .sqlite_files import SQLITE_SIDE_FILES, SQLiteConnections, private_sqlite_files  # noqa: F401  (SQLITE_SIDE_FILES: kept importable here)
from .store_calls import StoreTimeout, store_deadline

if TYPE_CHECKING:  # the SQLite store imports it with its first connection (sqlite_files)
    import sqlite3

PENDING = "pending"
COMPLETED = "completed"


@attrs.frozen
class IdempotencyRecord:
    """One key's record in an idempotency store: pending while its call runs, then completed with the result.

    Attributes:
        capability_id: the capability the key is scoped to.
        key: the caller's idempotency key.
        action_id: the action that reserved the key (the original action of every replay).
        input_hash: :func:`~hermes_sdk.input_hash` of the input, to detect a reused key
            (``strict_idempotency``).
        state: ``pending`` (reserved, no outcome yet) or ``completed``.
        created_at: epoch seconds of the reservation.
        expires_at: epoch seconds after which the key is free again, or None for never.
        result: the :class:`~hermes_sdk.ActionResult` as JSON, once completed.
        completed_at: epoch seconds of completion.
    """

    capability_id: str
    key: str
    action_id: str
    input_hash: str
    state: str  # pending | completed
    created_at: float
    expires_at: Optional[float]
    result: Optional[dict[str, object]] = None  # the ActionResult as JSON
    completed_at: Optional[float] = None

    def expired(self, now: Optional[float] = None) -> bool:
        """Whether the record has passed ``expires_at`` (at ``now``, epoch seconds; default the current time)."""
        return self.expires_at is not None and (now or time.time()) >= self.expires_at


@runtime_checkable
class IdempotencyStore(Protocol):
    """What a store must do. ``reserve`` is the one atomic step every backend must get right.

    Every call's deadline bounds its store calls too. A store is called on a worker thread the
    caller stops waiting for at the deadline, unless its class sets ``honours_deadline = True``:
    then it is called on the caller's thread and must itself return by
    :func:`hermes_sdk.plugin.store_deadline` (raising ``TimeoutError`` when it cannot). Raise
    ``ConnectionError`` (or another ``OSError``) when the store cannot be reached: the call fails
    with a retryable :class:`~hermes_sdk.StoreUnavailableError` and nothing sent.
    """

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        """Insert ``record`` (pending) unless a live record holds its (capability_id, key).

        Return None when this caller now owns the key, else the existing record.
        """

    def complete(self, capability_id: str, key: str, result: Mapping[str, object]) -> None:
        """Store the ActionResult JSON and mark the record completed."""

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The live record for the key, or None."""

    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        """The live record created by that action, or None."""

    def forget(self, capability_id: str, key: str) -> bool:
        """Delete the record; return whether one existed."""

    def close(self) -> None:
        """Release resources."""


def _rec_json(record: IdempotencyRecord) -> str:
    return json.dumps(attrs.asdict(record), separators=(",", ":"))


class CorruptRecordError(PluginError):
    """A stored record could not be decoded, or does not belong where it was found: a typed error
    (``details["reason"] == "corrupt_record"``), never a guess; the call that read it sends nothing."""


def load_record(text: object, store: str) -> IdempotencyRecord:
    """A record from its stored JSON; anything else is a :class:`CorruptRecordError`."""
    try:
        if not isinstance(text, (str, bytes, bytearray)):
            raise TypeError("a record is stored as JSON text")
        record = IdempotencyRecord(**json.loads(text))
        if not all(isinstance(v, str) for v in (record.capability_id, record.key, record.action_id,
                                                record.input_hash)) or record.state not in (PENDING, COMPLETED):
            raise ValueError("record fields have the wrong types")
        for moment in (record.created_at, record.expires_at, record.completed_at):
            if moment is not None and (isinstance(moment, bool) or not isinstance(moment, (int, float))):
                raise ValueError("a time is not a number")
        if record.result is not None and not isinstance(record.result, dict):
            raise ValueError("the result is not an object")
    except (TypeError, ValueError, RecursionError) as exc:
        raise corrupt(store, f"({type(exc).__name__})") from None
    return record


def corrupt(store: str, why: str) -> CorruptRecordError:
    """The typed error for a record of ``store`` that cannot be used (``why`` says how)."""
    return CorruptRecordError(f"an idempotency record in the {store} store is corrupt {why}".rstrip(),
                              details={"hook": "idempotency_store", "store": store, "reason": "corrupt_record"})


def _rec_load(text: str, capability_id: str, key: str) -> IdempotencyRecord:
    record = load_record(text, "sqlite")
    if (record.capability_id, record.key) != (capability_id, key):  # a record copied under another key
        raise corrupt("sqlite", "(filed under another key)")
    return record


class MemoryStore:
    """Per-process store: durable only for the life of the process (the default)."""

    honours_deadline = True  # never waits on I/O: called on the caller's thread

    #: Expired records are swept when the store has grown to this many since the last sweep (then
    #: to twice what the sweep left): the store holds what is live, not every key it ever saw.
    SWEEP_MIN = 1024

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], IdempotencyRecord] = {}
        self._by_action: dict[str, tuple[str, str]] = {}
        self._lock = threading.Lock()
        self._sweep_at = self.SWEEP_MIN
        _fork.register(self)

    def _after_fork(self) -> None:
        # A forked child keeps the records (its parent's, as of the fork) but not a lock another
        # thread held at that moment.
        self._lock = threading.Lock()

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        """Insert ``record`` unless a live record holds its key; None means this caller owns the key."""
        slot = (record.capability_id, record.key)
        with self._lock:
            existing = self._records.get(slot)
            if existing is not None and not existing.expired():
                return existing
            if existing is not None:
                self._by_action.pop(existing.action_id, None)
            self._records[slot] = record
            self._by_action[record.action_id] = slot
            if len(self._records) >= self._sweep_at:
                self._sweep()
            return None

    def _sweep(self) -> None:
        """Drop every expired record (amortised: at most once per doubling of the store)."""
        now = time.time()
        for slot, held in [(slot, held) for slot, held in self._records.items() if held.expired(now)]:
            del self._records[slot]
            if self._by_action.get(held.action_id) == slot:
                del self._by_action[held.action_id]
        self._sweep_at = max(self.SWEEP_MIN, 2 * len(self._records))

    def complete(self, capability_id: str, key: str, result: Mapping[str, object]) -> None:
        """Store the ActionResult JSON and mark the record completed (no-op if the record is gone)."""
        with self._lock:
            existing = self._records.get((capability_id, key))
            if existing is not None:  # built directly: attrs.evolve costs twice as much, on every keyed call
                self._records[(capability_id, key)] = IdempotencyRecord(
                    existing.capability_id, existing.key, existing.action_id, existing.input_hash, COMPLETED,
                    existing.created_at, existing.expires_at, dict(result), time.time())

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The live record for the key, or None."""
        record = self._records.get((capability_id, key))
        return None if record is None or record.expired() else record

    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        """The live record reserved by that action, or None."""
        slot = self._by_action.get(action_id)
        record = self._records.get(slot) if slot else None
        return record if record is not None and record.action_id == action_id and not record.expired() else None

    def forget(self, capability_id: str, key: str) -> bool:
        """Delete the record; return whether one existed."""
        with self._lock:
            record = self._records.pop((capability_id, key), None)
            if record is not None:
                self._by_action.pop(record.action_id, None)
            return record is not None

    def close(self) -> None:
        """Nothing to release; the records live as long as the store."""
        pass


class SQLiteStore:
    """A file-backed store, safe across threads and processes (WAL, one atomic INSERT to reserve).

    Args:
        path: the database file (created with mode 0600: records hold model output).
        timeout: seconds to wait for another writer's lock (within a call: the time the call has
            left, if less).

    Expired records are pruned as calls reserve keys: every :attr:`PRUNE_EVERY` reservations, at
    most :attr:`PRUNE_BATCH` of them go (bounded work per call; :meth:`purge_expired` takes all).
    """

    honours_deadline = True  # waits only for the write lock, and that wait is bounded per call
    PRUNE_EVERY = 8
    PRUNE_BATCH = 32

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self._timeout = seconds_value(timeout, "timeout")
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        private_sqlite_files(path)
        self._connections = SQLiteConnections(path, self._timeout, ("PRAGMA synchronous=NORMAL",))
        with self._connections.connection() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS hermes_idempotency ("
                " capability_id TEXT NOT NULL, key TEXT NOT NULL, action_id TEXT NOT NULL,"
                " state TEXT NOT NULL, expires_at REAL, record TEXT NOT NULL,"
                " PRIMARY KEY (capability_id, key))")
            conn.execute("CREATE INDEX IF NOT EXISTS hermes_idempotency_action ON hermes_idempotency(action_id)")
            conn.execute("CREATE INDEX IF NOT EXISTS hermes_idempotency_expires ON hermes_idempotency(expires_at)")
        private_sqlite_files(path)  # the -wal and -shm files sqlite created just now (by their paths)
        self._reserves = 0  # approximate across threads: it only paces the pruning
        #: Expired records pruned so far by reservations.
        self.pruned = 0

    @contextlib.contextmanager
    def _bounded(self) -> Iterator[sqlite3.Connection]:
        """A pooled connection, waiting for a lock no longer than the call has left."""
        deadline = store_deadline()
        wait = self._timeout if deadline is None else min(self._timeout, deadline - time.time())
        if wait <= 0:
            raise StoreTimeout("the deadline passed before the SQLite store was called")
        with self._connections.connection() as conn:
            self._connections.busy_timeout(conn, max(1, math.ceil(wait * 1000)))
            import sqlite3  # loaded already: the pool opened a connection

            try:
                yield conn
            except sqlite3.OperationalError as exc:
                if deadline is None or "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if wait < self._timeout:
                    raise StoreTimeout("another writer held the SQLite store past the call's deadline") from exc
                raise TimeoutError("another writer held the SQLite store longer than its timeout") from exc

    def _prune(self, conn: sqlite3.Connection, now: float) -> None:
        self._reserves += 1
        if self._reserves % self.PRUNE_EVERY:
            return
        cur = conn.execute("DELETE FROM hermes_idempotency WHERE rowid IN (SELECT rowid FROM hermes_idempotency"
                           " WHERE expires_at IS NOT NULL AND expires_at<=? LIMIT ?)", (now, self.PRUNE_BATCH))
        self.pruned += max(0, cur.rowcount)

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        """Insert ``record`` in one ``BEGIN IMMEDIATE`` transaction; None means this caller owns the key.

        An expired record is deleted first, so it gives its key back.
        """
        with self._bounded() as conn:
            return self._reserve(conn, record)

    def _reserve(self, conn: sqlite3.Connection, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        now = time.time()
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._prune(conn, now)
            # An expired record gives its key back.
            conn.execute("DELETE FROM hermes_idempotency WHERE capability_id=? AND key=? AND expires_at IS NOT NULL"
                         " AND expires_at<=?", (record.capability_id, record.key, now))
            cur = conn.execute(
                "INSERT OR IGNORE INTO hermes_idempotency(capability_id, key, action_id, state, expires_at, record)"
                " VALUES (?,?,?,?,?,?)",
                (record.capability_id, record.key, record.action_id, record.state, record.expires_at,
                 _rec_json(record)))
            if cur.rowcount == 1:
                conn.execute("COMMIT")
                return None
            row = conn.execute("SELECT record FROM hermes_idempotency WHERE capability_id=? AND key=?",
                               (record.capability_id, record.key)).fetchone()
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return _rec_load(row[0], record.capability_id, record.key) if row else None

    def complete(self, capability_id: str, key: str, result: Mapping[str, object]) -> None:
        """Store the ActionResult JSON and mark the record completed, atomically (no-op if the record is gone)."""
        with self._bounded() as conn:
            self._complete(conn, capability_id, key, result)

    def _complete(self, conn: sqlite3.Connection, capability_id: str, key: str, result: Mapping[str, object]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute("SELECT record FROM hermes_idempotency WHERE capability_id=? AND key=?",
                               (capability_id, key)).fetchone()
            if row is not None:
                record = attrs.evolve(_rec_load(row[0], capability_id, key), state=COMPLETED, result=dict(result),
                                      completed_at=time.time())
                conn.execute("UPDATE hermes_idempotency SET state=?, record=? WHERE capability_id=? AND key=?",
                             (COMPLETED, _rec_json(record), capability_id, key))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def _one(self, sql: str, args: tuple[object, ...]) -> Optional[IdempotencyRecord]:
        with self._bounded() as conn:
            row = conn.execute(sql, args).fetchone()
        if row is None:
            return None
        record = _rec_load(row[0], row[1], row[2])
        return None if record.expired() else record

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        """The live record for the key, or None."""
        return self._one("SELECT record, capability_id, key FROM hermes_idempotency WHERE capability_id=? AND key=?",
                         (capability_id, key))

    def get_by_action(self, action_id: str) -> Optional[IdempotencyRecord]:
        """The live record reserved by that action, or None."""
        return self._one("SELECT record, capability_id, key FROM hermes_idempotency WHERE action_id=?", (action_id,))

    def forget(self, capability_id: str, key: str) -> bool:
        """Delete the record; return whether one existed."""
        with self._bounded() as conn:
            cur = conn.execute("DELETE FROM hermes_idempotency WHERE capability_id=? AND key=?", (capability_id, key))
        return cur.rowcount > 0

    def purge_expired(self) -> int:
        """Delete every expired record (they are already treated as absent); return how many."""
        with self._connections.connection() as conn:
            cur = conn.execute("DELETE FROM hermes_idempotency WHERE expires_at IS NOT NULL AND expires_at<=?",
                               (time.time(),))
        return int(cur.rowcount)

    def close(self) -> None:
        """Close every connection (one in use when its call ends); a later call opens one for itself."""
        self._connections.close()


def store_from_url(url: str) -> Optional[IdempotencyStore]:
    """The built-in schemes: ``memory:`` and ``sqlite:///path`` (``sqlite:////abs/path``)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "memory":
        return MemoryStore()
    if scheme == "sqlite":
        path = unquote((parts.netloc or "") + parts.path)
        if path.startswith("/") and not parts.netloc:
            path = path[1:]  # sqlite:///rel.db is relative, sqlite:////abs.db absolute (SQLAlchemy's rule)
        if not path:
            return None
        return SQLiteStore(path)
    return None
