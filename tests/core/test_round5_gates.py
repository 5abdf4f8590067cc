"""Round 5 gates: a chat stream answers only its own approvals, the operator's gate holds for every
spelling of the server, and distinct run keys never share an ``Idempotency-Key`` on the wire."""

from __future__ import annotations

import hashlib
import json
import logging
import time
import uuid
from pathlib import Path
from typing import Any, Iterator, Optional

import pytest
from core_support import RawRequest, RawServer, chunk, json_response, raw_client, sse_head, uniq
from hypothesis import given
from hypothesis import strategies as st

from hermes_sdk import ApprovalRequest, HermesClient, IdempotencyRecord, OperatorRunError
from hermes_sdk._families.runs.operations import wire_run_key
from hermes_sdk._families.runs.state import RUN_INDEX_NAMESPACE, scope_digest
from hermes_sdk._families.runs.stream_approvals import EARLY_MAX
from hermes_sdk.testing import HermesEmulator

MINE = "chatcmpl-" + "a" * 29
VICTIM_RUN = "run_" + "b" * 32
SECRET_COMMAND = "rm -rf /srv/data --token=s3cr3t-value"


# ---------------------------------------------------------------- 3. a chat stream answers only its own approvals


def sse(data: dict[str, Any], name: str = "") -> bytes:
    head = f"event: {name}\n".encode() if name else b""
    return chunk(head + b"data: " + json.dumps(data).encode() + b"\n\n")


def request(run_id: str, request_id: str) -> bytes:
    return sse({"command": SECRET_COMMAND, "pattern_key": "delete in root path", "request_id": request_id,
                "event": "approval.request", "run_id": run_id, "choices": ["once", "session", "always", "deny"]},
               "approval.request")


def text(completion_id: str, piece: str) -> bytes:
    return sse({"id": completion_id, "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})


def finish(completion_id: str) -> bytes:
    return (sse({"id": completion_id, "object": "chat.completion.chunk",
                 "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n")


class Hostile:
    """A server on loopback that streams ``body`` for a chat turn and accepts every approval POST
    (so the old code's answer would have gone through); every request is recorded."""

    def __init__(self, raw_server: Any, body: bytes) -> None:
        self.body = body
        self.server: RawServer = raw_server(self.handle)

    def handle(self, sock: Any, req: RawRequest, srv: Any) -> None:
        if req.target == "/v1/chat/completions":
            sock.sendall(sse_head() + self.body)
        elif req.method == "POST" and req.target.endswith("/approval"):
            run_id = req.target.split("/")[3]
            sock.sendall(json_response(200, json.dumps({"object": "hermes.run.approval_response", "run_id": run_id,
                                                        "choice": "once", "resolved": 1}).encode()))
        else:
            sock.sendall(json_response(404, b'{"error": {"message": "not found", "code": "not_found"}}'))

    def approvals(self) -> list[tuple[str, Optional[str]]]:
        """(run id, request id) of every approval POST that reached the server."""
        return [(r.target.split("/")[3], json.loads(r.body).get("request_id")) for r in self.server.requests
                if r.method == "POST" and r.target.endswith("/approval")]

    def stream(self, asked: list[ApprovalRequest]) -> Any:
        def approve(approval: ApprovalRequest) -> Any:
            asked.append(approval)
            return approval.approve(approver="test", policy_decision_id="pd", reason="test")

        with raw_client(self.server, approval_provider=approve) as client:
            stream = client.chat_stream(prompt="x")
            result = stream.result()
        assert result.status == "completed"
        return stream


def test_an_approval_before_the_streams_id_is_answered_only_once_the_id_shows_it_is_ours(
        raw_server: Any, caplog: pytest.LogCaptureFixture) -> None:
    # Before the first chunk: one request about another run, one about this stream's completion.
    # Mid-stream: another request about another run. Only this stream's own is ever POSTed.
    hostile = Hostile(raw_server, request(VICTIM_RUN, "r-victim") + request(MINE, "r-mine")
                      + text(MINE, "a") + request(VICTIM_RUN, "r-victim-2") + text(MINE, "b") + finish(MINE))
    asked: list[ApprovalRequest] = []
    with caplog.at_level(logging.WARNING, logger="hermes_sdk"):
        stream = hostile.stream(asked)
    assert hostile.approvals() == [(MINE, "r-mine")]
    assert [a.identifiers["run_id"] for a in asked] == [MINE]
    dropped = [(r.request_id, reason) for r, reason in stream._on_event.dropped]
    assert dropped == [("r-victim", "another_id"), ("r-victim-2", "another_id")]
    warnings = [r.getMessage() for r in caplog.records if "not answered" in r.getMessage()]
    assert len(warnings) == 2 and all("another_id" in w for w in warnings)
    assert not any("s3cr3t" in r.getMessage() for r in caplog.records)  # the command never reaches the log


@pytest.mark.parametrize("body", [
    # A named event carrying an id first: not the completion's chunk, so not the stream's id.
    sse({"id": VICTIM_RUN, "kind": "lifecycle", "text": "retrying"}, "hermes.status")
    + request(VICTIM_RUN, "r1") + text(MINE, "a") + finish(MINE),
    # A stream whose chunks name a /v1/runs run, asking about it mid-stream: not a chat turn's approval.
    text(VICTIM_RUN, "a") + request(VICTIM_RUN, "r1") + text(VICTIM_RUN, "b") + finish(VICTIM_RUN),
    # A request about this completion, but the stream never says its id: never answered.
    request(MINE, "r1") + chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n",
], ids=["named-event-id-first", "stream-names-a-run", "id-never-known"])
def test_a_stream_that_never_shows_the_request_is_its_own_answers_nothing(raw_server: Any, body: bytes) -> None:
    hostile = Hostile(raw_server, body)
    asked: list[ApprovalRequest] = []
    stream = hostile.stream(asked)
    assert hostile.approvals() == [] and asked == []
    assert [r.request_id for r, _ in stream._on_event.dropped] == ["r1"]


def test_requests_kept_before_the_id_are_bounded(raw_server: Any) -> None:
    early = b"".join(request(MINE, f"r{i}") for i in range(EARLY_MAX + 3))
    hostile = Hostile(raw_server, early + text(MINE, "a") + finish(MINE))
    asked: list[ApprovalRequest] = []
    stream = hostile.stream(asked)
    assert hostile.approvals() == [(MINE, f"r{i}") for i in range(EARLY_MAX)]
    assert [(r.request_id, why) for r, why in stream._on_event.dropped] == [
        (f"r{i}", "too_many_before_id") for i in range(EARLY_MAX, EARLY_MAX + 3)]


def test_a_stream_naming_an_operators_run_is_refused_by_the_gate_and_still_settles(raw_server: Any) -> None:
    from hermes_sdk._families.runs.state import mark_operator_run

    hostile = Hostile(raw_server, text(MINE, "a") + request(MINE, "r1") + text(MINE, "b") + finish(MINE))
    asked: list[ApprovalRequest] = []

    def approve(approval: ApprovalRequest) -> Any:
        asked.append(approval)
        return approval.approve(approver="test", policy_decision_id="pd", reason="test")

    with raw_client(hostile.server, approval_provider=approve) as client:
        mark_operator_run(client._executor.runtime.store, MINE)  # an operator action's run, by that id
        stream = client.chat_stream(prompt="x")
        result = stream.result()
    assert result.status == "completed" and result.text == "ab"
    assert hostile.approvals() == [] and [(r.request_id, why) for r, why in stream._on_event.dropped] == [
        ("r1", "operator_run")]


# ---------------------------------------------------------------- 4. the operator's gate, any spelling of the server


def undecided(request: ApprovalRequest) -> None:
    return None


def approvals_sent(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.method == "POST" and r.path.endswith("/approval")]


def test_the_operators_gate_holds_for_every_spelling_of_the_server(tools_emu: HermesEmulator, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'idem.db'}"
    port = tools_emu.base_url.rsplit(":", 1)[1]
    objective = "TOOL:terminal:rm -rf /srv/data"
    with HermesClient(f"http://127.0.0.1:{port}", tools_emu.api_key, load_entrypoints=False, idempotency_store=store,
                      approval_provider=undecided) as operator:
        approval = operator.approval_request("operator", {"objective": objective}, reason="t").approve(
            approver="tester", policy_decision_id="pd-op", reason="t")
        waiting = operator.operate(objective, idempotency_key=uniq("op"), approval=approval, reason="t")
        assert waiting.status == "requires_human" and waiting.run_id
        # A run an older release marked (keyed by the URL's text): an upgrade keeps its gate.
        legacy_run = "run_" + uuid.uuid4().hex
        now = time.time()
        legacy_key = f"{scope_digest(f'http://127.0.0.1:{port}')}:{legacy_run}"
        operator._executor.runtime.store.reserve(IdempotencyRecord(
            capability_id=RUN_INDEX_NAMESPACE, key=legacy_key, action_id=f"opidx_{legacy_key}", input_hash="",
            state="completed", created_at=now, expires_at=now + 3600, result={"operator": True}, completed_at=now))
    spellings = [f"http://localhost:{port}", f"http://LOCALHOST:{port}/", f"http://127.0.0.1:{port}/",
                 f"http://127.0.0.1:{port}"]
    for url in spellings:
        with HermesClient(url, tools_emu.api_key, load_entrypoints=False, idempotency_store=store) as other:
            assert other.runs.get(waiting.run_id).status == "waiting_for_approval"  # the same server, the same run
            for choice in ("once", "deny"):
                with pytest.raises(OperatorRunError) as caught:
                    other.runs.approve(waiting.run_id, choice)
                assert caught.value.details["sent"] is False, url
            result = other.invoke("cap:hermes_agent:default:run_approval", {"run_id": waiting.run_id,
                                                                            "choice": "once"})
            assert result.status == "failed" and isinstance(result.error, OperatorRunError), url
            if url.startswith("http://127.0.0.1") and not url.endswith("/"):
                with pytest.raises(OperatorRunError):
                    other.runs.approve(legacy_run, "once")
    assert approvals_sent(tools_emu) == [] and tools_emu.files["/srv/data/keep.txt"] == "precious"
    assert tools_emu.pending_approvals(waiting.run_id)  # still waiting for the operator's gate


# ---------------------------------------------------------------- 7. distinct run keys, distinct wire keys


def digest_spelling(key: str) -> str:
    return "sha256-" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


keys = st.text(max_size=300) | st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7e), max_size=300)


@given(base=keys, others=st.lists(keys | keys.map(digest_spelling), max_size=6))
def test_distinct_run_keys_never_share_a_wire_key(base: str, others: list[str]) -> None:
    # The caller key and the caller key spelled as its own digest are the adversarial pair.
    caller_keys = {base, digest_spelling(base), "sha256-" + base, *others}
    wire = {key: wire_run_key(key) for key in caller_keys}
    assert len(set(wire.values())) == len(caller_keys)
    for key, sent in wire.items():
        assert 1 <= len(sent) <= 255 and all("\x21" <= ch <= "\x7e" for ch in sent)  # what 0.21+ accepts
        assert sent == wire_run_key(key)  # stable: a retry sends the same header
        conforming = 1 <= len(key) <= 255 and all("\x21" <= ch <= "\x7e" for ch in key)
        if conforming and not key.startswith("sha256-"):
            assert sent == key  # unchanged: a retry after the upgrade still finds its run


@pytest.fixture(scope="module")
def newer() -> Iterator[HermesEmulator]:
    emu = HermesEmulator(server_version="0.22.2").start()
    yield emu
    emu.stop()


def test_a_key_spelled_as_another_keys_digest_starts_its_own_run(newer: HermesEmulator) -> None:
    newer.reset()
    before = set(newer.run_ids())  # (a run an earlier test left active survives the reset)
    first_key = f"order {uuid.uuid4().hex[:6]}"  # not conforming (a space): sent as its digest
    with newer.client(load_entrypoints=False) as one, newer.client(load_entrypoints=False) as two:
        first = one.runs.start("hello", idempotency_key=first_key)
        second = two.runs.start("hello", idempotency_key=digest_spelling(first_key))
        assert second.run_id != first.run_id and not second.replayed
        assert first.wait(timeout=10).ok and second.wait(timeout=10).ok
    sent = [r.header("Idempotency-Key") for r in newer.requests_seen if r.method == "POST" and r.path == "/v1/runs"]
    assert len(sent) == 2 and sent[0] != sent[1]
    assert sent[0] == digest_spelling(first_key) and sent[1] == digest_spelling(digest_spelling(first_key))
    assert set(newer.run_ids()) - before == {first.run_id, second.run_id}
