"""Round 6 on Redis (a real redis-server when installed, else fakeredis): a refusal Hermes answers
before any agent work (503 ``gateway_draining``) keeps no result under its key: the same key runs
once the drain has ended."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_sdk_redis import RedisStore

from hermes_sdk import HermesClient, ServerError


def test_a_draining_refusal_gives_the_key_back(redis_client: Any, hermes_emulator: Any) -> None:
    store = RedisStore(redis_client)
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=store,
                      load_entrypoints=False) as client:
        hermes_emulator.draining = True
        try:
            with pytest.raises(ServerError) as refused:
                client.chat(prompt="drained", idempotency_key="redis-drain-6")
        finally:
            hermes_emulator.draining = False
        assert refused.value.details["before_agent_work"] is True
        assert store.get(refused.value.capability_id, "redis-drain-6") is None
        before = hermes_emulator.executions
        reply = client.chat(prompt="drained", idempotency_key="redis-drain-6")
        assert reply.text == "ECHO: drained" and not reply.replayed and hermes_emulator.executions == before + 1
