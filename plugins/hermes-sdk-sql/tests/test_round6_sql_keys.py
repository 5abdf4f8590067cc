"""Round 6 on real databases: a refusal Hermes answers before any agent work (503
``gateway_draining``) keeps no result under its key, on PostgreSQL and SQLite: the same key runs
once the drain has ended."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_sdk_sql import SQLStore, SQLStorePlugin

from hermes_sdk import HermesClient, ServerError


def test_a_draining_refusal_gives_the_key_back(db_url: str, hermes_emulator: Any) -> None:
    store = SQLStore(db_url)
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=store,
                      load_entrypoints=False, plugins=[SQLStorePlugin()]) as client:
        hermes_emulator.draining = True
        try:
            with pytest.raises(ServerError) as refused:
                client.chat(prompt="drained", idempotency_key="sql-drain-6")
        finally:
            hermes_emulator.draining = False
        assert refused.value.details["before_agent_work"] is True
        assert store.get(refused.value.capability_id, "sql-drain-6") is None
        before = hermes_emulator.executions
        reply = client.chat(prompt="drained", idempotency_key="sql-drain-6")
        assert reply.text == "ECHO: drained" and not reply.replayed and hermes_emulator.executions == before + 1
    store.close()
