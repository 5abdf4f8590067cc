"""A throwaway PostgreSQL server on loopback, for tests (this package's and yours).

``postgres_server()`` runs ``initdb`` in a fresh temporary directory and starts ``postgres`` on a
free 127.0.0.1 port; on exit it stops that one process by its PID (fast shutdown) and removes the
directory. PostgreSQL refuses to run as root: as root, the cluster belongs to the ``postgres``
system user (Debian's ``postgresql`` package creates it) and the server runs as that user.

Set ``HERMES_SDK_TEST_POSTGRES_URL`` to use an existing server instead (nothing is started), and
``HERMES_SDK_TEST_POSTGRES_BIN`` to the directory of ``initdb`` and ``postgres`` if they are not
under ``/usr/lib/postgresql/<version>/bin`` or on PATH.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any, Optional

URL_ENV = "HERMES_SDK_TEST_POSTGRES_URL"
BIN_ENV = "HERMES_SDK_TEST_POSTGRES_BIN"


def postgres_bindir() -> Optional[str]:
    """The directory holding ``initdb`` and ``postgres``, or None when PostgreSQL is not installed."""
    given = os.environ.get(BIN_ENV)
    candidates = [given] if given else []
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2])
                         if p.split("/")[-2].isdigit() else 0, reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.append(os.path.dirname(on_path))
    for directory in candidates:
        if os.path.exists(os.path.join(directory, "initdb")) and os.path.exists(os.path.join(directory, "postgres")):
            return directory
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ready(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def postgres_server(timeout: float = 60.0) -> Iterator[str]:
    """Yield the URL (``postgresql://postgres@127.0.0.1:PORT/postgres``) of a private server."""
    existing = os.environ.get(URL_ENV)
    if existing:
        yield existing
        return
    bindir = postgres_bindir()
    if bindir is None:
        raise FileNotFoundError("PostgreSQL is not installed (apt-get install postgresql)")
    as_root = os.geteuid() == 0
    user: Any = None
    if as_root:
        entry = pwd.getpwnam("postgres")  # KeyError: create a 'postgres' user, or run as non-root
        user = entry.pw_uid, entry.pw_gid
    workdir = tempfile.mkdtemp(prefix="hermes-sdk-pg-")
    data, sockets = os.path.join(workdir, "data"), os.path.join(workdir, "sock")
    os.mkdir(sockets)
    kwargs: dict[str, Any] = {}
    if user is not None:
        for path in (workdir, sockets):
            os.chown(path, *user)
        kwargs = {"user": user[0], "group": user[1], "extra_groups": []}
    proc: Optional[subprocess.Popen[bytes]] = None
    try:
        subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
                        "-E", "UTF8", "--no-sync", "--no-instructions"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=workdir, **kwargs)
        port = _free_port()
        log = open(os.path.join(workdir, "server.log"), "wb")
        proc = subprocess.Popen(
            [os.path.join(bindir, "postgres"), "-D", data, "-p", str(port), "-k", sockets,
             "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200"],
            stdout=log, stderr=subprocess.STDOUT, cwd=workdir, **kwargs)
        log.close()
        deadline = time.monotonic() + timeout
        while not _ready(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                with open(os.path.join(workdir, "server.log"), "rb") as f:
                    raise RuntimeError("postgres did not start: " + f.read().decode(errors="replace")[-2000:])
            time.sleep(0.05)
        url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        _wait_accepting(url, deadline)
        yield url
    finally:
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGINT)  # fast shutdown of the one server started here
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_accepting(url: str, deadline: float) -> None:
    """Wait until a connection succeeds (the port opens before recovery ends)."""
    import sqlalchemy as sa

    from .schema import make_engine

    engine, _ = make_engine(url, pool_pre_ping=False)
    try:
        while True:
            try:
                with engine.connect() as conn:
                    conn.execute(sa.text("SELECT 1"))
                return
            except sa.exc.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        engine.dispose()
