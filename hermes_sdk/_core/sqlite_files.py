"""Private SQLite files: every SQLite database the project makes (stores, queues) is 0600 with its side files."""

from __future__ import annotations

import os

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


__all__ = ["SQLITE_SIDE_FILES", "private_sqlite_files"]
