"""What the SDK's transport puts on the wire, measured at the socket."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from core_support import json_response, raw_client

CHAT_REPLY = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": "hermes-agent",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                      "finish_reason": "stop"}]}).encode()


class Sends:
    """Every block http.client hands to a socket, in order, with the port it went to.

    The spy is process-wide: a daemon thread an earlier test on this worker left behind (a run's
    answer rechecking its status, say) can send while this test runs, so a test reads only the
    blocks that went to its own server.
    """

    def __init__(self) -> None:
        self.blocks: list[tuple[int, bytes]] = []

    def to(self, server: Any) -> list[bytes]:
        port = int(server.base_url.rsplit(":", 1)[1])
        return [data for p, data in self.blocks if p == port]


@pytest.fixture
def sends(monkeypatch: pytest.MonkeyPatch) -> Sends:
    spied = Sends()
    real_send = http.client.HTTPConnection.send

    def spy(self: Any, data: Any) -> None:
        spied.blocks.append((self.port, bytes(data)))
        real_send(self, data)

    monkeypatch.setattr(http.client.HTTPConnection, "send", spy)
    return spied


def test_a_request_with_a_body_goes_out_in_one_send(raw_server, sends: Sends) -> None:
    # http.client sends the header block and the body apart: two system calls and two TCP segments.
    server = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, CHAT_REPLY)))
    with raw_client(server) as c:
        assert c.chat(prompt="hello").text == "hi"
        assert c.chat(prompt="again").text == "hi"  # a reused connection too
    blocks = sends.to(server)
    assert len(blocks) == 2
    for sent, prompt in zip(blocks, ("hello", "again")):
        head, _, body = sent.partition(b"\r\n\r\n")
        assert head.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
        assert json.loads(body)["messages"][0]["content"] == prompt
    assert [r.body for r in server.requests] == [s.partition(b"\r\n\r\n")[2] for s in blocks]


def test_a_request_without_a_body_is_sent_as_it_was(raw_server, sends: Sends) -> None:
    reply = json.dumps({"id": "resp_1", "object": "response", "status": "completed", "output": []}).encode()
    server = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, reply)))
    with raw_client(server) as c:
        assert c.response_get("resp_1").id == "resp_1"
    blocks = sends.to(server)
    assert len(blocks) == 1 and blocks[0].startswith(b"GET /v1/responses/resp_1 HTTP/1.1\r\n")
    assert blocks[0].endswith(b"\r\n\r\n")


def _head_names(raw: bytes) -> list[str]:
    head = raw.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")[1:]
    return [line.partition(":")[0] for line in head]


def test_headers_that_differ_only_in_case_are_sent_once(raw_server, sends: Sends) -> None:
    # A caller's session, or a plugin, may name a header in another case than the SDK does: the
    # SDK's own value wins and the header goes out once.
    import requests

    server = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, CHAT_REPLY)))
    with requests.Session() as session:
        session.headers.update({"accept": "text/plain", "user-agent": "theirs", "X-Team": "blue"})
        with raw_client(server, session=session) as c:
            assert c.chat(prompt="hello").text == "hi"
    names = [n.lower() for n in _head_names(sends.to(server)[0])]
    assert len(names) == len(set(names))
    assert "x-team" in names
    request = server.requests[0]
    got = {k.lower(): v for k, v in request.headers.items()}
    assert got["accept"] == "application/json" and got["user-agent"].startswith("hermes-sdk/")


def test_the_sdk_sends_each_of_its_headers_once(raw_server, sends: Sends) -> None:
    server = raw_server(lambda sock, req, srv: sock.sendall(json_response(200, CHAT_REPLY)))
    with raw_client(server) as c:
        c.chat(prompt="hello", idempotency_key="k-1", session_id="s-1")
    names = [n.lower() for n in _head_names(sends.to(server)[0])]
    assert len(names) == len(set(names))
    assert {"authorization", "idempotency-key", "x-hermes-session-id", "content-type", "content-length",
            "user-agent", "accept"} <= set(names)


def test_a_pool_the_manager_evicted_is_never_reused(raw_server) -> None:
    # The adapter caches an origin's pool; with room for one pool, each origin evicts (closes) the
    # other's, and the cache must look it up again rather than hand out the closed one.
    import requests

    from hermes_sdk._core.transport import _PooledAdapter

    servers = [raw_server(lambda sock, req, srv: sock.sendall(json_response(200, CHAT_REPLY))) for _ in range(2)]
    adapter = _PooledAdapter(pool_connections=1, max_retries=0)
    with requests.Session() as session:
        session.mount("http://", adapter)
        for i in range(6):
            reply = session.get(servers[i % 2].base_url + "/v1/models", timeout=5)
            assert reply.status_code == 200 and reply.json()["id"] == "chatcmpl-1"
    assert [len(s.requests) for s in servers] == [3, 3]
