"""The SQL store on a real PostgreSQL server and on SQLite: the kit's store contract (atomicity across
engines and processes, expiry, corrupt records), corrupt rows through the SDK, the versioned schema,
the SDK end to end, a killed process and a many-process race."""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import sqlalchemy as sa
from hermes_sdk_sql import (
    MIGRATIONS,
    CorruptRecordError,
    SchemaVersionError,
    SQLApprovalQueue,
    SQLStore,
    SQLStorePlugin,
    sqlalchemy_url,
    store_from_url,
)
from hermes_sdk_sql.schema import postgresql_driver
from hermes_sdk_sql.store import _slot

from hermes_sdk import HermesClient, IdempotencyRecord, InvalidInputError, OutcomeUnknownError, PluginError
from hermes_sdk._core import _plugin_manager as plugins
from hermes_sdk.testing.contracts import IdempotencyStoreContract

CHAT = "cap:hermes_agent:default:chat"
CHILD = str(Path(__file__).with_name("sql_child.py"))


def rec(key: str = "k", action: str = "act_1", ttl: float = 60.0) -> IdempotencyRecord:
    now = time.time()
    return IdempotencyRecord(capability_id=CHAT, key=key, action_id=action, input_hash="h", state="pending",
                             created_at=now, expires_at=now + ttl)


class TestSQLStore(IdempotencyStoreContract):
    """The kit's store contract on PostgreSQL and SQLite: engines of their own in this process and others."""

    shared_across_processes = True

    @pytest.fixture(autouse=True)
    def _database(self, db_url: str) -> None:
        self.url = db_url

    def make_store(self) -> SQLStore:
        return SQLStore(self.url)

    def store_spec(self, store: Any) -> Callable[[], SQLStore]:
        return functools.partial(SQLStore, self.url)

    def write_raw(self, store: Any, capability_id: str, key: str, raw: str) -> None:
        with store.engine.begin() as conn:
            done = conn.execute(store.table.update().where(store.table.c.slot == _slot(capability_id, key))
                                .values(record=raw))
        assert done.rowcount == 1


def test_long_keys_are_stored_by_their_digest(db_url: str) -> None:
    store = SQLStore(db_url)
    long_key = "x" * 5000  # keys of any length (the primary key is their digest)
    assert store.reserve(rec(key=long_key, action="act_long")) is None and store.get(CHAT, long_key)
    store.close()


def test_purge_expired_takes_every_expired_record(db_url: str) -> None:
    store = SQLStore(db_url)
    store.reserve(rec(key="old", action="act_old", ttl=0.1))
    store.reserve(rec(key="live", action="act_live"))
    past = time.time() + 0.2
    while time.time() < past:  # the clock passes the TTL (a lower bound: load only waits longer)
        time.sleep(0.02)
    assert store.purge_expired() == 1 and store.get(CHAT, "live") is not None
    store.close()


def test_first_use_races_create_the_schema_once(db_url: str) -> None:
    errors: list[BaseException] = []
    barrier = threading.Barrier(6)

    def first_use() -> None:
        try:
            barrier.wait()
            SQLStore(db_url).close()
            SQLApprovalQueue(db_url).close()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=first_use) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    store = SQLStore(db_url)
    with store.engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT component, version FROM hermes_sdk_schema ORDER BY component")).all()
    assert [tuple(r) for r in rows] == [("approval_queue", 1), ("idempotency", 1)]
    store.close()


def test_corrupt_rows_are_typed_errors(db_url: str, hermes_emulator: Any) -> None:
    store = SQLStore(db_url)
    store.reserve(rec())
    store.reserve(rec(key="moved", action="act_moved"))
    with store.engine.begin() as conn:
        conn.execute(store.table.update().where(store.table.c.action_id == "act_1").values(record="{not json"))
        # a well-formed record copied under another key's slot is corrupt too
        good = conn.execute(sa.select(store.table.c.record).where(store.table.c.action_id == "act_moved")).scalar()
        conn.execute(store.table.insert().values(slot="0" * 64, capability_id=CHAT, action_id="act_copy",
                                                 state="pending", expires_at=None, record=good))
    for read in (lambda: store.get(CHAT, "k"), lambda: store.get_by_action("act_1"),
                 lambda: store.reserve(rec(action="act_2")), lambda: store.complete(CHAT, "k", {}),
                 lambda: store.get_by_action("act_copy")):
        with pytest.raises(CorruptRecordError) as info:
            read()
        assert isinstance(info.value, PluginError) and info.value.details["reason"] == "corrupt_record"
    # through the SDK: a typed failure, and nothing is sent
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=store,
                      load_entrypoints=False) as client:
        before = hermes_emulator.executions
        result = client.invoke(CHAT, {"prompt": "hello"}, idempotency_key="k")
        assert result.status == "failed" and result.error.code == "hermes_sdk.plugin_failed"
        assert hermes_emulator.executions == before
    store.close()


def test_the_schema_is_versioned(db_url: str) -> None:
    store = SQLStore(db_url)
    table = sa.table("hermes_sdk_schema", sa.column("component"), sa.column("version"))
    with store.engine.begin() as conn:
        conn.execute(table.update().where(table.c.component == "idempotency").values(version=99))
    with pytest.raises(SchemaVersionError) as info:
        SQLStore(db_url)
    assert info.value.details == {"component": "idempotency", "found": 99, "expected": 1}

    with store.engine.begin() as conn:
        conn.execute(table.update().where(table.c.component == "idempotency").values(version=0))
    with pytest.raises(SchemaVersionError):  # no migration from 0
        SQLStore(db_url)
    ran: list[int] = []
    MIGRATIONS[("idempotency", 0)] = lambda conn: ran.append(1)
    try:
        SQLStore(db_url).close()
    finally:
        del MIGRATIONS[("idempotency", 0)]
    assert ran == [1]
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(table.c.version).where(table.c.component == "idempotency")).scalar() == 1
    store.close()


def test_urls_it_claims() -> None:
    for url in ("memory:", "sqlite:///x.db", "redis://127.0.0.1/0", "https://x"):
        assert store_from_url(url) is None and sqlalchemy_url(url) is None
    assert sqlalchemy_url("postgresql://u@h:5/db").drivername == "postgresql+" + postgresql_driver()
    assert sqlalchemy_url("postgres://u@h/db").drivername == "postgresql+" + postgresql_driver()
    assert sqlalchemy_url("postgresql+psycopg://u@h/db").drivername == "postgresql+psycopg"
    assert sqlalchemy_url("mysql://u@h/db").drivername.startswith("mysql")
    assert sqlalchemy_url("sql+sqlite:////tmp/x.db").drivername == "sqlite"
    assert sqlalchemy_url("sql+mysql+pymysql://u@h/db").drivername == "mysql+pymysql"


def test_postgresql_urls_name_a_dialect_the_installed_sqlalchemy_has() -> None:
    # SQLAlchemy 1.4 (a legacy application's pin) has no psycopg 3 dialect: postgresql:// is psycopg2 there.
    url = sqlalchemy_url("postgresql://u@h/db")
    assert url is not None
    url.get_dialect()  # NoSuchModuleError when the driver name is one this SQLAlchemy does not know
    if int(sa.__version__.split(".")[0]) < 2:
        assert url.drivername == "postgresql+psycopg2"


def test_a_store_from_an_engine_or_sqlalchemy_url(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'e.db'}")
    store = SQLStore(engine)
    assert store.reserve(rec()) is None and store.get(CHAT, "k")
    store.close()  # not ours: the engine still works
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM hermes_idempotency")).scalar() == 1
    engine.dispose()
    by_url = SQLStore(sa.engine.make_url(f"sqlite:///{tmp_path / 'e.db'}"))
    assert by_url.get(CHAT, "k") is not None
    by_url.close()


def test_registered_as_an_entry_point() -> None:
    names = {ep.name: ep.value for ep, _ in plugins._entry_points()}
    if "hermes-sdk-sql" not in names:
        pytest.skip("hermes-sdk-sql is not installed (pip install -e plugins/hermes-sdk-sql)")
    assert names["hermes-sdk-sql"] == "hermes_sdk_sql.plugin:SQLStorePlugin"


def test_sdk_end_to_end(db_url: str, hermes_emulator: Any) -> None:
    def make(**kw: Any) -> HermesClient:
        return HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=db_url,
                            load_entrypoints=False, plugins=[SQLStorePlugin()], **kw)

    with pytest.raises(InvalidInputError):  # without the plugin nobody claims the URL
        HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=db_url,
                     load_entrypoints=False)
    a, b = make(key_retention=300), make()
    before = hermes_emulator.executions
    first = a.chat(prompt="hello", idempotency_key="sk-1", action_id="act_sql_1")
    assert b.chat(prompt="hello", idempotency_key="sk-1").id == first.id  # another "host" replays it
    assert b.action_result("act_sql_1").output["id"] == first.id
    assert hermes_emulator.executions == before + 1

    now = time.time()  # a record left pending by a crashed host stops everyone
    b.idempotency_store.reserve(IdempotencyRecord(capability_id=CHAT, key="sk-2", action_id="act_dead",
                                                  input_hash="h", state="pending", created_at=now,
                                                  expires_at=now + 60))
    with pytest.raises(OutcomeUnknownError):
        a.chat(prompt="hello", idempotency_key="sk-2")
    assert hermes_emulator.executions == before + 1
    assert a.records.forget(CHAT, "sk-2")
    a.chat(prompt="hello", idempotency_key="sk-2")
    assert hermes_emulator.executions == before + 2
    a.close()
    b.close()


def test_the_approval_queue_protocol(db_url: str) -> None:
    queue = SQLApprovalQueue(db_url)
    now = time.time()
    entry = {"id": "inb_1", "version": 1, "state": "pending", "capability_id": CHAT, "open_key": "ok1",
             "requested_at": now, "expires_at": now + 60, "note": "x"}
    assert queue.add(entry) == entry
    assert queue.add({**entry, "id": "inb_2"})["id"] == "inb_1"  # one open entry per open_key
    assert queue.get("inb_1") == entry and queue.get("nope") is None
    assert queue.update({**entry, "version": 2, "state": "approved"}, 1) is True
    assert queue.update({**entry, "version": 2, "state": "denied"}, 1) is False  # lost the compare-and-set
    assert queue.get("inb_1")["state"] == "approved"
    assert queue.update({**entry, "version": 3, "state": "approved", "open_key": None}, 2) is True
    second = {**entry, "id": "inb_2", "requested_at": now + 1}
    assert queue.add(second)["id"] == "inb_2"  # the key was given back
    assert [e["id"] for e in queue.list()] == ["inb_2", "inb_1"]
    assert [e["id"] for e in queue.list(state="approved")] == ["inb_1"]
    with queue.engine.begin() as conn:
        conn.execute(queue.table.update().where(queue.table.c.id == "inb_2").values(doc="[]"))
    with pytest.raises(CorruptRecordError):
        queue.get("inb_2")
    queue.close()


# ------------------------------------------------------------------ processes, on PostgreSQL too


def _chat_posts(emulator: Any) -> int:
    return sum(1 for r in emulator.requests_seen if r.method == "POST" and r.path == "/v1/chat/completions")


def _child(emulator: Any, url: str, key: str, prompt: str, threads: int = 1, start_at: float = 0.0) -> Any:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen([sys.executable, CHILD, emulator.base_url, emulator.api_key, url, key, prompt,
                             str(threads), str(start_at)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


@pytest.mark.slow
def test_killed_mid_call_leaves_outcome_unknown_never_a_second_execution(db_url: str,
                                                                          hermes_emulator_factory: Any) -> None:
    emulator = hermes_emulator_factory()
    SQLStore(db_url).close()
    child = _child(emulator, db_url, "k-crash", "SLOW:5 charge the card")
    try:  # SIGKILL between send and record: Hermes got the request, the record is still pending
        _wait_for(lambda: emulator.executions >= 1 and _chat_posts(emulator) >= 1)
        assert child.poll() is None, child.communicate()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL

    again = _child(emulator, db_url, "k-crash", "SLOW:5 charge the card")
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert [json.loads(line)["outcome"] for line in out.splitlines()] == ["hermes_sdk.outcome_unknown"]

    with HermesClient(emulator.base_url, emulator.api_key, idempotency_store=db_url, load_entrypoints=False,
                      plugins=[SQLStorePlugin()]) as client:
        with pytest.raises(OutcomeUnknownError) as info:
            client.chat(prompt="SLOW:5 charge the card", idempotency_key="k-crash")
        record = client.records.get(CHAT, "k-crash")
        assert record.state == "pending" and info.value.details["original_action_id"] == record.action_id
        assert client.action_result(record.action_id) is None
    assert emulator.executions == 1 and _chat_posts(emulator) == 1


@pytest.mark.slow
def test_threads_and_processes_race_one_key(db_url: str, hermes_emulator: Any) -> None:
    SQLStore(db_url).close()
    prompt = "SLOW:1 exactly once " + os.urandom(4).hex()
    before_exec, before_posts = hermes_emulator.executions, _chat_posts(hermes_emulator)
    start_at = time.time() + 2.5  # children need time to import; everyone starts together
    children = [_child(hermes_emulator, db_url, "k-race", prompt, threads=6, start_at=start_at) for _ in range(3)]
    outcomes: list[str] = []
    lock = threading.Lock()
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=db_url,
                          load_entrypoints=False, plugins=[SQLStorePlugin()])

    def call() -> None:
        time.sleep(max(0.0, start_at - time.time()))
        result = client.invoke(CHAT, {"prompt": prompt}, idempotency_key="k-race")
        outcome = ("replayed" if result.replayed else "executed") if result.status == "completed" \
            else result.error.code
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        outcomes.extend(json.loads(line)["outcome"] for line in out.splitlines())

    assert len(outcomes) == 26
    assert outcomes.count("executed") == 1, outcomes
    assert set(outcomes) <= {"executed", "replayed", "hermes_sdk.outcome_unknown"}, outcomes
    assert hermes_emulator.executions == before_exec + 1 and _chat_posts(hermes_emulator) == before_posts + 1
    late = client.invoke(CHAT, {"prompt": prompt}, idempotency_key="k-race")
    assert late.replayed and late.status == "completed"
    client.close()
