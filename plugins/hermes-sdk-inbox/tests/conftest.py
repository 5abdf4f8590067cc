"""Queues on every backend (memory, SQLite, SQL on PostgreSQL and SQLite, Redis), and an emulator with tools."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from werkzeug.test import TestResponse

from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

VICTIM = "/scratch/victim"

if not hasattr(TestResponse, "text"):
    # Werkzeug 2.0 (Flask 2.0, a legacy application's pin) has no TestResponse.text; 2.1's is this.
    TestResponse.text = property(lambda self: self.get_data(as_text=True))  # type: ignore[attr-defined]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: spawns processes, a browser or waits on timers")
    config.addinivalue_line("markers", "browser: drives headless Chromium")


@pytest.fixture(scope="session")
def inbox_postgres_url() -> Iterator[str]:
    """A private PostgreSQL server for the SQL queue (skipped without PostgreSQL, failed in CI)."""
    sql_testing = pytest.importorskip("hermes_sdk_sql.testing")
    if not os.environ.get(sql_testing.URL_ENV) and sql_testing.postgres_bindir() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL is not installed, and CI must run these tests (apt-get install postgresql)")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    with sql_testing.postgres_server() as url:
        yield url


@pytest.fixture(params=["memory", "sqlite", "sql-sqlite", "postgresql", "redis"])
def queue_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A store URL, or a queue object (fakeredis), for one test."""
    kind = request.param
    if kind == "memory":
        yield "memory:"
    elif kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'inbox.db'}"
    elif kind == "sql-sqlite":
        pytest.importorskip("hermes_sdk_sql")
        yield f"sql+sqlite:///{tmp_path / 'inbox-sa.db'}"
    elif kind == "postgresql":
        base = request.getfixturevalue("inbox_postgres_url")
        import sqlalchemy as sa
        from hermes_sdk_sql.schema import make_engine

        name = "inbox_" + os.urandom(6).hex()
        admin, _ = make_engine(base, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f"CREATE DATABASE {name}"))
        admin.dispose()
        yield base.rsplit("/", 1)[0] + "/" + name
    else:
        fakeredis = pytest.importorskip("fakeredis")
        from hermes_sdk_inbox.redis_queue import RedisQueue

        # A server of its own and one command before threads use it: fakeredis sets a server up per
        # connection with unlocked check-then-set steps (see hermes-sdk-redis's tests/conftest.py).
        client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
        client.ping()
        yield RedisQueue(client, prefix="t:" + os.urandom(4).hex() + ":")


@pytest.fixture
def tools_emulator() -> Iterator[HermesEmulator]:
    """An emulator with Hermes' tools on and a scratch file the agent may be asked to delete."""
    emulator = HermesEmulator(toolsets=TOOLSETS, files={f"{VICTIM}/keep.txt": "precious"},
                              approval_timeout=30).start()
    yield emulator
    emulator.stop()
