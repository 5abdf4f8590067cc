"""End-to-end timings of the inbox against the emulator: enqueue -> decision -> call resumed.

    PYTHONPATH=.:plugins/hermes-sdk-inbox python plugins/hermes-sdk-inbox/benchmarks/inbox_timings.py [-n 5]

The person is simulated: a thread decides as soon as the entry is queued (``inbox.decide``, what the
page's form handler calls), so "enqueue -> decision" is the inbox's own latency (how soon the entry
can be seen), not a person's. Reported in milliseconds, median and max over ``-n`` rounds, on SQLite
queues and stores in a temp directory (docs/inbox.md quotes a run).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from typing import Any, Callable

from hermes_sdk_inbox import Inbox, InboxProvider, ResumeWorker

from hermes_sdk import ApprovalRequiredError, HermesClient
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS


def decide_when_queued(inbox: Inbox, kind: str, marks: dict[str, float]) -> threading.Thread:
    def person() -> None:
        while not (pending := inbox.entries(kind=kind)):
            time.sleep(0.005)
        entry = pending[0]
        marks["seen"] = time.time()
        marks["requested"] = float(entry["requested_at"])
        inbox.decide(entry["id"], decision="approved", approver="bench", reason="timing",
                     input_hash=entry["input_hash"])
        marks["decided"] = time.time()

    thread = threading.Thread(target=person, daemon=True)
    thread.start()
    return thread


def sync_path(emu: HermesEmulator, root: str, i: int) -> dict[str, float]:
    """job_pause with wait=0: raise naming the entry; decide; the same call again proceeds."""
    provider = InboxProvider(f"sqlite:///{root}/sync-{i}.db")
    setup = HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, approval_provider=lambda r: r.approve(
        approver="setup", policy_decision_id="pd", reason="setup"))
    job = setup.jobs.create(name=f"j{i}", schedule="every 1h", prompt="p", idempotency_key=f"jc-{i}")
    client = HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, plugins=[provider])
    t0 = time.time()
    try:
        client.jobs.pause(job.id, idempotency_key=f"jp-{i}", reason="bench")
        raise AssertionError("the pause was not queued")
    except ApprovalRequiredError as exc:
        entry = provider.inbox.get(exc.details["inbox_entry_id"])
    queued = time.time()
    provider.inbox.decide(entry["id"], decision="approved", approver="bench", reason="timing",
                          input_hash=entry["input_hash"])
    decided = time.time()
    client.jobs.pause(job.id, idempotency_key=f"jp-{i}", reason="bench")
    done = time.time()
    client.close()
    setup.close()
    provider.close()
    return {"call_to_enqueued": (queued - t0) * 1e3, "decision_to_call_done": (done - decided) * 1e3}


def sync_wait(emu: HermesEmulator, root: str, i: int) -> dict[str, float]:
    """sessions.delete with wait=10 (default poll 0.2 s): the waiting call proceeds once decided."""
    provider = InboxProvider(f"sqlite:///{root}/wait-{i}.db", wait=10)
    client = HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, plugins=[provider])
    sid = client.sessions.create(f"bench-{i}", idempotency_key=f"sc-{i}").id
    marks: dict[str, float] = {}
    person = decide_when_queued(provider.inbox, "call", marks)
    client.sessions.delete(sid, idempotency_key=f"sd-{i}", reason="bench")
    done = time.time()
    person.join()
    client.close()
    provider.close()
    return {"enqueue_to_decision": (marks["decided"] - marks["requested"]) * 1e3,
            "decision_to_call_done": (done - marks["decided"]) * 1e3}


def run_approval(emu: HermesEmulator, root: str, i: int) -> dict[str, float]:
    """A run's command: the follower waits (poll 0.2 s), answers Hermes, the run finishes."""
    emu.files[f"/scratch/b{i}/x"] = "x"
    provider = InboxProvider(f"sqlite:///{root}/run-{i}.db")
    client = HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, plugins=[provider])
    marks: dict[str, float] = {}
    person = decide_when_queued(provider.inbox, "run", marks)
    result = client.run(f"TOOL:terminal:rm -rf /scratch/b{i}", idempotency_key=f"r-{i}").wait(timeout=30)
    done = time.time()
    person.join()
    assert result.status == "completed" and f"/scratch/b{i}/x" not in emu.files
    used = provider.inbox.entries(state="approved", kind="run")[0]["used"]["at"]
    client.close()
    provider.close()
    return {"enqueue_to_decision": (marks["decided"] - marks["requested"]) * 1e3,
            "decision_to_answer_sent": (used - marks["decided"]) * 1e3,
            "decision_to_run_done": (done - marks["decided"]) * 1e3}


def operate_resume(emu: HermesEmulator, root: str, i: int) -> dict[str, float]:
    """operate() returns requires_human; the decision wakes a ResumeWorker that resumes the action."""
    emu.files[f"/scratch/o{i}/x"] = "x"
    idem, queue = f"sqlite:///{root}/idem-{i}.db", f"sqlite:///{root}/op-{i}.db"
    provider = InboxProvider(queue)
    client = HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, idempotency_store=idem,
                          plugins=[provider])
    objective = f"TOOL:terminal:rm -rf /scratch/o{i}||TOOL:todo:report"
    start = client.approval_request("operator", {"objective": objective}, reason="bench").approve(
        approver="bench", policy_decision_id="pd", reason="bench")
    t0 = time.time()
    waiting = client.operate(objective, idempotency_key=f"o-{i}", approval=start, reason="bench")
    returned = time.time()
    assert waiting.status == "requires_human"
    worker_client = HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, idempotency_store=idem)
    worker = ResumeWorker(worker_client, queue, interval=60).start()
    time.sleep(0.05)
    entry = provider.inbox.entries(kind="operator")[0]
    provider.inbox.decide(entry["id"], decision="approved", approver="bench", reason="timing",
                          input_hash=entry["input_hash"])
    decided = time.time()
    worker.wake()  # what the blueprint's on_decision=worker.wake does
    while not worker.resumed:
        time.sleep(0.002)
    done = time.time()
    worker.stop(5)
    assert worker.resumed[0].result is not None and worker.resumed[0].result.status == "completed"
    worker_client.close()
    client.close()
    provider.close()
    return {"operate_to_requires_human": (returned - t0) * 1e3, "decision_to_action_done": (done - decided) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=5, help="rounds per scenario")
    args = parser.parse_args()
    root = tempfile.mkdtemp()
    scenarios: dict[str, Callable[[HermesEmulator, str, int], dict[str, float]]] = {
        "sync (job_pause, wait=0)": sync_path, "sync (sessions.delete, wait=10)": sync_wait,
        "run approval": run_approval, "operate resume (worker woken)": operate_resume}
    with HermesEmulator(toolsets=TOOLSETS, approval_timeout=30) as emu:
        for name, fn in scenarios.items():
            rows: list[dict[str, Any]] = [fn(emu, root, i) for i in range(args.n)]
            cells = ", ".join(f"{k} {statistics.median(r[k] for r in rows):.0f} ms (max {max(r[k] for r in rows):.0f})"
                              for k in rows[0])
            print(f"{name}: {cells}")


if __name__ == "__main__":
    main()
