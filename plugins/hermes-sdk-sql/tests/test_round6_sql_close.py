"""Round 6 (issue 38, item 3): ``client.close()`` closes the SQL store the client built from a URL
(its engine's pool), and leaves a store object the caller passed in open.

On a real PostgreSQL (the sessions on the test's own database) and on a SQLite file (this
process's descriptors of the file and its side files).
"""

from __future__ import annotations

import os
import time
from typing import Any
from urllib.parse import urlsplit

import pytest
from hermes_sdk_sql import SQLStore, SQLStorePlugin

from hermes_sdk import HermesClient

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")


def _descriptors() -> list[str]:
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            found.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            continue
    return found


def open_to(db_url: str) -> int:
    """Open connections to the test's own database: this process's descriptors of a SQLite file,
    else PostgreSQL's sessions on that database (``pg_stat_activity``)."""
    if db_url.startswith("sql+sqlite:///"):
        path = db_url[len("sql+sqlite:///"):]
        return sum(1 for t in _descriptors() if t == path or t.startswith(path + "-"))
    import sqlalchemy as sa
    from hermes_sdk_sql.schema import make_engine

    admin, _ = make_engine(db_url.rsplit("/", 1)[0] + "/postgres")
    try:
        with admin.connect() as conn:
            return int(conn.execute(sa.text("SELECT count(*) FROM pg_stat_activity WHERE datname = :name"),
                                    {"name": urlsplit(db_url).path.lstrip("/")}).scalar_one())
    finally:
        admin.dispose()


def closed_to(db_url: str, expected: int) -> bool:
    """Whether the connections are back to ``expected``: at once for SQLite; a PostgreSQL backend
    leaves ``pg_stat_activity`` after the client's socket closes, so that one is waited for."""
    deadline = time.monotonic() + 30
    while open_to(db_url) != expected:
        if db_url.startswith("sql+sqlite:///") or time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_client_close_closes_the_sql_store_it_built(db_url: str, hermes_emulator: Any) -> None:
    before = open_to(db_url)
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=db_url,
                          load_entrypoints=False, plugins=[SQLStorePlugin()])
    client.chat(prompt="r6 sql", idempotency_key="r6-sql-url")
    assert open_to(db_url) > before
    client.close()
    assert closed_to(db_url, before)


def test_a_sql_store_the_caller_passed_in_stays_open(db_url: str, hermes_emulator: Any) -> None:
    before = open_to(db_url)
    store = SQLStore(db_url)
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=store,
                      load_entrypoints=False) as client:
        client.chat(prompt="r6 sql given", idempotency_key="r6-sql-given")
    assert store.get("cap:hermes_agent:default:chat", "r6-sql-given") is not None
    assert open_to(db_url) > before  # the caller's store, still the caller's
    store.close()
    assert closed_to(db_url, before)
