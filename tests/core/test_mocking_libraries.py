"""requests-mock and ``responses`` intercept the SDK, as they do any requests user.

Legacy applications test their Hermes calls with these libraries: requests-mock patches
``requests.Session.send`` (and the session's adapter lookup), ``responses`` patches
``HTTPAdapter.send``. The SDK sends every attempt through ``Session.send`` on its own
``HTTPAdapter`` subclass, so both see every call; nothing here touches a socket. The bodies are the
wire shapes of /work/shared/hermes-wire (01 chat, 03 chat stream, 09 Responses stream, 10 stored
response, 25 run start and events).
"""

from __future__ import annotations

import json
import socket
from typing import Any, Callable, Iterator

import pytest
import requests_mock
import responses

from hermes_sdk import HermesClient

BASE = "http://hermes.mocked.test:8642"
KEY = "mock-key-0123456789abcdef"
RESPONSE_ID = "resp_073b813a490d4268b13b6c6185fe"
RUN_ID = "run_5dccc52b3de2461a861805b6b40d0907"

CHAT = {"id": "chatcmpl-1f040acb124e4585bb3352b99aaf4", "object": "chat.completion", "created": 1796035564,
        "model": "hermes-agent",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ECHO: hello there"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 256, "completion_tokens": 3, "total_tokens": 259}}


def _chat_chunk(delta: dict[str, Any], finish: Any = None, **extra: Any) -> bytes:
    payload = {"id": "chatcmpl-a131381a630e4e3cad82474d0935b", "object": "chat.completion.chunk",
               "created": 1796035570, "model": "hermes-agent",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


CHAT_STREAM = (_chat_chunk({"role": "assistant"}) + _chat_chunk({"content": "ECHO: stream me"})
               + b": keepalive\n\n" + _chat_chunk({"content": " one two three"})
               + _chat_chunk({}, "stop", usage={"prompt_tokens": 260, "completion_tokens": 10, "total_tokens": 270})
               + b"data: [DONE]\n\n")

MESSAGE = {"type": "message", "role": "assistant",
           "content": [{"type": "output_text", "text": "ECHO: stream a response"}]}
STORED = {"id": RESPONSE_ID, "object": "response", "status": "completed", "created_at": 1796035572,
          "model": "hermes-agent", "output": [MESSAGE], "usage": {"input_tokens": 256, "output_tokens": 4,
                                                                    "total_tokens": 260}}


def _named(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n".encode()


RESPONSES_STREAM = (
    _named("response.created", {"response": {**STORED, "status": "in_progress", "output": []}, "sequence_number": 0})
    + _named("response.output_text.delta", {"item_id": "msg_1", "output_index": 0, "content_index": 0,
                                            "delta": "ECHO: stream a response", "sequence_number": 1})
    + _named("response.completed", {"response": STORED, "sequence_number": 2}))

RUN_EVENTS = b"".join(
    b"data: " + json.dumps({"run_id": RUN_ID, "timestamp": 1796082401.2, **event}).encode() + b"\n\n"
    for event in ({"event": "message.delta", "delta": "ECHO: plain"}, {"event": "message.delta", "delta": " run"},
                  {"event": "run.completed", "output": "ECHO: plain run",
                   "usage": {"input_tokens": 591, "output_tokens": 5, "total_tokens": 596}})
) + b": stream closed\n\n"
RUN_OBJECT = {"object": "hermes.run", "run_id": RUN_ID, "status": "completed", "updated_at": 1796082401.3,
              "created_at": 1796082398.06, "session_id": RUN_ID, "model": "hermes-agent",
              "output": "ECHO: plain run"}

SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
JSON_HEADERS = {"Content-Type": "application/json; charset=utf-8"}

# (method, path, status, body, headers) of every route the tests below call.
ROUTES = [
    ("POST", "/v1/chat/completions", 200, json.dumps(CHAT).encode(),
     {**JSON_HEADERS, "X-Hermes-Session-Id": "api-28583305a84a8260"}),
    ("POST", "/v1/responses", 200, RESPONSES_STREAM, SSE_HEADERS),
    ("GET", f"/v1/responses/{RESPONSE_ID}", 200, json.dumps(STORED).encode(), JSON_HEADERS),
    ("POST", "/v1/runs", 202, json.dumps({"run_id": RUN_ID, "status": "started"}).encode(), JSON_HEADERS),
    ("GET", f"/v1/runs/{RUN_ID}/events", 200, RUN_EVENTS, SSE_HEADERS),
    ("GET", f"/v1/runs/{RUN_ID}", 200, json.dumps(RUN_OBJECT).encode(), JSON_HEADERS),
]
STREAM_ROUTE = ("POST", "/v1/chat/completions", 200, CHAT_STREAM, SSE_HEADERS)


class Mocked:
    """One mocking library, behind the same two calls: ``route`` and ``calls``."""

    def __init__(self, route: Callable[..., None], calls: Callable[[], list[tuple[str, str]]]) -> None:
        self.route = route
        self.calls = calls


def _with_responses() -> Iterator[Mocked]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        def route(method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> None:
            rest = {k: v for k, v in headers.items() if k != "Content-Type"}
            mock.upsert(method, BASE + path, body=body, status=status, headers=rest,
                        content_type=headers["Content-Type"])

        yield Mocked(route, lambda: [(c.request.method or "", c.request.url or "") for c in mock.calls])


def _with_requests_mock() -> Iterator[Mocked]:
    with requests_mock.Mocker() as mock:
        def route(method: str, path: str, status: int, body: bytes, headers: dict[str, str]) -> None:
            mock.register_uri(method, BASE + path, content=body, status_code=status, headers=headers)

        yield Mocked(route, lambda: [(r.method, r.url) for r in mock.request_history])


@pytest.fixture(params=["responses", "requests_mock"])
def mocked(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mocked]:
    def no_socket(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a mocked call reached the network")

    monkeypatch.setattr(socket, "create_connection", no_socket)
    source = _with_responses() if request.param == "responses" else _with_requests_mock()
    for mock in source:
        for route in ROUTES:
            mock.route(*route)
        yield mock


@pytest.fixture
def client() -> Iterator[HermesClient]:
    with HermesClient(BASE, KEY, load_entrypoints=False) as c:
        yield c


def test_chat(mocked: Mocked, client: HermesClient) -> None:
    out = client.chat(prompt="hello there")
    assert out.text == "ECHO: hello there" and out.finish_reason == "stop"
    assert out.session_id == "api-28583305a84a8260"
    assert mocked.calls() == [("POST", BASE + "/v1/chat/completions")]


def test_chat_stream(mocked: Mocked, client: HermesClient) -> None:
    mocked.route(*STREAM_ROUTE)
    with client.chat_stream(prompt="stream me") as stream:
        pieces = list(stream.text_deltas())
    assert pieces == ["ECHO: stream me", " one two three"]
    result = stream.result()
    assert result.status == "completed" and result.text == "ECHO: stream me one two three"
    assert result.event_count == 5  # the keepalive comment is no event
    assert result.usage == {"prompt_tokens": 260, "completion_tokens": 10, "total_tokens": 270}
    assert mocked.calls() == [("POST", BASE + "/v1/chat/completions")]


def test_responses_stream(mocked: Mocked, client: HermesClient) -> None:
    stream = client.responses_stream(input="stream a response")
    names = [event.event for event in stream]
    assert names == ["response.created", "response.output_text.delta", "response.completed"]
    result = stream.result()
    assert result.status == "completed" and result.text == "ECHO: stream a response"
    assert result.final is not None and result.final["id"] == RESPONSE_ID
    assert mocked.calls() == [("POST", BASE + "/v1/responses")]


def test_response_get(mocked: Mocked, client: HermesClient) -> None:
    out = client.response_get(RESPONSE_ID)
    assert out.id == RESPONSE_ID and out.status == "completed" and out.output_text == "ECHO: stream a response"
    assert mocked.calls() == [("GET", f"{BASE}/v1/responses/{RESPONSE_ID}")]


def test_run_start_and_its_events(mocked: Mocked, client: HermesClient) -> None:
    run = client.run(input="plain run please", idempotency_key="mock-run-1")
    assert run.id == RUN_ID
    result = run.wait(timeout=10)
    assert result.status == "completed" and result.output == "ECHO: plain run"
    calls = mocked.calls()
    assert calls[:2] == [("POST", BASE + "/v1/runs"), ("GET", f"{BASE}/v1/runs/{RUN_ID}/events")]
