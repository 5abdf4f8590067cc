"""Fixtures of the framework examples' tests (examples_support.py says how they skip)."""

from __future__ import annotations

import os
from typing import Any

import examples_support  # noqa: F401  (puts examples/ on sys.path)
import pytest


@pytest.fixture
def hermes_env(hermes_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The emulator, with HERMES_BASE_URL and HERMES_API_KEY pointing at it, as a deployment would
    configure the app: the examples make their client with a bare ``HermesClient()``."""
    for name in list(os.environ):
        if name.startswith("HERMES_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_API_KEY", hermes_emulator.api_key)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")  # only the built-ins, whatever else is installed
    return hermes_emulator
