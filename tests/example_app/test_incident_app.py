"""The example application's tests: only the ``hermes_emulator`` fixture, no SDK internals."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from incident_app import IncidentDesk, IncompleteSummary  # noqa: E402


@pytest.fixture
def desk(hermes_emulator: Any) -> IncidentDesk:
    return IncidentDesk(hermes_emulator.client(load_entrypoints=False))


def test_summary_uses_the_scripted_reply(desk: IncidentDesk, hermes_emulator: Any) -> None:
    hermes_emulator.script("Contained; verification pending.")
    assert desk.summarize("INC-1", "db failover at 02:00") == "Contained; verification pending."
    seen = hermes_emulator.requests_seen[-1]
    assert seen.header("X-Hermes-Session-Id") == "incident-INC-1"


def test_a_repeated_summary_never_runs_the_model_twice(desk: IncidentDesk, hermes_emulator: Any) -> None:
    first = desk.summarize("INC-2", "cache stampede")
    again = desk.summarize("INC-2", "cache stampede")
    assert first == again == "ECHO: cache stampede"
    assert hermes_emulator.executions == 1


def test_a_failed_run_is_reported_not_returned(desk: IncidentDesk, hermes_emulator: Any) -> None:
    hermes_emulator.fail_next(status=500)
    with pytest.raises(IncompleteSummary, match="error"):
        desk.summarize("INC-3", "upstream outage")


def test_streamed_update_arrives_in_pieces(desk: IncidentDesk) -> None:
    pieces: list[str] = []
    text = desk.stream_update("three short words", pieces.append)
    assert "".join(pieces) == text == "ECHO: three short words"
    assert len(pieces) > 1


def test_archive_round_trip(desk: IncidentDesk) -> None:
    response_id = desk.archive("postmortem draft")
    assert response_id.startswith("resp_")
    assert desk.read_archive(response_id) == "ECHO: postmortem draft"
