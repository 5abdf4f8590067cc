"""Installed but not configured, the plugin costs a client no SQLAlchemy or driver import (issue:
plugins import their backend only when used). Measured in a fresh process: which modules a client
and its first call loaded, not how long they took. Configured, the store works as before:
test_sql_store.py and test_round5_sql_store.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_sdk._core import _plugin_manager as plugins

HEAVY = ("sqlalchemy", "psycopg", "psycopg2", "pymysql", "MySQLdb")
CHILD = r'''
import json, sys
from hermes_sdk import HermesClient

client = HermesClient(sys.argv[1], sys.argv[2])
client.chat(prompt="first call")
loaded = client.plugin_manager.get_plugin("hermes-sdk-sql") is not None
before = sorted(sys.modules)
configured = HermesClient(sys.argv[1], sys.argv[2], idempotency_store=sys.argv[3])
first = configured.chat(prompt="keyed", idempotency_key="lazy-1")
replayed = configured.chat(prompt="keyed", idempotency_key="lazy-1").id == first.id
print(json.dumps({"loaded": loaded, "before": before, "after": sorted(sys.modules), "replayed": replayed,
                  "store": type(configured.idempotency_store).__module__}))
'''


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


def test_an_unconfigured_plugin_imports_no_sqlalchemy(hermes_emulator: Any, tmp_path: Path) -> None:
    if "hermes-sdk-sql" not in {ep.name for ep, _ in plugins._entry_points()}:
        pytest.skip("hermes-sdk-sql is not installed (pip install -e plugins/hermes-sdk-sql)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_SDK_", "OTEL_PYTHON_"))}
    url = f"sql+sqlite:///{tmp_path / 'idem.db'}"
    out = subprocess.run([sys.executable, "-c", CHILD, hermes_emulator.base_url, hermes_emulator.api_key, url],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    assert seen["loaded"]  # the entry point is registered with the client...
    assert heavy(seen["before"]) == []  # ...and imported nothing of SQLAlchemy or a driver for it
    assert seen["store"] == "hermes_sdk_sql.store" and "sqlalchemy" in heavy(seen["after"])  # sql+ URL does
    assert seen["replayed"]


def test_every_public_name_still_imports_from_the_package() -> None:
    import hermes_sdk_sql as package
    from hermes_sdk_sql import queue, schema, store

    assert set(package.__all__) <= set(dir(package))  # what autodoc and `from ... import *` read
    assert package.SQLStore is store.SQLStore and package.SQLApprovalQueue is queue.SQLApprovalQueue
    assert package.MIGRATIONS is schema.MIGRATIONS and package.sqlalchemy_url is schema.sqlalchemy_url
    with pytest.raises(AttributeError):
        package.NotAName  # noqa: B018


CLAIMED = ["postgresql://h/db", "POSTGRES://h/db", "postgresql+psycopg2://h/db", "mysql://h/db", "mysql+pymysql://h/db",
           " sql+sqlite:///x.db", "SQL+oracle://h"]
NOT_CLAIMED = ["sqlite:///x.db", "memory:", "redis://h", "postgresqlx://h", "sql:x", ""]


@pytest.mark.parametrize("url", CLAIMED + NOT_CLAIMED)
def test_the_plugin_looks_further_only_at_urls_the_store_may_claim(url: str) -> None:
    from hermes_sdk_sql.plugin import may_claim
    from hermes_sdk_sql.schema import sqlalchemy_url

    assert may_claim(url) == (url in CLAIMED)
    if sqlalchemy_url(url) is not None:  # the cheap look never turns away a URL the store takes
        assert may_claim(url)
