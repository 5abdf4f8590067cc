"""Round 6 (issue 38, item 3): ``client.close()`` closes the SQL store the client built from a URL
(its engine's pool), and leaves a store object the caller passed in open.

On a real PostgreSQL (this process's TCP connections to its port) and on a SQLite file (this
process's descriptors of the file and its side files).
"""

from __future__ import annotations

import os
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
    """This process's open connections to the database: descriptors of a SQLite file, else TCP
    sockets to the server's port."""
    if db_url.startswith("sql+sqlite:///"):
        path = db_url[len("sql+sqlite:///"):]
        return sum(1 for t in _descriptors() if t == path or t.startswith(path + "-"))
    port = urlsplit(db_url).port
    sockets = {t[len("socket:["):-1] for t in _descriptors() if t.startswith("socket:[")}
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in sockets:
                count += 1
    return count


def test_client_close_closes_the_sql_store_it_built(db_url: str, hermes_emulator: Any) -> None:
    before = open_to(db_url)  # (a shared PostgreSQL: what other tests left open is not this test's)
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=db_url,
                          load_entrypoints=False, plugins=[SQLStorePlugin()])
    client.chat(prompt="r6 sql", idempotency_key="r6-sql-url")
    assert open_to(db_url) > before
    client.close()
    assert open_to(db_url) == before


def test_a_sql_store_the_caller_passed_in_stays_open(db_url: str, hermes_emulator: Any) -> None:
    before = open_to(db_url)
    store = SQLStore(db_url)
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=store,
                      load_entrypoints=False) as client:
        client.chat(prompt="r6 sql given", idempotency_key="r6-sql-given")
    assert store.get("cap:hermes_agent:default:chat", "r6-sql-given") is not None
    assert open_to(db_url) > before  # the caller's store, still the caller's
    store.close()
    assert open_to(db_url) == before
