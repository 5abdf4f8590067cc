"""Round 6 (issue 38, items 1-3): the SQLite store keeps its locks, holds a bounded number of
connections, and ``client.close()`` closes the store it built.

SQLite's locks are POSIX locks: closing *any* descriptor of the file drops this process's locks on
it, and another process's last connection then deletes the ``-wal``/``-shm`` this process still
writes to. Real processes, a real file, the emulator counting what reached the server, and the
process's own descriptors (``/proc/self/fd``) and locks (``/proc/locks``) as the measure.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from core_support import approve_all

from hermes_sdk import HermesClient, MemoryStore, PluginError, SQLiteStore
from hermes_sdk.plugin import PENDING, IdempotencyRecord, SQLiteConnections, hookimpl, private_sqlite_files
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")

CHAT = "cap:hermes_agent:default:chat"

# Another worker on the same host: keyed chats on the shared file, then its store closed, then exit.
WORKER = textwrap.dedent("""
    import json, sys
    from hermes_sdk import HermesClient
    base_url, api_key, db = sys.argv[1:4]
    client = HermesClient(base_url, api_key, idempotency_store="sqlite:///" + db, load_entrypoints=False)
    store = client.idempotency_store
    seen = []
    for key in sys.argv[4:]:
        result = client.invoke("cap:hermes_agent:default:chat", {"prompt": "r6 " + key}, idempotency_key=key)
        seen.append([key, result.status, result.replayed])
    client.close()
    store.close()
    print(json.dumps(seen))
""")


def worker(emu: HermesEmulator, db: str, *keys: str) -> dict[str, tuple[str, bool]]:
    """Run :data:`WORKER` to its exit; each key's (status, replayed)."""
    done = subprocess.run([sys.executable, "-c", WORKER, emu.base_url, emu.api_key, db, *keys],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return {key: (status, replayed) for key, status, replayed in json.loads(done.stdout)}


def sent(emu: HermesEmulator, key: str) -> int:
    """How many chat requests with ``key``'s prompt reached the server."""
    return sum(1 for r in emu.requests_seen
               if r.path == "/v1/chat/completions" and f'"r6 {key}"' in r.raw_body.decode("utf-8", "replace"))


def db_descriptors(db: str) -> list[str]:
    """This process's open descriptors of the database and its side files."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, gone already
            continue
        if target == db or target.startswith(db + "-"):
            found.append(target)
    return found


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def my_locks(path: str) -> list[str]:
    """The POSIX locks this process holds on ``path`` (``/proc/locks``, matched by inode)."""
    inode = os.stat(path).st_ino
    with open("/proc/locks") as f:
        lines = f.read().splitlines()
    mine = []
    for line in lines:
        fields = line.split()
        if "->" in fields:  # a waiter's line, not a held lock
            continue
        if len(fields) >= 6 and fields[4] == str(os.getpid()) and fields[5].rsplit(":", 1)[-1] == str(inode):
            mine.append(line)
    return mine


def record(key: str) -> IdempotencyRecord:
    return IdempotencyRecord(capability_id=CHAT, key=key, action_id="act-" + key, input_hash="h", state=PENDING,
                             created_at=time.time(), expires_at=None)


def stored_keys(db: str) -> set[str]:
    """The keys a fresh process reads from the file (what every other worker sees)."""
    code = ("import json, sqlite3, sys; c = sqlite3.connect(sys.argv[1]);"
            "print(json.dumps([c.execute('PRAGMA integrity_check').fetchone()[0],"
            " [k for (k,) in c.execute('SELECT key FROM hermes_idempotency')]]))")
    done = subprocess.run([sys.executable, "-c", code, db], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    integrity, keys = json.loads(done.stdout)
    assert integrity == "ok"
    return set(keys)


# --------------------------------------------------------------------------- 1: the locks stay


def test_a_worker_that_exits_leaves_every_record_and_each_key_runs_once(emu: HermesEmulator, tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    with emu.client(load_entrypoints=False, idempotency_store="sqlite:///" + db) as mine:
        for key in ("a1", "a2"):
            assert not mine.invoke(CHAT, {"prompt": "r6 " + key}, idempotency_key=key).replayed
        assert worker(emu, db, "b1", "b2") == {"b1": ("completed", False), "b2": ("completed", False)}
        # The other worker has closed its connections and exited: this process keeps writing.
        for key in ("a3", "a4"):
            assert not mine.invoke(CHAT, {"prompt": "r6 " + key}, idempotency_key=key).replayed
        # A third worker sees every key, this process's later ones included, and replays them.
        assert worker(emu, db, "a1", "a3", "a4", "b1") == {k: ("completed", True) for k in ("a1", "a3", "a4", "b1")}
        assert mine.invoke(CHAT, {"prompt": "r6 b2"}, idempotency_key="b2").replayed
        assert not mine.invoke(CHAT, {"prompt": "r6 a5"}, idempotency_key="a5").replayed
        assert stored_keys(db) == {"a1", "a2", "a3", "a4", "a5", "b1", "b2"}  # while this process is still open
    assert stored_keys(db) == {"a1", "a2", "a3", "a4", "a5", "b1", "b2"}
    assert {key: sent(emu, key) for key in ("a1", "a2", "a3", "a4", "a5", "b1", "b2")} == dict.fromkeys(
        ("a1", "a2", "a3", "a4", "a5", "b1", "b2"), 1)


def test_a_second_store_on_the_file_keeps_the_first_ones_locks(emu: HermesEmulator, tmp_path: Path) -> None:
    """Two clients on one URL in one process (or a page opening the file again): the second one's
    checks of the file must not drop the locks the first one's connections rely on."""
    db = str(tmp_path / "keys.db")
    first = SQLiteStore(db)
    assert first.reserve(record("first")) is None
    second = SQLiteStore(db)
    assert second.get(CHAT, "first") is not None
    assert worker(emu, db, "w1") == {"w1": ("completed", False)}
    assert first.reserve(record("after")) is None
    assert second.reserve(record("after2")) is None
    assert stored_keys(db) == {"first", "w1", "after", "after2"}
    first.close()
    second.close()


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="reads /proc/locks")
def test_checking_the_files_modes_keeps_this_process_locks(tmp_path: Path) -> None:
    from hermes_sdk._app._cli_logs import _private_file

    db = str(tmp_path / "live.db")
    private_sqlite_files(db)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    held = my_locks(db)
    assert held, "a WAL connection holds a shared lock on the database while it is open"
    os.chmod(db, 0o644)  # an older version's readable file: narrowed again, through its path
    private_sqlite_files(db)
    _private_file(Path(db))  # the CLI's logs.db goes through the same rule
    assert my_locks(db) == held
    assert os.stat(db).st_mode & 0o777 == 0o600
    conn.close()


def test_a_new_file_is_private_from_its_first_byte_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    old = os.umask(0o277)  # a umask that would leave it unwritable: still 0600
    try:
        private_sqlite_files(str(tmp_path / "new.db"))
    finally:
        os.umask(old)
    assert os.listdir(tmp_path) == ["new.db"]
    assert os.stat(tmp_path / "new.db").st_mode & 0o777 == 0o600
    private_sqlite_files(str(tmp_path / "new.db"))  # already there: left as it is
    assert os.listdir(tmp_path) == ["new.db"]


# --------------------------------------------------------------------------- 2: a bounded pool


def use_store(store: SQLiteStore, key: str) -> None:
    assert store.reserve(record(key)) is None
    store.complete(CHAT, key, {"status": "completed"})
    assert store.get(CHAT, key) is not None


def in_thread(fn: Any, *args: Any) -> None:
    thread = threading.Thread(target=fn, args=args)
    thread.start()
    thread.join(60)
    assert not thread.is_alive()


def test_short_lived_threads_keep_the_descriptor_count_flat(tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    store = SQLiteStore(db)
    for i in range(4):
        in_thread(use_store, store, f"warm-{i}")
    before, before_db = fd_count(), len(db_descriptors(db))
    for i in range(300):
        in_thread(use_store, store, f"k-{i}")
    assert len(db_descriptors(db)) <= before_db, "a connection outlived its thread"
    assert fd_count() <= before + 4  # (slack for the rest of the process: the shared emulator's sockets)
    store.close()
    assert db_descriptors(db) == []


def test_bursts_of_threads_hold_what_they_use_at_once_not_what_ever_used_it(tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    store = SQLiteStore(db)
    threads_per_burst = 8

    def burst(round_no: int) -> None:
        gate = threading.Barrier(threads_per_burst)

        def one(i: int) -> None:
            gate.wait(30)
            use_store(store, f"r{round_no}-{i}")

        threads = [threading.Thread(target=one, args=(i,)) for i in range(threads_per_burst)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)

    burst(0)
    before = len(db_descriptors(db))
    for round_no in range(1, 31):
        burst(round_no)
    # At most one connection (a database and a -wal descriptor) per thread of a burst, whatever the
    # number of bursts: it was two descriptors more for every thread that ever used the store.
    assert len(db_descriptors(db)) - before <= 2 * threads_per_burst
    store.close()
    assert db_descriptors(db) == []


def test_a_thread_kept_connection_goes_back_when_the_thread_ends(tmp_path: Path) -> None:
    """``SQLiteConnections.get()`` (a plugin's own SQLite code): a connection per live thread only."""
    db = str(tmp_path / "plugin.db")
    private_sqlite_files(db)
    connections = SQLiteConnections(db, 5.0)
    connections.get().execute("CREATE TABLE t (x)")

    def write() -> None:
        connections.get().execute("INSERT INTO t VALUES (1)")

    in_thread(write)
    before = len(db_descriptors(db))
    for _ in range(200):
        in_thread(write)
    assert len(db_descriptors(db)) <= before
    assert connections.get().execute("SELECT count(*) FROM t").fetchone() == (201,)
    connections.close()
    assert db_descriptors(db) == []


def test_close_leaves_no_descriptor_even_of_a_connection_in_use(tmp_path: Path) -> None:
    db = str(tmp_path / "keys.db")
    store = SQLiteStore(db)
    connections = store._connections
    in_use, release = threading.Event(), threading.Event()
    held_by_thread, thread_done = threading.Event(), threading.Event()

    def lease() -> None:
        with connections.connection() as conn:
            conn.execute("SELECT 1")
            in_use.set()
            release.wait(30)

    def keep() -> None:  # a thread that keeps one with get() and is still alive at close()
        connections.get().execute("SELECT 1")
        held_by_thread.set()
        thread_done.wait(30)

    workers = [threading.Thread(target=lease), threading.Thread(target=keep)]
    for t in workers:
        t.start()
    assert in_use.wait(30) and held_by_thread.wait(30)
    use_store(store, "k")
    store.close()
    assert len(db_descriptors(db)) > 0  # the one in use: closed when its block ends, not under its user
    release.set()
    thread_done.set()
    for t in workers:
        t.join(30)
    assert db_descriptors(db) == []
    use_store(store, "after-close")  # still usable: a connection for the call, closed after it
    assert db_descriptors(db) == []


def test_runs_with_approvals_keep_the_descriptor_count_flat(emu: HermesEmulator, tmp_path: Path) -> None:
    """A bounded soak: keyed runs whose command needs an approval, eight at a time, on the SQLite store."""
    emu.toolsets = TOOLSETS
    db = str(tmp_path / "keys.db")
    asked: list[str] = []
    lock = threading.Lock()

    def provider(request: Any) -> Any:
        with lock:
            asked.append(request.input_snapshot["command"])
        return approve_all(request)

    client = emu.client(load_entrypoints=False, approval_provider=provider, idempotency_store="sqlite:///" + db)
    statuses: list[str] = []

    def one(key: str) -> None:
        emu.files[f"/scratch/{key}/f.txt"] = "x"
        result = client.run(f"TOOL:terminal:rm -rf /scratch/{key}", idempotency_key=key).wait(timeout=60)
        with lock:
            statuses.append(result.status)

    def batch(start: int, size: int = 8) -> None:
        threads = [threading.Thread(target=one, args=(f"soak-{start + i}",)) for i in range(size)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)

    batch(0)
    before, before_db = fd_count(), len(db_descriptors(db))
    for start in range(8, 200, 8):
        batch(start)
    after, after_db = fd_count(), len(db_descriptors(db))
    assert statuses == ["completed"] * 200 and len(asked) == 200
    # It was two descriptors more per run (each run's approval thread kept a connection).
    assert after_db - before_db <= 16, f"{before_db} -> {after_db} database descriptors over 192 runs"
    assert after - before <= 32, f"{before} -> {after} descriptors over 192 runs"
    client.close()
    assert db_descriptors(db) == []


# --------------------------------------------------------------------------- 3: close() closes what it built


@pytest.fixture
def keys_db(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path / "keys.db")


def test_client_close_closes_the_store_it_built_from_a_url(emu: HermesEmulator, keys_db: str) -> None:
    with emu.client(load_entrypoints=False, idempotency_store="sqlite:///" + keys_db) as client:
        client.chat(prompt="r6 url", idempotency_key="url")
        assert db_descriptors(keys_db)
    assert db_descriptors(keys_db) == []


def test_client_close_closes_the_store_it_built_from_the_environment(emu: HermesEmulator, keys_db: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_SDK_IDEMPOTENCY_STORE", "sqlite:///" + keys_db)
    client = emu.client(load_entrypoints=False)
    client.with_options(timeout=5).chat(prompt="r6 env", idempotency_key="env")
    client.with_options(timeout=5).close()  # a copy shares the store: closing it closes nothing
    assert db_descriptors(keys_db)
    client.close()
    assert db_descriptors(keys_db) == []


def test_a_store_the_caller_passed_in_stays_open(emu: HermesEmulator, keys_db: str) -> None:
    store = SQLiteStore(keys_db)
    with emu.client(load_entrypoints=False, idempotency_store=store) as client:
        client.chat(prompt="r6 given", idempotency_key="given")
    assert store.get(CHAT, "given") is not None and db_descriptors(keys_db)  # still the caller's, still open
    with HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, idempotency_store=store) as again:
        assert again.chat(prompt="r6 given", idempotency_key="given").replayed
    store.close()
    assert db_descriptors(keys_db) == []


class FailingCloseStore(MemoryStore):
    """A plugin's store whose close() fails."""

    closes = 0

    def close(self) -> None:
        FailingCloseStore.closes += 1
        raise RuntimeError("sk-secret-in-a-close-error")


class FailingClosePlugin:
    @hookimpl
    def hermes_idempotency_store(self, url: str, client: Any) -> Any:
        return FailingCloseStore() if url.startswith("failing:") else None


class BrokenProviderPlugin:
    @hookimpl
    def hermes_approval_provider(self, client: Any) -> Any:
        return object()  # neither a callable nor a provider: the client is refused


def test_a_plugin_store_whose_close_fails_does_not_fail_client_close(emu: HermesEmulator,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    FailingCloseStore.closes = 0
    client = emu.client(load_entrypoints=False, idempotency_store="failing:", plugins=[FailingClosePlugin()])
    client.chat(prompt="r6 failing close", idempotency_key="failing")
    with caplog.at_level(logging.WARNING, logger="hermes_sdk"):
        client.close()
        client.close()  # idempotent: closed once
    assert FailingCloseStore.closes == 1
    assert "could not close its idempotency store (RuntimeError)" in caplog.text
    assert "sk-secret" not in caplog.text


def test_a_client_that_cannot_be_built_closes_the_store_it_built(emu: HermesEmulator, keys_db: str) -> None:
    with pytest.raises(PluginError):
        emu.client(load_entrypoints=False, idempotency_store="sqlite:///" + keys_db, plugins=[BrokenProviderPlugin()])
    assert db_descriptors(keys_db) == []
