"""Durable runs under a hostile or slow server: the run's own calls keep the caller's time, approvals
are answered only in Hermes' order (oldest first, no id), time arguments are validated, and a reply
or event about another run is never believed."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from typing import Any, Callable, Optional

import pytest
from core_support import RawRequest, RawServer, approve_all, chunk, json_response, raw_client, sse_head, wait_for

from hermes_sdk import ApprovalRequest, CallTimeout, HermesClient, InvalidInputError, hookimpl
from hermes_sdk._core.idempotency import SQLiteStore
from hermes_sdk.errors import DeadlineExceededError, InvalidResponseError
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

RUN_ID = "run_0123456789abcdef0123456789abcdef"
OTHER_ID = "run_another0000000000000000000000"


def _event(data: dict[str, Any]) -> bytes:
    return chunk(b"data: " + json.dumps({"run_id": RUN_ID, "timestamp": 1.0, **data}).encode() + b"\n\n")


def approval_request(command: str) -> dict[str, Any]:
    return {"event": "approval.request", "command": command, "pattern_key": "p", "pattern_keys": ["p"],
            "description": f"asks for {command}", "allow_permanent": False, "choices": ["once", "deny"]}


class RunsServer:
    """A scripted ``/v1/runs``: the 202, an events stream of ``events`` (then held open, or the
    ``after_approval`` events once an approval arrives), and approval/stop/get handlers that a test
    can make stall."""

    def __init__(self, events: list[dict[str, Any]], *, stall: tuple[str, ...] = (), another: bool = False,
                 status: Optional[dict[str, Any]] = None,
                 after_approval: Callable[[int, str], list[dict[str, Any]]] = lambda n, choice: []) -> None:
        self.events = events
        self.stall = stall
        self.reply_id = OTHER_ID if another else RUN_ID  # the run id the JSON replies name
        self.status = status or {"object": "hermes.run", "run_id": RUN_ID, "status": "running"}
        self.after_approval = after_approval
        self.approvals: list[str] = []
        self.stalled = 0  # approval POSTs accepted and never answered
        # Stalled requests the server let go (after 60 s): a wait that ended with none let go
        # ended on its own bound, not when the server gave up (an order, not a clock).
        self.let_go = 0
        self._more: "list[bytes]" = []
        self._cond = threading.Condition()
        self.closed = threading.Event()
        self.raw = RawServer(self.handle)

    def handle(self, conn: socket.socket, request: RawRequest, server: RawServer) -> None:
        target, method = request.target, request.method
        try:
            if method == "POST" and target == "/v1/runs":
                body = json.dumps({"run_id": RUN_ID, "status": "started"}).encode()
                conn.sendall(json_response(202, body))
            elif target.endswith("/events"):
                conn.sendall(sse_head() + b"".join(_event(e) for e in self.events))
                while not self.closed.is_set():
                    with self._cond:
                        self._cond.wait(0.05)
                        more, self._more = self._more, []
                    for frame in more:
                        conn.sendall(frame)
            elif "approval" in self.stall and target.endswith("/approval") or \
                    "stop" in self.stall and target.endswith("/stop") or \
                    "get" in self.stall and method == "GET":
                self.stalled += target.endswith("/approval")
                self.closed.wait(60)  # accepted, never answered
                self.let_go += 1
                conn.close()
            elif target.endswith("/approval"):
                choice = json.loads(request.body)["choice"]
                self.approvals.append(choice)
                conn.sendall(json_response(200, json.dumps({"object": "hermes.run.approval_response",
                                                            "run_id": self.reply_id, "choice": choice,
                                                            "resolved": 1}).encode()))
                frames = [_event({"event": "approval.responded", "choice": choice, "resolved": 1})]
                frames += [_event(e) for e in self.after_approval(len(self.approvals), choice)]
                with self._cond:
                    self._more.extend(frames)
                    self._cond.notify_all()
            elif target.endswith("/stop"):
                conn.sendall(json_response(200, json.dumps({"run_id": self.reply_id,
                                                            "status": "stopping"}).encode()))
            else:
                conn.sendall(json_response(200, json.dumps({**self.status, "run_id": self.reply_id}).encode()))
        except OSError:
            pass

    def client(self, **kwargs: Any) -> HermesClient:
        return raw_client(self.raw, **kwargs)

    def close(self) -> None:
        self.closed.set()
        self.raw.close()


@pytest.fixture
def runs_server() -> Any:
    servers: list[RunsServer] = []

    def make(*args: Any, **kwargs: Any) -> RunsServer:
        server = RunsServer(*args, **kwargs)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.close()


# --------------------------------------------------------------------------- the run's own calls keep its time


WAITING = {"object": "hermes.run", "run_id": RUN_ID, "status": "waiting_for_approval", "updated_at": 1.5}


def test_a_stalled_approval_answer_does_not_hold_the_wait(runs_server: Any) -> None:
    # The answer goes out on the provider's thread, on its own bound: the wait ends at its timeout.
    server = runs_server([approval_request("rm -rf /scratch/x")], stall=("approval",), status=WAITING)
    with server.client(approval_provider=approve_all) as client:
        run = client.run("go", idempotency_key="k-stall")
        result = run.wait(timeout=1.0)
        assert not result.done and server.let_go == 0  # it ended on its bound, not when the server let go
        assert wait_for(lambda: server.stalled == 1, 30)  # the answer left and is still in flight


def test_a_stalled_approval_answer_ends_at_the_runs_deadline(runs_server: Any) -> None:
    server = runs_server([approval_request("rm -rf /scratch/x")], stall=("approval",), status=WAITING)
    with server.client(approval_provider=approve_all) as client:
        run = client.run("go", idempotency_key="k-stall-deadline", deadline=time.time() + 1.0)
        assert not run.wait().done
        assert server.let_go == 0  # it ended at the run's deadline, not when the server let go
        assert wait_for(lambda: server.stalled == 1, 30)


@pytest.mark.parametrize("method", ["stop", "refresh"])
def test_stop_and_refresh_keep_the_runs_deadline(runs_server: Any, method: str) -> None:
    server = runs_server([], stall=("stop", "get"))
    with server.client() as client:
        deadline = time.time() + 0.8
        run = client.run("go", idempotency_key="k-stall-" + method, deadline=deadline)
        with pytest.raises(DeadlineExceededError):
            getattr(run, method)()  # each got the published 30 s before
        assert server.let_go == 0  # ended at the run's deadline, the stalled call still held


def test_polling_keeps_the_waits_bound(runs_server: Any) -> None:
    server = runs_server([], stall=("get",))
    with server.client() as client:
        run = client.run("go", idempotency_key="k-poll-stall")
        run.close()  # from now on the run is polled, and every poll stalls
        result = run.wait(timeout=0.8)
        assert not result.done and server.let_go == 0  # ended at 0.8 s, the stalled poll still held


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, -1, -0.001, 1e10, "5", True, [1]])
def test_wait_refuses_unusable_timeouts_before_anything(runs_server: Any, bad: Any) -> None:
    server = runs_server([])
    with server.client() as client:
        run = client.run("go", idempotency_key="k-bad-timeout")
        seen = len(server.raw.requests)
        began = time.thread_time()  # CPU, not the wall clock: the spin this refusal prevents is work
        with pytest.raises(InvalidInputError) as info:
            run.wait(timeout=bad)  # NaN compared false with every bound: wait() spun a core forever
        assert info.value.details["field"] == "timeout" and time.thread_time() - began < 0.5
        assert len(server.raw.requests) == seen
        assert run.wait(timeout=0).status in ("started", "running")  # zero: a look, not a wait


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1, 0, "1", True, CallTimeout(total=1)])
def test_every_other_time_argument_is_validated(hermes_emulator: HermesEmulator, bad: Any, tmp_path: Any) -> None:
    with hermes_emulator.client(load_entrypoints=False) as client:
        with pytest.raises(InvalidInputError) as info:
            client.chat_stream(prompt="x", idle_timeout=bad)
        assert info.value.details["field"] == "idle_timeout"
    assert hermes_emulator.requests_seen == []
    if bad != 0:  # a retention or lock wait of 0 is a choice, not a mistake
        with pytest.raises(InvalidInputError) as info:
            HermesClient(hermes_emulator.base_url, "k", key_retention=bad, load_entrypoints=False)
        assert info.value.details["field"] == "key_retention"
        with pytest.raises(InvalidInputError):
            SQLiteStore(str(tmp_path / "k.db"), timeout=bad)


# --------------------------------------------------------------------------- approvals in Hermes' order


def _leave(command: str, approve: str) -> Callable[[ApprovalRequest], Any]:
    """A provider that leaves ``command`` to the caller and approves ``approve``."""
    def provider(request: ApprovalRequest) -> Any:
        return approve_all(request) if request.input_snapshot["command"] == approve else None
    return provider


def test_an_answer_never_goes_out_while_an_older_request_is_unanswered(runs_server: Any) -> None:
    # Two requests pending at once (a server that runs tools concurrently): the provider approves
    # the later `ls /tmp` and leaves the older `rm -rf /important` to the caller. Hermes would apply
    # an `once` sent now to the rm (oldest first, no id): nothing may be sent.
    server = runs_server([approval_request("rm -rf /important"), approval_request("ls /tmp")], status=WAITING)
    asked: list[str] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request.input_snapshot["command"])
        return _leave("rm -rf /important", "ls /tmp")(request)

    with server.client(approval_provider=provider) as client:
        run = client.run("go", idempotency_key="k-two")
        # Both requests read (the stream is then held open): waited for, not assumed after 0.5 s.
        assert wait_for(lambda: [type(e).__name__ for e in run.wait(timeout=0.05).events].count(
            "ApprovalRequested") == 2, 20)
        assert not run.wait(timeout=0).done
        assert server.approvals == [], "an answer went out while an older request was unanswered"
        assert asked == ["rm -rf /important"]  # the later one is not even asked yet
        assert run.pending_approval is not None and run.pending_approval.command == "rm -rf /important"
        # The caller denies the rm (Hermes applies it to the oldest: the rm); then the ls is the
        # oldest, and the provider's approval of it goes out.
        run.approve("deny")
        assert run.pending_approval is not None and run.pending_approval.command == "ls /tmp"
        assert wait_for(lambda: run.wait(timeout=0.05) is not None and server.approvals == ["deny", "once"], 30)
        assert asked == ["rm -rf /important", "ls /tmp"] and run.pending_approval is None
        assert [type(e).__name__ for e in run.wait(timeout=0).events].count("ApprovalRequested") == 2


def test_an_answer_hermes_would_apply_to_the_next_command_is_not_sent(hermes_emulator_factory: Any) -> None:
    # Hermes is serial: when the provider takes longer than Hermes' approval timeout, the first
    # command is BLOCKED and the second asked before the provider answers. Sent then, the answer
    # meant for the first would approve the second.
    # Hermes gives up after 2 s; the late answer comes once Hermes asks about /scratch/b (seen in
    # the emulator), not after a sleep that a busy machine makes early or late.
    emu: HermesEmulator = hermes_emulator_factory(toolsets=TOOLSETS, approval_timeout=2.0)
    emu.files["/scratch/a/keep.txt"] = "a"
    emu.files["/scratch/b/keep.txt"] = "b"
    asked: list[str] = []

    def provider(request: ApprovalRequest) -> Any:
        command = request.input_snapshot["command"]
        asked.append(command)
        if command == "rm -rf /scratch/a":
            # Hermes gives up on it after 2 s and asks about /scratch/b (which it would give up on
            # at 4 s): answered while /scratch/b is asked, the "once" would approve /scratch/b.
            assert wait_for(lambda: any(p.get("command") == "rm -rf /scratch/b" for rid in emu.run_ids()
                                        for p in emu.pending_approvals(rid)), 30)
            return approve_all(request)
        return request.deny(approver="test", reason="not b")

    with emu.client(load_entrypoints=False, approval_provider=provider) as client:
        result = client.run("TOOL:terminal:rm -rf /scratch/a||TOOL:terminal:rm -rf /scratch/b",
                            idempotency_key="k-late").wait(timeout=20)
    sent = [json.loads(r.raw_body)["choice"] for r in emu.requests_seen if r.path.endswith("/approval")]
    assert result.ok and asked == ["rm -rf /scratch/a", "rm -rf /scratch/b"]
    assert sent == ["deny"], sent  # the late "once" for /scratch/a never went out
    assert emu.files["/scratch/b/keep.txt"] == "b"  # ... so /scratch/b was not approved by it
    assert emu.files["/scratch/a/keep.txt"] == "a"  # and /scratch/a was blocked by Hermes' timeout


class HoldReader:
    """A plugin observing run events on the events reader's thread: it holds that thread at the
    first event after the first ``approval.request`` (the request's timeout), so this client has not
    read that Hermes moved on when the provider's late answer is decided."""

    def __init__(self) -> None:
        self.asked = False
        self.holding = threading.Event()
        self.release = threading.Event()

    @hookimpl
    def hermes_stream_event(self, call: Any, event: dict[str, object]) -> None:
        data = event.get("data")
        name = data.get("event") if isinstance(data, dict) else None
        if name == "approval.request":
            self.asked = True
        elif self.asked and not self.holding.is_set():
            self.holding.set()
            assert self.release.wait(60)  # a safety limit: released once the answer was decided


@pytest.mark.parametrize("version", ["0.19.0", "0.20.1"])
def test_a_late_answer_is_checked_against_the_server_not_the_events_read(hermes_emulator_factory: Any,
                                                                         version: str) -> None:
    # As above, but this client's events reader is held before it reads that the first request
    # timed out: by the events it has read, /scratch/a is still pending when the provider answers.
    # The run object says otherwise (Hermes waits for a request made after /scratch/a's), and the
    # answer Hermes would apply to /scratch/b is not sent.
    emu: HermesEmulator = hermes_emulator_factory(toolsets=TOOLSETS, approval_timeout=2.0, server_version=version)
    emu.files["/scratch/a/keep.txt"] = "a"
    emu.files["/scratch/b/keep.txt"] = "b"
    hold = HoldReader()
    asked: list[str] = []
    decided = threading.Event()

    def provider(request: ApprovalRequest) -> Any:
        command = request.input_snapshot["command"]
        asked.append(command)
        if command == "rm -rf /scratch/a":
            assert hold.holding.wait(30)
            assert wait_for(lambda: any(p.get("command") == "rm -rf /scratch/b" for rid in emu.run_ids()
                                        for p in emu.pending_approvals(rid)), 30)
            decided.set()
            return approve_all(request)
        return request.deny(approver="test", reason="not b")

    def releaser() -> None:
        # The answer's thread ends once it sent the answer or settled that it must not.
        assert decided.wait(60)
        wait_for(lambda: not any(t.name == "hermes-sdk-approval" and t.is_alive() for t in threading.enumerate()))
        hold.release.set()

    opener = threading.Thread(target=releaser)
    opener.start()
    try:
        with emu.client(load_entrypoints=False, approval_provider=provider, plugins=[hold]) as client:
            result = client.run("TOOL:terminal:rm -rf /scratch/a||TOOL:terminal:rm -rf /scratch/b",
                                idempotency_key="k-held").wait(timeout=30)
    finally:
        hold.release.set()
        opener.join()
    sent = [json.loads(r.raw_body)["choice"] for r in emu.requests_seen if r.path.endswith("/approval")]
    assert result.ok and asked == ["rm -rf /scratch/a", "rm -rf /scratch/b"]
    assert sent == ["deny"], sent
    assert emu.files["/scratch/b/keep.txt"] == "b" and emu.files["/scratch/a/keep.txt"] == "a"


# --------------------------------------------------------------------------- no answer about another run is believed


def test_replies_about_another_run_are_invalid_responses(runs_server: Any) -> None:
    server = runs_server([approval_request("rm -rf /scratch/x")], another=True,
                         status={"object": "hermes.run", "status": "completed", "output": "not yours"})
    with server.client() as client:
        run = client.run("go", idempotency_key="k-another")
        with pytest.raises(InvalidResponseError) as got:
            client.runs.get(run.id)  # a completed status of another run: not this run's end
        assert got.value.uncertain_outcome is False and got.value.details["reason"] == "another_object"
        for call in (lambda: client.runs.approve(run.id, "deny"), lambda: client.runs.stop(run.id)):
            with pytest.raises(InvalidResponseError) as changed:
                call()
            assert changed.value.uncertain_outcome is True  # sent: Hermes may have acted on ours
        assert client.invoke("cap:hermes_agent:default:run_get", {"run_id": run.id}).status == "failed"


def test_events_about_another_run_break_the_stream(runs_server: Any) -> None:
    # The stream says "run.completed" for another run: neither the Run nor invoke() believe it.
    foreign_end = {"event": "run.completed", "run_id": OTHER_ID, "output": "not yours", "usage": {}}
    server = runs_server([{"event": "message.delta", "delta": "hi"}, foreign_end],
                         status={"object": "hermes.run", "status": "running"})
    with server.client() as client:
        run = client.run("go", idempotency_key="k-foreign-event")
        # The foreign event read (waited for, not assumed to come within 0.6 s).
        assert wait_for(lambda: run.wait(timeout=0.05) is not None and run.stream_error is not None, 20)
        result = run.wait(timeout=0.6)  # polled after the foreign event: still running
        assert not result.done and result.output is None and result.text == "hi"
        assert isinstance(run.stream_error, InvalidResponseError)
        assert run.stream_error.details["reason"] == "another_object"
        invoked = client.invoke("cap:hermes_agent:default:run_events", {"run_id": "run_x"})
        assert invoked.status == "failed" and isinstance(invoked.error, InvalidResponseError)
        assert invoked.error.uncertain_outcome is True


def test_invoke_never_opens_a_second_subscription_on_a_followed_run(runs_server: Any) -> None:
    # Hermes splits a run's events between its subscribers: a second one would take the Run's.
    server = runs_server([{"event": "message.delta", "delta": "hi"}])
    with server.client() as client:
        run = client.run("go", idempotency_key="k-one-subscriber")
        subscriptions = [r for r in server.raw.requests if r.target.endswith("/events")]
        result = client.invoke("cap:hermes_agent:default:run_events", {"run_id": run.id})
        assert result.status == "failed" and isinstance(result.error, InvalidInputError)
        assert result.error.details["reason"] == "already_subscribed" and result.error.details["sent"] is False
        assert [r for r in server.raw.requests if r.target.endswith("/events")] == subscriptions
        run.close()  # the caller let go of it: from now on a subscription is the caller's choice
        late = client.invoke("cap:hermes_agent:default:run_events", {"run_id": run.id}, timeout=0.3)
        assert isinstance(late.error, DeadlineExceededError)  # sent (the scripted stream never ends)
        assert len([r for r in server.raw.requests if r.target.endswith("/events")]) == len(subscriptions) + 1
