"""Round 5 on real databases: a locked or frozen PostgreSQL, or a SQLite file another writer holds,
cannot hold a call past its deadline; a stopped PostgreSQL is a retryable outage with nothing sent;
expired rows are pruned a bounded batch per call.

The PostgreSQL clusters are the throwaway ones of ``hermes_sdk_sql.testing`` (frozen and stopped
here by the PIDs of that cluster's own processes only).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Optional

import pytest
import sqlalchemy as sa
from hermes_sdk_sql import SQLStore, SQLStorePlugin
from hermes_sdk_sql.schema import make_engine
from hermes_sdk_sql.testing import postgres_bindir, postgres_server

from hermes_sdk import DeadlineExceededError, HermesClient, PluginError, StoreUnavailableError

TIMEOUT = 1.0
# A safety limit, far past the call's 1 s: an SDK the deadline does not bound is let go by it, and
# fails because the limit fired first (an order of events, not a bound on a busy machine's clock).
SAFETY_LIMIT = 60.0


def client_for(emu: Any, store: Any, **kwargs: Any) -> HermesClient:
    return HermesClient(emu.base_url, emu.api_key, idempotency_store=store, load_entrypoints=False,
                        plugins=[SQLStorePlugin()], **kwargs)


def chat_posts(emu: Any) -> int:
    return sum(1 for r in emu.requests_seen if r.method == "POST" and r.path == "/v1/chat/completions")


def assert_unsent_deadline(client: HermesClient, emu: Any, key: str,
                           limit: Optional[threading.Event] = None) -> None:
    before = chat_posts(emu)
    with pytest.raises(DeadlineExceededError) as info:
        client.chat(prompt="hello", idempotency_key=key, timeout=TIMEOUT)
    assert limit is None or not limit.is_set(), "the store held the call until the safety limit let it go"
    err = info.value
    assert err.details["sent"] is False and err.retryable is True and not err.uncertain_outcome
    assert chat_posts(emu) == before  # nothing reached the server


def cluster_pids(url: str) -> list[int]:
    """The postmaster of the cluster at ``url`` and every process it started."""
    engine, _ = make_engine(url)
    with engine.connect() as conn:
        backend = int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one())
        with open(f"/proc/{backend}/stat") as f:  # while that backend lives
            postmaster = int(f.read().rsplit(")", 1)[1].split()[1])
    engine.dispose()
    children: list[int] = []
    for task in os.listdir(f"/proc/{postmaster}/task"):
        with open(f"/proc/{postmaster}/task/{task}/children") as f:
            children += [int(p) for p in f.read().split()]
    return [postmaster] + children


def terminate(url: str, pid: int) -> None:
    """End the session ``pid`` (its transaction and its locks)."""
    engine, _ = make_engine(url)
    with engine.connect() as conn:
        conn.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    engine.dispose()


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:  # a backend that ended meanwhile (the one that listed them)
            pass


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except FileNotFoundError:
        return False


@pytest.fixture
def pg_url(postgres_url: str) -> str:
    """A fresh database on the session's PostgreSQL cluster."""
    name = "r5_" + os.urandom(6).hex()
    admin, _ = make_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    return postgres_url.rsplit("/", 1)[0] + "/" + name


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sql+sqlite:///{tmp_path / 'store.db'}"


def test_postgresql_table_locked_by_another_session(pg_url: str, hermes_emulator: Any) -> None:
    db_url = pg_url
    store = SQLStore(db_url)
    holder, _ = make_engine(db_url)
    with client_for(hermes_emulator, store) as client:
        client.chat(prompt="warm", idempotency_key="warm", timeout=5)
        with holder.connect() as conn:
            conn.execute(sa.text("LOCK TABLE hermes_idempotency IN ACCESS EXCLUSIVE MODE"))
            pid = conn.execute(sa.text("SELECT pg_backend_pid()")).scalar_one()
            limit = threading.Event()
            release = threading.Timer(SAFETY_LIMIT, lambda: (limit.set(), terminate(db_url, pid)))
            release.start()
            try:
                assert_unsent_deadline(client, hermes_emulator, "pg-lock-1", limit)
            finally:
                release.cancel()
            conn.rollback()
        # The abandoned transaction hit its own lock_timeout and rolled back: the key is free.
        assert client.chat(prompt="hello", idempotency_key="pg-lock-1", timeout=5).text
    holder.dispose()


def test_sqlite_locked_by_another_writer(sqlite_url: str, hermes_emulator: Any) -> None:
    store = SQLStore(sqlite_url)
    other = sqlite3.connect(sqlite_url[len("sql+sqlite:///"):], isolation_level=None)
    with client_for(hermes_emulator, store) as client:
        other.execute("BEGIN IMMEDIATE")
        assert_unsent_deadline(client, hermes_emulator, "lite-lock-1")
        other.execute("ROLLBACK")
        assert client.chat(prompt="hello", idempotency_key="lite-lock-1", timeout=5).text
    other.close()


@pytest.mark.slow
def test_a_frozen_postgresql_cannot_hold_a_call(pg_url: str, hermes_emulator: Any) -> None:
    db_url = pg_url
    store = SQLStore(db_url)
    with client_for(hermes_emulator, store) as client:
        client.chat(prompt="warm", idempotency_key="warm", timeout=5)  # a pooled connection exists
        pids = cluster_pids(db_url)
        signal_all(pids, signal.SIGSTOP)
        limit = threading.Event()
        wake = threading.Timer(SAFETY_LIMIT, lambda: (limit.set(), signal_all(pids, signal.SIGCONT)))
        wake.start()
        try:
            assert_unsent_deadline(client, hermes_emulator, "frozen-1", limit)
        finally:
            wake.cancel()
            signal_all(pids, signal.SIGCONT)
        # Awake again: the abandoned reservation lands or rolls back; either way the key runs.
        before = chat_posts(hermes_emulator)
        assert client.chat(prompt="hello", idempotency_key="frozen-1", timeout=10).text
        assert chat_posts(hermes_emulator) == before + 1


@pytest.mark.slow
def test_a_stopped_postgresql_is_a_retryable_outage_with_nothing_sent(hermes_emulator: Any) -> None:
    if postgres_bindir() is None:
        pytest.skip("PostgreSQL is not installed")
    with postgres_server() as url:
        store = SQLStore(url)
        with client_for(hermes_emulator, store) as client:
            client.chat(prompt="warm", idempotency_key="warm", timeout=5)
            postmaster = cluster_pids(url)[0]
            os.kill(postmaster, signal.SIGINT)  # fast shutdown of this test's own cluster
            deadline = time.monotonic() + 30
            while running(postmaster) and time.monotonic() < deadline:
                time.sleep(0.05)
            before = chat_posts(hermes_emulator)
            with pytest.raises(StoreUnavailableError) as info:
                client.chat(prompt="hello", idempotency_key="down-1", timeout=5)
            err = info.value
            assert isinstance(err, PluginError) and err.code == "hermes_sdk.store_unavailable"
            assert err.details["sent"] is False and err.retryable is True and not err.uncertain_outcome
            assert chat_posts(hermes_emulator) == before


def test_expired_rows_are_pruned_a_bounded_batch_per_call(db_url: str, hermes_emulator: Any) -> None:
    store = SQLStore(db_url)
    t = store.table
    past = time.time() - 10
    with store.engine.begin() as conn:  # what earlier calls left behind, long expired
        conn.execute(t.insert(), [{"slot": f"{i:064x}", "capability_id": "cap", "action_id": f"a-{i}",
                                   "state": "completed", "expires_at": past,
                                   "record": json.dumps({"key": f"old-{i}", "output": "y" * 1000})}
                                  for i in range(150)])

    def expired() -> int:
        with store.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(t)
                                    .where(t.c.expires_at <= time.time())).scalar_one())

    assert expired() == 150
    drops = []
    with client_for(hermes_emulator, store) as client:
        for i in range(64):
            before = expired()
            client.chat(prompt="hello", idempotency_key=f"new-{i}", timeout=5)
            drops.append(before - expired())
    assert expired() == 0, "expired rows stayed"
    assert max(drops) <= SQLStore.PRUNE_BATCH  # the work of one call is bounded
    assert store.pruned == 150
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one() == 64  # the live ones stay
    store.close()
