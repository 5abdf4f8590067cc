"""A run's events across resumed subscriptions, against a hostile server on loopback: every event is
delivered once, an approval reaches the provider once, and ``events_complete`` is True only when the
result holds every event (else ``events_note`` says what is missing or doubtful)."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any, Optional, Union

import pytest
from core_support import RawRequest, RawServer, approve_all, chunk, json_response, raw_client, sse_head

from hermes_sdk import ApprovalRequest
from hermes_sdk.errors import InvalidResponseError

RUN_ID = "run_5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e"
WAIT_FOR_ANSWER = "wait for the approval answer"
#: A frame of a script: ``(id line or None, event)``, or WAIT_FOR_ANSWER.
Frame = Union[tuple[Optional[str], dict[str, Any]], str]


def event(kind: str, at: float, **fields: Any) -> dict[str, Any]:
    return {"event": kind, "run_id": RUN_ID, "timestamp": 1796133646.0 + at, **fields}


def deltas(pieces: list[str], start: float = 10.0) -> list[dict[str, Any]]:
    return [event("message.delta", start + i / 100, delta=piece) for i, piece in enumerate(pieces)]


def completed(output: str, at: float = 90.0) -> dict[str, Any]:
    return event("run.completed", at, output=output, usage={"input_tokens": 1, "output_tokens": 2,
                                                            "total_tokens": 3})


def approval(at: float, request_id: str = "req-1") -> dict[str, Any]:
    return event("approval.request", at, command="rm -rf /scratch/x", pattern_key="delete", pattern_keys=["delete"],
                 description="delete", allow_permanent=False, choices=["once", "session", "deny"],
                 request_id=request_id)


def numbered(events: list[dict[str, Any]], first: int = 0) -> list[Frame]:
    return [(str(first + i), e) for i, e in enumerate(events)]


def bare(events: list[dict[str, Any]]) -> list[Frame]:
    return [(None, e) for e in events]


class ResumeServer:
    """A scripted ``/v1/runs``: subscription n is served ``scripts[n]``; a script whose last event is
    not terminal ends by dropping the connection mid-stream. ``GET /v1/runs/{id}`` says
    ``waiting_for_approval`` while a request waits for its answer (the SDK reads it before sending
    one), then ``final``."""

    def __init__(self, scripts: list[list[Frame]], final_output: str) -> None:
        self.scripts = scripts
        self.final = {"object": "hermes.run", "run_id": RUN_ID, "status": "completed", "output": final_output,
                      "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}}
        self.answers: list[dict[str, Any]] = []
        self.answered = threading.Event()
        self.awaiting = threading.Event()  # a request is out and unanswered: the status says so
        self.subscriptions: list[RawRequest] = []
        self.raw = RawServer(self.handle)

    def handle(self, conn: socket.socket, request: RawRequest, server: RawServer) -> None:
        target, method = request.target, request.method
        if method == "POST" and target == "/v1/runs":
            conn.sendall(json_response(202, json.dumps({"run_id": RUN_ID, "status": "started"}).encode()))
        elif target.endswith("/events"):
            self.subscriptions.append(request)
            self.serve_events(conn, len(self.subscriptions) - 1)
        elif target.endswith("/approval"):
            body = json.loads(request.body)
            self.answers.append(body)
            conn.sendall(json_response(200, json.dumps({"object": "hermes.run.approval_response", "run_id": RUN_ID,
                                                        "choice": body["choice"], "resolved": 1}).encode()))
            self.answered.set()
        elif method == "GET" and target == f"/v1/runs/{RUN_ID}":
            waiting = self.awaiting.is_set() and not self.answered.is_set()
            status = {"object": "hermes.run", "run_id": RUN_ID, "status": "waiting_for_approval"}
            conn.sendall(json_response(200, json.dumps(status if waiting else self.final).encode()))
        else:
            conn.sendall(json_response(404, b'{"error": {"message": "no", "type": "invalid_request_error"}}'))

    def serve_events(self, conn: socket.socket, n: int) -> None:
        script = self.scripts[n] if n < len(self.scripts) else []
        conn.sendall(sse_head() + chunk(b": open\n\n"))
        last: Optional[dict[str, Any]] = None
        for frame in script:
            if frame == WAIT_FOR_ANSWER:
                assert self.answered.wait(10), "the approval was never answered"
                continue
            assert not isinstance(frame, str)
            event_id, data = frame
            head = b"" if event_id is None else b"id: " + event_id.encode() + b"\n"
            if data["event"] == "approval.request":
                self.awaiting.set()
            conn.sendall(chunk(head + b"data: " + json.dumps(data).encode() + b"\n\n"))
            last = data
        if last is not None and str(last["event"]).startswith("run."):
            conn.sendall(chunk(b": stream closed\n\n") + b"0\r\n\r\n")
            return
        conn.shutdown(socket.SHUT_RDWR)  # dropped mid-stream: no terminating chunk
        conn.close()

    def resumed_from(self) -> list[Optional[str]]:
        return [r.header("Last-Event-ID") for r in self.subscriptions]


@pytest.fixture
def resume_server() -> Any:
    servers: list[ResumeServer] = []

    def make(scripts: list[list[Frame]], final_output: str = "") -> ResumeServer:
        server = ResumeServer(scripts, final_output)
        servers.append(server)
        return server

    yield make
    for server in servers:
        server.raw.close()


class Provider:
    """Approves every request, counting them by request id."""

    def __init__(self) -> None:
        self.asked: list[Optional[str]] = []

    def __call__(self, request: ApprovalRequest) -> Any:
        self.asked.append(str((request.input_snapshot or {}).get("command")))
        return approve_all(request)


def run_through(server: ResumeServer, provider: Optional[Provider] = None) -> Any:
    with raw_client(server.raw, approval_provider=provider) as client:
        return client.run("go", idempotency_key="k-resume").wait(timeout=20)


def raws(result: Any) -> list[dict[str, Any]]:
    return [e.raw for e in result.events]


def assert_once(result: Any) -> None:
    seen = [json.dumps(e.raw, sort_keys=True) for e in result.events]
    assert len(seen) == len(set(seen)), "an event was delivered twice"


# --------------------------------------------------------------------------- (a) a replay without ids

TOOL_RUN = [event("tool.started", 1, tool="terminal", preview="rm -rf /scratch/x"), approval(2),
            event("approval.responded", 3, choice="once", resolved=1),
            event("tool.completed", 4, tool="terminal", duration=0.1, error=False)]
HELLO = TOOL_RUN + deltas(["hello ", "world"]) + [completed("hello world")]


def test_a_replay_from_the_start_without_ids_is_delivered_once(resume_server: Any) -> None:
    # Dropped after "hello "; the resumed stream ignores Last-Event-ID and replays the whole run
    # without id: lines. The replay is the same JSON, event by event, as what was delivered: it is
    # recognised as a replay from the start, skipped, and only what follows is new.
    first = numbered(HELLO[:2]) + [WAIT_FOR_ANSWER] + numbered(HELLO[2:5], first=2)
    server = resume_server([first, bare(HELLO)], "hello world")
    provider = Provider()
    result = run_through(server, provider)
    assert server.resumed_from() == [None, "4"]
    assert raws(result) == HELLO and result.text == "hello world"
    assert provider.asked == ["rm -rf /scratch/x"] and [a["choice"] for a in server.answers] == ["once"]
    assert result.ok and result.events_complete and result.events_note is None


def test_a_replay_without_ids_that_differs_is_not_believed(resume_server: Any) -> None:
    # The same run replayed without ids, but every timestamp differs: the SDK cannot tell old from
    # new. Nothing is delivered twice; the outcome comes from polling, marked incomplete.
    first = numbered(HELLO[:2]) + [WAIT_FOR_ANSWER] + numbered(HELLO[2:5], first=2)
    redone = [dict(e, timestamp=e["timestamp"] + 0.5) for e in HELLO]
    server = resume_server([first, bare(redone)], "hello world")
    provider = Provider()
    result = run_through(server, provider)
    assert raws(result) == HELLO[:5] and result.text == "hello "
    assert provider.asked == ["rm -rf /scratch/x"] and len(server.answers) == 1
    assert result.ok and result.output == "hello world"  # from the status
    assert not result.events_complete and "without ids" in (result.events_note or "")


# --------------------------------------------------------------------------- (b) ids that restart

TEN = deltas([f"w{i} " for i in range(9)]) + [completed("w0 w1 w2 w3 w4 w5 w6 w7 w8")]


def test_ids_that_restart_after_a_resume_are_not_believed(resume_server: Any) -> None:
    # Four events (ids 0-3), a drop, then the rest numbered again from 1: the old reader dropped
    # ids 1-3 as repeats (three events lost) and said complete.
    server = resume_server([numbered(TEN[:4]), numbered(TEN[4:], first=1)], "w0 w1 w2 w3 w4 w5 w6 w7 w8")
    result = run_through(server)
    assert server.resumed_from() == [None, "3"]
    assert raws(result) == TEN[:4]  # nothing of the renumbered stream: it cannot be placed
    assert_once(result)
    assert result.ok and result.output == "w0 w1 w2 w3 w4 w5 w6 w7 w8"
    assert not result.events_complete and "id 1" in (result.events_note or "")
    assert isinstance(result.events_note, str)


def test_a_replay_with_the_same_ids_is_skipped_and_complete(resume_server: Any) -> None:
    # A server that resends from the start with its own ids: repeats of delivered events (same id,
    # same JSON) are skipped; the result is whole. The restart after it (ids 0.. with new events)
    # is not believed.
    server = resume_server([numbered(TEN[:4]), numbered(TEN)], "")
    result = run_through(server)
    assert raws(result) == TEN and result.events_complete and result.events_note is None
    renumbered = resume_server([numbered(TEN[:4]), numbered(TEN[4:])], "all")
    result = run_through(renumbered)
    assert raws(result) == TEN[:4] and not result.events_complete and "id 0" in (result.events_note or "")


# --------------------------------------------------------------------------- (c) gaps and other shapes

def test_a_gap_after_a_resume_is_reported(resume_server: Any) -> None:
    # Resumed after id 3, the server goes on at id 6: events 4 and 5 never arrive.
    server = resume_server([numbered(TEN[:4]), numbered(TEN[6:], first=6)], "all")
    result = run_through(server)
    assert raws(result) == TEN[:4] + TEN[6:] and result.status == "completed"
    assert not result.events_complete and "4-5" in (result.events_note or "")


def test_a_gap_within_one_stream_is_reported(resume_server: Any) -> None:
    frames = numbered(TEN[:3]) + numbered(TEN[5:], first=5)
    result = run_through(resume_server([frames], "all"))
    assert raws(result) == TEN[:3] + TEN[5:]
    assert not result.events_complete and "3-4" in (result.events_note or "")


def test_a_repeated_id_is_skipped_and_a_reused_one_is_not_believed(resume_server: Any) -> None:
    # id 1 twice with the same JSON: a repeat, skipped. Then id 1 again with another event: the ids
    # went backwards; the stream is not believed (the old reader dropped it silently).
    frames = numbered(TEN[:3]) + [("1", TEN[1]), ("1", TEN[3])] + numbered(TEN[4:], first=3)
    server = resume_server([frames], "all")
    result = run_through(server)
    assert raws(result) == TEN[:3]
    assert not result.events_complete and "id 1" in (result.events_note or "")


def test_ids_that_go_backwards_are_not_believed(resume_server: Any) -> None:
    # The old reader dropped id 5 silently and took the end (id 8) as a whole run.
    frames = numbered(TEN[:3]) + [("7", TEN[3]), ("5", TEN[4]), ("8", TEN[9])]
    result = run_through(resume_server([frames], "all"))
    assert raws(result) == TEN[:4]  # 7 delivered (after a noted gap), 5 is not placed: the run is polled
    assert not result.events_complete and "backwards" in (result.events_note or "")


def test_an_event_without_a_numeric_id_in_a_numbered_stream_is_not_resumed_past(resume_server: Any) -> None:
    # ids 0, 1, then an event named "x": resumed after 1, an honest server would send that event
    # again as id 2, and it would be delivered twice. The position is lost: the run is polled.
    frames: list[Frame] = numbered(TEN[:2]) + [("x", TEN[2])]
    server = resume_server([frames, numbered(TEN[2:], first=2)], "all")
    result = run_through(server)
    assert server.resumed_from() == [None]  # not resumed
    assert raws(result) == TEN[:3] and not result.events_complete and result.events_note


def test_an_id_of_other_digits_is_no_number(resume_server: Any) -> None:
    # "²" passes str.isdigit() but is no event number: the old reader's int() failed and broke the
    # stream. It is an event without a number; the numbered ones around it are all there.
    frames: list[Frame] = numbered(TEN[:2]) + [("\u00b2", TEN[2]), ("2", TEN[9])]
    server = resume_server([frames], "all")
    result = run_through(server)
    assert server.resumed_from() == [None] and raws(result) == TEN[:3] + [TEN[9]]
    assert result.events_complete and result.events_note is None


# --------------------------------------------------------------------------- approvals across a resume

def test_a_request_announced_again_after_a_resume_reaches_the_provider_once(resume_server: Any) -> None:
    # The resumed stream announces the still-pending request again (a new event, the same
    # request_id): the event is delivered, the provider is not asked again, and one answer is sent.
    again = dict(approval(2.5), request_id="req-1")
    first = numbered(HELLO[:2])
    rest = [("2", again), WAIT_FOR_ANSWER] + numbered(HELLO[2:], first=3)
    server = resume_server([first, rest], "hello world")
    provider = Provider()
    result = run_through(server, provider)
    assert server.resumed_from() == [None, "1"]
    assert raws(result) == HELLO[:2] + [again] + HELLO[2:]
    assert provider.asked == ["rm -rf /scratch/x"] and [a["choice"] for a in server.answers] == ["once"]
    assert result.ok and result.events_complete and result.events_note is None


# --------------------------------------------------------------------------- honest servers

def test_an_honest_resume_is_complete_and_a_broken_unnumbered_stream_says_why(resume_server: Any) -> None:
    server = resume_server([numbered(HELLO[:2]) + [WAIT_FOR_ANSWER], numbered(HELLO[2:], first=2)], "hello world")
    result = run_through(server, Provider())
    assert server.resumed_from() == [None, "1"] and raws(result) == HELLO
    assert result.events_complete and result.events_note is None
    old = resume_server([bare(TEN[:3])], "all")  # 0.19/0.20: no ids, never resumed, polled
    result = run_through(old)
    assert old.resumed_from() == [None] and raws(result) == TEN[:3] and result.ok
    assert not result.events_complete and "polling" in (result.events_note or "")


def test_events_about_an_unplaceable_stream_name_the_reason(resume_server: Any) -> None:
    server = resume_server([numbered(TEN[:4]), numbered(TEN[4:], first=1)], "all")
    with raw_client(server.raw) as client:
        run = client.run("go", idempotency_key="k-reason")
        result = run.wait(timeout=20)
    assert isinstance(run.stream_error, InvalidResponseError)
    assert run.stream_error.details["reason"] == "events_out_of_order"
    assert result.events_note and result.events_note.startswith(str(run.stream_error.message)[:20])
