"""Recording a run that waits for a person, as docs/testing.md gives it, and what a recorder that
reads whole replies (vcrpy, under pytest-recording too) does with one: refused at once, never a
silent block until Hermes' approval timeout."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from core_support import approve_all

from hermes_sdk import ApprovalRequiredError, HermesClient
from hermes_sdk.testing import CassetteMiss, use_cassette
from hermes_sdk.testing.emulator import TOOLSETS

VICTIM = "/srv/data/victim"
DANGEROUS = f"TOOL:terminal:rm -rf {VICTIM}"
#: Far above what a refusal takes: the old code blocked until this passed.
APPROVAL_TIMEOUT = 60.0


def _emulator(factory: Any) -> Any:
    emulator = factory(toolsets=TOOLSETS, approval_timeout=APPROVAL_TIMEOUT)
    emulator.files[f"{VICTIM}/a.txt"] = "precious"
    return emulator


def _approved_run(base_url: str, key: str) -> tuple[str, list[str], str, Any]:
    with HermesClient(base_url=base_url, api_key=key, load_entrypoints=False, approval_provider=approve_all) as client:
        result = client.run(DANGEROUS, idempotency_key="rec-1").wait(timeout=30)
    return result.status, [type(e).__name__ for e in result.events], result.output or "", result.events_complete


def test_a_run_that_waits_for_an_approval_is_recorded_then_replayed_with_the_server_gone(
        hermes_emulator_factory: Any, tmp_path: Path) -> None:
    emulator = _emulator(hermes_emulator_factory)
    base_url, key = emulator.base_url, emulator.api_key
    path = tmp_path / "approval.json"

    with use_cassette(path) as recorded:
        live = _approved_run(base_url, key)
    assert recorded.mode == "record"
    assert live[0] == "completed" and live[3] is True
    assert live[1].index("ApprovalRequested") < live[1].index("ApprovalResponded") < live[1].index("RunCompleted")
    assert "was approved by the user" in live[2] and not any(p.startswith(VICTIM) for p in emulator.files)
    decisions = [body for method, p, body in recorded.requests if p.endswith("/approval")]
    assert decisions == [{"choice": "once"}]
    text = path.read_text()
    assert key not in text and "authorization" not in text.lower()

    emulator.stop()  # nothing to wait for on replay: no server, and the person's decision is on file
    with use_cassette(path) as replayed:
        assert _approved_run(base_url, key) == live  # same events, same outcome
    assert replayed.mode == "replay" and replayed.play_count == len(recorded.requests)
    assert [r for r in replayed.requests if r[1].endswith("/approval")] == \
        [r for r in recorded.requests if r[1].endswith("/approval")]  # the same decision sent again


def test_a_replay_whose_decision_differs_is_a_miss_the_test_sees(hermes_emulator_factory: Any, tmp_path: Path) -> None:
    emulator = _emulator(hermes_emulator_factory)
    base_url, key = emulator.base_url, emulator.api_key
    path = tmp_path / "approval.json"
    with use_cassette(path):
        _approved_run(base_url, key)
    emulator.stop()

    def deny(request: Any) -> Any:
        return request.deny(approver="test-approver", reason="no")

    with use_cassette(path, replay_wait=2), pytest.raises(CassetteMiss, match="another body"):
        with HermesClient(base_url=base_url, api_key=key, load_entrypoints=False, approval_provider=deny) as client:
            client.run(DANGEROUS, idempotency_key="rec-1").wait(timeout=20)


def test_the_hermes_cassette_fixture_records_then_replays_an_approved_run(
        hermes_emulator_factory: Any, tmp_path: Path) -> None:
    # An application's test as docs/testing.md writes it, run by pytest twice: with Hermes, then without.
    emulator = _emulator(hermes_emulator_factory)
    test_file = tmp_path / "test_app.py"
    test_file.write_text(textwrap.dedent("""
        import os

        from hermes_sdk import HermesClient


        def approve(request):
            return request.approve(approver="ci", policy_decision_id="pd-1")


        def test_cleanup(hermes_cassette):
            with HermesClient(approval_provider=approve) as client:
                run = client.run("TOOL:terminal:rm -rf /srv/data/victim", idempotency_key="cleanup-1")
                result = run.wait(timeout=30)
            assert result.status == "completed"
            assert "approved by the user" in result.output
            print("MODE", hermes_cassette.mode, [r[2] for r in hermes_cassette.requests if r[1].endswith("/approval")])
    """))
    env = {"HERMES_BASE_URL": emulator.base_url, "HERMES_API_KEY": emulator.api_key,
           "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)}

    def pytest_run() -> str:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", str(test_file)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "MODE record [{'choice': 'once'}]" in pytest_run()
    cassette = tmp_path / "cassettes" / "test_app" / "test_cleanup.json"
    assert emulator.api_key not in cassette.read_text()
    assert json.loads(cassette.read_text())["version"] == 1
    emulator.stop()
    assert "MODE replay [{'choice': 'once'}]" in pytest_run()


def test_vcrpy_recording_a_run_that_waits_for_an_approval_is_refused_at_once(
        hermes_emulator_factory: Any, tmp_path: Path) -> None:
    vcr = pytest.importorskip("vcr")
    emulator = _emulator(hermes_emulator_factory)
    recorder = vcr.VCR(filter_headers=["authorization"], record_mode="once")
    with recorder.use_cassette(str(tmp_path / "vcr.yaml")):
        with HermesClient(base_url=emulator.base_url, api_key=emulator.api_key, load_entrypoints=False,
                          approval_provider=approve_all) as client:
            run = client.run(DANGEROUS, idempotency_key="vcr-1")
            with pytest.raises(ApprovalRequiredError) as refused:
                run.wait(timeout=APPROVAL_TIMEOUT - 10)
    error = refused.value
    assert error.details["reason"] == "buffering_recorder" and error.details["recorder"] == "vcrpy"
    assert "hermes_cassette" in str(error) and error.details["run_stopped"] is True
    # The outcome, not the clock: the run was stopped (nothing approved), the file is still there.
    assert any(seen.method == "POST" and seen.path == f"/v1/runs/{run.id}/stop" for seen in emulator.requests_seen)
    with HermesClient(base_url=emulator.base_url, api_key=emulator.api_key, load_entrypoints=False) as client:
        assert client.runs.get(run.id).status in ("stopping", "cancelled")
    # ... and stopped while Hermes still waited for the answer (the old code blocked until Hermes'
    # approval timeout, and the run ended BLOCKED, not stopped).
    assert f"{VICTIM}/a.txt" in emulator.files


def test_vcrpy_still_records_and_replays_a_run_without_an_approval(
        hermes_emulator_factory: Any, tmp_path: Path) -> None:
    vcr = pytest.importorskip("vcr")
    emulator = _emulator(hermes_emulator_factory)
    base_url, key = emulator.base_url, emulator.api_key
    cassette = str(tmp_path / "vcr.yaml")

    def plain_run() -> tuple[str, str]:
        with HermesClient(base_url=base_url, api_key=key, load_entrypoints=False) as client:
            result = client.run("count to three", idempotency_key="vcr-2").wait(timeout=30)
        return result.status, result.output or ""

    with vcr.VCR(record_mode="once", filter_headers=["authorization"]).use_cassette(cassette):
        live = plain_run()
    emulator.stop()
    with vcr.VCR(record_mode="none", filter_headers=["authorization"]).use_cassette(cassette):
        assert plain_run() == live
    assert live[0] == "completed"


@pytest.mark.parametrize("follow", ["wait", "events"])
@pytest.mark.parametrize("events_recorded", [False, True], ids=["events-not-recorded", "events-recorded"])
def test_vcrpy_replaying_a_refused_approval_run_refuses_it_with_the_same_error(
        hermes_emulator_factory: Any, tmp_path: Path, events_recorded: bool, follow: str) -> None:
    # Recorded, the run is refused; whether vcrpy got to write the run's events down before the
    # cassette closed depends on timing (it appends them once the stopped run's stream ended), so
    # both cassettes are made here: one with the events, one without.
    vcr = pytest.importorskip("vcr")
    yaml = pytest.importorskip("yaml")
    emulator = _emulator(hermes_emulator_factory)
    base_url, key = emulator.base_url, emulator.api_key
    path = tmp_path / "vcr.yaml"

    def refused(record_mode: str) -> ApprovalRequiredError:
        recorder = vcr.VCR(filter_headers=["authorization"], record_mode=record_mode)
        with recorder.use_cassette(str(path)) as cassette:
            with HermesClient(base_url=base_url, api_key=key, load_entrypoints=False,
                              approval_provider=approve_all) as client:
                run = client.run(DANGEROUS, idempotency_key="vcr-3")
                with pytest.raises(ApprovalRequiredError) as raised:
                    if follow == "wait":
                        run.wait(timeout=APPROVAL_TIMEOUT - 10)
                    else:
                        list(run.events())
                if events_recorded and record_mode == "once":
                    for _ in range(400):  # the stopped run's stream ends; vcrpy then appends it
                        if any(r.path.endswith("/events") for r in cassette.requests):
                            break
                        threading.Event().wait(0.05)
        return raised.value

    recorded = refused("once")
    document = yaml.safe_load(path.read_text())
    has_events = [i["request"]["uri"].endswith("/events") for i in document["interactions"]]
    if events_recorded:
        assert any(has_events)
    else:
        document["interactions"] = [i for i, ev in zip(document["interactions"], has_events) if not ev]
        path.write_text(yaml.safe_dump(document))
    emulator.stop()
    replayed = refused("none")
    assert type(replayed) is type(recorded) and str(replayed) == str(recorded)
    assert replayed.details == recorded.details
    assert recorded.details["run_stopped"] is True and "record or replay" in str(recorded)
