"""pytest plugin (entry point ``hermes_sdk``): emulator and fault-server fixtures.

``hermes_emulator`` is function-scoped but backed by one server per session:
starting sockets per test is slow, and ``reset()`` gives each test a clean
emulator (scripts, faults, counters, stores and settings restored).

pytest loads this module at every start wherever hermes-sdk is installed, so it imports nothing of
the emulator (nor of the SDK) until a fixture is used.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .emulator import EmulatorOptions, HermesEmulator
    from .faults import FaultServer

RUNS_APPROVAL_TIMEOUT = 5.0


@pytest.fixture(scope="session")
def _hermes_emulator_session() -> Iterator[HermesEmulator]:
    from .emulator import HermesEmulator

    emulator = HermesEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def hermes_emulator(
    _hermes_emulator_session: HermesEmulator,
) -> Iterator[HermesEmulator]:
    """A started, freshly reset emulator (shared server, reset between tests)."""
    _hermes_emulator_session.reset()
    yield _hermes_emulator_session
    _hermes_emulator_session.reset()


@pytest.fixture(scope="session")
def _hermes_runs_emulator_session() -> Iterator[HermesEmulator]:
    from .emulator import TOOLSETS, HermesEmulator

    emulator = HermesEmulator(toolsets=TOOLSETS, approval_timeout=RUNS_APPROVAL_TIMEOUT).start()
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def hermes_runs_emulator(
    _hermes_runs_emulator_session: HermesEmulator,
) -> Iterator[HermesEmulator]:
    """Like ``hermes_emulator`` with tools on: ``[terminal, file, todo]``, manual approvals
    with a 5 s ``approvals.timeout`` (the ``/v1/runs`` tool and approval events)."""
    _hermes_runs_emulator_session.reset()
    yield _hermes_runs_emulator_session
    _hermes_runs_emulator_session.reset()


@pytest.fixture
def hermes_emulator_factory() -> Iterator[Callable[..., HermesEmulator]]:
    """Start extra emulators with custom options; all are stopped after the test."""
    from .emulator import HermesEmulator

    started: list[HermesEmulator] = []

    def make(**options: Unpack[EmulatorOptions]) -> HermesEmulator:
        emulator = HermesEmulator(**options).start()
        started.append(emulator)
        return emulator

    yield make
    for emulator in started:
        emulator.stop()


@pytest.fixture
def hermes_fault_server() -> Iterator[FaultServer]:
    """A started ``FaultServer`` (default fault ``"ok"``; set ``.fault`` or ``.script(...)``),
    stopped after the test with every connection it still holds."""
    from .faults import FaultServer

    server = FaultServer().start()
    try:
        yield server
    finally:
        server.stop()
