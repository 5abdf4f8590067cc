"""Fixtures for the core-client suite; helpers live in ``core_support``."""

from __future__ import annotations

from typing import Callable, Iterator

import pytest
from core_support import DEADLINE_FILES, Handler, RawServer, approve_all

from hermes_sdk import HermesClient
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in DEADLINE_FILES:
            item.add_marker(pytest.mark.serial)


@pytest.fixture(autouse=True)
def private_state_home(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The CLI keeps idempotency keys, the last session and its chat history in
    ``$XDG_STATE_HOME/hermes-sdk``: every test (and every CLI subprocess it starts, which inherits
    the environment) gets a fresh one, never the home directory of whoever runs the tests."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))


@pytest.fixture
def emu(hermes_emulator: HermesEmulator) -> HermesEmulator:
    return hermes_emulator


@pytest.fixture
def tools_emu(emu: HermesEmulator) -> HermesEmulator:
    """The emulator with its tools on and a file to keep at /srv/data (a module may override it)."""
    emu.toolsets = TOOLSETS
    emu.files["/srv/data/keep.txt"] = "precious"
    return emu


@pytest.fixture
def client(emu: HermesEmulator) -> Iterator[HermesClient]:
    with emu.client(load_entrypoints=False, approval_provider=approve_all) as c:
        yield c


@pytest.fixture
def raw_server() -> Iterator[Callable[[Handler], RawServer]]:
    servers: list[RawServer] = []

    def make(handler: Handler) -> RawServer:
        s = RawServer(handler)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.close()
