"""The durable approval queue: a small protocol, and its SQLite, memory and URL-selected backends.

An entry is a JSON-able dict (see :mod:`hermes_sdk_inbox.inbox` for its fields). A backend only
stores entries; the rules live in :class:`~hermes_sdk_inbox.Inbox`. Two promises make it safe with
many processes and hosts:

* ``add`` is atomic on ``entry["open_key"]``: at most one entry holds an open key (one open entry
  per capability and input hash); adding another returns the holder instead.
* ``update`` is a compare-and-set on ``entry["version"]``: a change made from a stale copy fails.

``list(identifier=...)`` filters in the backend's query over every stored entry (the SQL backends
narrow with ``LIKE`` on the JSON document, then keep exact matches only).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sqlite3
import threading
from typing import Any, Callable, Optional, Protocol, runtime_checkable
from urllib.parse import unquote, urlsplit

from hermes_sdk.plugin import (
    SQLiteConnections,
    entry_identifiers,
    exact_pages,
    holds_identifier,
    like_identifier,
    private_sqlite_files,
)


@runtime_checkable
class ApprovalQueue(Protocol):
    """What a queue backend must do (SQLite here, SQL in hermes-sdk-sql, Redis in :mod:`.redis_queue`)."""

    def add(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Insert ``entry`` unless another entry holds its ``open_key``; return the stored entry
        (``entry`` itself, or the holder). An entry whose ``open_key`` is None never conflicts."""

    def get(self, entry_id: str) -> Optional[dict[str, Any]]:
        """The entry, or None."""

    def update(self, entry: dict[str, Any], version: int) -> bool:
        """Replace the stored entry with ``entry`` if its stored ``version`` is still ``version``
        (and ``entry["open_key"]``, if set, is not held by another entry); return whether it did."""

    def list(self, *, state: Optional[str] = None, limit: int = 100, offset: int = 0,
             identifier: Optional[str] = None) -> list[dict[str, Any]]:
        """Entries, newest request first; ``state`` filters on the stored state, ``identifier`` keeps
        the entries whose id is it or whose ``identifiers`` hold it (see :func:`holds_identifier`).
        A backend without ``identifier`` still works: the inbox then filters page by page."""

    def close(self) -> None:
        """Release resources."""


class CorruptEntryError(ValueError):
    """A stored entry could not be decoded (never guessed at)."""


def _load(raw: Any, entry_id: str) -> dict[str, Any]:
    try:
        doc = json.loads(raw)
    except (TypeError, ValueError):
        raise CorruptEntryError(f"approval queue entry {entry_id} is corrupt") from None
    if not isinstance(doc, dict) or doc.get("id") != entry_id:
        raise CorruptEntryError(f"approval queue entry {entry_id} is corrupt")
    return doc


def _dump(entry: dict[str, Any]) -> str:
    return json.dumps(entry, separators=(",", ":"), sort_keys=True)


#: The inbox's name for :func:`hermes_sdk.plugin.entry_identifiers` (the rule every queue backend shares).
identifiers_of = entry_identifiers


class MemoryQueue:
    """A queue in this process's memory (tests, demos): not durable."""

    def __init__(self) -> None:
        self._entries: dict[str, str] = {}
        self._open: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, entry: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            key = entry.get("open_key")
            if key is not None and key in self._open:
                return _load(self._entries[self._open[key]], self._open[key])
            self._entries[entry["id"]] = _dump(entry)
            if key is not None:
                self._open[key] = entry["id"]
            return dict(entry)

    def get(self, entry_id: str) -> Optional[dict[str, Any]]:
        raw = self._entries.get(entry_id)
        return None if raw is None else _load(raw, entry_id)

    def update(self, entry: dict[str, Any], version: int) -> bool:
        with self._lock:
            raw = self._entries.get(entry["id"])
            if raw is None:
                return False
            old = _load(raw, entry["id"])
            if old.get("version") != version:
                return False
            key = entry.get("open_key")
            if key is not None and self._open.get(key, entry["id"]) != entry["id"]:
                return False
            if old.get("open_key") is not None:
                self._open.pop(old["open_key"], None)
            if key is not None:
                self._open[key] = entry["id"]
            self._entries[entry["id"]] = _dump(entry)
            return True

    def list(self, *, state: Optional[str] = None, limit: int = 100, offset: int = 0,
             identifier: Optional[str] = None) -> list[dict[str, Any]]:
        docs = [_load(raw, eid) for eid, raw in list(self._entries.items())]
        docs = [d for d in docs if (state is None or d.get("state") == state)
                and (identifier is None or holds_identifier(d, identifier))]
        docs.sort(key=lambda d: (-float(d["requested_at"]), d["id"]))
        return docs[offset:offset + limit]

    def close(self) -> None:
        pass


class SQLiteQueue:
    """A file-backed queue (the default), safe across threads and processes (WAL, unique open_key).

    Args:
        path: the database file (created with mode 0600).
        timeout: seconds to wait for another writer's lock.
    """

    def __init__(self, path: str, timeout: float = 30.0) -> None:
        self.path = path
        self._timeout = timeout
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        private_sqlite_files(path)  # entries hold ids and reasons: 0600, with their -wal and -shm
        self._connections = SQLiteConnections(path, timeout)
        with self._connections.connection() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            private_sqlite_files(path)  # by their paths: no second descriptor of the live file
            self._create(conn)

    def _create(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS hermes_sdk_schema (component TEXT PRIMARY KEY,"
                         " version INTEGER NOT NULL, updated_at REAL NOT NULL)")
            conn.execute("CREATE TABLE IF NOT EXISTS hermes_approval_queue (id TEXT PRIMARY KEY,"
                         " version INTEGER NOT NULL, state TEXT NOT NULL, capability_id TEXT NOT NULL,"
                         " open_key TEXT UNIQUE, requested_at REAL NOT NULL, expires_at REAL NOT NULL,"
                         " doc TEXT NOT NULL)")
            conn.execute("CREATE INDEX IF NOT EXISTS hermes_approval_queue_requested"
                         " ON hermes_approval_queue(requested_at)")
            row = conn.execute("SELECT version FROM hermes_sdk_schema WHERE component='approval_queue'").fetchone()
            if row is None:
                conn.execute("INSERT INTO hermes_sdk_schema VALUES ('approval_queue', 1, strftime('%s','now'))")
            elif row[0] != 1:
                raise RuntimeError(f"the approval queue in {self.path} is at schema version {row[0]}; this release "
                                   "knows version 1")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _row(entry: dict[str, Any]) -> tuple[Any, ...]:
        return (int(entry["version"]), entry["state"], entry["capability_id"], entry.get("open_key"),
                float(entry["requested_at"]), float(entry["expires_at"]), _dump(entry), entry["id"])

    def add(self, entry: dict[str, Any]) -> dict[str, Any]:
        with self._connections.connection() as conn:
            return self._add(conn, entry)

    def _add(self, conn: sqlite3.Connection, entry: dict[str, Any]) -> dict[str, Any]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            key = entry.get("open_key")
            row = None if key is None else conn.execute(
                "SELECT id, doc FROM hermes_approval_queue WHERE open_key=?", (key,)).fetchone()
            if row is None:
                conn.execute("INSERT INTO hermes_approval_queue (version, state, capability_id, open_key,"
                             " requested_at, expires_at, doc, id) VALUES (?,?,?,?,?,?,?,?)", self._row(entry))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return dict(entry) if row is None else _load(row[1], row[0])

    def get(self, entry_id: str) -> Optional[dict[str, Any]]:
        with self._connections.connection() as conn:
            row = conn.execute("SELECT doc FROM hermes_approval_queue WHERE id=?", (entry_id,)).fetchone()
        return None if row is None else _load(row[0], entry_id)

    def update(self, entry: dict[str, Any], version: int) -> bool:
        try:
            with self._connections.connection() as conn:
                cur = conn.execute(
                    "UPDATE hermes_approval_queue SET version=?, state=?, capability_id=?, open_key=?,"
                    " requested_at=?, expires_at=?, doc=? WHERE id=? AND version=?", self._row(entry) + (version,))
        except sqlite3.IntegrityError:
            return False
        return cur.rowcount == 1

    def list(self, *, state: Optional[str] = None, limit: int = 100, offset: int = 0,
             identifier: Optional[str] = None) -> list[dict[str, Any]]:
        where: list[str] = []
        args: tuple[Any, ...] = ()
        if state is not None:
            where.append("state=?")
            args += (state,)
        if identifier is not None:
            where.append("(id=? OR doc LIKE ? ESCAPE '\\')")
            args += (identifier, like_identifier(identifier))
        sql = "SELECT id, doc FROM hermes_approval_queue" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY requested_at DESC, id LIMIT ? OFFSET ?"

        def fetch(start: int, size: int) -> list[dict[str, Any]]:
            with self._connections.connection() as conn:
                rows = conn.execute(sql, args + (size, start)).fetchall()
            return [_load(doc, eid) for eid, doc in rows]

        return fetch(offset, limit) if identifier is None else exact_pages(fetch, identifier, limit, offset)

    def close(self) -> None:
        self._connections.close()


def queue_from_url(url: str) -> ApprovalQueue:
    """The queue for a store URL.

    ``sqlite:///rel.db`` / ``sqlite:////abs.db`` (built in), ``memory:`` (not durable),
    ``redis://`` / ``rediss://`` (needs ``redis``: extra ``[redis]``), and every URL an installed
    backend of :data:`BACKENDS_GROUP` claims: hermes-sdk-sql's ``postgresql://``, ``mysql://``,
    ``sql+<SQLAlchemy URL>`` (extra ``[sql]``).

    Raises:
        ValueError: no backend claims the URL (or the package that would is not installed).
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "memory":
        return MemoryQueue()
    if scheme == "sqlite":
        path = unquote((parts.netloc or "") + parts.path)
        if path.startswith("/") and not parts.netloc:
            path = path[1:]
        if not path:
            raise ValueError("sqlite:/// needs a file path")
        return SQLiteQueue(path)
    if scheme in ("redis", "rediss"):
        from .redis_queue import RedisQueue

        return RedisQueue.from_url(url)
    for backend in _backends():
        queue = backend(url)
        if queue is not None:
            return queue
    raise ValueError(f"no approval queue backend for {scheme}:// URLs (install hermes-sdk-sql, "
                     '`pip install "hermes-sdk-inbox[sql]"`, for postgresql://, mysql:// and sql+... URLs)')


#: The entry-point group where another package offers a queue backend: ``factory(url)`` returns a
#: queue for the URLs it claims, else None. hermes-sdk-sql registers its ``queue_from_url`` there, so
#: neither package imports the other.
BACKENDS_GROUP = "hermes_sdk_inbox.queues"


def _backends() -> list[Callable[[str], Optional[ApprovalQueue]]]:
    found = importlib.metadata.entry_points()
    points = found.select(group=BACKENDS_GROUP) if hasattr(found, "select") else found.get(BACKENDS_GROUP, [])
    return [point.load() for point in sorted(points, key=lambda point: point.name)]
