"""Round 5, "approvals are never lost": a run's approval answer is sent on its own bound (the
provider's thread), an answer that certainly did not leave is sent later, and one cut with an
uncertain outcome is resent only while Hermes still waits for that very request (never twice)."""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Optional

from core_support import approve_all

from hermes_sdk import ApprovalRequest, HermesClient, hookimpl
from hermes_sdk.errors import HermesError, TransportError
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS


def _emulator(factory: Callable[..., HermesEmulator], **options: Any) -> HermesEmulator:
    emu = factory(toolsets=TOOLSETS, approval_timeout=options.pop("approval_timeout", 6.0), **options)
    for name in ("a", "b"):
        emu.files[f"/scratch/{name}/keep.txt"] = name
    return emu


def _approval_posts(emu: HermesEmulator, run_id: str) -> list[str]:
    return [json.loads(r.raw_body)["choice"] for r in emu.requests_seen
            if r.method == "POST" and r.path == f"/v1/runs/{run_id}/approval"]


def _applied(emu: HermesEmulator, run_id: str) -> list[str]:
    """The answers Hermes applied (its approval.responded events), in order."""
    return [str(e["choice"]) for e in emu.run_events(run_id) if e.get("event") == "approval.responded"]


def _follow(run: Any, timeout: float, limit: float = 20.0) -> Any:
    """Follow a run the way a busy caller does: short waits in a loop, whatever each one raises."""
    end = time.monotonic() + limit
    result = None
    while time.monotonic() < end:
        try:
            result = run.wait(timeout=timeout)
        except HermesError:
            continue  # the old code raised a cut answer's error out of wait(): keep following
        if result.done:
            return result
    return result


class _FirstApproval:
    """A hook that acts on a run's first approval call only, then lets calls through."""

    name = "first-approval"

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def first(self, operation: Optional[str]) -> bool:
        if operation != "run_approval":
            return False
        with self._lock:
            self.calls += 1
            return self.calls == 1


# --------------------------------------------------------------------------- 13: not sent means still queued


def test_an_answer_that_certainly_did_not_leave_is_sent_later(hermes_emulator_factory: Any) -> None:
    # The first approval POST fails before anything left this process (details["sent"] False).
    # The answer must stay queued and go out once: before, it was marked sent and the command
    # waited for Hermes' approval timeout, which BLOCKED it.
    emu = _emulator(hermes_emulator_factory)

    class Refuse(_FirstApproval):
        @hookimpl(wrapper=True)
        def hermes_http_attempt(self, attempt: Any) -> Any:
            if self.first(attempt.call.operation):
                raise TransportError("refused before sending", details={"sent": False})
            return (yield)

    hook = Refuse()
    with HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, plugins=[hook],
                      approval_provider=approve_all) as client:
        run = client.run("TOOL:terminal:rm -rf /scratch/a", idempotency_key="k13-refused")
        result = _follow(run, 0.3)
    assert hook.calls == 2  # refused once, then sent
    assert _approval_posts(emu, run.id) == ["once"] and _applied(emu, run.id) == ["once"]
    assert result is not None and result.ok and "/scratch/a/keep.txt" not in emu.files


def test_an_answer_whose_wait_ran_out_before_the_post_is_still_sent(hermes_emulator_factory: Any) -> None:
    # The item's case: the wait's bound passes between the SDK's check and the approval POST (a
    # slow hook in between), so the POST is refused as "deadline passed before the call was sent".
    emu = _emulator(hermes_emulator_factory)

    class Slow(_FirstApproval):
        @hookimpl(wrapper=True)
        def hermes_call(self, call: Any) -> Any:
            if self.first(call.operation):
                time.sleep(0.5)  # longer than what is left of the caller's wait(timeout=0.3)
            return (yield)

    hook = Slow()
    with HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, plugins=[hook],
                      approval_provider=approve_all) as client:
        run = client.run("TOOL:terminal:rm -rf /scratch/a", idempotency_key="k13-late")
        result = _follow(run, 0.3)
    assert _approval_posts(emu, run.id) == ["once"] and _applied(emu, run.id) == ["once"]
    assert result is not None and result.ok and "/scratch/a/keep.txt" not in emu.files


# --------------------------------------------------------------------------- 14: a person's decision is delivered


def test_a_decision_made_with_milliseconds_left_of_a_wait_is_delivered(hermes_emulator_factory: Any) -> None:
    # The person decides just before the caller's wait(timeout=0.3) ends, and the approval route
    # is slow (80 ms): sent on the remnant of the wait, the POST was cut and never retried.
    emu = _emulator(hermes_emulator_factory)
    began: list[float] = []

    def person(request: ApprovalRequest) -> Any:
        time.sleep(max(0.0, began[0] + 0.27 - time.time()))  # ~30 ms before the first wait ends
        return approve_all(request)

    class SlowRoute(_FirstApproval):
        @hookimpl(wrapper=True)
        def hermes_http_attempt(self, attempt: Any) -> Any:
            if self.first(attempt.call.operation):
                time.sleep(0.08)
            return (yield)

    hook = SlowRoute()
    with HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, plugins=[hook],
                      approval_provider=person) as client:
        run = client.run("TOOL:terminal:rm -rf /scratch/a", idempotency_key="k14-ms")
        began.append(time.time())
        result = _follow(run, 0.3)
    assert _applied(emu, run.id) == ["once"] and _approval_posts(emu, run.id) == ["once"]
    assert result is not None and result.ok and "/scratch/a/keep.txt" not in emu.files


def test_a_cut_answer_is_resent_only_while_hermes_still_waits_for_it(hermes_emulator_factory: Any) -> None:
    # Two answers cut before any reply, so their outcome is uncertain:
    # 1. Hermes never applied it: the run still waits for that request (GET), so it is sent again;
    # 2. Hermes applied it and asked about the next command: sent again, the "once" meant for
    #    /scratch/a would approve /scratch/b (0.19 answers the oldest request, with no id).
    emu = _emulator(hermes_emulator_factory)
    applied_first = {"k14-lost": False, "k14-applied": True}
    armed: set[str] = set()

    def provider(request: ApprovalRequest) -> Any:
        run_id = request.identifiers["run_id"]
        if request.input_snapshot["command"] == "rm -rf /scratch/b":
            return request.deny(approver="test", reason="not b")
        if run_id not in armed:
            armed.add(run_id)
            emu.drop_connection("before_response", path=f"/v1/runs/{run_id}/approval",
                                after_execution=applied_first[key_of[run_id]])
        return approve_all(request)

    key_of: dict[str, str] = {}
    with HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, approval_provider=provider) as client:
        lost = client.run("TOOL:terminal:rm -rf /scratch/a", idempotency_key="k14-lost", deadline=time.time() + 30)
        key_of[lost.id] = "k14-lost"
        first = _follow(lost, 0.3)
        emu.files["/scratch/a/keep.txt"] = "a"
        applied = client.run("TOOL:terminal:rm -rf /scratch/a||TOOL:terminal:rm -rf /scratch/b",
                             idempotency_key="k14-applied", deadline=time.time() + 30)
        key_of[applied.id] = "k14-applied"
        second = _follow(applied, 0.3)
    # 1: the lost answer went out twice and was applied once; the command ran
    assert _approval_posts(emu, lost.id) == ["once", "once"] and _applied(emu, lost.id) == ["once"]
    assert first is not None and first.ok
    # 2: the applied answer was not sent again: /scratch/b got the person's "deny", not a stray "once"
    assert _approval_posts(emu, applied.id) == ["once", "deny"], _approval_posts(emu, applied.id)
    assert _applied(emu, applied.id) == ["once", "deny"]
    assert second is not None and second.ok
    assert "/scratch/a/keep.txt" not in emu.files and emu.files["/scratch/b/keep.txt"] == "b"
