"""examples/celery_app against the emulator, with Celery in eager mode (``task_always_eager``):
the task runs in this process, retries included, so every path is checked without a broker."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from examples_support import EXAMPLES, require

require("celery")

from celery.signals import task_retry  # noqa: E402
from celery_app import tasks  # noqa: E402

from hermes_sdk import OutcomeUnknownError  # noqa: E402


@pytest.fixture(autouse=True)
def eager(hermes_env: Any) -> Iterator[None]:
    conf = tasks.app.conf
    saved = conf.task_always_eager, conf.task_eager_propagates
    # Not task_eager_propagates: with it, self.retry() raises out of .delay() instead of running the
    # retry. Without it, a retry runs at once (no countdown) and .get() raises the final error.
    conf.task_always_eager, conf.task_eager_propagates = True, False
    yield
    conf.task_always_eager, conf.task_eager_propagates = saved
    tasks.close_client()


@pytest.fixture
def on_retry() -> Iterator[list[Any]]:
    """One callable run per retry the task asks for (the world changes between attempts)."""
    actions: list[Any] = []

    def handler(**_: Any) -> None:
        if actions:
            actions.pop(0)()

    task_retry.connect(handler, weak=False)
    yield actions
    task_retry.disconnect(handler)


def test_a_redelivered_task_replays_instead_of_calling_the_model(hermes_env: Any) -> None:
    first = tasks.summarize_order.delay("7", "two boxes").get()
    again = tasks.summarize_order.delay("7", "two boxes").get()  # a new task id, the same intent
    assert first == again == "ECHO: Summarize order 7: two boxes"
    assert hermes_env.executions == 1


def test_a_refusal_before_agent_work_is_retried_once_hermes_is_back(hermes_env: Any, on_retry: list[Any]) -> None:
    hermes_env.draining = True  # 503 gateway_draining: refused before any agent work
    on_retry.append(lambda: setattr(hermes_env, "draining", False))
    assert tasks.summarize_order.delay("8", "n").get() == "ECHO: Summarize order 8: n"
    assert hermes_env.executions == 1


def test_a_request_that_never_left_is_retried_with_the_same_key(hermes_env: Any, on_retry: list[Any],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    monkeypatch.setenv("HERMES_BASE_URL", dead)  # the first attempt: connection refused

    def hermes_is_back() -> None:
        # The same store must survive: carry it over to the new client (in production, a shared store).
        store = tasks.get_client().idempotency_store
        tasks.close_client()
        monkeypatch.setenv("HERMES_BASE_URL", hermes_env.base_url)
        tasks._client, tasks._pid = tasks.HermesClient(idempotency_store=store), tasks.os.getpid()

    on_retry.append(hermes_is_back)
    assert tasks.summarize_order.delay("9", "n").get() == "ECHO: Summarize order 9: n"
    assert hermes_env.executions == 1


def test_an_uncertain_outcome_is_not_retried_but_handed_to_reconciliation(hermes_env: Any) -> None:
    hermes_env.drop_connection("before_response")  # the model runs, the answer never arrives
    with pytest.raises(tasks.NeedsReconciliation) as caught:
        tasks.summarize_order.delay("10", "n").get()
    with pytest.raises(tasks.NeedsReconciliation):
        tasks.summarize_order.delay("10", "n").get()  # redelivered: replays the record, runs nothing
    assert hermes_env.executions == 1
    recorded = tasks.get_client().action_result(caught.value.action_id)
    assert recorded is not None and recorded.status == "failed" and recorded.error.uncertain_outcome


def test_a_key_held_by_another_worker_is_waited_for_not_run_again(hermes_env: Any, on_retry: list[Any]) -> None:
    retries: list[int] = []
    on_retry.extend([lambda: retries.append(1)] * tasks.summarize_order.max_retries)
    # Another worker is in the middle of the same call (same store, same key, same input). A thread
    # runs the call, not the task: Celery forbids waiting on a result while a task is running.
    other = threading.Thread(target=lambda: tasks.get_client().chat(
        prompt="Summarize order 11: SLOW:1", idempotency_key="order-summary-11"))
    other.start()
    deadline = time.monotonic() + 10
    while hermes_env.active_runs == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    # Eager retries are immediate (a worker would wait the countdown): they run out while the
    # other call still holds the key, and the task gives up with the error instead of calling.
    with pytest.raises(OutcomeUnknownError):
        tasks.summarize_order.delay("11", "SLOW:1").get()
    assert len(retries) == tasks.summarize_order.max_retries
    other.join()
    assert tasks.summarize_order.delay("11", "SLOW:1").get() == "ECHO: Summarize order 11: SLOW:1"
    assert hermes_env.executions == 1


def test_an_agent_failure_is_a_known_outcome_not_a_retry(hermes_env: Any) -> None:
    hermes_env.fail_next()
    with pytest.raises(tasks.IncompleteSummary, match="finish_reason=error"):
        tasks.summarize_order.delay("12", "n").get()
    assert hermes_env.executions == 1


def test_a_worker_process_makes_its_client_after_the_fork(hermes_env: Any) -> None:
    from celery.signals import worker_process_init

    before = tasks.get_client()
    worker_process_init.send(sender=None)  # what the prefork pool sends in each child
    after = tasks.get_client()
    assert after is not before  # a new one, made in the (here: same) process after the hook


def test_the_filesystem_broker_writes_only_under_its_folder(tmp_path: Path) -> None:
    # kombu's filesystem broker keeps its exchange tables in ./control by default: the guide's worker
    # and client, run from the user's tree, wrote control/*.exchange there (and into the release).
    work, state = tmp_path / "work", tmp_path / "state"
    work.mkdir()
    (state / "queue").mkdir(parents=True)
    env = {**os.environ, "CELERY_BROKER_URL": "filesystem://", "CELERY_BROKER_FOLDER": str(state / "queue"),
           "PYTHONPATH": str(EXAMPLES / "celery_app")}
    env.pop("CELERY_RESULT_BACKEND", None)
    # An enqueue declares and binds the task queue, as the worker does at start: the exchange table is written.
    done = subprocess.run([sys.executable, "-c", "import tasks; tasks.summarize_order.apply_async(('7', 'n'))"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(work.iterdir()) == []
    assert [p.name for p in (state / "queue").iterdir() if p.name.endswith(".msg")]  # the message is queued
    from kombu.transport import filesystem

    if hasattr(filesystem.Channel, "control_folder"):  # kombu 5.3 and later keep exchange tables
        assert [p.name for p in (state / "queue-control").iterdir()] == ["celery.exchange"]
