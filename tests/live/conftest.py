"""Makes the live Hermes fixtures (``tests/conftest_live.py``) available here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import conftest_live


def pytest_configure(config: pytest.Config) -> None:
    # Same name as `pytest_plugins = ["conftest_live"]` would use: never registered twice,
    # so a top-level registration and this one share one server per session.
    if not config.pluginmanager.has_plugin("conftest_live"):
        config.pluginmanager.register(conftest_live, "conftest_live")
