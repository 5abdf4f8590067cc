"""``/api/sessions``, ``/health/detailed`` and ``/v1/skills`` on the raw wire: emulator and real Hermes.

spec/hermes-sessions-jobs.md sections 1-6 and 8 (transcripts ``hermes-wire/51``-``62``, ``70``).
Every case runs against both servers through ``requests``; ids are unique per case, since the
server (and its state.db) is shared with the rest of the conformance suite.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from conformance_helpers import FAIL400_TEXT, FAIL500_TEXT, Target, uniq
from families_helpers import (
    AUTH_401,
    GENERATED_SID,
    JSON_TYPE,
    LIST_KEYS,
    MESSAGE_KEYS,
    RUN_ID,
    SECURITY,
    SESSION_KEYS,
    STREAM_MSG_ID,
    Wire,
    openai_err,
    sid,
)

CONTINUATION = (
    "[System: Your previous response was truncated by the output length limit. Continue exactly where you "
    "left off. Do not restart or repeat prior text. Finish the answer directly.]"
)


@pytest.fixture
def wire(server: Target) -> Wire:
    return Wire(server)


def not_found(session_id: str) -> dict[str, Any]:
    return openai_err(f"Session not found: {session_id}", "session_not_found")


# --------------------------------------------------------------------------- create (51)


def test_create_empty_body_generates_an_id_and_an_empty_row(wire: Wire) -> None:
    resp = wire.req("POST", "/api/sessions", {})
    assert resp.status_code == 201
    assert resp.headers["Content-Type"] == JSON_TYPE
    assert all(h in resp.headers for h in SECURITY)
    body = resp.json()
    assert list(body) == ["object", "session"] and body["object"] == "hermes.session"
    session = body["session"]
    assert list(session) == SESSION_KEYS
    assert GENERATED_SID.match(session["id"])
    assert abs(int(session["id"].split("_")[1]) - time.time()) < 30
    assert session["source"] == "api_server" and session["user_id"] is None
    assert session["model"] == "hermes-agent" and session["title"] is None
    assert isinstance(session["started_at"], float)
    assert session["ended_at"] is None and session["end_reason"] is None
    assert session["message_count"] == session["tool_call_count"] == session["api_call_count"] == 0
    assert session["estimated_cost_usd"] is None and session["actual_cost_usd"] is None
    assert session["parent_session_id"] is None
    assert session["has_system_prompt"] is False and session["has_model_config"] is False


def test_create_with_fields_and_the_session_id_alias(wire: Wire) -> None:
    new = sid()
    title = uniq("Alpha")
    session = wire.create(id=new, title=title, system_prompt="You are alpha.", model="my-model-label")
    assert session["id"] == new and session["title"] == title and session["model"] == "my-model-label"
    assert session["has_system_prompt"] is True and session["has_model_config"] is False
    assert wire.session(new) == session

    alias = sid()
    resp = wire.req("POST", "/api/sessions", {"session_id": f"  {alias}  "})
    assert resp.status_code == 201 and resp.json()["session"]["id"] == alias

    number = int(time.time() * 1000)
    resp = wire.req("POST", "/api/sessions", {"id": number})
    assert resp.status_code == 201 and resp.json()["session"]["id"] == str(number)

    spaced = f"sj space {uniq('x')}"
    resp = wire.req("POST", "/api/sessions", {"id": spaced})
    assert resp.status_code == 201 and resp.json()["session"]["id"] == spaced


def test_create_ignores_unknown_fields(wire: Wire) -> None:
    parent = wire.create()
    new = sid()
    body = {"id": new, "foo": "bar", "source": "telegram", "parent_session_id": parent["id"]}
    session = wire.req("POST", "/api/sessions", body).json()["session"]
    assert session["source"] == "api_server" and session["parent_session_id"] is None


def test_create_duplicate_id_is_409_and_a_deleted_id_can_be_reused(wire: Wire) -> None:
    new = wire.create()["id"]
    resp = wire.req("POST", "/api/sessions", {"id": new})
    assert resp.status_code == 409
    assert resp.json() == openai_err(f"Session already exists: {new}", "session_exists")
    assert wire.req("DELETE", f"/api/sessions/{new}").status_code == 200
    assert wire.req("POST", "/api/sessions", {"id": new}).status_code == 201


def test_concurrent_creates_of_one_id_give_one_201_and_one_409(wire: Wire) -> None:
    new = sid("race")
    codes: list[int] = []

    def create() -> None:
        codes.append(wire.req("POST", "/api/sessions", {"id": new}).status_code)

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(codes) == [201, 409]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a/b", "Invalid session ID"),
        ("..evil", "Invalid session ID"),
        ("line1\nline2", "Invalid session ID"),
        ("back\\slash", "Invalid session ID"),
        ("c:x", "Invalid session ID"),
        ("s" * 257, "Session ID too long"),
    ],
)
def test_create_rejects_unsafe_ids(wire: Wire, value: str, message: str) -> None:
    resp = wire.req("POST", "/api/sessions", {"id": value})
    assert resp.status_code == 400
    assert resp.json() == openai_err(message, "invalid_session_id")


def test_create_accepts_an_id_of_exactly_256_chars(wire: Wire) -> None:
    new = sid()[:10] + "t" * 246
    assert wire.req("POST", "/api/sessions", {"id": new}).json()["session"]["id"] == new


def test_create_system_prompt_must_be_a_string(wire: Wire) -> None:
    resp = wire.req("POST", "/api/sessions", {"id": sid(), "system_prompt": ["x"]})
    assert resp.status_code == 400
    assert resp.json() == openai_err("system_prompt must be a string", "invalid_system_prompt")


def test_create_title_in_use_is_400_and_rolls_back_the_row(wire: Wire) -> None:
    owner = wire.create(title=uniq("Owned title"))
    new = sid()
    resp = wire.req("POST", "/api/sessions", {"id": new, "title": owner["title"]})
    assert resp.status_code == 400
    assert resp.json() == openai_err(f"Title already in use by session {owner['id']}", "invalid_title")
    assert wire.req("GET", f"/api/sessions/{new}").status_code == 404


def test_create_title_over_100_chars_is_aiohttps_plain_500_and_stores_nothing(wire: Wire) -> None:
    new = sid()
    resp = wire.req("POST", "/api/sessions", {"id": new, "title": "T" * 101})
    assert resp.status_code == 500
    assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert resp.headers["Connection"] == "close"
    assert resp.text == "500 Internal Server Error\n\nServer got itself in trouble"
    assert wire.req("GET", f"/api/sessions/{new}").status_code == 404


def test_create_sanitises_titles(wire: Wire) -> None:
    tag = uniq("t")
    session = wire.create(title=f"  Tab\there   and\u200bzero-width {tag}  ")
    assert session["title"] == f"Tab here andzero-width {tag}"
    assert wire.create(title="   ")["title"] is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"id":', "Invalid JSON in request body"),
        (b"", "Invalid JSON in request body"),
        (b"[1,2]", "Request body must be a JSON object"),
    ],
)
def test_create_body_must_be_a_json_object(wire: Wire, raw: bytes, message: str) -> None:
    resp = wire.req("POST", "/api/sessions", raw=raw)
    assert resp.status_code == 400
    assert resp.json() == openai_err(message, None)


# --------------------------------------------------------------------------- get / patch (52)


def test_get_unknown_is_404_with_the_decoded_id(wire: Wire) -> None:
    resp = wire.req("GET", "/api/sessions/sj-nope-x")
    assert resp.status_code == 404 and resp.json() == not_found("sj-nope-x")
    assert wire.req("GET", "/api/sessions/a%2Fb").json() == not_found("a/b")
    assert wire.req("GET", "/api/sessions/sj+nope").json() == not_found("sj+nope")


def test_path_ids_are_percent_decoded_and_plus_is_literal(wire: Wire) -> None:
    spaced = f"sj space {uniq('g')}"
    wire.req("POST", "/api/sessions", {"id": spaced})
    encoded = spaced.replace(" ", "%20")
    assert wire.req("GET", f"/api/sessions/{encoded}").json()["session"]["id"] == spaced
    plus = spaced.replace(" ", "+")
    assert wire.req("GET", f"/api/sessions/{plus}").json() == not_found(plus)


def test_patch_title_set_clear_and_stringify(wire: Wire) -> None:
    new = wire.create()["id"]
    path = f"/api/sessions/{new}"
    title = uniq("Renamed")
    resp = wire.req("PATCH", path, {"title": title})
    assert resp.status_code == 200 and list(resp.json()) == ["object", "session"]
    assert resp.json()["session"]["title"] == title
    assert wire.req("PATCH", path, {"title": None}).json()["session"]["title"] is None
    wire.req("PATCH", path, {"title": title})
    assert wire.req("PATCH", path, {"title": ""}).json()["session"]["title"] is None
    number = int(time.time() * 1000)
    assert wire.req("PATCH", path, {"title": number}).json()["session"]["title"] == str(number)
    assert wire.req("PATCH", path, {}).json()["session"]["title"] == str(number)


def test_patch_title_errors(wire: Wire) -> None:
    owner = wire.create(title=uniq("Taken"))
    new = wire.create()["id"]
    resp = wire.req("PATCH", f"/api/sessions/{new}", {"title": owner["title"]})
    assert resp.status_code == 400
    message = f"Title '{owner['title']}' is already in use by session {owner['id']}"
    assert resp.json() == openai_err(message, "invalid_title")
    resp = wire.req("PATCH", f"/api/sessions/{new}", {"title": "T" * 101})
    assert resp.status_code == 400
    assert resp.json() == openai_err("Title too long (101 chars, max 100)", "invalid_title")


def test_patch_unknown_fields_apply_nothing(wire: Wire) -> None:
    new = wire.create()["id"]
    resp = wire.req("PATCH", f"/api/sessions/{new}", {"title": "x", "model": "m", "system_prompt": "s"})
    assert resp.status_code == 400
    assert resp.json() == openai_err("Unsupported session fields: model, system_prompt", "unsupported_session_field")
    assert wire.session(new)["title"] is None


def test_patch_end_reason_first_wins_falsy_ignored_numbers_stringified(wire: Wire) -> None:
    new = wire.create()["id"]
    path = f"/api/sessions/{new}"
    assert wire.req("PATCH", path, {"end_reason": ""}).json()["session"]["ended_at"] is None
    first = wire.req("PATCH", path, {"end_reason": 7}).json()["session"]
    assert first["end_reason"] == "7" and isinstance(first["ended_at"], float)
    again = wire.req("PATCH", path, {"end_reason": "second_reason"})
    assert again.status_code == 200 and again.json()["session"] == first


def test_patch_title_and_end_reason_together(wire: Wire) -> None:
    new = wire.create()["id"]
    title = uniq("Both")
    session = wire.req("PATCH", f"/api/sessions/{new}", {"title": title, "end_reason": "done"}).json()["session"]
    assert session["title"] == title and session["end_reason"] == "done"


def test_patch_404_comes_before_the_body_and_bad_bodies_are_400(wire: Wire) -> None:
    resp = wire.req("PATCH", "/api/sessions/sj-nope-p", {"bogus": 1})
    assert resp.status_code == 404 and resp.json() == not_found("sj-nope-p")
    new = wire.create()["id"]
    resp = wire.req("PATCH", f"/api/sessions/{new}", raw=b'{"title":')
    assert resp.json() == openai_err("Invalid JSON in request body", None)
    resp = wire.req("PATCH", f"/api/sessions/{new}", raw=b'["title"]')
    assert resp.json() == openai_err("Request body must be a JSON object", None)


def test_wrong_method_is_aiohttps_405(wire: Wire) -> None:
    new = wire.create()["id"]
    resp = wire.req("PUT", f"/api/sessions/{new}", {"title": "x"})
    assert resp.status_code == 405
    assert resp.headers["Allow"] == "DELETE,GET,PATCH"
    assert resp.text == "405: Method Not Allowed"
    assert wire.req("GET", f"/api/sessions/{new}/fork").headers["Allow"] == "POST"
    assert wire.req("POST", f"/api/sessions/{new}/messages").headers["Allow"] == "GET"


# --------------------------------------------------------------------------- list (53)


def test_list_pages_by_recent_activity_and_has_more_is_len_equals_limit(wire: Wire) -> None:
    made = [wire.create()["id"] for _ in range(3)]
    newest_first = list(reversed(made))
    page = wire.req("GET", "/api/sessions?limit=2").json()
    assert list(page) == ["object", "data", "limit", "offset", "has_more"]
    assert page["object"] == "list" and page["limit"] == 2 and page["offset"] == 0
    assert [r["id"] for r in page["data"]] == newest_first[:2] and page["has_more"] is True
    assert all(list(r) == LIST_KEYS for r in page["data"])
    second = wire.req("GET", "/api/sessions?limit=2&offset=2").json()
    assert second["data"][0]["id"] == newest_first[2] and second["offset"] == 2
    exact = wire.req("GET", "/api/sessions?limit=3").json()
    assert [r["id"] for r in exact["data"]] == newest_first and exact["has_more"] is True
    row = exact["data"][0]
    assert row["last_active"] == row["started_at"] and row["preview"] == ""


def test_list_parameter_rules(wire: Wire) -> None:
    wire.create()
    zero = wire.req("GET", "/api/sessions?limit=0").json()
    assert zero["data"] == [] and zero["has_more"] is True and zero["limit"] == 0
    assert wire.req("GET", "/api/sessions?limit=500").json()["limit"] == 200
    odd = wire.req("GET", "/api/sessions?limit=abc&offset=-5").json()
    assert (odd["limit"], odd["offset"]) == (50, 0)
    assert wire.req("GET", "/api/sessions?limit=2.5").json()["limit"] == 50
    far = wire.req("GET", "/api/sessions?limit=3&offset=2000000").json()
    assert far["offset"] == 1000000 and far["data"] == [] and far["has_more"] is False
    other = wire.req("GET", "/api/sessions?source=telegram").json()
    assert other["data"] == [] and other["has_more"] is False
    mine = wire.req("GET", "/api/sessions?source=api_server&limit=1").json()["data"]
    assert mine[0]["source"] == "api_server"


def test_list_activity_order_and_preview(wire: Wire) -> None:
    older = wire.create()["id"]
    wire.create()
    long_text = "preview " + "x" * 80
    wire.chat(older, long_text)
    row = wire.req("GET", "/api/sessions?limit=1").json()["data"][0]
    assert row["id"] == older
    assert row["preview"] == long_text[:60] + "..."
    assert row["last_active"] > row["started_at"]


def test_list_hides_forks_of_an_already_ended_session_unless_include_children(wire: Wire) -> None:
    live = wire.create()["id"]
    ended = wire.create()["id"]
    wire.req("PATCH", f"/api/sessions/{ended}", {"end_reason": "closed"})
    live_fork = wire.req("POST", f"/api/sessions/{live}/fork", {}).json()["session"]["id"]
    hidden_fork = wire.req("POST", f"/api/sessions/{ended}/fork", {}).json()["session"]["id"]

    def listed(query: str) -> list[str]:
        return [r["id"] for r in wire.req("GET", f"/api/sessions?limit=10{query}").json()["data"]]

    assert live_fork in listed("") and hidden_fork not in listed("")
    assert hidden_fork not in listed("&include_children=false")
    assert hidden_fork in listed("&include_children=true")
    assert hidden_fork in listed("&include_children=yes")


# --------------------------------------------------------------------------- chat (54, 55)


def test_chat_turns_load_history_and_persist_messages(wire: Wire, server: Target) -> None:
    new = wire.create(system_prompt="ignored by the agent", model="label")["id"]
    mark = server.mark()
    resp = wire.req("POST", f"/api/sessions/{new}/chat", {"message": "first turn"})
    assert resp.status_code == 200 and resp.headers["X-Hermes-Session-Id"] == new
    assert resp.headers["Content-Type"] == JSON_TYPE
    body = resp.json()
    assert list(body) == ["object", "session_id", "message", "usage"]
    assert body["object"] == "hermes.session.chat.completion" and body["session_id"] == new
    assert body["message"] == {"role": "assistant", "content": "ECHO: first turn"}
    usage = body["usage"]
    assert list(usage) == ["input_tokens", "output_tokens", "total_tokens"]
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0
    second = wire.chat(new, "second turn")
    assert second["message"]["content"] == "ECHO: second turn"
    calls = server.calls_since(mark)
    assert [c["n_messages"] for c in calls] == [2, 4]
    assert calls[1]["roles"] == ["system", "user", "assistant", "user"]

    listing = wire.messages(new)
    assert list(listing) == ["object", "session_id", "data"] and listing["session_id"] == new
    rows = listing["data"]
    assert all(list(m) == MESSAGE_KEYS for m in rows)
    assert [(m["role"], m["content"], m["finish_reason"]) for m in rows] == [
        ("user", "first turn", None),
        ("assistant", "ECHO: first turn", "stop"),
        ("user", "second turn", None),
        ("assistant", "ECHO: second turn", "stop"),
    ]
    ids = [m["id"] for m in rows]
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert all(m["session_id"] == new and m["tool_calls"] is None and m["token_count"] is None for m in rows)

    session = wire.session(new)
    assert session["model"] == "fake-model" and session["message_count"] == 4
    assert session["api_call_count"] == 2 and session["estimated_cost_usd"] == 0.0
    assert session["input_tokens"] == body["usage"]["input_tokens"] + second["usage"]["input_tokens"]
    assert session["has_system_prompt"] is True and session["has_model_config"] is True


def test_chat_input_alias_system_message_instructions_and_session_key(wire: Wire) -> None:
    new = wire.create()["id"]
    resp = wire.req(
        "POST",
        f"/api/sessions/{new}/chat",
        {"input": "via input", "system_message": "Answer like a pirate."},
        headers={"X-Hermes-Session-Key": "sj-memory-key"},
    )
    assert resp.json()["message"]["content"] == "ECHO: via input"
    assert resp.headers["X-Hermes-Session-Key"] == "sj-memory-key"
    assert wire.chat(new, "brief", instructions="Be brief.")["message"]["content"] == "ECHO: brief"
    tab = wire.req(
        "POST", f"/api/sessions/{new}/chat", {"message": "tab key"}, headers={"X-Hermes-Session-Key": "a\tb"}
    )
    assert tab.status_code == 200 and tab.headers["X-Hermes-Session-Key"] == "a\tb"


def test_chat_content_parts_are_joined(wire: Wire) -> None:
    new = wire.create()["id"]
    parts = [{"type": "text", "text": "parts turn"}, {"type": "input_text", "text": "second part"}]
    assert wire.chat(new, parts)["message"]["content"] == "ECHO: parts turn\nsecond part"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("body", "error"),
    [
        ({"text": "no message field"}, openai_err("Missing 'message' field", "missing_message")),
        ({"message": "   "}, openai_err("Missing 'message' field", "missing_message")),
        (
            {"message": [{"type": "input_file", "file_id": "f1"}, {"type": "text", "text": "x"}]},
            openai_err(
                "Inline image inputs are supported, but uploaded files and document inputs are not supported "
                "on this endpoint.",
                "unsupported_content_type",
                "message",
            ),
        ),
        (
            {"message": "hi", "system_message": {"a": 1}},
            openai_err("system_message must be a string", "invalid_system_message"),
        ),
    ],
)
@pytest.mark.parametrize("route", ["chat", "chat/stream"])
def test_chat_validation_errors_are_json_400s(wire: Wire, server: Target, route: str, body: Any, error: Any) -> None:
    new = wire.create()["id"]
    mark = server.mark()
    resp = wire.req("POST", f"/api/sessions/{new}/{route}", body)
    assert resp.status_code == 400 and resp.headers["Content-Type"] == JSON_TYPE
    assert resp.json() == error
    assert server.calls_since(mark) == []
    assert wire.messages(new)["data"] == []


@pytest.mark.parametrize("route", ["chat", "chat/stream"])
def test_chat_unknown_session_is_404_before_the_body(wire: Wire, route: str) -> None:
    resp = wire.req("POST", f"/api/sessions/sj-nope-c/{route}", {"nomessage": True})
    assert resp.status_code == 404 and resp.json() == not_found("sj-nope-c")
    new = wire.create()["id"]
    resp = wire.req("POST", f"/api/sessions/{new}/{route}", raw=b'{"message":')
    assert resp.status_code == 400 and resp.json() == openai_err("Invalid JSON in request body", None)


def test_chat_upstream_failures_are_200_with_the_error_text(wire: Wire) -> None:
    fail500 = wire.create()["id"]
    body = wire.chat(fail500, "please FAIL500")
    assert body["message"] == {"role": "assistant", "content": f"API call failed after 1 retries: {FAIL500_TEXT}"}
    assert body["usage"] == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    rows = wire.messages(fail500)["data"]
    assert [(m["role"], m["content"]) for m in rows] == [("user", "please FAIL500")]
    session = wire.session(fail500)
    assert session["model"] == "hermes-agent" and session["api_call_count"] == 0
    assert session["input_tokens"] == 0 and session["has_model_config"] is True

    fail400 = wire.create()["id"]
    assert wire.chat(fail400, "please FAIL400")["message"]["content"] == FAIL400_TEXT


def test_chat_truncempty_is_200_with_content_null(wire: Wire) -> None:
    new = wire.create()["id"]
    body = wire.chat(new, "please TRUNCEMPTY")
    assert body["message"] == {"role": "assistant", "content": None}
    assert body["usage"]["total_tokens"] == 0
    rows = wire.messages(new)["data"]
    assert [(m["role"], m["content"], m["finish_reason"]) for m in rows] == [
        ("user", "please TRUNCEMPTY", None),
        ("assistant", "", "length"),
        ("user", CONTINUATION, None),
        ("assistant", "", "length"),
        ("user", CONTINUATION, None),
        ("assistant", "", "length"),
        ("user", CONTINUATION, None),
        ("assistant", "", "length"),
    ]


def test_a_failed_turn_leaves_its_user_message_merged_into_the_next(wire: Wire, server: Target) -> None:
    new = wire.create()["id"]
    wire.chat(new, "please FAIL400")
    mark = server.mark()
    assert wire.chat(new, "second try")["message"]["content"] == FAIL400_TEXT
    calls = server.calls_since(mark)
    assert calls[0]["last_user"] == "please FAIL400\n\nsecond try" and calls[0]["n_messages"] == 2
    rows = wire.messages(new)["data"]
    assert [(m["role"], m["content"]) for m in rows] == [("user", "please FAIL400"), ("user", "second try")]


def test_chat_on_an_ended_session_runs_and_leaves_it_ended(wire: Wire) -> None:
    new = wire.create()["id"]
    ended = wire.req("PATCH", f"/api/sessions/{new}", {"end_reason": "user_closed"}).json()["session"]
    assert wire.chat(new, "talking to an ended session")["message"]["content"] == "ECHO: talking to an ended session"
    after = wire.session(new)
    assert (after["ended_at"], after["end_reason"]) == (ended["ended_at"], "user_closed")
    assert after["message_count"] == 2


def test_chat_ignores_the_session_id_header_and_needs_an_existing_row(wire: Wire) -> None:
    new = wire.create()["id"]
    other = sid("header")
    resp = wire.req(
        "POST",
        f"/api/sessions/{new}/chat",
        {"message": "header says another id"},
        headers={"X-Hermes-Session-Id": other},
    )
    assert resp.headers["X-Hermes-Session-Id"] == new and resp.json()["session_id"] == new
    assert wire.req("GET", f"/api/sessions/{other}").status_code == 404


def test_messages_route_404_empty_and_ignores_query(wire: Wire) -> None:
    assert wire.req("GET", "/api/sessions/sj-nope-m/messages").json() == not_found("sj-nope-m")
    new = wire.create()["id"]
    assert wire.messages(new) == {"object": "list", "session_id": new, "data": []}
    wire.chat(new, "one")
    wire.chat(new, "two")
    paged = wire.req("GET", f"/api/sessions/{new}/messages?limit=1&offset=1").json()
    assert len(paged["data"]) == 4


# --------------------------------------------------------------------------- stream (56)


def test_stream_event_sequence_and_payloads(wire: Wire) -> None:
    new = wire.create()["id"]
    wire.chat(new, "warm history")
    prompt = "streamed turn on alpha please"
    resp, events = wire.stream(new, {"message": prompt})
    assert resp.status_code == 200
    assert resp.headers["Content-Type"] == "text/event-stream"
    assert resp.headers["Cache-Control"] == "no-cache" and resp.headers["X-Accel-Buffering"] == "no"
    assert resp.headers["X-Hermes-Session-Id"] == new
    assert resp.headers.get("Transfer-Encoding") == "chunked"
    assert not any(h in resp.headers for h in SECURITY)
    names = [n for n, _ in events]
    deltas = names.count("assistant.delta")
    assert deltas >= 1
    assert names == (
        ["run.started", "message.started"]
        + ["assistant.delta"] * deltas
        + ["tool.progress", "assistant.completed", "run.completed", "done"]
    )
    run_id = events[0][1]["run_id"]
    assert RUN_ID.match(run_id)
    assert [d["seq"] for _, d in events] == list(range(1, len(events) + 1))
    assert all(d["session_id"] == new and d["run_id"] == run_id and isinstance(d["ts"], float) for _, d in events)
    started = events[0][1]
    assert list(started) == ["user_message", "session_id", "run_id", "seq", "ts"]
    assert started["user_message"] == {"role": "user", "content": prompt}
    message = events[1][1]["message"]
    assert list(events[1][1]) == ["message", "session_id", "run_id", "seq", "ts"]
    assert STREAM_MSG_ID.match(message["id"]) and message["role"] == "assistant"
    text = "".join(d["delta"] for n, d in events if n == "assistant.delta")
    assert text == f"ECHO: {prompt}"
    assert all(list(d)[:2] == ["message_id", "delta"] for n, d in events if n == "assistant.delta")
    thinking = events[-4][1]
    assert list(thinking) == ["message_id", "tool_name", "delta", "session_id", "run_id", "seq", "ts"]
    assert thinking["tool_name"] == "_thinking" and thinking["delta"] == text
    completed = events[-3][1]
    assert list(completed)[:6] == ["session_id", "message_id", "content", "completed", "partial", "interrupted"]
    assert completed["content"] == text and completed["message_id"] == message["id"]
    assert (completed["completed"], completed["partial"], completed["interrupted"]) == (True, False, False)
    run_done = events[-2][1]
    assert list(run_done)[:5] == ["session_id", "message_id", "completed", "messages", "usage"]
    assert run_done["messages"] == [{"role": "assistant", "content": text, "finish_reason": "stop", "reasoning": None}]
    assert run_done["usage"]["total_tokens"] > 0
    assert list(events[-1][1]) == ["session_id", "run_id", "seq", "ts"]
    assert wire.req("GET", f"/v1/runs/{run_id}").status_code == 404  # not a /v1/runs run
    rows = wire.messages(new)["data"]
    assert [(m["role"], m["content"]) for m in rows[-2:]] == [("user", prompt), ("assistant", text)]


def test_stream_session_key_system_message_and_accept_header(wire: Wire) -> None:
    new = wire.create()["id"]
    resp, events = wire.stream(
        new,
        {"input": "stream two", "system_message": "Be brief."},
        **{"X-Hermes-Session-Key": "sj-memory-key", "Accept": "text/event-stream"},
    )
    assert resp.headers["X-Hermes-Session-Key"] == "sj-memory-key"
    assert events[-3][1]["content"] == "ECHO: stream two"


def test_stream_upstream_failure_ends_completed_without_error_events(wire: Wire) -> None:
    new = wire.create()["id"]
    _resp, events = wire.stream(new, {"message": "stream FAIL500"})
    assert [n for n, _ in events] == ["run.started", "message.started", "assistant.completed", "run.completed", "done"]
    assert events[2][1]["content"] == f"API call failed after 1 retries: {FAIL500_TEXT}"
    assert events[2][1]["completed"] is True
    assert events[3][1]["messages"] == [] and events[3][1]["completed"] is True
    assert events[3][1]["usage"] == {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}


def test_stream_truncempty_has_null_content_and_length_rows(wire: Wire) -> None:
    new = wire.create()["id"]
    _resp, events = wire.stream(new, {"message": "stream TRUNCEMPTY"})
    assert [n for n, _ in events] == ["run.started", "message.started", "assistant.completed", "run.completed", "done"]
    assert events[2][1]["content"] is None
    row = {"role": "assistant", "content": "", "finish_reason": "length", "reasoning": None}
    assert events[3][1]["messages"] == [row] * 4


def test_a_client_that_goes_away_does_not_stop_the_turn(wire: Wire, server: Target) -> None:
    # As observed (56 T8): the client goes away while the model call is under way. Before the agent's
    # worker thread has started, a disconnect cancels the handler's task and nothing runs (a busy
    # machine reaches that window): so the client leaves once the model was called, not after a time.
    new = wire.create()["id"]
    mark = server.mark()
    resp = wire.req("POST", f"/api/sessions/{new}/chat/stream", {"message": "SLOW:2 abandoned stream"}, stream=True)
    assert resp.status_code == 200
    next(resp.iter_content(64))
    deadline = time.monotonic() + 30  # a guard against a hang, not a bound
    while time.monotonic() < deadline and not any(
            c["last_user"] == "SLOW:2 abandoned stream" for c in server.calls_since(mark)):
        time.sleep(0.05)
    resp.close()
    rows: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        rows = wire.messages(new)["data"]
        if len(rows) == 2:
            break
        time.sleep(0.3)
    assert [(m["role"], m["content"]) for m in rows] == [
        ("user", "SLOW:2 abandoned stream"),
        ("assistant", "ECHO: SLOW:2 abandoned stream"),
    ]


# --------------------------------------------------------------------------- fork (57)


def test_fork_ends_the_source_copies_messages_and_numbers_titles(wire: Wire) -> None:
    title = uniq("Lineage")
    source = wire.create(title=title, system_prompt="sp")["id"]
    wire.chat(source, "first")
    before = wire.messages(source)["data"]
    resp = wire.req("POST", f"/api/sessions/{source}/fork", {})
    assert resp.status_code == 201 and list(resp.json()) == ["object", "session"]
    child = resp.json()["session"]
    assert list(child) == SESSION_KEYS and GENERATED_SID.match(child["id"])
    assert child["title"] == f"{title} #2" and child["parent_session_id"] == source
    assert child["message_count"] == 2 and child["model"] == "fake-model"
    assert child["input_tokens"] == 0 and child["api_call_count"] == 0 and child["estimated_cost_usd"] is None
    assert child["has_system_prompt"] is True and child["has_model_config"] is False
    parent = wire.session(source)
    assert parent["end_reason"] == "branched" and isinstance(parent["ended_at"], float)
    assert child["started_at"] >= parent["ended_at"]
    copied = wire.messages(child["id"])["data"]
    assert [(m["role"], m["content"], m["timestamp"]) for m in copied] == [
        (m["role"], m["content"], m["timestamp"]) for m in before
    ]
    assert min(m["id"] for m in copied) > max(m["id"] for m in before)
    assert all(m["session_id"] == child["id"] for m in copied)

    explicit, explicit_title = sid("fork"), uniq("Second branch")
    second = wire.req("POST", f"/api/sessions/{source}/fork", {"id": explicit, "title": explicit_title}).json()
    assert second["session"]["id"] == explicit and second["session"]["title"] == explicit_title
    third = wire.req("POST", f"/api/sessions/{source}/fork", {"id": ""}).json()["session"]
    assert third["title"] == f"{title} #3" and GENERATED_SID.match(third["id"])
    grandchild = wire.req("POST", f"/api/sessions/{child['id']}/fork", {}).json()["session"]
    assert grandchild["title"] == f"{title} #4" and grandchild["parent_session_id"] == child["id"]
    assert wire.session(source)["ended_at"] == parent["ended_at"]  # the first end reason stays


def test_fork_of_an_untitled_session_is_titled_fork(wire: Wire) -> None:
    source = wire.create()["id"]
    first = wire.req("POST", f"/api/sessions/{source}/fork", {}).json()["session"]["title"]
    second = wire.req("POST", f"/api/sessions/{source}/fork", {}).json()["session"]["title"]
    assert first.startswith("fork") and second.startswith("fork #")
    assert int(second.split("#")[1]) > (int(first.split("#")[1]) if "#" in first else 1)


def test_fork_errors(wire: Wire) -> None:
    source = wire.create()["id"]
    taken = wire.create()["id"]
    resp = wire.req("POST", f"/api/sessions/{source}/fork", {"id": taken})
    assert resp.status_code == 409 and resp.json() == openai_err(f"Session already exists: {taken}", "session_exists")
    resp = wire.req("POST", "/api/sessions/sj-nope-f/fork", {})
    assert resp.status_code == 404 and resp.json() == not_found("sj-nope-f")
    for raw in (b'{"id":', b""):
        resp = wire.req("POST", f"/api/sessions/{source}/fork", raw=raw)
        assert resp.status_code == 400 and resp.json() == openai_err("Invalid JSON in request body", None)


def test_fork_title_conflict_is_400_after_the_child_exists(wire: Wire) -> None:
    owner = wire.create(title=uniq("Conflict"))
    source = wire.create()["id"]
    wire.chat(source, "something to copy")
    child = sid("fork")
    resp = wire.req("POST", f"/api/sessions/{source}/fork", {"id": child, "title": owner["title"]})
    assert resp.status_code == 400
    message = f"Title '{owner['title']}' is already in use by session {owner['id']}"
    assert resp.json() == openai_err(message, "invalid_title")
    left = wire.session(child)
    assert left["title"] is None and left["message_count"] == 2 and left["parent_session_id"] == source
    assert wire.session(source)["end_reason"] == "branched"


def test_fork_ids_skip_creates_path_checks(wire: Wire) -> None:
    source = wire.create()["id"]
    child = f"fork/with/slash/{uniq('x')}"
    resp = wire.req("POST", f"/api/sessions/{source}/fork", {"id": child})
    assert resp.status_code == 201 and resp.json()["session"]["id"] == child
    encoded = child.replace("/", "%2F").replace(" ", "%20")
    assert wire.req("GET", f"/api/sessions/{encoded}").json()["session"]["id"] == child
    resp = wire.req("POST", f"/api/sessions/{source}/fork", {"id": "bad\nid"})
    assert resp.status_code == 400 and resp.json() == openai_err("Invalid session ID", "invalid_session_id")


def test_after_a_fork_the_parents_messages_route_answers_the_newest_fork(wire: Wire, server: Target) -> None:
    source = wire.create()["id"]
    wire.chat(source, "before the forks")
    wire.req("POST", f"/api/sessions/{source}/fork", {"id": sid("older")})
    newest = sid("newest")
    wire.req("POST", f"/api/sessions/{source}/fork", {"id": newest})
    redirected = wire.messages(source)
    assert redirected["session_id"] == newest
    assert all(m["session_id"] == newest for m in redirected["data"])

    mark = server.mark()
    wire.chat(source, "turn on the source after forking")  # the source's own history is loaded
    assert server.calls_since(mark)[0]["n_messages"] == 4
    assert wire.session(source)["message_count"] == 4
    assert wire.session(newest)["message_count"] == 2
    mark = server.mark()
    wire.chat(newest, "turn on the fork")
    assert server.calls_since(mark)[0]["n_messages"] == 4


# --------------------------------------------------------------------------- delete (58)


def test_delete_then_404_everywhere_and_children_are_orphaned(wire: Wire) -> None:
    parent = wire.create()["id"]
    wire.chat(parent, "to be deleted")
    child = wire.req("POST", f"/api/sessions/{parent}/fork", {}).json()["session"]["id"]
    resp = wire.req("DELETE", f"/api/sessions/{parent}", {"force": True})
    assert resp.status_code == 200
    assert resp.json() == {"object": "hermes.session.deleted", "id": parent, "deleted": True}
    assert wire.req("DELETE", f"/api/sessions/{parent}").json() == not_found(parent)
    assert wire.req("GET", f"/api/sessions/{parent}").status_code == 404
    assert wire.req("GET", f"/api/sessions/{parent}/messages").status_code == 404
    assert wire.req("POST", f"/api/sessions/{parent}/chat", {"message": "hello?"}).status_code == 404
    orphan = wire.session(child)
    assert orphan["parent_session_id"] is None and orphan["message_count"] == 2


# --------------------------------------------------------------------------- one store (59, 60)


def test_chat_completions_with_the_session_header_share_the_store(wire: Wire) -> None:
    new = wire.create()["id"]
    wire.chat(new, "turn one via session route")
    resp = wire.req(
        "POST",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "turn two via chat completions"}]},
        headers={"X-Hermes-Session-Id": new},
    )
    assert resp.status_code == 200
    rows = wire.messages(new)["data"]
    assert [m["content"] for m in rows] == [
        "turn one via session route",
        "ECHO: turn one via session route",
        "turn two via chat completions",
        "ECHO: turn two via chat completions",
    ]

    born = sid("born")
    wire.req(
        "POST",
        "/v1/chat/completions",
        {"messages": [{"role": "user", "content": "hello"}]},
        headers={"X-Hermes-Session-Id": born},
    )
    session = wire.session(born)
    assert session["source"] == "api_server" and session["message_count"] == 2
    assert session["has_model_config"] is True and session["model"] == "fake-model"
    assert wire.req("POST", "/api/sessions", {"id": born}).status_code == 409


def test_concurrent_turns_on_one_session_run_in_parallel_without_a_lock(wire: Wire) -> None:
    new = wire.create()["id"]
    results: list[str] = []

    def turn(text: str) -> None:
        results.append(wire.chat(new, text)["message"]["content"])

    threads = [threading.Thread(target=turn, args=(f"SLOW:2 concurrent {i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2 and all(r.startswith("ECHO: SLOW:2 concurrent") for r in results)
    # Each turn writes its user message when it starts and its reply when it ends: both users
    # first, so the second began while the first ran (not serialised; an order, not a clock).
    roles = [m["role"] for m in wire.messages(new)["data"]]
    assert roles == ["user", "user", "assistant", "assistant"]


# --------------------------------------------------------------------------- auth (61)

SESSION_ROUTES = [
    ("GET", "/api/sessions"),
    ("POST", "/api/sessions"),
    ("GET", "/api/sessions/{id}"),
    ("PATCH", "/api/sessions/{id}"),
    ("DELETE", "/api/sessions/{id}"),
    ("GET", "/api/sessions/{id}/messages"),
    ("POST", "/api/sessions/{id}/fork"),
    ("POST", "/api/sessions/{id}/chat"),
    ("POST", "/api/sessions/{id}/chat/stream"),
]


@pytest.mark.parametrize(("method", "path"), SESSION_ROUTES)
def test_every_sessions_route_needs_the_key_first(wire: Wire, method: str, path: str) -> None:
    existing = wire.create()["id"]
    for target in (existing, "sj-nope-auth"):
        for auth in (False, "Bearer wrong-key-0123456789abcdef", f"bearer {wire.t.api_key}"):
            resp = wire.req(method, path.format(id=target), {"message": "x"}, auth=auth)
            assert resp.status_code == 401 and resp.json() == AUTH_401
    assert wire.session(existing)["message_count"] == 0


def test_an_origin_header_is_403_with_an_empty_body(wire: Wire) -> None:
    resp = wire.req("GET", "/api/sessions", headers={"Origin": "http://evil.example"})
    assert resp.status_code == 403 and resp.content == b""


# --------------------------------------------------------------------------- /health/detailed, /v1/skills (70)


def test_health_detailed_needs_auth_and_has_hermes_shape(wire: Wire) -> None:
    assert wire.req("GET", "/health/detailed", auth=False).json() == AUTH_401
    assert wire.req("GET", "/health/detailed", auth="Bearer wrong").status_code == 401
    body = wire.req("GET", "/health/detailed").json()
    assert list(body) == [
        "status",
        "readiness",
        "platform",
        "version",
        "gateway_state",
        "platforms",
        "active_agents",
        "gateway_busy",
        "gateway_drainable",
        "exit_reason",
        "updated_at",
        "pid",
    ]
    assert body["status"] == "ok" and body["platform"] == "hermes-agent" and body["version"] == "0.19.0"
    checks = body["readiness"]["checks"]
    assert list(checks) == ["state_db", "config", "model", "disk", "gateway", "background_queues"]
    assert list(checks["background_queues"]) == [
        "status",
        "active_api_runs",
        "process_completions",
        "active_delegations",
    ]
    assert list(body["platforms"]) == ["api_server"] and body["platforms"]["api_server"]["state"] == "connected"
    assert isinstance(body["pid"], int)


def test_a_running_session_chat_is_not_an_active_api_run(wire: Wire) -> None:
    new = wire.create()["id"]
    worker = threading.Thread(target=wire.chat, args=(new, "SLOW:2 keep busy"))
    worker.start()
    end = time.monotonic() + 30  # a guard against a hang: the turn began once its user message is written
    while not wire.messages(new)["data"] and time.monotonic() < end:
        time.sleep(0.02)
    body = wire.req("GET", "/health/detailed").json()
    worker.join()
    assert body["readiness"]["checks"]["background_queues"]["active_api_runs"] == 0
    assert body["active_agents"] == 0 and body["gateway_busy"] is False


SKILLS: list[tuple[str | None, str, str]] = [
    (
        "research",
        "wire-probe",
        "---\nname: wire-probe\ndescription: Probe a wire protocol and write down what was observed.\n---\n"
        "\n# Wire probe\n",
    ),
    (
        "ops",
        "zeta-notes",
        "---\nname: zeta-notes\n---\n\n# Zeta notes\n\nFirst body line becomes the description when the frontmatter "
        "has none.\n",
    ),
    (
        None,
        "alpha-root",
        "---\nname: alpha-root\ndescription: A skill directly under skills/ (no category directory).\n---\n\nBody.\n",
    ),
]


def test_skills_list_sorted_by_category_then_name(wire: Wire) -> None:
    assert wire.req("GET", "/v1/skills", auth=False).json() == AUTH_401
    assert wire.req("GET", "/v1/skills").json() == {"object": "list", "data": []}
    wire.install_skills(SKILLS)
    try:
        expected = {
            "object": "list",
            "data": [
                {
                    "name": "alpha-root",
                    "description": "A skill directly under skills/ (no category directory).",
                    "category": None,
                },
                {
                    "name": "zeta-notes",
                    "description": "First body line becomes the description when the frontmatter has none.",
                    "category": "ops",
                },
                {
                    "name": "wire-probe",
                    "description": "Probe a wire protocol and write down what was observed.",
                    "category": "research",
                },
            ],
        }
        assert wire.req("GET", "/v1/skills").json() == expected
        assert wire.req("GET", "/v1/skills?category=ops").json() == expected
    finally:
        wire.remove_skills()
