"""A real PostgreSQL server for the session (started here, stopped by PID), plus SQLite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hermes_sdk_sql.testing import URL_ENV, postgres_bindir, postgres_server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a private PostgreSQL server (or HERMES_SDK_TEST_POSTGRES_URL's)."""
    if not os.environ.get(URL_ENV) and postgres_bindir() is None:
        if os.environ.get("CI") == "true":
            pytest.fail("PostgreSQL is not installed, and CI must run these tests (apt-get install postgresql)")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql); the SQLite tests still run")
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["postgresql", "sqlite"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database for one test: its own PostgreSQL database, or a SQLite file."""
    if request.param == "sqlite":
        yield f"sql+sqlite:///{tmp_path / 'store.db'}"
        return
    import sqlalchemy as sa
    from hermes_sdk_sql.schema import make_engine

    base = request.getfixturevalue("postgres_url")
    name = "t_" + os.urandom(6).hex()
    admin, _ = make_engine(base, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE {name}"))
    admin.dispose()
    yield base.rsplit("/", 1)[0] + "/" + name


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: spawns processes or waits on timers")
