"""Idempotency: the store contract (memory, SQLite: the kit's IdempotencyStoreContract), store selection, and the
pipeline's promises."""

from __future__ import annotations

import functools
import os
import socket
import sqlite3
import stat
import threading
import time
from typing import Any, Callable

import pytest
from plugin_support import approve_all

from hermes_sdk import (
    ApprovalRequiredError,
    HermesClient,
    IdempotencyConflictError,
    IdempotencyRecord,
    InvalidInputError,
    MemoryStore,
    NotFoundError,
    OutcomeUnknownError,
    SQLiteStore,
    hookimpl,
    input_hash,
)
from hermes_sdk._core._constants import DELETE_KEY_TTL_SECONDS
from hermes_sdk.errors import HermesError
from hermes_sdk.testing.contracts import IdempotencyStoreContract

CHAT = "cap:hermes_agent:default:chat"


def rec(key: str = "k", action: str = "act_1", ttl: float = 60.0, cap: str = CHAT,
        input_hash: str = "h") -> IdempotencyRecord:
    now = time.time()
    return IdempotencyRecord(capability_id=cap, key=key, action_id=action, input_hash=input_hash, state="pending",
                             created_at=now, expires_at=now + ttl)


class TestMemoryStore(IdempotencyStoreContract):
    def make_store(self) -> MemoryStore:
        return MemoryStore()


class TestSQLiteStore(IdempotencyStoreContract):
    shared_across_processes = True

    def make_store(self) -> SQLiteStore:
        return SQLiteStore(str(self.tmp_path / "idem.db"))

    def store_spec(self, store: Any) -> Callable[[], SQLiteStore]:
        return functools.partial(SQLiteStore, store.path)

    def write_raw(self, store: Any, capability_id: str, key: str, raw: str) -> None:
        conn = sqlite3.connect(store.path)
        with conn:
            conn.execute("UPDATE hermes_idempotency SET record=? WHERE capability_id=? AND key=?",
                         (raw, capability_id, key))
        conn.close()


def test_sqlite_store_is_private_and_wal(tmp_path: Any) -> None:
    path = tmp_path / "sub" / "idem.db"
    s = SQLiteStore(str(path))
    s.reserve(rec())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sqlite3.connect(str(path)).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    s.close()
    reopened = SQLiteStore(str(path))
    assert reopened.get(CHAT, "k") is not None  # durable across store instances
    reopened.close()


def _modes(directory: Any) -> dict[str, int]:
    return {p.name: stat.S_IMODE(os.stat(p).st_mode) for p in directory.iterdir() if p.is_file()}


def test_every_file_the_sqlite_store_creates_is_0600(tmp_path: Any) -> None:
    # The -wal holds recorded model output: it, the -shm and the database are 0600 from their
    # first byte, whatever the process umask lets through (here: world-readable by default).
    old = os.umask(0o022)
    try:
        directory = tmp_path / "store"
        s = SQLiteStore(str(directory / "idem.db"))
        s.reserve(rec())
        done = threading.Thread(target=lambda: s.reserve(rec(key="k-thread")))  # a second connection
        done.start()
        done.join()
        modes = _modes(directory)
        assert {"idem.db", "idem.db-wal", "idem.db-shm"} <= set(modes), modes
        assert set(modes.values()) == {0o600}, modes
        s.close()
        reopened = SQLiteStore(str(directory / "idem.db"))  # the WAL is created again on reopen
        reopened.reserve(rec(key="k-again"))
        modes = _modes(directory)
        assert "idem.db-wal" in modes and set(modes.values()) == {0o600}, modes
        reopened.close()
        # A database an older version left 0644, with its side files open in another process, is
        # narrowed on open.
        legacy = tmp_path / "legacy"
        legacy.mkdir()
        other = sqlite3.connect(str(legacy / "old.db"))
        other.execute("PRAGMA journal_mode=WAL")
        other.execute("CREATE TABLE t (x)")
        other.execute("INSERT INTO t VALUES (1)")
        other.commit()
        assert set(_modes(legacy).values()) == {0o644}, _modes(legacy)
        narrowed = SQLiteStore(str(legacy / "old.db"))
        narrowed.reserve(rec())
        assert len(_modes(legacy)) == 3 and set(_modes(legacy).values()) == {0o600}, _modes(legacy)
        narrowed.close()
        other.close()
    finally:
        os.umask(old)


# ------------------------------------------------------------------ choosing a store


def test_store_by_object_and_by_url(make_client: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = MemoryStore()
    assert make_client(idempotency_store=mine).idempotency_store is mine
    assert isinstance(make_client(idempotency_store="memory:").idempotency_store, MemoryStore)
    absolute = make_client(idempotency_store=f"sqlite:///{tmp_path}/abs.db").idempotency_store
    assert isinstance(absolute, SQLiteStore) and absolute.path == f"{tmp_path}/abs.db"
    monkeypatch.chdir(tmp_path)
    relative = make_client(idempotency_store="sqlite:///rel.db").idempotency_store
    assert isinstance(relative, SQLiteStore) and relative.path == "rel.db"
    monkeypatch.setenv("HERMES_SDK_IDEMPOTENCY_STORE", f"sqlite:///{tmp_path}/env.db")
    assert make_client().idempotency_store.path == f"{tmp_path}/env.db"
    with pytest.raises(InvalidInputError, match="nosuch"):
        make_client(idempotency_store="nosuch://x")
    with pytest.raises(InvalidInputError):
        make_client(idempotency_store=object())


def test_a_plugin_claims_a_url_scheme(make_client: Any) -> None:
    seen: list[str] = []

    class Claims:
        name = "vault-store"

        @hookimpl
        def hermes_idempotency_store(self, url: str, client: Any) -> Any:
            if url.startswith("vault://"):
                seen.append(url)
                return MemoryStore()
            return None

    client = make_client(plugins=[Claims()], idempotency_store="vault://team-a")
    assert isinstance(client.idempotency_store, MemoryStore) and seen == ["vault://team-a"]
    # the built-in schemes still work with the plugin installed
    assert isinstance(make_client(plugins=[Claims()], idempotency_store="memory:").idempotency_store, MemoryStore)


# ------------------------------------------------------------------ the pipeline


def test_reserved_pending_before_sending_then_completed(make_client: Any, hermes_emulator: Any) -> None:
    states: list[Any] = []

    class Peek:
        name = "peek"

        @hookimpl(wrapper=True)
        def hermes_http_attempt(self, attempt: Any) -> Any:
            states.append(client.records.get(CHAT, "k-order").state)
            return (yield)

    client = make_client(plugins=[Peek()])
    completion = client.chat(prompt="hello", idempotency_key="k-order", action_id="act_order")
    assert states == ["pending"]
    record = client.records.get(CHAT, "k-order")
    assert record.state == "completed" and record.action_id == "act_order"
    result = client.action_result("act_order")
    assert result.status == "completed" and result.output["id"] == completion.id and not result.replayed
    assert hermes_emulator.requests_seen[-1].header("Idempotency-Key") == "k-order"


def test_completed_record_replays_without_executing_even_if_input_changed(make_client: Any,
                                                                           hermes_emulator: Any) -> None:
    client = make_client(strict_idempotency=False)  # the opt-out: replay whatever the input
    first = client.chat(prompt="first", idempotency_key="k-replay")
    again = client.chat(prompt="a different prompt", idempotency_key="k-replay")
    assert again.id == first.id and again.text == "ECHO: first"
    assert hermes_emulator.executions == 1 and len(hermes_emulator.requests_seen) == 1
    generic = client.invoke(CHAT, {"prompt": "first"}, idempotency_key="k-replay")
    assert generic.replayed is True and generic.status == "completed"
    assert generic.output["id"] == first.id


def test_a_changed_input_is_a_conflict_by_default(make_client: Any, hermes_emulator: Any) -> None:
    client = make_client()
    assert client.strict_idempotency is True
    client.chat(prompt="first", idempotency_key="k-strict")
    assert client.chat(prompt="first", idempotency_key="k-strict").text == "ECHO: first"
    with pytest.raises(IdempotencyConflictError) as info:
        client.chat(prompt="changed", idempotency_key="k-strict")
    assert info.value.code == "hermes_sdk.idempotency_conflict"
    assert not info.value.uncertain_outcome and info.value.details["original_action_id"]
    assert "new key" in info.value.message and "strict_idempotency=False" in info.value.message
    assert hermes_emulator.executions == 1 and len(hermes_emulator.requests_seen) == 1


def test_a_pending_record_is_outcome_unknown_and_never_executes(make_client: Any, hermes_emulator: Any) -> None:
    store = MemoryStore()
    store.reserve(rec(key="k-pending", action="act_lost"))
    client = make_client(idempotency_store=store)
    with pytest.raises(OutcomeUnknownError) as info:
        client.chat(prompt="hello", idempotency_key="k-pending")
    assert info.value.code == "hermes_sdk.outcome_unknown"
    assert info.value.details["original_action_id"] == "act_lost"
    assert hermes_emulator.executions == 0 and not hermes_emulator.requests_seen
    failed = client.invoke(CHAT, {"prompt": "hello"}, idempotency_key="k-pending")
    assert failed.status == "failed" and isinstance(failed.error, OutcomeUnknownError)


def test_operator_reconciliation(make_client: Any, hermes_emulator: Any) -> None:
    store = MemoryStore()
    # the lost call's record, bound to its input as the SDK reserves it
    store.reserve(rec(key="k-lost", action="act_lost", input_hash=input_hash(CHAT, {"prompt": "x"})))
    client = make_client(idempotency_store=store)
    # 1. read the durable action result first: nothing recorded yet
    assert client.action_result("act_lost") is None
    assert client.records.get(CHAT, "k-lost").state == "pending"
    # 2. an operator verified the provider state by hand and records it
    resolved = client.records.resolve_pending(CHAT, "k-lost", status="completed", output={"verified": True})
    assert resolved.action_id == "act_lost"
    assert client.action_result("act_lost").output == {"verified": True}
    replay = client.invoke(CHAT, {"prompt": "x"}, idempotency_key="k-lost")
    assert replay.replayed and replay.output == {"verified": True}
    with pytest.raises(InvalidInputError):
        client.records.resolve_pending(CHAT, "k-lost", status="completed")  # no longer pending
    # 3. or drops the key so it may run again
    assert client.records.forget(CHAT, "k-lost") is True
    assert client.chat(prompt="again", idempotency_key="k-lost").text == "ECHO: again"
    assert hermes_emulator.executions == 1


def test_an_uncertain_failure_is_recorded_and_replayed(make_client: Any, hermes_emulator: Any) -> None:
    client = make_client()
    hermes_emulator.drop_connection("mid_body")  # the model ran, the answer was lost on the way
    with pytest.raises(HermesError) as first:
        client.chat(prompt="lost answer", idempotency_key="k-fail", action_id="act_fail")
    assert first.value.uncertain_outcome
    recorded = client.action_result("act_fail")
    assert recorded.status == "failed" and recorded.error.code == first.value.code
    with pytest.raises(HermesError) as second:
        client.chat(prompt="lost answer", idempotency_key="k-fail")
    assert second.value.code == first.value.code and second.value.details.get("replayed") is True
    assert hermes_emulator.executions == 1


def test_a_failure_hermes_answered_is_recorded_and_replayed(make_client: Any, hermes_emulator: Any) -> None:
    # return_original_result: a certain failure is still the action's result; the key is not reused.
    client = make_client(api_key="wrong-key-value")
    with pytest.raises(HermesError) as info:
        client.chat(prompt="hi", idempotency_key="k-auth", action_id="act_auth")
    assert info.value.code == "connector.hermes_agent.authentication" and not info.value.uncertain_outcome
    recorded = client.action_result("act_auth")
    assert recorded.status == "failed" and recorded.error.http_status == 401
    assert client.records.get(CHAT, "k-auth").state == "completed"
    with pytest.raises(HermesError) as again:
        client.chat(prompt="hi", idempotency_key="k-auth")
    assert again.value.code == info.value.code and again.value.details.get("replayed") is True
    assert hermes_emulator.executions == 0


def test_a_rate_limited_call_gives_its_key_back_and_runs_nothing(hermes_emulator_factory: Any) -> None:
    """A 429 from the concurrency gate ran nothing (``before_agent_work``): the key keeps no result
    (issue 38 item 4), so the same key is sent again, and the model still ran only the holder."""
    # Its own emulator: a run another test left in flight on the shared one would take the only slot.
    hermes_emulator = hermes_emulator_factory(max_concurrent_runs=1)
    client = hermes_emulator.client(load_entrypoints=False)
    holder = client.chat_stream(prompt="SLOW:1 hold")
    next(iter(holder))  # holds the only slot
    deadline = time.monotonic() + 10  # the role chunk can come before the model thread runs (a loaded machine)
    while hermes_emulator.executions < 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        with pytest.raises(HermesError) as info:
            client.chat(prompt="wanted", idempotency_key="k-429")
        assert info.value.http_status == 429 and info.value.details.get("before_agent_work") is True
        assert client.records.get(CHAT, "k-429") is None  # nothing kept under the key
        with pytest.raises(HermesError) as again:  # the slot is still held: refused again, not replayed
            client.chat(prompt="wanted", idempotency_key="k-429")
        assert again.value.http_status == 429 and again.value.details.get("replayed") is None
    finally:
        holder.close()
    posts = [r for r in hermes_emulator.requests_seen if r.method == "POST" and r.path == "/v1/chat/completions"]
    assert len(posts) == 3  # the holder and the key's two refused tries
    assert hermes_emulator.executions == 1  # only the holder ran


def test_a_call_that_never_reached_hermes_gives_the_key_back() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, not listening: refused
        with HermesClient(dead, "some-key-value", load_entrypoints=False) as client:
            with pytest.raises(HermesError) as info:
                client.chat(prompt="hi", idempotency_key="k-down")
            assert client.records.get(CHAT, "k-down") is None
    assert info.value.code == "connector.hermes_agent.transport" and info.value.details["connect_failure"]


@pytest.mark.parametrize("operation", ["chat_stream", "responses_stream"])
def test_streams_are_recorded_as_their_aggregate(make_client: Any, hermes_emulator: Any, operation: str) -> None:
    client = make_client()
    call: Callable[..., Any] = (
        (lambda: client.chat_stream(prompt="stream me please", idempotency_key="k-stream"))
        if operation == "chat_stream" else
        (lambda: client.responses_stream(input="stream me please", idempotency_key="k-stream")))
    live = call().result()
    assert live.status == "completed"
    replayed = call().result()
    assert replayed.text == live.text and replayed.status == "completed"
    assert hermes_emulator.executions == 1
    record = client.records.get(f"cap:hermes_agent:default:{operation}", "k-stream")
    assert record.state == "completed" and record.result["output"]["text"] == live.text


def test_retention_delete_24h_others_configurable(make_client: Any) -> None:
    client = make_client(key_retention=120.0, approval_provider=approve_all)
    created = client.responses(input="to delete", store=True, idempotency_key="k-ret")
    client.response_delete(created.id, idempotency_key="k-del", reason="cleanup")
    now = time.time()
    chat_rec = client.records.get("cap:hermes_agent:default:responses", "k-ret")
    del_rec = client.records.get("cap:hermes_agent:default:response_delete", "k-del")
    assert 115 < chat_rec.expires_at - now <= 120
    assert DELETE_KEY_TTL_SECONDS - 10 < del_rec.expires_at - now <= DELETE_KEY_TTL_SECONDS
    assert DELETE_KEY_TTL_SECONDS == 86_400


def test_response_delete_is_recorded_and_replayed(make_client: Any, hermes_emulator: Any) -> None:
    client = make_client(approval_provider=approve_all)
    created = client.responses(input="to delete", store=True)
    receipt = client.response_delete(created.id, idempotency_key="k-del2", reason="cleanup")
    assert receipt.deleted is True
    again = client.response_delete(created.id, idempotency_key="k-del2", reason="cleanup")
    assert again.deleted is True  # the original result, not a 404 from a second DELETE
    deletes = [r for r in hermes_emulator.requests_seen if r.method == "DELETE"]
    assert len(deletes) == 1
    with pytest.raises(NotFoundError):  # a fresh key does reach the provider: 404 now
        client.response_delete(created.id, idempotency_key="k-del3", reason="cleanup")


def test_a_recorded_delete_replays_without_a_new_approval(make_client: Any, hermes_emulator: Any,
                                                          tmp_path: Any) -> None:
    # The receipt is kept 24 hours; the approval lasts 15 minutes. Replaying executes nothing.
    store = f"sqlite:///{tmp_path}/keys.db"
    approving = make_client(approval_provider=approve_all, idempotency_store=store)
    created = approving.responses(input="to delete", store=True)
    assert approving.response_delete(created.id, idempotency_key="k-del4", reason="cleanup").deleted
    later = make_client(idempotency_store=store)  # no approver at all: a new DELETE would be refused
    again = later.response_delete(created.id, idempotency_key="k-del4")
    assert again.deleted is True and again.id == created.id
    assert later.invoke(CHAT.replace(":chat", ":response_delete"), {"response_id": created.id},
                        idempotency_key="k-del4").replayed is True
    assert len([r for r in hermes_emulator.requests_seen if r.method == "DELETE"]) == 1
    with pytest.raises(ApprovalRequiredError):  # a new key still needs its approval
        later.response_delete(created.id, idempotency_key="k-del5")


def test_typed_results_carry_their_action_and_whether_they_were_replayed(make_client: Any) -> None:
    client = make_client(approval_provider=approve_all)
    first = client.chat(prompt="hi", idempotency_key="k-typed", action_id="act_typed")
    again = client.chat(prompt="hi", idempotency_key="k-typed", action_id="act_other")
    assert (first.action_id, first.replayed) == ("act_typed", False)
    assert (again.action_id, again.replayed) == ("act_typed", True)  # the original action
    assert again == first  # the same provider data: bookkeeping does not take part in equality
    plain = client.responses(input="x")
    assert plain.action_id and plain.action_id.startswith("act_") and plain.replayed is False
    stream = client.chat_stream(prompt="s", idempotency_key="k-typed-s", action_id="act_s")
    stream.result()
    replayed = client.chat_stream(prompt="s", idempotency_key="k-typed-s")
    assert (stream.action_id, stream.replayed) == ("act_s", False)
    assert (replayed.action_id, replayed.replayed) == ("act_s", True)
    receipt = client.response_delete(plain.id, idempotency_key="k-typed-d", action_id="act_d")
    assert (receipt.action_id, receipt.replayed) == ("act_d", False)
    assert client.response_delete(plain.id, idempotency_key="k-typed-d").replayed is True


def test_a_keyed_stream_records_its_aggregate_not_every_event(make_client: Any, tmp_path: Any) -> None:
    client = make_client(idempotency_store=f"sqlite:///{tmp_path}/idem.db")
    words = " ".join(f"w{i}" for i in range(2000))
    live = client.chat_stream(prompt=words, idempotency_key="k-big").result()
    assert live.status == "completed" and live.event_count > 100
    record = client.records.get("cap:hermes_agent:default:chat_stream", "k-big")
    output = record.result["output"]
    assert output["events"] == [] and output["event_count"] == live.event_count and output["text"] == live.text
    replayed = client.chat_stream(prompt=words, idempotency_key="k-big")
    assert "".join(replayed.text_deltas()) == live.text and replayed.replayed
