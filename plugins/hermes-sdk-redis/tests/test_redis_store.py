"""The Redis store: the kit's store contract (atomicity across connections and processes, expiry,
corrupt records), keys and TTLs, and the SDK end to end."""

from __future__ import annotations

import functools
import time
import uuid
from typing import Any, Callable

import pytest
from hermes_sdk_redis import RedisStore, RedisStorePlugin, store_from_url

from hermes_sdk import (
    HermesClient,
    IdempotencyConflictError,
    IdempotencyRecord,
    InvalidInputError,
    OutcomeUnknownError,
)
from hermes_sdk._core import _plugin_manager as plugins
from hermes_sdk.testing.contracts import IdempotencyStoreContract

CHAT = "cap:hermes_agent:default:chat"


def rec(key: str = "k", action: str = "act_1", ttl: float = 60.0) -> IdempotencyRecord:
    now = time.time()
    return IdempotencyRecord(capability_id=CHAT, key=key, action_id=action, input_hash="h", state="pending",
                             created_at=now, expires_at=now + ttl)


class TestRedisStore(IdempotencyStoreContract):
    """The kit's store contract, on a real redis-server and on fakeredis."""

    @pytest.fixture(autouse=True)
    def _redis(self, redis_client: Any) -> None:
        self.client = redis_client

    def make_store(self) -> RedisStore:
        return RedisStore(self.client)

    def write_raw(self, store: Any, capability_id: str, key: str, raw: str) -> None:
        assert store.redis.set(store._rec(capability_id, key), raw, xx=True, keepttl=True)


class TestRedisServerStore(IdempotencyStoreContract):
    """Store objects with connections of their own, in this process and in others, share one server."""

    shared_across_processes = True

    @pytest.fixture(autouse=True)
    def _server(self, redis_server: str) -> None:
        self.url = f"{redis_server}?prefix=contract-{uuid.uuid4().hex[:8]}:"

    def make_store(self) -> RedisStore:
        store = store_from_url(self.url)
        assert store is not None
        return store

    def store_spec(self, store: Any) -> Callable[[], Any]:
        return functools.partial(store_from_url, self.url)


def test_keys_hide_the_idempotency_key_and_carry_the_ttl(redis_client: Any) -> None:
    store = RedisStore(redis_client, prefix="t:")
    store.reserve(rec(key="secret-key-value", ttl=120))
    names = [n.decode() for n in redis_client.keys("t:*")]
    assert not any("secret-key-value" in n for n in names) and len(names) == 2
    for name in names:
        assert 115_000 < redis_client.pttl(name) <= 120_000
    store.complete(CHAT, "secret-key-value", {"status": "completed"})
    assert all(redis_client.pttl(n) > 0 for n in names)  # completing keeps the TTL


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
