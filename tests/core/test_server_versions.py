"""One client for Hermes 0.19, 0.20 and 0.22 (issue 26): each behaviour against the emulator
playing each release (``HermesEmulator(server_version=...)``), with real sockets."""

from __future__ import annotations

import hashlib
from typing import Any, Iterator

import pytest
from core_support import approve_all

from hermes_sdk import HermesClient, StaleApprovalError, SteerNotAcceptedError, TransportError, UnsupportedByServerError
from hermes_sdk._core.events import typed_stream_event
from hermes_sdk._core.models import StreamEvent
from hermes_sdk._families.runs.events import parse_run_event
from hermes_sdk._families.runs.operations import wire_run_key
from hermes_sdk.errors import InvalidInputError
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS
from hermes_sdk.testing.versions import SERVER_VERSIONS
from hermes_sdk.types import ApprovalRequested, HermesStatus, ReasoningDelta, RunCompleted, RunSteered

VICTIM = "/scratch/victim"
DANGEROUS = f"TOOL:terminal:rm -rf {VICTIM}"
NEWER = ("0.20.1", "0.22.2")


@pytest.fixture(scope="module", params=SERVER_VERSIONS)
def served(request: pytest.FixtureRequest) -> Iterator[HermesEmulator]:
    emu = HermesEmulator(server_version=request.param, toolsets=TOOLSETS, approval_timeout=10,
                         tool_followup_delay=0.05, stop_latency=0.05).start()
    yield emu
    emu.stop()


@pytest.fixture
def emu(served: HermesEmulator) -> HermesEmulator:
    served.reset()
    served.files[f"{VICTIM}/keep.txt"] = "precious"
    return served


def version(emu: HermesEmulator) -> str:
    return str(emu._state.settings.server_version)


def client_for(emu: HermesEmulator, **kwargs: Any) -> HermesClient:
    kwargs.setdefault("load_entrypoints", False)
    return emu.client(**kwargs)


def seen(emu: HermesEmulator, suffix: str) -> list[Any]:
    return [r for r in emu.requests_seen if r.path.endswith(suffix)]


# ------------------------------------------------------------------ what the server supports


def test_server_features_are_read_from_the_server(emu: HermesEmulator) -> None:
    with client_for(emu) as client:
        features = client.server_features()
        again = client.server_features()
    assert features is again  # read once per endpoint
    v = version(emu)
    assert features.version == {"0.22.2": "0.22.2.post1"}.get(v, v)
    assert features.run_steer is (v != "0.19.0")
    assert features.runs_idempotency is features.exact_approvals is (v == "0.22.2")
    assert features.fork_redirect is (v != "0.22.2")
    assert len(seen(emu, "/v1/capabilities")) == 1 and len(seen(emu, "/health")) == 1


def test_model_options(emu: HermesEmulator) -> None:
    with client_for(emu) as client:
        if version(emu) == "0.19.0":
            with pytest.raises(UnsupportedByServerError):
                client.model_options()
            assert seen(emu, "/api/model/options") == []
        else:
            providers = client.model_options()["providers"]
            assert [p["slug"] for p in providers if p["is_current"]] == ["custom"]


def test_the_401_body_of_each_version_is_an_authentication_error(emu: HermesEmulator) -> None:
    from hermes_sdk import AuthenticationError

    with HermesClient(emu.base_url, "wrong-key", load_entrypoints=False) as client, \
            pytest.raises(AuthenticationError) as info:
        client.models()
    code = info.value.details["provider_error"]["code"]
    assert code == ("invalid_api_key" if version(emu) == "0.19.0" else "gateway_auth_failed")


# ------------------------------------------------------------------ streamed chat approvals


def test_a_streamed_chat_approval_goes_to_the_provider(emu: HermesEmulator) -> None:
    asked: list[Any] = []

    def deny(request: Any) -> Any:
        asked.append(request)
        return request.deny(approver="test", reason="not on a chat")

    with client_for(emu, approval_provider=deny) as client:
        with client.chat_stream(prompt=DANGEROUS) as stream:
            typed = list(stream.typed())
        text = stream.result().text
    approvals = seen(emu, "/approval")
    if version(emu) == "0.22.2":
        # 0.22 asks on the stream: the provider answered, with the request's id, well before the 10 s timeout.
        assert len(asked) == 1 and asked[0].input_snapshot["command"] == f"rm -rf {VICTIM}"
        requested = [e for e in typed if isinstance(e, ApprovalRequested)]
        assert len(requested) == 1 and requested[0].request_id
        assert len(approvals) == 1 and approvals[0].body == {"choice": "deny", "request_id": requested[0].request_id}
        assert approvals[0].path == f"/v1/runs/{requested[0].run_id}/approval"
        # Hermes applied the denial (not its 10 s timeout): an order the reply tells, not a clock.
        assert requested[0].run_id.startswith("chatcmpl-") and "BLOCKED: Command denied by user" in text
    else:  # 0.19/0.20: the turn returns a pending_approval tool result; nobody is asked
        assert asked == [] and approvals == [] and "pending_approval" in text
    assert f"{VICTIM}/keep.txt" in emu.files


def test_a_streamed_chat_approval_about_another_completion_is_not_answered() -> None:
    from hermes_sdk._families.runs.stream_approvals import StreamApprovals

    calls: list[Any] = []

    class Runs:
        allow_permanent_approvals = False

        def approval_request(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(("ask", args))

        def approve(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(("approve", args))

    approvals = StreamApprovals(Runs(), approve_all, None, None, None)  # type: ignore[arg-type]
    approvals(StreamEvent(None, None, {"id": "chatcmpl-mine", "choices": []}, "{}"))
    approvals(StreamEvent("approval.request", None, {"run_id": "chatcmpl-other", "command": "rm -rf /",
                                                      "request_id": "r1"}, "{}"))
    assert calls == []


def test_a_streamed_chat_approval_after_many_chunks_reaches_the_provider(raw_server: Any) -> None:
    # The stream shows its approval hook every event only until the completion id is known, then only
    # named ones: a request late in a long turn is still asked, one about another completion is not,
    # and a data-only chunk that merely says "approval.request" in its JSON is not a request.
    import json

    from core_support import chunk, raw_client, sse_head

    def event(data: dict[str, Any], name: str = "") -> bytes:
        head = f"event: {name}\n".encode() if name else b""
        return chunk(head + b"data: " + json.dumps(data).encode() + b"\n\n")

    def request(run_id: str, request_id: str) -> dict[str, Any]:
        return {"run_id": run_id, "request_id": request_id, "command": f"rm -rf /{request_id}"}

    def handler(sock: Any, req: Any, srv: Any) -> None:
        delta = {"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}
        sock.sendall(sse_head() + event({"id": "chatcmpl-mine", **delta}) + b"".join(
            event({"id": "chatcmpl-mine", **delta}) for _ in range(50))
            + event({**request("chatcmpl-mine", "r0"), "event": "approval.request"})
            + event(request("chatcmpl-mine", "r1"), "approval.request")
            + event(request("chatcmpl-other", "r2"), "approval.request")
            + event({"id": "chatcmpl-mine", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")

    asked: list[Any] = []

    def undecided(approval: Any) -> None:
        asked.append(approval)
        return None  # left to Hermes' timeout: nothing is sent back

    server = raw_server(handler)
    with raw_client(server, approval_provider=undecided) as client:
        result = client.chat_stream(prompt="x").result()
    assert result.status == "completed" and result.text == "x" * 51
    assert [a.input_snapshot["command"] for a in asked] == ["rm -rf /r1"]


# ------------------------------------------------------------------ run approvals: request_id, stale answers


def test_run_approvals_carry_the_request_id_the_server_gave(emu: HermesEmulator) -> None:
    with client_for(emu, approval_provider=approve_all) as client:
        result = client.run(DANGEROUS, idempotency_key="k-rid").wait(timeout=20)
    assert result.ok
    requested = [e for e in result.events if isinstance(e, ApprovalRequested)]
    bodies = [r.body for r in seen(emu, "/approval")]
    if version(emu) == "0.19.0":
        assert requested[0].request_id is None and bodies == [{"choice": "once"}]
    else:
        rid = requested[0].request_id
        assert rid and len(rid) == 32 and requested[0].allow_session is True
        assert bodies == [{"choice": "once", "request_id": rid}]


def test_a_stale_approval_is_a_typed_error_naming_the_request(emu: HermesEmulator) -> None:
    with client_for(emu) as client:
        run = client.run(DANGEROUS, idempotency_key="k-stale")
        for event in run.events():
            if isinstance(event, ApprovalRequested):
                break
        if version(emu) == "0.22.2":
            with pytest.raises(StaleApprovalError) as info:
                client.runs.approve(run.id, "once", request_id="0" * 32)
            assert info.value.request_id == "0" * 32 and info.value.http_status == 409
            assert not info.value.uncertain_outcome and f"{VICTIM}/keep.txt" in emu.files  # nothing approved
            assert run.refresh().raw["approval"]["request_id"] == event.request_id  # 0.21+ embeds it
        else:  # 0.19/0.20 ignore the id: the oldest request is resolved
            assert client.runs.approve(run.id, "deny", request_id="0" * 32).resolved == 1
        run.approve("deny") if version(emu) == "0.22.2" else None
        assert run.wait(timeout=20).ok
    assert f"{VICTIM}/keep.txt" in emu.files


def test_a_blank_or_long_request_id_is_refused_before_sending(emu: HermesEmulator) -> None:
    with client_for(emu) as client:
        for bad in ("", "  ", "x" * 257, 5):
            with pytest.raises(InvalidInputError):
                client.runs.approve("run_x", "once", request_id=bad)  # type: ignore[arg-type]
    assert seen(emu, "/approval") == []


# ------------------------------------------------------------------ run keys and the lost start


@pytest.mark.parametrize("key", ["with space", "x" * 300, "clé-1", "tab\there"])
def test_a_run_key_outside_the_servers_rule_is_sent_as_its_digest(emu: HermesEmulator, key: str) -> None:
    with client_for(emu) as client:
        run = client.run("hello", idempotency_key=key)
        assert run.wait(timeout=10).ok
        assert client.records.get("cap:hermes_agent:default:run_start", key) is not None  # the caller's key
    sent = [r.header("Idempotency-Key") for r in emu.requests_seen if r.path == "/v1/runs"]
    assert sent == ["sha256-" + hashlib.sha256(key.encode()).hexdigest()]


def test_a_conforming_run_key_is_sent_unchanged() -> None:
    assert wire_run_key("job-42_A.b~!") == "job-42_A.b~!"
    assert wire_run_key("a" * 255) == "a" * 255
    assert wire_run_key("a" * 256).startswith("sha256-") and len(wire_run_key("a" * 256)) == 71


def test_a_lost_start_is_resolved_by_the_servers_replay(emu: HermesEmulator) -> None:
    before = set(emu.run_ids())  # (a run an earlier test left active survives the reset)
    emu.drop_connection("before_response", path="/v1/runs")  # the run starts; its 202 is lost
    with client_for(emu) as client:
        if version(emu) == "0.22.2":
            run = client.run("hello", idempotency_key="k-lost")
            assert run.wait(timeout=10).ok and run.status == "completed"
            posts = [r for r in emu.requests_seen if r.path == "/v1/runs"]
            assert len(posts) == 2 and set(emu.run_ids()) - before == {run.id}  # resent, replayed: one run
        else:
            with pytest.raises(TransportError) as info:
                client.run("hello", idempotency_key="k-lost")
            assert info.value.uncertain_outcome
            with pytest.raises(TransportError):  # the SDK's record replays the unknown outcome
                client.run("hello", idempotency_key="k-lost")
            assert len([r for r in emu.requests_seen if r.path == "/v1/runs"]) == 1


def test_the_server_replays_a_key_and_refuses_it_for_another_body(emu: HermesEmulator) -> None:
    from hermes_sdk import RemoteRejectedError

    cap = "cap:hermes_agent:default:run_start"
    with client_for(emu) as client:
        first = client.runs.start("hello", idempotency_key="k-srv")
        client.records.forget(cap, "k-srv")  # only the server's memory of the key is left
        again = client.runs.start("hello", idempotency_key="k-srv")
        client.records.forget(cap, "k-srv")
        if version(emu) == "0.22.2":
            assert again.id == first.id and not again.replayed
            with pytest.raises(RemoteRejectedError) as info:
                client.runs.start("another", idempotency_key="k-srv")
            assert info.value.http_status == 409 and not info.value.uncertain_outcome
        else:  # 0.19/0.20 ignore the key: every start is a new run
            assert again.id != first.id
            assert client.runs.start("another", idempotency_key="k-srv").wait(timeout=10).ok
        assert first.wait(timeout=10).ok and again.wait(timeout=10).ok


# ------------------------------------------------------------------ resumable events


def test_a_broken_events_stream_resumes_from_the_last_event_id(emu: HermesEmulator) -> None:
    emu.drop_connection("mid_stream", path="/v1/runs/", after_events=2)
    with client_for(emu, approval_provider=approve_all) as client:
        result = client.run(DANGEROUS, idempotency_key="k-resume").wait(timeout=20)
    subscriptions = seen(emu, "/events")
    assert result.ok
    if version(emu) == "0.22.2":
        assert len(subscriptions) == 2 and subscriptions[1].header("Last-Event-ID") == "1"
        assert result.events_complete and [e.seq for e in result.events] == list(range(len(result.events)))
        assert isinstance(result.events[-1], RunCompleted) and result.events[-1].completed is True
        assert result.events[-1].runtime == {"provider": "custom", "model": "fake-model", "route_source": "global"}
    else:  # no ids: the SDK polls the status instead
        assert len(subscriptions) == 1 and not result.events_complete


# ------------------------------------------------------------------ steer


def test_steer(emu: HermesEmulator) -> None:
    with client_for(emu) as client:
        run = client.run("SLOW:1 hello", idempotency_key="k-steer")
        if version(emu) == "0.19.0":
            with pytest.raises(UnsupportedByServerError) as info:
                run.steer("also this")
            assert info.value.details["feature"] == "run_steer" and seen(emu, "/steer") == []
            assert run.wait(timeout=10).ok
            return
        answer = run.steer("also this")
        assert answer.accepted and answer.run_id == run.id
        result = run.wait(timeout=10)
        with pytest.raises(SteerNotAcceptedError):
            client.runs.steer(run.id, "too late")
        with pytest.raises(InvalidInputError):
            client.runs.steer(run.id, "  ")
    steered = [e for e in result.events if isinstance(e, RunSteered)]
    assert len(steered) == 1 and steered[0].accepted is True
    assert result.events[-1].raw["pending_steer"] == "also this"
    assert seen(emu, "/steer")[0].body == {"input": "also this"}


# ------------------------------------------------------------------ sessions


def test_messages_returns_the_whole_transcript_on_every_version(emu: HermesEmulator) -> None:
    with client_for(emu) as client:
        session = client.sessions.create(idempotency_key="k-s")
        for i in range(3):
            client.sessions.chat(session.id, f"m{i}")
        seeded = [{"role": "user", "content": f"old {i}"} for i in range(1100)]
        emu._state.transcripts.append(session.id, seeded)
        transcript = client.sessions.messages(session.id)
        assert len(transcript) == 1106 and transcript.messages[0].content == "m0"
        assert transcript.messages[-1].content == "old 1099"
        paginated = version(emu) != "0.19.0"
        assert transcript.pages == (3 if paginated else 1) and transcript.fork_redirect is (version(emu) != "0.22.2")
        assert client.sessions.get(session.id).pinned is (False if paginated else None)


def test_messages_of_a_forked_parent_say_which_behaviour_the_server_has(emu: HermesEmulator) -> None:
    with client_for(emu) as client:
        parent = client.sessions.create(idempotency_key="k-p")
        client.sessions.chat(parent.id, "in the parent")
        child = client.sessions.fork(parent.id, idempotency_key="k-f")
        client.sessions.chat(child.id, "in the child")
        transcript = client.sessions.messages(parent.id)
    redirects = version(emu) != "0.22.2"
    assert transcript.redirected is transcript.fork_redirect is redirects
    assert transcript.session_id == (child.id if redirects else parent.id)


# ------------------------------------------------------------------ typed events


def test_new_events_are_typed_and_unknown_ones_kept_raw() -> None:
    steered = parse_run_event({"event": "run.steered", "run_id": "r", "accepted": True, "seq": 4})
    assert isinstance(steered, RunSteered) and steered.accepted and steered.seq == 4
    sub = parse_run_event({"event": "subagent.start", "run_id": "r", "subagent_id": "s1", "goal": "g"})
    assert type(sub).__name__ == "SubagentEvent" and sub.subagent_id == "s1"  # type: ignore[attr-defined]
    ended = parse_run_event({"event": "run.interrupted", "run_id": "r", "interrupted": True,
                             "turn_exit_reason": "shutdown", "partial": True})
    assert ended.terminal and ended.interrupted and ended.partial  # type: ignore[attr-defined]
    unknown = parse_run_event({"event": "run.teleported", "run_id": "r", "where": "mars"})
    assert type(unknown).__name__ == "RunEvent" and unknown.raw["where"] == "mars"
    status = typed_stream_event(StreamEvent("hermes.status", None, {"kind": "lifecycle", "text": "retrying"}, ""),
                                None)
    assert isinstance(status, HermesStatus) and status.text == "retrying"
    chunk = {"choices": [{"index": 0, "delta": {"reasoning_content": "hmm"}}]}
    reasoning = typed_stream_event(StreamEvent(None, None, chunk, ""), None)
    assert isinstance(reasoning, ReasoningDelta) and reasoning.delta == "hmm"


def test_an_interrupted_run_ends_the_wait() -> None:
    from hermes_sdk._families.runs.types import TERMINAL_STATUSES, run_status

    status = run_status({"run_id": "r", "status": "interrupted", "interrupted": True, "partial": True})
    assert status.terminal and status.interrupted and "interrupted" in TERMINAL_STATUSES


def test_steer_from_the_command_line(emu: HermesEmulator, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_sdk._app.cli import main

    monkeypatch.setenv("HERMES_BASE_URL", emu.base_url)
    monkeypatch.setenv("HERMES_API_KEY", emu.api_key)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    monkeypatch.delenv("HERMES_ENDPOINT_ID", raising=False)
    with client_for(emu) as client:
        run = client.run("SLOW:1 hello", idempotency_key="k-cli-steer")
        code = main(["steer", run.id, "also", "this"])
        out, err = capsys.readouterr()
        if version(emu) == "0.19.0":
            assert code != 0 and "run_steer" in err and seen(emu, "/steer") == []
        else:
            assert code == 0 and out == f"{run.id}\taccepted\n"
            assert seen(emu, "/steer")[0].body == {"input": "also this"}
        assert run.wait(timeout=10).ok
