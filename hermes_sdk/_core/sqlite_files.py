"""SQLite files the project makes (stores, queues): private (0600 with their side files), and a
bounded pool of connections that no forked child inherits.

One rule keeps SQLite's locks: never open or close a second descriptor of a live SQLite file.
SQLite's locks are POSIX (``fcntl``) locks, held per process and file: closing *any* descriptor of
the file in this process drops every lock this process holds on it, and another process's last
connection then checkpoints and deletes the ``-wal``/``-shm`` this process still writes to. So the
mode checks here go through the path (``os.stat``/``os.chmod``), and a new file is made as a private
temporary file in the same directory, then linked into place.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
import weakref
from typing import TYPE_CHECKING, Iterator, Optional

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
    A database or side file an older version left readable is narrowed to 0600 too. Safe to call
    while connections to the file are open (it never opens the file itself: see the module's rule).
    ``:memory:``, ``""`` and ``file:`` URIs are left to sqlite.
    """
    if not path or path == ":memory:" or path.startswith("file:"):
        return
    if not os.path.lexists(path):
        _create_private(path)
    for name in (path,) + tuple(path + suffix for suffix in SQLITE_SIDE_FILES):
        try:
            if stat.S_IMODE(os.stat(name).st_mode) != 0o600:
                os.chmod(name, 0o600)
        except OSError:  # absent (or not ours): sqlite reports the real problem when it opens the file
            pass


def _create_private(path: str) -> None:
    """Create ``path`` empty and 0600 without opening it: a private temporary file beside it, linked
    into place (a file another process created first is left as it is)."""
    temporary = f"{path}.{os.urandom(8).hex()}.tmp"
    try:
        fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return  # sqlite reports the real problem (no directory, not writable) when it opens the file
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # the umask may have narrowed it further (0400 would be unwritable)
    except OSError:
        pass
    finally:
        os.close(fd)  # a file nobody else has open yet: no lock of anyone's is on it
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links: create it directly, as new and private
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _reusable(conn: sqlite3.Connection) -> bool:
    """Whether ``conn`` is open and outside a transaction (one left open is never lent again)."""
    import sqlite3

    try:
        return not conn.in_transaction
    except sqlite3.Error:  # closed
        return False


class _Held:
    """A connection lent to one thread by :meth:`SQLiteConnections.get`; when the thread ends its
    thread-local data is dropped and this gives the connection back to the pool."""

    __slots__ = ("pool", "conn", "pid")

    def __init__(self, pool: SQLiteConnections, conn: sqlite3.Connection) -> None:
        # A weak reference: the pool's thread-local data holds this, and the pool must not be kept
        # alive by a thread that never ends.
        self.pool, self.conn, self.pid = weakref.ref(pool), conn, os.getpid()

    def __del__(self) -> None:
        if os.getpid() != self.pid:  # a forked child dropping its parent's threads: never close the parent's
            _fork.keep(self.conn)
            return
        try:
            pool = self.pool()
            if pool is not None:
                pool._give_back(self.conn, self.pid)
            else:
                self.conn.close()
        except Exception:  # at interpreter exit: the process's end closes it
            pass


class SQLiteConnections:
    """A bounded pool of connections to one SQLite file, in autocommit (callers write ``BEGIN IMMEDIATE``).

    :meth:`connection` lends one for a block (``with connections.connection() as conn:``), to one
    thread at a time; between uses at most ``max_idle`` stay open, however many threads ever used the
    pool, so a process's descriptors follow how many threads use it *at once*. :meth:`get` lends one
    to the calling thread until the thread ends (then it goes back to the pool).

    A forked child opens its own: a SQLite connection must never be used across a fork, and the
    parent's are kept referenced, never closed by the child (closing them could undo the parent's
    locks). :meth:`close` closes every connection not in use and each one in use when it comes back;
    after it, :meth:`connection` opens one for each use and closes it after (none stays open).

    Args:
        path: the database file (make it with :func:`private_sqlite_files` first).
        timeout: seconds to wait for another writer's lock (also the ``busy_timeout``).
        pragmas: statements each new connection runs first (``PRAGMA synchronous=NORMAL``).
        max_idle: connections kept open between uses.
    """

    MAX_IDLE = 4

    def __init__(self, path: str, timeout: float, pragmas: tuple[str, ...] = (), max_idle: int = MAX_IDLE) -> None:
        self.path = path
        self._timeout = timeout
        self._pragmas = ("PRAGMA busy_timeout=%d" % int(timeout * 1000),) + pragmas
        self._max_idle = max(0, max_idle)
        self._init_state()
        _fork.register(self)

    def _init_state(self) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self._held: list[sqlite3.Connection] = []  # lent by get() to a live thread
        self._busy_ms: dict[int, int] = {}  # id(connection) -> the busy_timeout it has now
        self._closed = False

    def _open(self) -> sqlite3.Connection:
        import sqlite3

        conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
        for statement in self._pragmas:
            conn.execute(statement)
        self._busy_ms[id(conn)] = int(self._timeout * 1000)
        return conn

    def _take(self) -> sqlite3.Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
        return self._open()

    def _give_back(self, conn: sqlite3.Connection, pid: int) -> None:
        """Keep ``conn`` for the next use, or close it (the pool is full or closed, or a transaction
        was left open). ``pid``: the process that took it (a forked child never keeps nor closes it)."""
        if pid != os.getpid():
            _fork.keep(conn)
            return
        with self._lock:
            if conn in self._held:
                self._held.remove(conn)
            if not self._closed and len(self._idle) < self._max_idle and _reusable(conn):
                self._idle.append(conn)
                return
        self._close_one(conn)

    def _close_one(self, conn: sqlite3.Connection) -> None:
        import sqlite3

        self._busy_ms.pop(id(conn), None)
        try:
            conn.close()
        except sqlite3.Error:
            pass

    @contextlib.contextmanager
    def connection(self) -> Iterator[sqlite3.Connection]:
        """A connection for the block, this thread's alone until the block ends."""
        conn, pid = self._take(), os.getpid()
        try:
            yield conn
        finally:
            self._give_back(conn, pid)

    def busy_timeout(self, conn: sqlite3.Connection, ms: int) -> None:
        """Set ``conn``'s ``busy_timeout`` to ``ms`` milliseconds (a statement only when it changes)."""
        if self._busy_ms.get(id(conn)) != ms:
            conn.execute("PRAGMA busy_timeout=%d" % ms)
            self._busy_ms[id(conn)] = ms

    def get(self) -> sqlite3.Connection:
        """A connection this thread keeps until it ends (then it goes back to the pool) or :meth:`close`."""
        held: Optional[_Held] = getattr(self._local, "held", None)
        if held is None or held.conn not in self._held:  # none yet, or close() took it
            conn = self._take()
            with self._lock:
                self._held.append(conn)
            held = self._local.held = _Held(self, conn)
        return held.conn

    def close(self) -> None:
        """Close every connection now, and each one in use when its block ends (idempotent)."""
        with self._lock:
            self._closed = True
            closing = self._idle + self._held
            self._idle, self._held = [], []
            old_local, self._local = self._local, threading.local()
        for conn in closing:
            self._close_one(conn)
        del old_local  # outside the lock: the threads' _Held objects give back closed connections

    def _after_fork(self) -> None:
        _fork.keep((self._local, self._idle, self._held))
        closed = self._closed
        self._init_state()
        self._closed = closed


__all__ = ["SQLITE_SIDE_FILES", "SQLiteConnections", "private_sqlite_files"]
