"""Shared helpers for the plugin-system and safety-promise tests (real sockets, the emulator)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Callable

import pytest
from plugin_support import RecordingTracer, approve_all  # noqa: F401  (re-exported for fixtures)

from hermes_sdk import HermesClient


@pytest.fixture
def tracer() -> RecordingTracer:
    return RecordingTracer()


@pytest.fixture
def make_client(hermes_emulator: Any) -> Iterator[Callable[..., HermesClient]]:
    """Clients on the emulator, isolated from installed entry points unless asked."""
    made: list[HermesClient] = []

    def make(**kwargs: Any) -> HermesClient:
        kwargs.setdefault("load_entrypoints", False)
        client = hermes_emulator.client(**kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


