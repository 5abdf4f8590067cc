"""Round 5: the call's deadline bounds the idempotency store too; a store outage before sending is
retryable and says nothing was sent; the SQLite store prunes expired records in bounded steps.

Real stores and real sockets: a SQLite file locked by a second connection (``BEGIN IMMEDIATE``),
third-party stores that block or fail, and the emulator counting what reached the server.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional

import attrs
import pytest
from core_support import agent_requests, approve_all, wait_for

from hermes_sdk import (
    DeadlineExceededError,
    HermesClient,
    MemoryStore,
    OutcomeUnknownError,
    PluginError,
    SQLiteStore,
    StoreUnavailableError,
)
from hermes_sdk.plugin import PENDING, IdempotencyRecord, store_deadline
from hermes_sdk.testing import HermesEmulator

TIMEOUT = 1.0


def keyed_client(emu: HermesEmulator, store: Any, **kwargs: Any) -> HermesClient:
    return emu.client(load_entrypoints=False, approval_provider=approve_all, idempotency_store=store, **kwargs)


def timed_chat(client: HermesClient, key: str) -> tuple[BaseException, float]:
    started = time.monotonic()
    with pytest.raises(Exception) as info:
        client.chat(prompt="hello", idempotency_key=key, timeout=TIMEOUT)
    return info.value, time.monotonic() - started


class GatedStore(MemoryStore):
    """A third-party store (no ``honours_deadline``) whose chosen methods block until released."""

    honours_deadline = False

    def __init__(self, *blocked: str) -> None:
        super().__init__()
        self.gates = {name: threading.Event() for name in blocked}
        self.entered = {name: threading.Event() for name in blocked}
        self.threads: dict[str, int] = {}
        self.waited_out: list[str] = []  # gates that opened by their safety limit: a caller waited

    def _gate(self, name: str) -> None:
        if name in self.gates:
            self.threads[name] = threading.get_ident()
            self.entered[name].set()
            if not self.gates[name].wait(60):  # a safety limit: an old SDK waits here
                self.waited_out.append(name)

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        self._gate("reserve")
        return super().reserve(record)

    def complete(self, capability_id: str, key: str, result: Mapping[str, object]) -> None:
        self._gate("complete")
        super().complete(capability_id, key, result)

    def get(self, capability_id: str, key: str) -> Optional[IdempotencyRecord]:
        self._gate("get")
        return super().get(capability_id, key)

    def open_all(self) -> None:
        for gate in self.gates.values():
            gate.set()


def _running(ident: int, function: str) -> bool:
    """Whether the thread ``ident`` is inside a function named ``function`` now."""
    frame = sys._current_frames().get(ident)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


@pytest.fixture
def sqlite_path(tmp_path: Path) -> str:
    return str(tmp_path / "idem.db")


@pytest.fixture
def locked(sqlite_path: str) -> Iterator[sqlite3.Connection]:
    """A second writer holding the SQLite store's write lock (``BEGIN IMMEDIATE``)."""
    SQLiteStore(sqlite_path).close()  # the schema exists
    other = sqlite3.connect(sqlite_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    yield other
    if other.in_transaction:
        other.execute("ROLLBACK")
    other.close()


def assert_unsent_deadline(err: BaseException, took: float, emu: HermesEmulator) -> None:
    # The store's own wait is 30 s (SQLite's lock) or 60 s (a gate): only the call's 1 s deadline
    # ends the call with reason store_deadline (decided by the reason, not by `took`).
    assert isinstance(err, DeadlineExceededError), repr(err)
    assert err.details["sent"] is False and err.details["reason"] == "store_deadline"
    assert err.retryable is True and err.uncertain_outcome is False
    assert agent_requests(emu) == []


# -- item 8: the deadline bounds the store ------------------------------------------------------


def test_sqlite_locked_by_another_writer_ends_at_the_deadline(emu: HermesEmulator, sqlite_path: str,
                                                              locked: sqlite3.Connection) -> None:
    store = SQLiteStore(sqlite_path)  # its own lock timeout is 30 s
    with keyed_client(emu, store) as client:
        err, took = timed_chat(client, "locked-1")
        assert_unsent_deadline(err, took, emu)
        locked.execute("ROLLBACK")  # the other writer is done: the same key works at once
        reply = client.chat(prompt="hello", idempotency_key="locked-1", timeout=5)
        assert reply.text and len(agent_requests(emu)) == 1


def test_third_party_reserve_that_sleeps_is_abandoned_and_its_late_record_given_back(emu: HermesEmulator) -> None:
    store = GatedStore("reserve")
    with keyed_client(emu, store) as client:
        err, took = timed_chat(client, "slow-1")
        assert_unsent_deadline(err, took, emu)
        assert isinstance(err, DeadlineExceededError) and err.capability_id
        cap = err.capability_id
        store.open_all()  # the store answers at last: the reservation lands, then is given back
        assert wait_for(lambda: store._records.get((cap, "slow-1")) is None, 30.0)
        reply = client.chat(prompt="hello", idempotency_key="slow-1", timeout=5)
        assert reply.text and len(agent_requests(emu)) == 1
        record = store.get(cap, "slow-1")
        assert record is not None and record.state == "completed"


def test_retry_takes_over_a_late_reservation_this_process_gave_up(emu: HermesEmulator) -> None:
    """The late reservation lands before its give-back runs: a retry in this process knows it never
    ran and takes the key over; the give-back then leaves the retry's record alone."""
    store = GatedStore("reserve", "get")  # the give-back reads with get() first: held until released
    with keyed_client(emu, store) as client:
        err, took = timed_chat(client, "late-1")
        assert_unsent_deadline(err, took, emu)
        assert isinstance(err, DeadlineExceededError) and err.capability_id
        cap, abandoned = err.capability_id, err.action_id
        store.gates["reserve"].set()
        assert store.entered["get"].wait(30)  # landed; its give-back waits in get()
        held = store._records[(cap, "late-1")]
        assert held.state == PENDING and held.action_id == abandoned
        reply = client.chat(prompt="hello", idempotency_key="late-1", timeout=5)
        assert reply.text and len(agent_requests(emu)) == 1
        store.gates["get"].set()
        # The give-back ran to its end (its thread left it): it saw another action's record and kept it.
        assert wait_for(lambda: not _running(store.threads["get"], "late"), 30)
        record = store._records[(cap, "late-1")]
        assert record.state == "completed" and record.action_id != abandoned


class StaleReadStore(MemoryStore):
    """A third-party store that orders one race: the first reservation lands after its call gave it
    up; the retry's own reserve reads that pending record, then answers only after the give-back
    has claimed it (``forgetting``) or forgotten it (``given_back``)."""

    honours_deadline = False

    def __init__(self, hold_forget: bool = False) -> None:
        super().__init__()
        self.calls = 0
        self.count = threading.Lock()
        self.first = threading.Event()  # the abandoned reservation waits here past its deadline
        self.landed = threading.Event()
        self.read_by_retry = threading.Event()
        self.forgetting = threading.Event()
        self.forget_gate = threading.Event()
        self.given_back = threading.Event()
        if not hold_forget:
            self.forget_gate.set()

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        with self.count:
            self.calls += 1
            n = self.calls
        if n == 1:
            self.first.wait(60)
            out = super().reserve(record)
            self.landed.set()
            self.read_by_retry.wait(60)  # the give-back starts only once the retry has read
            return out
        if n == 2:
            self.first.set()
            assert self.landed.wait(60)
            out = super().reserve(record)  # the abandoned record, pending
            self.read_by_retry.set()
            # Answer once the give-back is on it: a read from before its forget.
            assert (self.given_back if self.forget_gate.is_set() else self.forgetting).wait(60)
            return out
        return super().reserve(record)

    def forget(self, capability_id: str, key: str) -> None:
        self.forgetting.set()
        self.forget_gate.wait(60)
        super().forget(capability_id, key)
        self.given_back.set()


@pytest.mark.parametrize("hold_forget", [False, True], ids=["forgotten", "forgetting"])
def test_a_retry_that_read_the_abandoned_record_before_its_give_back_runs_once(emu: HermesEmulator,
                                                                            hold_forget: bool) -> None:
    """The retry read the abandoned reservation, then the worker gave it back (or is giving it
    back): the retry is not refused on that stale read, it reads again and runs once."""
    store = StaleReadStore(hold_forget)
    with keyed_client(emu, store) as client:
        err, took = timed_chat(client, "stale-1")
        assert_unsent_deadline(err, took, emu)
        if hold_forget:  # the give-back holds its claim in forget() until the retry waits for it
            retry = threading.get_ident()
            opener = threading.Thread(target=lambda: (wait_for(lambda: _running(retry, "wait_settled")),
                                                      store.forget_gate.set()))
            opener.start()
        reply = client.chat(prompt="hello", idempotency_key="stale-1", timeout=30)
        assert reply.text and len(agent_requests(emu)) == 1
        assert store.given_back.is_set() and store.calls == 3  # read again after the give-back
        if hold_forget:
            opener.join()
        assert isinstance(err, DeadlineExceededError) and err.capability_id
        record = store._records[(err.capability_id, "stale-1")]
        assert record.state == "completed" and record.action_id != err.action_id


def test_a_complete_that_sleeps_returns_the_result_in_time_and_leaves_the_key_pending(emu: HermesEmulator) -> None:
    store = GatedStore("complete")
    with keyed_client(emu, store) as client:
        reply = client.chat(prompt="hello", idempotency_key="done-1", timeout=TIMEOUT)
        assert reply.text and store.entered["complete"].is_set() and not store.waited_out  # complete still held
        with pytest.raises(OutcomeUnknownError):  # not recorded: refused, never run twice
            client.chat(prompt="hello", idempotency_key="done-1", timeout=TIMEOUT)
        assert len(agent_requests(emu)) == 1
        store.open_all()


def test_memory_store_runs_on_the_callers_thread_and_sees_the_deadline(emu: HermesEmulator) -> None:
    seen: list[tuple[str, int, Optional[float]]] = []

    class Watched(MemoryStore):
        def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
            seen.append(("reserve", threading.get_ident(), store_deadline()))
            return super().reserve(record)

        def complete(self, capability_id: str, key: str, result: Mapping[str, object]) -> None:
            seen.append(("complete", threading.get_ident(), store_deadline()))
            super().complete(capability_id, key, result)

    with keyed_client(emu, Watched()) as client:
        before = time.time()
        client.chat(prompt="hello", idempotency_key="mem-1", timeout=5)
    assert [name for name, _, _ in seen] == ["reserve", "complete"]
    for _, ident, deadline in seen:
        assert ident == threading.get_ident()  # no thread hop on the hot path
        assert deadline is not None and before < deadline <= time.time() + 5
    assert store_deadline() is None  # set only while the store runs


# -- item 9: an outage before sending is retryable and says nothing was sent --------------------


class FailingStore(MemoryStore):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error: Optional[Exception] = error

    def reserve(self, record: IdempotencyRecord) -> Optional[IdempotencyRecord]:
        if self.error is not None:
            raise self.error
        return super().reserve(record)


@pytest.mark.parametrize("error", [ConnectionRefusedError(111, "refused"), OSError(104, "reset"),
                                   ConnectionError("restarting")], ids=["refused", "oserror", "connection"])
def test_a_store_outage_before_sending_is_retryable_with_the_same_key(emu: HermesEmulator, error: Exception) -> None:
    store = FailingStore(error)
    with keyed_client(emu, store) as client:
        with pytest.raises(StoreUnavailableError) as info:
            client.chat(prompt="hello", idempotency_key="out-1", timeout=5)
        err = info.value
        assert isinstance(err, PluginError)  # existing `except PluginError` still catches it
        assert err.code == "hermes_sdk.store_unavailable" and err.category == "temporary"
        assert err.details["sent"] is False and err.retryable is True and err.uncertain_outcome is False
        assert agent_requests(emu) == []
        store.error = None  # the store is back: the same key runs
        assert client.chat(prompt="hello", idempotency_key="out-1", timeout=5).text
        assert len(agent_requests(emu)) == 1


def test_a_store_bug_stays_a_permanent_plugin_error(emu: HermesEmulator) -> None:
    with keyed_client(emu, FailingStore(KeyError("bug"))) as client:
        with pytest.raises(PluginError) as info:
            client.chat(prompt="hello", idempotency_key="bug-1", timeout=5)
    err = info.value
    assert not isinstance(err, StoreUnavailableError)
    assert err.code == "hermes_sdk.plugin_failed" and err.retryable is False
    assert err.details["sent"] is False and agent_requests(emu) == []


def test_sqlite_locked_past_its_own_timeout_is_an_outage_not_a_bug(emu: HermesEmulator, sqlite_path: str,
                                                                   locked: sqlite3.Connection) -> None:
    store = SQLiteStore(sqlite_path, timeout=0.2)  # shorter than the call's deadline
    with keyed_client(emu, store) as client:
        with pytest.raises(StoreUnavailableError) as info:
            client.chat(prompt="hello", idempotency_key="lk-2", timeout=5)
    assert info.value.details["sent"] is False and info.value.retryable is True
    assert agent_requests(emu) == []


# -- item 10: expired records are pruned, in bounded steps -----------------------------------------


def test_sqlite_prunes_expired_records_a_bounded_batch_at_a_time(emu: HermesEmulator, sqlite_path: str) -> None:
    store = SQLiteStore(sqlite_path)
    past = time.time() - 10
    counter = sqlite3.connect(sqlite_path, isolation_level=None)
    for i in range(150):  # what earlier calls left behind, long expired
        record = IdempotencyRecord(capability_id="cap", key=f"old-{i}", action_id=f"a-{i}", input_hash="h",
                                   state="completed", created_at=past - 60, expires_at=past, result={"x": "y" * 1000})
        counter.execute("INSERT INTO hermes_idempotency VALUES (?,?,?,?,?,?)",
                        ("cap", record.key, record.action_id, record.state, past,
                         json.dumps(attrs.asdict(record))))

    def expired() -> int:
        return int(counter.execute("SELECT COUNT(*) FROM hermes_idempotency WHERE expires_at<=?",
                                   (time.time(),)).fetchone()[0])

    start = expired()
    assert start == 150
    drops = []
    with keyed_client(emu, store) as client:
        for i in range(64):
            before = expired()
            client.chat(prompt="hello", idempotency_key=f"new-{i}", timeout=5)
            drops.append(before - expired())
    assert expired() == 0, "expired records stayed"
    assert max(drops) <= SQLiteStore.PRUNE_BATCH  # the work of one call is bounded
    assert sum(1 for d in drops if d) <= -(-start // SQLiteStore.PRUNE_BATCH)  # pruned in few, full batches
    live = counter.execute("SELECT COUNT(*) FROM hermes_idempotency").fetchone()[0]
    assert live == 64  # the live records stay
    counter.close()
    store.close()
