"""client.sessions against the emulator (and raw loopback servers where the wire is the point)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from core_support import RawServer, json_response, raw_client, uniq

from hermes_sdk import (
    AgentIncompleteError,
    ApprovalRequiredError,
    HermesClient,
    HermesSession,
    InvalidInputError,
    NotFoundError,
    RemoteRejectedError,
    SessionChatStream,
    SessionPage,
)
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS
from hermes_sdk.types import (
    SessionAssistantCompleted,
    SessionDelta,
    SessionDone,
    SessionMessageStarted,
    SessionRunCompleted,
    SessionRunStarted,
    SessionThinking,
    SessionToolCompleted,
    SessionToolStarted,
)


def session_requests(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.path.startswith("/api/sessions")]


def test_create_get_update_round_trip(client: HermesClient) -> None:
    sid = uniq("s")
    created = client.sessions.create(sid, title="  Alpha   one ", idempotency_key=uniq("k"))
    assert isinstance(created, HermesSession) and created.id == sid and created.title == "Alpha one"
    assert created.message_count == 0 and created.source == "api_server" and created.raw["id"] == sid
    assert client.sessions.get(sid) == created
    renamed = client.sessions.update(sid, title="Beta", idempotency_key=uniq("k"))
    assert renamed.title == "Beta" and renamed.end_reason is None
    ended = client.sessions.update(sid, end_reason="done", idempotency_key=uniq("k"))
    assert ended.title == "Beta" and ended.end_reason == "done" and ended.ended  # title left unchanged
    cleared = client.sessions.update(sid, title=None, idempotency_key=uniq("k"))
    assert cleared.title is None and cleared.end_reason == "done"
    again = client.sessions.update(sid, end_reason="second", idempotency_key=uniq("k"))
    assert again.end_reason == "done"  # Hermes: the first end reason wins


def test_update_sends_only_the_keywords_given(emu: HermesEmulator, client: HermesClient) -> None:
    sid = client.sessions.create(title=uniq("t"), idempotency_key=uniq("k")).id
    client.sessions.update(sid, end_reason="x", idempotency_key=uniq("k"))
    client.sessions.update(sid, title=None, idempotency_key=uniq("k"))
    patches = [r.body for r in emu.requests_seen if r.method == "PATCH"]
    assert patches[-2:] == [{"end_reason": "x"}, {"title": None}]


def test_generated_id_and_keys_required(client: HermesClient) -> None:
    created = client.sessions.create(idempotency_key=uniq("k"))
    assert created.id.startswith("api_")
    with pytest.raises(InvalidInputError) as info:
        client.sessions.create(uniq("s"))
    assert info.value.details["field"] == "idempotency_key"
    with pytest.raises(InvalidInputError):
        client.sessions.update(created.id, title="x")


def test_create_replay_returns_the_first_session(emu: HermesEmulator, client: HermesClient) -> None:
    key, sid = uniq("k"), uniq("s")
    first = client.sessions.create(sid, idempotency_key=key)
    before = len(session_requests(emu))
    second = client.sessions.create(sid, idempotency_key=key)
    assert second == first and len(session_requests(emu)) == before  # no 409: nothing was sent
    with pytest.raises(RemoteRejectedError) as info:
        client.sessions.create(sid, idempotency_key=uniq("k"))
    assert info.value.http_status == 409 and not info.value.retryable and not info.value.uncertain_outcome


@pytest.mark.parametrize("sid", ["with space", "a/b", "a+b", "pct%20sign", "q?x#y;=&"])
def test_odd_ids_round_trip_through_every_route(emu: HermesEmulator, client: HermesClient, sid: str) -> None:
    # Made by a fork (create and the chat header refuse '/'; fork only refuses CR/LF/NUL),
    # then addressed by every session route.
    base = client.sessions.create(idempotency_key=uniq("k")).id
    assert client.sessions.fork(base, new_session_id=sid, idempotency_key=uniq("k")).id == sid
    assert client.sessions.get(sid).id == sid
    assert client.sessions.chat(sid, "hello").session_id == sid
    with client.sessions.chat_stream(sid, "streamed") as stream:
        assert stream.result().status == "completed"
    assert client.sessions.messages(sid).session_id == sid
    assert client.sessions.update(sid, title=uniq("t"), idempotency_key=uniq("k")).id == sid
    fork = client.sessions.fork(sid, idempotency_key=uniq("k"))
    assert fork.parent_session_id == sid
    assert client.sessions.delete(sid, idempotency_key=uniq("k")).id == sid
    with pytest.raises(NotFoundError):
        client.sessions.get(sid)


def test_a_space_is_percent_20_on_the_wire(raw_server: Any) -> None:
    body = json.dumps({"object": "list", "session_id": "a b/c", "data": []}).encode()
    server: RawServer = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, body)))
    with raw_client(server) as client:
        assert client.sessions.messages("a b/c+%").session_id == "a b/c"
    # The whole transcript is read in pages (0.20+ answers only the latest 500 without a limit).
    assert server.requests[0].target == "/api/sessions/a%20b%2Fc%2B%25/messages?limit=500&offset=0&order=oldest"


@pytest.mark.parametrize("bad", ["", "a\nb", "a\rb", "a\x00b", ".", "..", None, 5])
def test_bad_path_ids_are_refused_before_io(emu: HermesEmulator, client: HermesClient, bad: Any) -> None:
    before = len(emu.requests_seen)
    for call in (lambda: client.sessions.get(bad), lambda: client.sessions.messages(bad),
                 lambda: client.sessions.chat(bad, "x"), lambda: client.sessions.fork(bad, idempotency_key="k"),
                 lambda: client.sessions.update(bad, title="t", idempotency_key="k"),
                 lambda: client.sessions.delete(bad, idempotency_key="k", approval=None)):
        with pytest.raises(InvalidInputError) as info:
            call()
        assert info.value.details["field"] == "session_id"
    assert len(emu.requests_seen) == before


@pytest.mark.parametrize("bad", ["a/b", "..x", "a\\b", "C:evil", "x" * 257])
def test_create_refuses_ids_hermes_refuses(emu: HermesEmulator, client: HermesClient, bad: str) -> None:
    before = len(emu.requests_seen)
    with pytest.raises(InvalidInputError):
        client.sessions.create(bad, idempotency_key=uniq("k"))
    assert len(emu.requests_seen) == before


def test_long_title_is_refused_locally_not_a_500(emu: HermesEmulator, client: HermesClient) -> None:
    before = len(emu.requests_seen)
    with pytest.raises(InvalidInputError) as info:
        client.sessions.create(title="t" * 101, idempotency_key=uniq("k"))
    assert info.value.details["field"] == "title" and len(emu.requests_seen) == before
    assert client.sessions.create(title="t" * 100 + "\u200b ", idempotency_key=uniq("k")).title == "t" * 100


def test_unknown_session_is_not_found(client: HermesClient) -> None:
    with pytest.raises(NotFoundError) as info:
        client.sessions.get(uniq("missing"))
    assert info.value.http_status == 404


def test_list_page_and_iter_every_session_once(emu: HermesEmulator, client: HermesClient) -> None:
    source = "api_server"
    for _ in range(5):
        client.sessions.create(idempotency_key=uniq("k"))
    total = len(list(client.sessions.iter(source=source, page_size=200)))
    page = client.sessions.list(limit=2, offset=0)
    assert isinstance(page, SessionPage) and len(page) == 2 and page.limit == 2 and page.has_more
    assert [s.id for s in page] == [s.id for s in page.data]
    before = len(emu.requests_seen)
    ids = [s.id for s in client.sessions.iter(page_size=2)]
    assert len(ids) == len(set(ids)) == total
    # ceil(total / 2) pages, plus one empty page when the last one was exactly full
    assert len(emu.requests_seen) - before == total // 2 + 1
    assert client.sessions.list(limit=0).data == []


@pytest.mark.parametrize("size", [0, -1, 201, True, 2.5])
def test_iter_refuses_a_bad_page_size_before_io(emu: HermesEmulator, client: HermesClient, size: Any) -> None:
    before = len(emu.requests_seen)
    with pytest.raises(InvalidInputError) as info:
        client.sessions.iter(page_size=size)
    assert info.value.details["field"] == "page_size" and len(emu.requests_seen) == before


def test_iter_stops_on_a_short_page_though_has_more(raw_server: Any) -> None:
    def handler(sock: Any, req: Any, srv: Any) -> None:
        offset = int(req.target.split("offset=")[1].split("&")[0])
        rows = [{"id": f"s{offset + i}"} for i in range(2 if offset == 0 else 1)]
        body = json.dumps({"object": "list", "data": rows, "limit": 2, "offset": offset, "has_more": True})
        sock.sendall(json_response(200, body.encode()))

    server: RawServer = raw_server(handler)
    with raw_client(server) as client:
        assert [s.id for s in client.sessions.iter(page_size=2)] == ["s0", "s1", "s2"]
    assert len(server.requests) == 2
    assert server.requests[0].target == "/api/sessions?limit=2&offset=0&include_children=false"


def test_messages_and_the_fork_redirect(client: HermesClient) -> None:
    sid = client.sessions.create(title=uniq("Alpha"), idempotency_key=uniq("k")).id
    client.sessions.chat(sid, "first turn")
    transcript = client.sessions.messages(sid)
    assert transcript.session_id == sid and not transcript.redirected
    assert [m.role for m in transcript] == ["user", "assistant"]
    assert transcript.messages[1].content == "ECHO: first turn" and isinstance(transcript.messages[0].id, int)
    fork = client.sessions.fork(sid, new_session_id=uniq("child"), idempotency_key=uniq("k"))
    assert fork.parent_session_id == sid and fork.message_count == 2 and fork.title.endswith("#2")
    assert client.sessions.get(sid).end_reason == "branched"
    redirected = client.sessions.messages(sid)
    assert redirected.session_id == fork.id and redirected.requested_id == sid and redirected.redirected


def test_chat_reply_and_history(emu: HermesEmulator, client: HermesClient) -> None:
    sid = client.sessions.create(idempotency_key=uniq("k")).id
    reply = client.sessions.chat(sid, "hello", system_message="be brief", session_key="tenant-a")
    assert reply.text == "ECHO: hello" and reply.session_id == sid and reply.usage["total_tokens"] > 0
    assert reply.raw["object"] == "hermes.session.chat.completion"
    chat = [r for r in emu.requests_seen if r.path.endswith("/chat")][-1]
    assert chat.body == {"message": "hello", "system_message": "be brief"}
    assert chat.headers.get("X-Hermes-Session-Key") == "tenant-a" and "X-Hermes-Session-Id" not in chat.headers
    client.sessions.chat(sid, "again")
    assert client.sessions.get(sid).message_count == 4


def test_chat_failure_is_a_reply_with_the_error_text(emu: HermesEmulator, client: HermesClient) -> None:
    sid = client.sessions.create(idempotency_key=uniq("k")).id
    emu.fail_next(1, status=500)
    reply = client.sessions.chat(sid, "this will fail")
    assert reply.usage == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    assert reply.text  # Hermes' error text, as a 200


def test_content_null_is_not_a_completed_answer(emu: HermesEmulator, client: HermesClient) -> None:
    sid = client.sessions.create(idempotency_key=uniq("k")).id
    emu.force_truncation(True, empty=True)
    try:
        with pytest.raises(AgentIncompleteError) as info:
            client.sessions.chat(sid, "nothing comes back")
        assert info.value.details["reason"] == "content_null" and info.value.uncertain_outcome
        assert info.value.http_status == 200 and not info.value.retryable
        result = client.invoke("cap:hermes_agent:default:session_chat", {"session_id": sid, "message": "again"})
        assert result.status == "failed" and isinstance(result.error, AgentIncompleteError)
        with client.sessions.chat_stream(sid, "stream nothing") as stream:
            assert list(stream.text_deltas()) == []
            streamed = stream.result()
        assert streamed.status == "failed" and isinstance(streamed.error, AgentIncompleteError)
    finally:
        emu.force_truncation(False)


def test_chat_stream_typed_events_text_once_and_read_to_done(client: HermesClient) -> None:
    sid = client.sessions.create(idempotency_key=uniq("k")).id
    stream = client.sessions.chat_stream(sid, "streamed turn please")
    assert isinstance(stream, SessionChatStream)
    typed = list(stream.typed())
    kinds = [type(e) for e in typed]
    assert kinds[:2] == [SessionRunStarted, SessionMessageStarted] and kinds[-3:] == [
        SessionAssistantCompleted, SessionRunCompleted, SessionDone]
    assert SessionThinking in kinds and SessionDelta in kinds
    thinking = next(e for e in typed if isinstance(e, SessionThinking))
    assert thinking.delta == "ECHO: streamed turn please"  # the repeat Hermes sends
    result = stream.result()
    assert result.text == "ECHO: streamed turn please"  # held once, not twice
    assert result.status == "completed" and result.terminal and result.final["content"] == result.text
    assert result.usage["total_tokens"] > 0 and result.events[-1].event == "done"
    assert all(e.session_id == sid and isinstance(e.seq, int) for e in typed)


def test_chat_stream_text_deltas_and_replay(emu: HermesEmulator, client: HermesClient) -> None:
    sid = client.sessions.create(idempotency_key=uniq("k")).id
    key = uniq("k")
    with client.sessions.chat_stream(sid, "keyed turn", idempotency_key=key) as stream:
        assert "".join(stream.text_deltas()) == "ECHO: keyed turn"
    executions = emu.executions
    with client.sessions.chat_stream(sid, "keyed turn", idempotency_key=key) as again:
        assert again.replayed and again.result().text == "ECHO: keyed turn"
    assert emu.executions == executions


def test_chat_stream_tools(emu: HermesEmulator, client: HermesClient) -> None:
    emu.toolsets = TOOLSETS
    sid = client.sessions.create(idempotency_key=uniq("k")).id
    with client.sessions.chat_stream(sid, "TOOL:terminal:echo hi") as stream:
        typed = list(stream.typed())
        result = stream.result()
    started = next(e for e in typed if isinstance(e, SessionToolStarted))
    assert started.tool_name == "terminal"
    assert any(isinstance(e, SessionToolCompleted) for e in typed)
    assert [type(t) for t in result.tools] == [SessionToolStarted, SessionToolCompleted]
    assert result.status == "completed" and result.text.lstrip().startswith("DONE:")


def test_chat_stream_max_events_truncates(client: HermesClient) -> None:
    sid = client.sessions.create(idempotency_key=uniq("k")).id
    with client.sessions.chat_stream(sid, "long enough", max_events=3) as stream:
        result = stream.result()
    assert result.truncated and result.status == "failed"


def test_chat_input_is_checked_before_io(emu: HermesEmulator, client: HermesClient) -> None:
    sid = client.sessions.create(idempotency_key=uniq("k")).id
    before = len(emu.requests_seen)
    for bad in ("", "   ", None, 5, [{"type": "text", "text": " "}]):
        with pytest.raises(InvalidInputError):
            client.sessions.chat(sid, bad)
    with pytest.raises(InvalidInputError):
        client.sessions.chat(sid, "x", system_message=5)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        client.sessions.chat(sid, "x", session_key="a\nb")
    assert len(emu.requests_seen) == before


def test_delete_needs_an_approval_bound_to_the_input(emu: HermesEmulator) -> None:
    with emu.client(load_entrypoints=False) as client:
        sid = client.sessions.create(idempotency_key=uniq("k")).id
        with pytest.raises(ApprovalRequiredError):
            client.sessions.delete(sid, idempotency_key=uniq("k"))
        other = client.approval_request("session_delete", {"session_id": sid + "x"}, reason="r").approve(
            approver="a", policy_decision_id="pd", reason="r")
        with pytest.raises(Exception) as info:
            client.sessions.delete(sid, idempotency_key=uniq("k"), approval=other)
        assert type(info.value).__name__ == "ApprovalDeniedError"
        decision = client.approval_request("session_delete", {"session_id": sid}, reason="r").approve(
            approver="a", policy_decision_id="pd", reason="r")
        key = uniq("k")
        deleted = client.sessions.delete(sid, idempotency_key=key, approval=decision)
        assert deleted.id == sid and deleted.deleted
        again = client.sessions.delete(sid, idempotency_key=key)  # replayed: no approval asked, no 404
        assert again.replayed and again.id == sid
        with pytest.raises(NotFoundError):
            client.sessions.get(sid)


def test_invoke_uses_the_connector_names(client: HermesClient) -> None:
    sid = uniq("inv")
    created = client.invoke("cap:hermes_agent:default:session_create", {"id": sid}, idempotency_key=uniq("k"))
    assert created.status == "completed" and created.output["session"]["id"] == sid
    got = client.invoke("cap:hermes_agent:default:session_get", {"session_id": sid})
    assert got.status == "completed"
    patched = client.invoke("cap:hermes_agent:default:session_patch", {"session_id": sid, "model": "x"},
                            idempotency_key=uniq("k"))
    assert patched.status == "failed" and isinstance(patched.error, InvalidInputError)
    streamed = client.invoke("cap:hermes_agent:default:session_chat_stream", {"session_id": sid, "message": "hi"})
    assert streamed.status == "completed" and streamed.output["text"] == "ECHO: hi"


def test_contracts_are_the_connectors() -> None:
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    caps = {d["operation"]: d for d in client.capabilities()}
    from hermes_sdk._app.builtin import BUILTIN_SPECS

    assert list(caps) == list(BUILTIN_SPECS)
    assert caps["sessions_list"]["retry"] == {"safety": "safe", "supports_retry": True}
    assert caps["sessions_list"]["kind"] == "tool" and caps["session_chat"]["kind"] == "agent"
    delete = caps["session_delete"]
    assert delete["risk"] == "high" and delete["approval"]["required"]
    assert delete["idempotency"]["requirement"] == "required" and delete["idempotency"]["ttl_ms"] == 86_400_000
    assert delete["data"]["classification"] == "restricted" and "delete" in delete["side_effects"]
    for op in ("session_create", "session_patch", "session_fork"):
        assert caps[op]["idempotency"]["requirement"] == "required" and not caps[op]["approval"]["required"]
        assert caps[op]["retry"]["supports_retry"] is False and caps[op]["risk"] == "medium"
    assert caps["session_chat"]["idempotency"]["requirement"] == "optional"
    stream = caps["session_chat_stream"]
    assert stream["execution"]["supports_streaming"] and stream["execution"]["supports_cancel"]
    assert not stream["execution"]["supports_async"] and stream["sla"]["timeout_ms"] == 300_000
    client.close()
