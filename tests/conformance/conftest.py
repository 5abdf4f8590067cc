"""One conformance suite, two servers: the emulator and the REAL Hermes server (0.19.0; 0.20.1 or
0.22.2 with ``HERMES_PIP_SPEC``, spec/hermes-next.md). The emulator plays the same release.

Every test takes the ``server`` fixture, parametrised ``["emulator", "hermes"]``. Both
sides expose the same ``Target`` surface, so the very same assertions run against both and
any difference between the emulator and real Hermes fails the suite (docs/conformance.md).

- "emulator" always runs: a ``HermesEmulator`` configured like the live server
  (cap 10, ``api_max_retries`` 1, 30 s keepalive, 50 ms Responses delta batching).
- "hermes" needs ``HERMES_LIVE=1`` (else skipped); with it set, a server that fails to
  install or start is an ERROR, never a skip. See docs/live-server.md.

Cap-1 / default-retries cases (transcripts 19 and 24) use ``server_cap1``: a second
instance of the same kind (cap 1, ``api_max_retries`` 3).
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_sdk.testing import HermesEmulator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "live"))

from hermes_server import HermesServer  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from conformance_helpers import HERMES_KEEPALIVE_SECONDS, SERVER_VERSION, Target  # noqa: E402
from runs_helpers import APPROVAL_TIMEOUT, RunsTarget  # noqa: E402

from hermes_sdk.testing.emulator import TOOLSETS  # noqa: E402

LIVE = os.environ.get("HERMES_LIVE") == "1"
SERVERS = ["emulator", "hermes"]


def _emulator_target(max_concurrent_runs: int, api_max_retries: int) -> tuple[HermesEmulator, Target]:
    emulator = HermesEmulator(
        api_key=f"conformance-{secrets.token_hex(8)}",
        max_concurrent_runs=max_concurrent_runs,
        api_max_retries=api_max_retries,
        keepalive_seconds=HERMES_KEEPALIVE_SECONDS,
        delta_batch_ms=50,  # Hermes batches Responses text deltas for 50 ms (L3501-3551)
        server_version=SERVER_VERSION,
    ).start()
    target = Target(
        "emulator",
        emulator.base_url,
        emulator.api_key,
        lambda: emulator.upstream_calls,
        emulator=emulator,
        api_max_retries=api_max_retries,
        max_concurrent_runs=max_concurrent_runs,
    )
    return emulator, target


def _live_target(
    request: pytest.FixtureRequest, max_concurrent_runs: int, api_max_retries: int
) -> Target:
    if not LIVE:
        pytest.skip("the real Hermes server needs HERMES_LIVE=1 (docs/live-server.md)")
    live = HermesServer(max_concurrent_runs=max_concurrent_runs, api_max_retries=api_max_retries)
    request.addfinalizer(live.stop)  # before start(): stopped even if start() fails half-way
    live.start()  # HermesServerError here is an ERROR of the test, never a skip

    def calls() -> list[dict[str, Any]]:
        return [
            {"roles": c.get("roles"), "n_messages": c.get("n_messages"), "last_user": c.get("last_user")}
            for c in live.upstream_calls()
        ]

    return Target(
        "hermes",
        live.base_url,
        live.api_key,
        calls,
        live=live,
        api_max_retries=api_max_retries,
        max_concurrent_runs=max_concurrent_runs,
    )


def _make(request: pytest.FixtureRequest, kind: str, cap: int, retries: int) -> Iterator[Target]:
    if kind == "emulator":
        emulator, target = _emulator_target(cap, retries)
        try:
            yield target
        finally:
            emulator.stop()
    else:
        yield _live_target(request, cap, retries)


@pytest.fixture(scope="session")
def _emulator_main(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from _make(request, "emulator", 10, 1)


@pytest.fixture(scope="session")
def _emulator_cap1(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from _make(request, "emulator", 1, 3)


@pytest.fixture(scope="session")
def _hermes_main(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from _make(request, "hermes", 10, 1)


@pytest.fixture(scope="session")
def _hermes_cap1(request: pytest.FixtureRequest) -> Iterator[Target]:
    yield from _make(request, "hermes", 1, 3)


@pytest.fixture(params=SERVERS)
def server(request: pytest.FixtureRequest) -> Target:
    """The server under test: cap 10, one upstream try (like the ``hermes_live`` fixture)."""
    target: Target = request.getfixturevalue(f"_{request.param}_main")
    return target


@pytest.fixture
def server_cap1(server: Target, request: pytest.FixtureRequest) -> Target:
    """A second instance of the same kind: cap 1 and Hermes' default 3 upstream tries."""
    target: Target = request.getfixturevalue(f"_{server.kind}_cap1")
    return target


# --------------------------------------------------------------------------- runs (tools on)
# spec/hermes-runs.md section 0: platform_toolsets.api_server [terminal, file, todo], manual
# approvals with a short approvals.timeout, the terminal's cwd a per-server scratch directory.


def _runs_make(
    request: pytest.FixtureRequest, kind: str, cap: int, approval_mode: str = "manual"
) -> Iterator[RunsTarget]:
    if kind == "emulator":
        emulator = HermesEmulator(
            api_key=f"conformance-runs-{secrets.token_hex(8)}",
            max_concurrent_runs=cap,
            keepalive_seconds=HERMES_KEEPALIVE_SECONDS,
            delta_batch_ms=50,
            toolsets=TOOLSETS,
            approval_timeout=APPROVAL_TIMEOUT,
            approval_mode=approval_mode,
            server_version=SERVER_VERSION,
        ).start()
        try:
            yield RunsTarget(
                "emulator", emulator.base_url, emulator.api_key, emulator=emulator, max_concurrent_runs=cap
            )
        finally:
            emulator.stop()
        return
    if not LIVE:
        pytest.skip("the real Hermes server needs HERMES_LIVE=1 (docs/live-server.md)")
    live = HermesServer(
        max_concurrent_runs=cap,
        api_max_retries=1,
        tools=True,
        approval_timeout=APPROVAL_TIMEOUT,
        approval_mode=approval_mode,
    )
    request.addfinalizer(live.stop)
    live.start()
    yield RunsTarget("hermes", live.base_url, live.api_key, live=live, max_concurrent_runs=cap)


@pytest.fixture(scope="session")
def _runs_emulator(request: pytest.FixtureRequest) -> Iterator[RunsTarget]:
    yield from _runs_make(request, "emulator", 10)


@pytest.fixture(scope="session")
def _runs_hermes(request: pytest.FixtureRequest) -> Iterator[RunsTarget]:
    yield from _runs_make(request, "hermes", 10)


@pytest.fixture(scope="session")
def _runs_emulator_cap1(request: pytest.FixtureRequest) -> Iterator[RunsTarget]:
    yield from _runs_make(request, "emulator", 1)


@pytest.fixture(scope="session")
def _runs_hermes_cap1(request: pytest.FixtureRequest) -> Iterator[RunsTarget]:
    yield from _runs_make(request, "hermes", 1)


@pytest.fixture(scope="session")
def _runs_emulator_smart(request: pytest.FixtureRequest) -> Iterator[RunsTarget]:
    yield from _runs_make(request, "emulator", 10, "smart")


@pytest.fixture(scope="session")
def _runs_hermes_smart(request: pytest.FixtureRequest) -> Iterator[RunsTarget]:
    yield from _runs_make(request, "hermes", 10, "smart")


@pytest.fixture(params=SERVERS)
def runs_target(request: pytest.FixtureRequest) -> RunsTarget:
    """A server with tools and manual approvals on (cap 10): emulator, or real Hermes."""
    target: RunsTarget = request.getfixturevalue(f"_runs_{request.param}")
    return target


@pytest.fixture
def runs_target_cap1(runs_target: RunsTarget, request: pytest.FixtureRequest) -> RunsTarget:
    """A second instance of the same kind with tools on and ``max_concurrent_runs: 1``."""
    target: RunsTarget = request.getfixturevalue(f"_runs_{runs_target.kind}_cap1")
    return target


@pytest.fixture
def runs_target_smart(runs_target: RunsTarget, request: pytest.FixtureRequest) -> RunsTarget:
    """A third instance of the same kind with ``approvals.mode: smart`` (an auxiliary reviewer)."""
    target: RunsTarget = request.getfixturevalue(f"_runs_{runs_target.kind}_smart")
    return target


# --------------------------------------------------------------------------- reporting

_RAN: dict[str, set[str]] = {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow_on_hermes: costs tens of seconds against the real server (keepalive)"
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "tests/conformance/" not in report.nodeid.replace("\\", "/"):
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        if report.skipped:
            return
        kind = next((s for s in SERVERS if f"[{s}" in report.nodeid or f"-{s}]" in report.nodeid), "?")
        _RAN.setdefault(report.nodeid, set()).add(kind)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _RAN:
        return
    servers = sorted({k for kinds in _RAN.values() for k in kinds}, key=SERVERS.index)
    terminalreporter.write_line(f"conformance: {len(_RAN)} cases against {servers}")
