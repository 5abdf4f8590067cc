"""Installed but not configured, the plugin costs a client no redis-py import (issue: plugins import
their backend only when used). Measured in a fresh process: which modules a client and its first
call loaded, not how long they took. Configured, the store works as before: test_redis_store.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from hermes_sdk._core import _plugin_manager as plugins

HEAVY = ("redis",)
CHILD = r'''
import json, os, sys
from hermes_sdk import HermesClient

client = HermesClient(sys.argv[1], sys.argv[2])
client.chat(prompt="first call")
loaded = client.plugin_manager.get_plugin("hermes-sdk-redis") is not None
before = sorted(sys.modules)
os.environ["HERMES_SDK_IDEMPOTENCY_STORE"] = "redis://127.0.0.1:1/0?prefix=lazy:"  # built, never reached
configured = HermesClient(sys.argv[1], sys.argv[2])
print(json.dumps({"loaded": loaded, "before": before, "after": sorted(sys.modules),
                  "store": type(configured.idempotency_store).__module__}))
'''


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


def test_an_unconfigured_plugin_imports_no_redis(hermes_emulator: Any) -> None:
    if "hermes-sdk-redis" not in {ep.name for ep, _ in plugins._entry_points()}:
        pytest.skip("hermes-sdk-redis is not installed (pip install -e plugins/hermes-sdk-redis)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_SDK_", "OTEL_PYTHON_"))}
    out = subprocess.run([sys.executable, "-c", CHILD, hermes_emulator.base_url, hermes_emulator.api_key],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    assert seen["loaded"]  # the entry point is registered with the client...
    assert heavy(seen["before"]) == []  # ...and imported nothing of redis-py for it
    assert seen["store"] == "hermes_sdk_redis.store" and "redis" in heavy(seen["after"])  # a redis:// URL does


def test_every_public_name_still_imports_from_the_package() -> None:
    import hermes_sdk_redis as package
    from hermes_sdk_redis import store

    assert set(package.__all__) <= set(dir(package))  # what autodoc and `from ... import *` read
    assert package.RedisStore is store.RedisStore and package.store_from_url is store.store_from_url
    with pytest.raises(AttributeError):
        package.NotAName  # noqa: B018
