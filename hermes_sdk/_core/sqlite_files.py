"""SQLite files the project makes (stores, queues): private (0600 with their side files), and one
connection per thread that no forked child inherits."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # imported by the first SQLite connection: a client on another store never loads it
    import sqlite3

from . import _fork

#: The files sqlite keeps beside the database (each can hold row contents: the -wal holds whole records).
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def private_sqlite_files(path: str) -> None:
    """Make the database file exist with mode 0600 before sqlite opens it, and keep its side files 0600.

    sqlite creates the ``-wal``, ``-shm`` and ``-journal`` files with the database file's own
    mode, so a database created 0600 before sqlite first opens it gives them 0600 from their first
    byte (a chmod after the fact would leave a window, and a process umask is not thread-safe).
    A database or side file an older version left readable is narrowed to 0600 too. Call it before
    the first connection and again once the journal mode is set. ``:memory:``, ``""`` and
    ``file:`` URIs are left to sqlite.
    """
    if not path or path == ":memory:" or path.startswith("file:"):
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return  # sqlite reports the real problem when it opens the file
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)
    except OSError:
        pass
    finally:
        os.close(fd)
    for suffix in SQLITE_SIDE_FILES:
        try:
            os.chmod(path + suffix, 0o600)
        except OSError:  # absent (or not ours)
            pass


class SQLiteConnections:
    """One connection per thread to one SQLite file, in autocommit (callers write ``BEGIN IMMEDIATE``).

    A forked child opens its own: a SQLite connection must never be used across a fork, and the
    parent's are kept referenced, never closed by the child (closing them could undo the parent's
    locks). :meth:`close` closes every thread's connection; the next :meth:`get` opens a new one.

    Args:
        path: the database file (make it with :func:`private_sqlite_files` first).
        timeout: seconds to wait for another writer's lock (also the ``busy_timeout``).
        pragmas: statements each new connection runs first (``PRAGMA synchronous=NORMAL``).
    """

    def __init__(self, path: str, timeout: float, pragmas: tuple[str, ...] = ()) -> None:
        self.path = path
        self._timeout = timeout
        self._pragmas = ("PRAGMA busy_timeout=%d" % int(timeout * 1000),) + pragmas
        self._local = threading.local()
        self._open: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        _fork.register(self)

    def get(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        conn: Optional[sqlite3.Connection] = getattr(self._local, "conn", None)
        if conn is None:
            import sqlite3

            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
            for statement in self._pragmas:
                conn.execute(statement)
            self._local.conn = conn
            with self._lock:
                self._open.append(conn)
        return conn

    def close(self) -> None:
        """Close every thread's connection (idempotent)."""
        import sqlite3

        with self._lock:
            for conn in self._open:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            self._open.clear()
        self._local = threading.local()

    def _after_fork(self) -> None:
        _fork.keep((self._local, self._open))
        self._local = threading.local()
        self._open = []
        self._lock = threading.Lock()


__all__ = ["SQLITE_SIDE_FILES", "SQLiteConnections", "private_sqlite_files"]
