"""pytest plugin (entry point ``hermes_sdk``): emulator, fault-server and cassette fixtures.

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

    from .cassette import Cassette
    from .emulator import EmulatorOptions, HermesEmulator
    from .faults import FaultServer

RUNS_APPROVAL_TIMEOUT = 5.0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "hermes_cassette(path=None, mode='once', secrets=(), redact=None): options of the test's "
        "hermes_cassette (hermes_sdk.testing.cassette)")


@pytest.fixture
def hermes_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """Record the SDK's traffic in this test to ``cassettes/<module>/<test>.json`` beside the test
    file, or replay it from there with Hermes gone (``hermes_sdk.testing.cassette``; runs that wait
    for an approval included). ``@pytest.mark.hermes_cassette(...)`` passes options;
    ``HERMES_CASSETTE_MODE=record`` records again, ``=replay`` never records."""
    import os
    import re
    from pathlib import Path

    from .cassette import use_cassette

    marker = request.node.get_closest_marker("hermes_cassette")
    options = dict(marker.kwargs) if marker is not None else {}
    where = Path(str(request.node.path))
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    path = options.pop("path", None) or where.parent / "cassettes" / where.stem / f"{name}.json"
    mode = os.environ.get("HERMES_CASSETTE_MODE") or options.pop("mode", "once")
    options.pop("mode", None)
    with use_cassette(path, mode, **options) as cassette:
        yield cassette


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
