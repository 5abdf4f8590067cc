"""The Redis store: the store contract, atomicity across connections, TTLs, and the SDK end to end."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis
from hermes_sdk_redis import RedisStore, RedisStorePlugin, store_from_url

from hermes_sdk import (
    HermesClient,
    IdempotencyConflictError,
    IdempotencyRecord,
    InvalidInputError,
    OutcomeUnknownError,
)
from hermes_sdk._core import _plugin_manager as plugins

CHAT = "cap:hermes_agent:default:chat"


def rec(key: str = "k", action: str = "act_1", ttl: float = 60.0) -> IdempotencyRecord:
    now = time.time()
    return IdempotencyRecord(capability_id=CHAT, key=key, action_id=action, input_hash="h", state="pending",
                             created_at=now, expires_at=now + ttl)


def test_store_contract(redis_client: Any) -> None:
    store = RedisStore(redis_client)
    assert store.reserve(rec()) is None
    existing = store.reserve(rec(action="act_2"))
    assert existing.action_id == "act_1" and existing.state == "pending"
    assert store.get_by_action("act_2") is None and store.get_by_action("act_1").key == "k"
    store.complete(CHAT, "k", {"status": "completed"})
    assert store.get(CHAT, "k").state == "completed" and store.get(CHAT, "k").result == {"status": "completed"}
    assert store.reserve(rec(action="act_3")).state == "completed"
    assert store.forget(CHAT, "k") is True and store.forget(CHAT, "k") is False
    assert store.get(CHAT, "k") is None and store.get_by_action("act_1") is None
    store.complete(CHAT, "k", {"status": "completed"})  # completing a forgotten key is a no-op
    assert store.get(CHAT, "k") is None
    store.close()


def test_keys_hide_the_idempotency_key_and_carry_the_ttl(redis_client: Any) -> None:
    store = RedisStore(redis_client, prefix="t:")
    store.reserve(rec(key="secret-key-value", ttl=120))
    names = [n.decode() for n in redis_client.keys("t:*")]
    assert not any("secret-key-value" in n for n in names) and len(names) == 2
    for name in names:
        assert 115_000 < redis_client.pttl(name) <= 120_000
    store.complete(CHAT, "secret-key-value", {"status": "completed"})
    assert all(redis_client.pttl(n) > 0 for n in names)  # completing keeps the TTL


def test_an_expired_record_gives_its_key_back(redis_client: Any) -> None:
    store = RedisStore(redis_client)
    store.reserve(rec(ttl=0.2))
    time.sleep(0.3)
    assert store.get(CHAT, "k") is None
    assert store.reserve(rec(action="act_new")) is None


def test_reserve_is_atomic_across_connections(redis_server: str) -> None:
    winners: list[int] = []
    barrier = threading.Barrier(20)

    def race(i: int) -> None:
        store = RedisStore(redis.Redis.from_url(redis_server), prefix="race:")  # one connection per "host"
        barrier.wait()
        if store.reserve(rec(action=f"act_{i}")) is None:
            winners.append(i)
        store.redis.close()

    threads = [threading.Thread(target=race, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1


def test_url_claims_redis_and_rediss_only() -> None:
    assert store_from_url("memory:") is None and store_from_url("sqlite:///x.db") is None
    store = store_from_url("redis://127.0.0.1:1/3?prefix=app:")
    assert isinstance(store, RedisStore) and store.prefix == "app:"
    assert store.redis.connection_pool.connection_kwargs["db"] == 3
    assert isinstance(store_from_url("rediss://127.0.0.1:1/0"), RedisStore)


def test_registered_as_an_entry_point() -> None:
    names = {ep.name: ep.value for ep, _ in plugins._entry_points()}
    if "hermes-sdk-redis" not in names:
        pytest.skip("hermes-sdk-redis is not installed (pip install -e plugins/hermes-sdk-redis)")
    assert names["hermes-sdk-redis"] == "hermes_sdk_redis.plugin:RedisStorePlugin"


def test_sdk_end_to_end(redis_server: str, hermes_emulator: Any) -> None:
    url = redis_server
    def make(**kw: Any) -> HermesClient:
        return HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=url,
                            load_entrypoints=False, plugins=[RedisStorePlugin()], **kw)

    with pytest.raises(InvalidInputError):  # without the plugin nobody claims redis://
        HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=url,
                     load_entrypoints=False)
    a, b = make(key_retention=300), make()
    a.idempotency_store.redis.flushdb()
    first = a.chat(prompt="hello", idempotency_key="rk-1", action_id="act_redis_1")
    assert b.chat(prompt="hello", idempotency_key="rk-1").id == first.id  # another "host" replays it
    with pytest.raises(IdempotencyConflictError):  # a changed input under the key is refused (the default)
        b.chat(prompt="changed", idempotency_key="rk-1")
    assert b.action_result("act_redis_1").output["id"] == first.id
    assert hermes_emulator.executions == 1

    # a record left pending by a crashed host stops everyone
    now = time.time()
    b.idempotency_store.reserve(IdempotencyRecord(capability_id=CHAT, key="rk-2", action_id="act_dead",
                                                  input_hash="h", state="pending", created_at=now,
                                                  expires_at=now + 60))
    with pytest.raises(OutcomeUnknownError):
        a.chat(prompt="hello", idempotency_key="rk-2")
    assert hermes_emulator.executions == 1
    assert a.records.forget(CHAT, "rk-2")
    a.chat(prompt="hello", idempotency_key="rk-2")
    assert hermes_emulator.executions == 2
    a.close()
    b.close()
