"""No blind replay across a killed process, and exactly-once execution under a many-thread, two-process race."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from hermes_sdk import HermesClient, OutcomeUnknownError

CHILD = str(Path(__file__).with_name("idem_child.py"))
CHAT = "cap:hermes_agent:default:chat"


def _chat_posts(emulator: Any) -> int:
    return sum(1 for r in emulator.requests_seen if r.method == "POST" and r.path == "/v1/chat/completions")


def _child(emulator: Any, db: Path, key: str, prompt: str, threads: int = 1, start_at: float = 0.0) -> Any:
    return subprocess.Popen(
        [sys.executable, CHILD, emulator.base_url, emulator.api_key, str(db), key, prompt, str(threads),
         str(start_at)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


@pytest.mark.slow
def test_killed_mid_call_leaves_outcome_unknown_never_a_second_execution(hermes_emulator_factory: Any,
                                                                          tmp_path: Path) -> None:
    # An emulator of its own: the killed child's SLOW run would otherwise hold a slot of the shared
    # server for seconds after this test (stopping this one interrupts it).
    hermes_emulator = hermes_emulator_factory()
    db = tmp_path / "idem.db"
    child = _child(hermes_emulator, db, "k-crash", "SLOW:5 charge the card")
    try:
        _wait_for(lambda: hermes_emulator.executions >= 1 and _chat_posts(hermes_emulator) >= 1)
        assert child.poll() is None, child.communicate()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    assert child.returncode == -signal.SIGKILL

    # A new process with the same key and the same file refuses to run it again.
    again = _child(hermes_emulator, db, "k-crash", "SLOW:5 charge the card")
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    assert [json.loads(line)["outcome"] for line in out.splitlines()] == ["hermes_sdk.outcome_unknown"]

    # And so does this process; the operator sees the pending record and its action id.
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=f"sqlite:///{db}",
                      load_entrypoints=False) as client:
        with pytest.raises(OutcomeUnknownError) as info:
            client.chat(prompt="SLOW:5 charge the card", idempotency_key="k-crash")
        record = client.records.get(CHAT, "k-crash")
        assert record.state == "pending" and info.value.details["original_action_id"] == record.action_id
        assert client.action_result(record.action_id) is None
    assert hermes_emulator.executions == 1
    assert _chat_posts(hermes_emulator) == 1


@pytest.mark.slow
def test_threads_and_two_processes_race_one_key(hermes_emulator: Any, tmp_path: Path) -> None:
    db = tmp_path / "race.db"
    prompt = "SLOW:1 exactly once"
    start_at = time.time() + 1.5  # children need time to import; everyone starts together
    children = [_child(hermes_emulator, db, "k-race", prompt, threads=6, start_at=start_at) for _ in range(2)]
    outcomes: list[str] = []
    lock = threading.Lock()
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=f"sqlite:///{db}",
                          load_entrypoints=False)

    def call() -> None:
        time.sleep(max(0.0, start_at - time.time()))
        result = client.invoke(CHAT, {"prompt": prompt}, idempotency_key="k-race")
        outcome = ("replayed" if result.replayed else "executed") if result.status == "completed" \
            else result.error.code
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=call) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for child in children:
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        outcomes.extend(json.loads(line)["outcome"] for line in out.splitlines())

    assert len(outcomes) == 22
    assert outcomes.count("executed") == 1, outcomes
    assert set(outcomes) <= {"executed", "replayed", "hermes_sdk.outcome_unknown"}, outcomes
    assert hermes_emulator.executions == 1 and _chat_posts(hermes_emulator) == 1

    # Once settled, every later caller, in any process, gets the recorded result.
    late = client.invoke(CHAT, {"prompt": prompt}, idempotency_key="k-race")
    assert late.replayed and late.status == "completed"
    client.close()
    assert hermes_emulator.executions == 1
