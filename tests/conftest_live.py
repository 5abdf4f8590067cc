"""pytest plugin with the live Hermes server fixtures (see docs/live-server.md).

Registered by ``tests/live/conftest.py``, or, to share the same servers with other
suites (e.g. tests/conformance), by ``pytest_plugins = ["conftest_live"]`` in the
top-level ``tests/conftest.py``. Either way it is one plugin named
``conftest_live``, so each server starts at most once per session.

Skipped unless ``HERMES_LIVE=1``. With it set, a failure to install or start the
server is an ERROR of every test that asked for it, never a skip.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# Import the harness whatever pytest's import mode (importlib does not touch sys.path).
sys.path.insert(0, str(Path(__file__).resolve().parent / "live"))

from hermes_server import HermesServer

LIVE = os.environ.get("HERMES_LIVE") == "1"
LIVE_DIR = Path(__file__).resolve().parent / "live"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every test under tests/live gets the "live" marker, so `-m "not live"` drops them.
    for item in items:
        if LIVE_DIR in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.live)


def _serve(request: pytest.FixtureRequest, **options: int) -> Iterator[HermesServer]:
    if not LIVE:
        pytest.skip("live Hermes server tests need HERMES_LIVE=1")
    server = HermesServer(**options)
    # Registered before start(): stop() runs even if start() fails half-way.
    request.addfinalizer(server.stop)
    server.start()
    yield server


@pytest.fixture(scope="session")
def hermes_live(request: pytest.FixtureRequest) -> Iterator[HermesServer]:
    """The default live server: concurrency cap 10, one upstream try."""
    yield from _serve(request, max_concurrent_runs=10, api_max_retries=1)


@pytest.fixture(scope="session")
def hermes_live_cap1(request: pytest.FixtureRequest) -> Iterator[HermesServer]:
    """A second server with cap 1 (429s) and Hermes' default 3 upstream retries."""
    yield from _serve(request, max_concurrent_runs=1, api_max_retries=3)
