"""Installed but not configured, the inbox costs a client no Flask (nor redis-py, SQLAlchemy) import
(issue: plugins import their backend only when used); configured, its provider needs no Flask
either: only the web page does. Measured in a fresh process: which modules were loaded, not how
long they took. The provider and page work as before: test_inbox.py, test_web.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hermes_sdk._core import _plugin_manager as plugins

HEAVY = ("flask", "werkzeug", "jinja2", "itsdangerous", "waitress", "redis", "sqlalchemy")
CHILD = r'''
import json, os, sys
from hermes_sdk import ApprovalRequiredError, HermesClient

seen = {}
client = HermesClient(sys.argv[1], sys.argv[2])
client.chat(prompt="first call")
seen["loaded"] = client.plugin_manager.get_plugin("hermes-sdk-inbox") is not None
seen["unconfigured"] = sorted(sys.modules)
os.environ["HERMES_SDK_INBOX_STORE"] = "sqlite:///" + sys.argv[3]
os.environ["HERMES_SDK_DISABLE_PLUGINS"] = "hermes-demo"  # the test venv's demo plugin answers the hook first
configured = HermesClient(sys.argv[1], sys.argv[2])
try:
    configured.response_delete("resp_abc", idempotency_key="k", reason="r")
except ApprovalRequiredError as exc:
    seen["entry"] = exc.details.get("inbox_entry_id")
seen["configured"] = sorted(sys.modules)
from hermes_sdk_inbox import create_app
seen["page"] = sorted(sys.modules)
print(json.dumps(seen))
'''


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in HEAVY]


def test_an_unconfigured_inbox_imports_no_flask(hermes_emulator: Any, tmp_path: Path) -> None:
    if "hermes-sdk-inbox" not in {ep.name for ep, _ in plugins._entry_points()}:
        pytest.skip("hermes-sdk-inbox is not installed (pip install -e plugins/hermes-sdk-inbox)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_SDK_", "OTEL_PYTHON_"))}
    out = subprocess.run([sys.executable, "-c", CHILD, hermes_emulator.base_url, hermes_emulator.api_key,
                          str(tmp_path / "inbox.db")], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-3000:]
    seen = json.loads(out.stdout)
    assert seen["loaded"]  # the entry point is registered with the client...
    assert heavy(seen["unconfigured"]) == []  # ...and imported nothing heavy for it
    assert str(seen.get("entry", "")).startswith("inb_")  # configured by environment, it queues the approval
    assert heavy(seen["configured"]) == []  # with its SQLite queue: no Flask
    assert {"flask", "werkzeug"} <= set(heavy(seen["page"]))  # the web page imports it


def test_every_public_name_still_imports_from_the_package() -> None:
    import hermes_sdk_inbox as package
    from hermes_sdk_inbox import inbox, provider, queue, resume, web

    assert set(package.__all__) <= set(dir(package))  # what autodoc and `from ... import *` read
    assert package.Inbox is inbox.Inbox and package.InboxProvider is provider.InboxProvider
    assert package.SQLiteQueue is queue.SQLiteQueue and package.ResumeWorker is resume.ResumeWorker
    assert package.create_app is web.create_app and package.HERMES_APPROVAL_TIMEOUT == 60
    with pytest.raises(AttributeError):
        package.NotAName  # noqa: B018
