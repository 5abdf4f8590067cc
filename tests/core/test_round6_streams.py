"""Round 6: approvals on streams end typed and bounded.

- A chat stream whose approval answer fails (a 503, or a provider that raises) settles as a typed,
  uncertain HermesError; ``result()`` raises it (no ``assert`` decides it).
- A run's approval answer refused with 503 is tried again on a doubling pause that honours
  ``Retry-After``, and not at all once the run or its client is closed. Decided by counting the
  requests the emulator received, with the pause recorded instead of slept where order matters.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Callable

import pytest
from core_support import approve_all

from hermes_sdk import ApprovalRequest, HermesClient
from hermes_sdk._families.runs import run_answers
from hermes_sdk.errors import PluginError, ServerError
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

DANGEROUS = "TOOL:terminal:rm -rf /scratch/a"
APPROVALS = "/v1/runs/*/approval"


def _emulator(factory: Callable[..., HermesEmulator], version: str = "0.22.2") -> HermesEmulator:
    emu = factory(toolsets=TOOLSETS, approval_timeout=30.0, server_version=version)
    emu.files["/scratch/a/keep.txt"] = "a"
    return emu


def approval_posts(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.method == "POST" and r.path.endswith("/approval")]


# --------------------------------------------------------------------------- 20: a chat stream's approval fails


def test_a_stream_whose_approval_post_fails_settles_as_an_uncertain_typed_error(hermes_emulator_factory: Any) -> None:
    emu = _emulator(hermes_emulator_factory)
    emu.refuse(APPROVALS, count=1, status=503)
    with emu.client(load_entrypoints=False, approval_provider=approve_all) as client:
        stream = client.chat_stream(prompt=DANGEROUS)
        with pytest.raises(ServerError) as raised:
            stream.result()
        assert stream.closed  # settled: recorded and observed, not left open
        with pytest.raises(ServerError) as again:
            stream.result()  # the same outcome every time
    err = raised.value
    assert again.value is err and err.uncertain_outcome is True and err.retryable is False
    assert err.details["reason"] == "stream_approval_failed" and err.details["approval_http_status"] == 503
    assert stream.action_result is not None and stream.action_result.status == "failed"
    assert stream.action_result.error is err
    assert len(approval_posts(emu)) == 1


def test_a_stream_whose_approval_provider_raises_settles_as_a_plugin_error(hermes_emulator_factory: Any) -> None:
    emu = _emulator(hermes_emulator_factory)

    def broken(request: ApprovalRequest) -> Any:
        raise RuntimeError("the approver's database is down")

    with emu.client(load_entrypoints=False, approval_provider=broken) as client:
        stream = client.chat_stream(prompt=DANGEROUS)
        with pytest.raises(PluginError) as raised:
            list(stream)  # iteration raises it where it happened
        with pytest.raises(PluginError) as again:
            stream.result()
    assert again.value is raised.value and raised.value.uncertain_outcome is True
    assert raised.value.details["reason"] == "stream_approval_failed"
    assert raised.value.details["hook"] == "approval_provider"  # says whose failure it was
    assert approval_posts(emu) == [] and "/scratch/a/keep.txt" in emu.files


def test_the_streaming_code_uses_no_assert_for_control_flow() -> None:
    import ast
    import inspect

    from hermes_sdk._core import executor, streaming
    from hermes_sdk._families.runs import run, stream_approvals

    for module in (streaming, executor, stream_approvals, run, run_answers):
        tree = ast.parse(inspect.getsource(module))
        asserts = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Assert)]
        assert asserts == [], f"{module.__name__} decides with assert at lines {asserts}"


# --------------------------------------------------------------------------- 21: a refused run answer


class Pauses:
    """Stands in for the sender's pause: records each one and returns at once (not closed)."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    def __call__(self, closing: threading.Event, seconds: float, closed: Callable[[], bool]) -> bool:
        self.seconds.append(seconds)
        return not (closing.is_set() or closed())


def test_a_refused_answer_waits_for_retry_after_and_backs_off(hermes_emulator_factory: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    emu = _emulator(hermes_emulator_factory)
    pauses = Pauses()
    monkeypatch.setattr(run_answers, "pause", pauses)
    emu.refuse(APPROVALS, count=2, status=503, retry_after="3")
    emu.refuse(APPROVALS, count=3, status=503)  # then three without Retry-After
    with emu.client(load_entrypoints=False, approval_provider=approve_all) as client:
        run = client.run(DANGEROUS, idempotency_key=f"k21-{id(emu)}")
        result = run.wait(timeout=30)
    assert result.ok and "/scratch/a/keep.txt" not in emu.files  # approved once, in the end
    assert len(approval_posts(emu)) == 6  # 5 refused, then the one Hermes applied
    assert [json.loads(r.raw_body)["choice"] for r in approval_posts(emu)] == ["once"] * 6
    waits = pauses.seconds
    assert len(waits) == 5 and waits[:2] == [3.0, 3.0]  # never sooner than Retry-After
    assert waits[2:] == [1.0, 2.0, 4.0]  # then the doubling pause (from 0.25 s)
    assert all(w <= run_answers.RETRY_AFTER_MAX for w in waits)


def test_the_pause_between_tries_is_capped(monkeypatch: pytest.MonkeyPatch, hermes_emulator_factory: Any) -> None:
    emu = _emulator(hermes_emulator_factory)
    pauses = Pauses()
    monkeypatch.setattr(run_answers, "pause", pauses)
    emu.refuse(APPROVALS, count=8, status=503, retry_after="86400")  # a day: capped
    with emu.client(load_entrypoints=False, approval_provider=approve_all) as client:
        result = client.run(DANGEROUS, idempotency_key="k21-cap").wait(timeout=30)
    assert result.ok and len(approval_posts(emu)) == 9
    assert pauses.seconds == [run_answers.RETRY_AFTER_MAX] * 8


@pytest.mark.parametrize("closing", ["run", "client"])
def test_a_refused_answer_is_not_sent_again_after_close(hermes_emulator_factory: Any, closing: str) -> None:
    emu = _emulator(hermes_emulator_factory)
    emu.refuse(APPROVALS, count=1000, status=503, retry_after="30")  # a pause only close() cuts short
    refused = threading.Event()
    senders: list[threading.Thread] = []

    def provider(request: ApprovalRequest) -> Any:
        senders.append(threading.current_thread())  # the asking thread also sends the answer
        return approve_all(request)

    client = HermesClient(emu.base_url, emu.api_key, load_entrypoints=False, approval_provider=provider)
    run = client.run(DANGEROUS, idempotency_key=f"k21-{id(emu)}")
    # Follow the run (short waits: the provider is asked while one runs) until the emulator has
    # refused the first answer; its sender then pauses for the Retry-After.
    for _ in range(200):
        run.wait(timeout=0.05)
        if approval_posts(emu):
            refused.set()
            break
    assert refused.is_set() and senders
    if closing == "run":
        run.close()
    else:
        client.close()
    senders[0].join(timeout=10)  # bounded: the sender ends once it sees the close
    seen = len(approval_posts(emu))
    client.close()
    assert not senders[0].is_alive(), "the answer's sender kept trying after close()"
    assert seen == 1, f"{seen} approval POSTs after close()"



# --------------------------------------------------------------------------- 22: a request only a resumed stream sent

RUN_ID = "run_6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e"


def _run_event(kind: str, at: float, **fields: Any) -> dict[str, Any]:
    return {"event": kind, "run_id": RUN_ID, "timestamp": 1796133646.0 + at, **fields}


REQUEST = _run_event("approval.request", 2, command="rm -rf /scratch/x", pattern_key="delete",
                     pattern_keys=["delete"], description="delete", allow_permanent=False,
                     choices=["once", "session", "deny"], request_id="req-6")


class UnplaceableResume:
    """A ``/v1/runs`` whose events stream breaks after its first event, and whose resumed stream
    numbers its events from 0 again (the SDK cannot place it) with the approval request on it.
    ``GET /v1/runs/{id}`` says ``waiting_for_approval`` until an answer came (with the request
    embedded when ``embeds``, as 0.21+ does), then ``completed``."""

    def __init__(self, embeds: bool) -> None:
        from core_support import RawServer

        self.embeds = embeds
        self.answers: list[dict[str, Any]] = []
        self.answered = threading.Event()
        self.raw = RawServer(self.handle)

    def handle(self, conn: Any, request: Any, server: Any) -> None:
        from core_support import chunk, json_response, sse_head

        target = request.target
        if request.method == "POST" and target == "/v1/runs":
            conn.sendall(json_response(202, json.dumps({"run_id": RUN_ID, "status": "started"}).encode()))
        elif target.endswith("/events"):
            resumed = request.header("Last-Event-ID") is not None
            frame = REQUEST if resumed else _run_event("tool.started", 1, tool="terminal", preview="rm -rf /scratch/x")
            conn.sendall(sse_head() + chunk(b": open\n\n") + chunk(b"id: 0\ndata: " + json.dumps(frame).encode()
                                                                  + b"\n\n"))
            if resumed:
                self.answered.wait(10)
            conn.close()
        elif target.endswith("/approval"):
            body = json.loads(request.body)
            self.answers.append(body)
            conn.sendall(json_response(200, json.dumps({"object": "hermes.run.approval_response", "run_id": RUN_ID,
                                                        "choice": body["choice"], "resolved": 1}).encode()))
            self.answered.set()
        else:
            status: dict[str, Any] = {"object": "hermes.run", "run_id": RUN_ID, "status": "completed", "output": "done"}
            if not self.answered.is_set():
                status = {"object": "hermes.run", "run_id": RUN_ID, "status": "waiting_for_approval"}
                if self.embeds:
                    status["approval"] = REQUEST
            conn.sendall(json_response(200, json.dumps(status).encode()))


def test_a_request_the_status_embeds_is_asked_when_the_stream_could_not_be_placed() -> None:
    from core_support import raw_client

    server = UnplaceableResume(embeds=True)
    asked: list[Any] = []

    def provider(request: ApprovalRequest) -> Any:
        asked.append(request.input_snapshot["command"])
        return approve_all(request)

    try:
        with raw_client(server.raw, approval_provider=provider) as client:
            result = client.run("go", idempotency_key="k22-embedded").wait(timeout=20)
    finally:
        server.raw.close()
    assert asked == ["rm -rf /scratch/x"]  # asked once, from the run object
    assert server.answers == [{"choice": "once", "request_id": "req-6"}]
    assert result.ok and result.output == "done"


def test_a_request_nobody_can_name_is_a_typed_error_not_a_silent_wait() -> None:
    from core_support import raw_client

    from hermes_sdk.errors import ApprovalRequiredError

    server = UnplaceableResume(embeds=False)
    try:
        with raw_client(server.raw, approval_provider=approve_all) as client:
            run = client.run("go", idempotency_key="k22-unnamed")
            with pytest.raises(ApprovalRequiredError) as raised:
                run.wait(timeout=20)
            run.approve("deny")  # the caller can still answer it
            result = run.wait(timeout=20)
    finally:
        server.answered.set()
        server.raw.close()
    assert raised.value.details["reason"] == "approval_not_received" and raised.value.details["run_id"] == RUN_ID
    assert server.answers == [{"choice": "deny"}] and result.ok


# --------------------------------------------------------------------------- 23: recording a close-delimited body


class CloseDelimitedRun:
    """A ``/v1/runs`` whose events body has neither a length nor chunks (it ends when the server
    closes): the approval request, then the body waits for the answer (the barrier) before its
    end is sent. ``in_order`` says whether the answer came before the end was sent."""

    def __init__(self) -> None:
        from core_support import RawServer

        self.answers: list[dict[str, Any]] = []
        self.answered = threading.Event()
        self.in_order: list[bool] = []
        self.raw = RawServer(self.handle)

    def handle(self, conn: Any, request: Any, server: Any) -> None:
        from core_support import json_response, sse_head

        target = request.target
        if request.method == "POST" and target == "/v1/runs":
            conn.sendall(json_response(202, json.dumps({"run_id": RUN_ID, "status": "started"}).encode()))
        elif target.endswith("/events"):
            conn.sendall(sse_head(chunked=False) + b": open\n\ndata: " + json.dumps(REQUEST).encode() + b"\n\n")
            self.in_order.append(self.answered.wait(10))  # the barrier: the end only after the answer
            rest = [_run_event("approval.responded", 3, choice="once", resolved=1),
                    _run_event("run.completed", 4, output="done", usage={"input_tokens": 1, "output_tokens": 1,
                                                                          "total_tokens": 2})]
            conn.sendall(b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in rest))
            conn.close()
        elif target.endswith("/approval"):
            body = json.loads(request.body)
            self.answers.append(body)
            conn.sendall(json_response(200, json.dumps({"object": "hermes.run.approval_response", "run_id": RUN_ID,
                                                        "choice": body["choice"], "resolved": 1}).encode()))
            self.answered.set()
        else:
            status = "completed" if self.answered.is_set() else "waiting_for_approval"
            conn.sendall(json_response(200, json.dumps({"object": "hermes.run", "run_id": RUN_ID,
                                                        "status": status}).encode()))


def test_recording_hands_a_close_delimited_events_body_over_as_it_arrives(tmp_path: Any) -> None:
    from core_support import raw_client

    from hermes_sdk.testing import use_cassette

    server = CloseDelimitedRun()
    try:
        with use_cassette(tmp_path / "close-delimited.json") as recorded:
            with raw_client(server.raw, approval_provider=approve_all) as client:
                result = client.run("go", idempotency_key="k23").wait(timeout=30)
    finally:
        server.answered.set()
        server.raw.close()
    assert recorded.mode == "record"
    assert server.in_order == [True], "the approval reached the provider only after the body ended"
    assert server.answers == [{"choice": "once", "request_id": "req-6"}]
    assert result.ok and result.output == "done" and result.events_complete


@pytest.mark.parametrize("kind", ["run", "chat_stream"])
def test_recording_against_a_close_framing_emulator_asks_while_hermes_waits(hermes_emulator_factory: Any,
                                                                             tmp_path: Any, kind: str) -> None:
    from hermes_sdk.testing import use_cassette

    emu = hermes_emulator_factory(toolsets=TOOLSETS, approval_timeout=8.0, server_version="0.22.2", framing="close")
    emu.files["/scratch/a/keep.txt"] = "a"
    pending_when_asked: list[bool] = []

    def provider(request: ApprovalRequest) -> Any:
        # The order of events, not the time: Hermes still holds the request when the provider is asked.
        pending_when_asked.append(any(emu.pending_approvals(run_id) for run_id in emu.run_ids()))
        return approve_all(request)

    with use_cassette(tmp_path / f"{kind}.json") as recorded, \
            emu.client(load_entrypoints=False, approval_provider=provider) as client:
        if kind == "run":
            assert client.run(DANGEROUS, idempotency_key="k23-run").wait(timeout=30).ok
        else:
            client.chat_stream(prompt=DANGEROUS).result()
    assert recorded.mode == "record" and pending_when_asked == [True]
    assert "/scratch/a/keep.txt" not in emu.files  # the approval was applied, not timed out


class SecondRequestUnseen:
    """A 0.19-like ``/v1/runs`` (no ids, no embedded request): the stream delivers one approval
    request and breaks; after its answer the run object waits again (a second request, newer
    ``updated_at``) that no stream delivers; after a second answer the run completes."""

    def __init__(self) -> None:
        from core_support import RawServer

        self.answers: list[dict[str, Any]] = []
        self.raw = RawServer(self.handle)

    def handle(self, conn: Any, request: Any, server: Any) -> None:
        from core_support import chunk, json_response, sse_head

        target = request.target
        if request.method == "POST" and target == "/v1/runs":
            conn.sendall(json_response(202, json.dumps({"run_id": RUN_ID, "status": "started"}).encode()))
        elif target.endswith("/events"):
            first = {k: v for k, v in REQUEST.items() if k != "request_id"}
            conn.sendall(sse_head() + chunk(b"data: " + json.dumps(first).encode() + b"\n\n"))
            conn.close()  # broken mid-stream: no ids, so the run is polled
        elif target.endswith("/approval"):
            body = json.loads(request.body)
            self.answers.append(body)
            conn.sendall(json_response(200, json.dumps({"object": "hermes.run.approval_response", "run_id": RUN_ID,
                                                        "choice": body["choice"], "resolved": 1}).encode()))
        else:
            answered = len(self.answers)
            # Hermes stamps the status just after the request's event; the second request later.
            updated = float(REQUEST["timestamp"]) + (0.001 if answered == 0 else 10.0 * answered)
            status: dict[str, Any] = {"object": "hermes.run", "run_id": RUN_ID, "status": "waiting_for_approval",
                                      "updated_at": updated}
            if answered >= 2:
                status = {"object": "hermes.run", "run_id": RUN_ID, "status": "completed", "output": "done"}
            conn.sendall(json_response(200, json.dumps(status).encode()))


def test_a_second_request_after_an_answer_is_not_mistaken_for_the_answered_one() -> None:
    from core_support import raw_client

    from hermes_sdk.errors import ApprovalRequiredError

    server = SecondRequestUnseen()
    try:
        with raw_client(server.raw, approval_provider=approve_all) as client:
            run = client.run("go", idempotency_key="k22-second")
            with pytest.raises(ApprovalRequiredError) as raised:
                run.wait(timeout=20)
            run.approve("deny")
            result = run.wait(timeout=20)
    finally:
        server.raw.close()
    assert raised.value.details["reason"] == "approval_not_received"
    assert [a["choice"] for a in server.answers] == ["once", "deny"] and result.ok
