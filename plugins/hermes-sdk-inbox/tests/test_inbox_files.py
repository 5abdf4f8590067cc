"""Every SQLite file the project makes for a store or a queue is private (0600), side files included."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from hermes_sdk_inbox import Inbox

from hermes_sdk import ApprovalRequest
from hermes_sdk._core.sqlite_files import private_sqlite_files


def _modes(directory: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(os.stat(p).st_mode) for p in directory.iterdir() if p.is_file()}


def _request(n: int) -> ApprovalRequest:
    now = time.time()
    return ApprovalRequest(id=f"aprq_{n}", action_id=f"act_{n}", capability_id="cap:hermes_agent:default:job_pause",
                           input_snapshot={"job_id": "[REDACTED]"}, input_hash=f"{n:064x}",
                           reason="a reason with an id job_secret", requested_at=now, expires_at=now + 600,
                           operation="job_pause", identifiers={"job_id": f"job_{n}"})


def _inbox_queue(url: str) -> Callable[[], Any]:
    def use() -> Any:
        inbox = Inbox(url)
        inbox.submit(_request(1))
        other = threading.Thread(target=lambda: inbox.submit(_request(2)))  # a second connection
        other.start()
        other.join()
        return inbox
    return use


def _sql_store(url: str) -> Callable[[], Any]:
    def use() -> Any:
        from hermes_sdk_sql import SQLStore

        from hermes_sdk._core.idempotency import IdempotencyRecord

        store = SQLStore(url)
        now = time.time()
        store.reserve(IdempotencyRecord(capability_id="cap:x:default:chat", key="k", action_id="act_1",
                                        input_hash="h", state="pending", created_at=now, expires_at=now + 60))
        return store
    return use


def _backends(directory: Path) -> dict[str, tuple[str, Callable[[], Any]]]:
    return {"inbox sqlite:///": ("q.db", _inbox_queue(f"sqlite:///{directory / 'q.db'}")),
            "hermes-sdk-sql queue sql+sqlite:///": ("sa.db", _inbox_queue(f"sql+sqlite:///{directory / 'sa.db'}")),
            "hermes-sdk-sql store sql+sqlite:///": ("st.db", _sql_store(f"sql+sqlite:///{directory / 'st.db'}"))}


@pytest.mark.parametrize("backend", ["inbox sqlite:///", "hermes-sdk-sql queue sql+sqlite:///",
                                     "hermes-sdk-sql store sql+sqlite:///"])
def test_every_sqlite_file_of_a_queue_or_store_is_0600(tmp_path: Path, backend: str) -> None:
    # The inbox's -wal holds entry ids and reasons: it, the -shm and the database are 0600 from
    # their first byte under a umask that lets everything else be world-readable.
    if "sql" in backend.split()[0]:
        pytest.importorskip("hermes_sdk_sql")
    old = os.umask(0o022)
    try:
        directory = tmp_path / "fresh"
        directory.mkdir()
        name, use = _backends(directory)[backend]
        made = use()
        modes = _modes(directory)
        assert {name, name + "-wal", name + "-shm"} <= set(modes), modes
        assert set(modes.values()) == {0o600}, modes
        made.close()
        # A file an older version left 0644, its WAL open in another process, is narrowed on open.
        legacy = tmp_path / "legacy"
        legacy.mkdir()
        name, use = _backends(legacy)[backend]
        other = sqlite3.connect(str(legacy / name))
        other.execute("PRAGMA journal_mode=WAL")
        other.execute("CREATE TABLE t (x)")
        other.execute("INSERT INTO t VALUES (1)")
        other.commit()
        assert set(_modes(legacy).values()) == {0o644}, _modes(legacy)
        made = use()
        assert len(_modes(legacy)) == 3 and set(_modes(legacy).values()) == {0o600}, _modes(legacy)
        made.close()
        other.close()
    finally:
        os.umask(old)


def test_the_helper_leaves_memory_and_uri_databases_to_sqlite(tmp_path: Path) -> None:
    before = set(os.listdir(tmp_path))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for path in (":memory:", "", "file:x.db?mode=memory"):
            private_sqlite_files(path)
    finally:
        os.chdir(cwd)
    assert set(os.listdir(tmp_path)) == before
    private_sqlite_files(str(tmp_path / "no-such-dir" / "x.db"))  # sqlite reports that one itself
    assert not (tmp_path / "no-such-dir").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_a_queue_opened_before_a_fork_works_in_the_child_and_the_parent(tmp_path: Path) -> None:
    from hermes_sdk_inbox.queue import SQLiteQueue

    queue = SQLiteQueue(str(tmp_path / "q.db"))
    assert queue.list() == []  # the parent has its connection open at the fork
    parent_conn = queue._connections.get()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            assert queue._connections.get() is not parent_conn  # a SQLite connection never crosses a fork
            queue.add({"id": "from-child", "version": 1, "state": "pending", "capability_id": "cap",
                       "requested_at": time.time(), "expires_at": time.time() + 60})
            code = 0
        finally:
            os._exit(code)
    until = time.monotonic() + 10
    while time.monotonic() < until:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.01)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the child did not finish in 10 s")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    entry = queue.get("from-child")
    assert entry is not None and entry["state"] == "pending"
    queue.close()
