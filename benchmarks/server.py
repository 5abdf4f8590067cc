"""A fast local Hermes-shaped server for benchmarks: raw sockets, one thread per connection.

* 127.0.0.1 only, HTTP/1.1 keep-alive, TCP_NODELAY, pre-encoded bodies.
* ``POST /v1/chat/completions`` and ``POST /v1/responses``: JSON, or SSE when ``"stream": true``.
* SSE framing ``chunked`` (each event its own chunk) or ``close`` (close-delimited body).
* Stream shape set by ``POST /_bench/config`` (JSON): ``events`` (data events before the terminal
  ones), ``framing``, ``delay_ms`` (between events), ``hold_ms`` (after the first event, hold the
  rest back this long). ``GET /_bench/stats`` returns ``{"connections": N, "requests": N}``:
  ``connections`` counts only connections that carried at least one ``/v1`` request.

Run standalone with ``python -m benchmarks.server [--port N]``; it prints its base URL.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from typing import Any, Optional

CREATED = 1_700_000_000
SESSION_ID = "sess_bench_0001"

CHAT_BODY = json.dumps({
    "id": "chatcmpl-bench0001", "object": "chat.completion", "created": CREATED, "model": "hermes-agent",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello from the benchmark server."},
                 "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19},
}, separators=(",", ":")).encode()

RESPONSES_BODY = json.dumps({
    "id": "resp_bench0001", "object": "response", "created_at": CREATED, "status": "completed",
    "model": "hermes-agent", "error": None, "incomplete_details": None, "instructions": None,
    "output": [{"type": "message", "id": "msg_bench00000001", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": "Hello from the benchmark server.",
                             "annotations": []}]}],
    "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "temperature": None, "top_p": None,
    "usage": {"input_tokens": 12, "output_tokens": 7, "total_tokens": 19,
              "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}},
}, separators=(",", ":")).encode()


def _chunk(delta: dict[str, Any], finish: Optional[str] = None, usage: Optional[dict[str, Any]] = None) -> bytes:
    obj: dict[str, Any] = {"id": "chatcmpl-bench0001", "object": "chat.completion.chunk", "created": CREATED,
                           "model": "hermes-agent",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        obj["usage"] = usage
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


CHAT_FIRST = _chunk({"role": "assistant", "content": ""})
CHAT_EVENT = _chunk({"content": " word"})
CHAT_TAIL = [_chunk({}, "stop", {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}),
             b"data: [DONE]\n\n"]


def _named(name: str, obj: dict[str, Any]) -> bytes:
    return b"event: " + name.encode() + b"\ndata: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


RESP_FIRST = _named("response.created", {"type": "response.created", "sequence_number": 0,
                                         "response": {"id": "resp_bench0001", "object": "response",
                                                      "status": "in_progress", "output": []}})
RESP_EVENT = _named("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_bench1",
                                                   "output_index": 0, "content_index": 0, "delta": " word",
                                                   "sequence_number": 1})
RESP_TAIL = [_named("response.completed", {"type": "response.completed", "sequence_number": 2,
                                           "response": json.loads(RESPONSES_BODY)})]


class Config:
    def __init__(self) -> None:
        self.events = 10
        self.framing = "chunked"
        self.delay_ms = 0.0
        self.hold_ms = 0.0


class BenchServer:
    """Serve on 127.0.0.1 in background threads of this process (use a subprocess for measurements)."""

    def __init__(self, port: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(256)
        self.port = self.sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.config = Config()
        self.connections = 0
        self.requests = 0
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, bool, int], bytes] = {}
        self._stopped = False

    def start(self) -> "BenchServer":
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def serve_forever(self) -> None:
        while not self._stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._connection, args=(conn,), daemon=True).start()

    def stop(self) -> None:
        self._stopped = True
        self.sock.close()

    # ------------------------------------------------------------------ one connection

    def _connection(self, conn: socket.socket) -> None:
        buf = b""
        counted = False
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, _, buf = buf.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                method, target, _version = lines[0].split(b" ", 2)
                length = 0
                close = False
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    lname = name.strip().lower()
                    if lname == b"content-length":
                        length = int(value)
                    elif lname == b"connection" and value.strip().lower() == b"close":
                        close = True
                while len(buf) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                path = target.split(b"?", 1)[0]
                if path.startswith(b"/v1/"):
                    with self._lock:
                        self.requests += 1
                        if not counted:
                            self.connections += 1
                            counted = True
                keep = self._dispatch(conn, method, path, body)
                if close or not keep:
                    return
        except (OSError, ValueError):
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def _dispatch(self, conn: socket.socket, method: bytes, path: bytes, body: bytes) -> bool:
        if path == b"/_bench/stats":
            with self._lock:
                payload = json.dumps({"connections": self.connections, "requests": self.requests}).encode()
            _send_json(conn, 200, payload)
            return True
        if path == b"/_bench/config":
            cfg = json.loads(body or b"{}")
            c = self.config
            c.events = int(cfg.get("events", c.events))
            c.framing = str(cfg.get("framing", c.framing))
            c.delay_ms = float(cfg.get("delay_ms", c.delay_ms))
            c.hold_ms = float(cfg.get("hold_ms", c.hold_ms))
            _send_json(conn, 200, b'{"ok":true}')
            return True
        if method != b"POST" or path not in (b"/v1/chat/completions", b"/v1/responses"):
            _send_json(conn, 404, b'{"error":{"message":"not found","type":"invalid_request_error"}}')
            return True
        chat = path == b"/v1/chat/completions"
        stream = b'"stream"' in body and json.loads(body).get("stream") is True
        if not stream:
            _send_json(conn, 200, CHAT_BODY if chat else RESPONSES_BODY)
            return True
        return self._stream(conn, chat)

    def _stream(self, conn: socket.socket, chat: bool) -> bool:
        c = self.config
        chunked = c.framing != "close"
        head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                b"X-Hermes-Session-Id: " + SESSION_ID.encode() + b"\r\n"
                + (b"Transfer-Encoding: chunked\r\n" if chunked else b"Connection: close\r\n") + b"\r\n")
        first, event, tail = (CHAT_FIRST, CHAT_EVENT, CHAT_TAIL) if chat else (RESP_FIRST, RESP_EVENT, RESP_TAIL)

        def frame(ev: bytes) -> bytes:
            return b"%x\r\n%s\r\n" % (len(ev), ev) if chunked else ev

        end = b"0\r\n\r\n" if chunked else b""
        if c.delay_ms <= 0 and c.hold_ms <= 0:
            key = (c.framing, chat, c.events)
            payload = self._cache.get(key)
            if payload is None:
                payload = head + frame(first) + frame(event) * max(0, c.events - 1) + b"".join(
                    frame(t) for t in tail) + end
                if len(self._cache) > 8:
                    self._cache.clear()
                self._cache[key] = payload
            conn.sendall(payload)
            return chunked
        conn.sendall(head + frame(first))
        if c.hold_ms > 0:
            time.sleep(c.hold_ms / 1000.0)
        if c.delay_ms > 0:
            for _ in range(max(0, c.events - 1)):
                time.sleep(c.delay_ms / 1000.0)
                conn.sendall(frame(event))
            conn.sendall(b"".join(frame(t) for t in tail) + end)
        else:
            conn.sendall(frame(event) * max(0, c.events - 1) + b"".join(frame(t) for t in tail) + end)
        return chunked


def _send_json(conn: socket.socket, status: int, payload: bytes) -> None:
    reason = b"OK" if status == 200 else b"Not Found"
    conn.sendall(b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                 b"X-Hermes-Session-Id: %s\r\n\r\n%s" % (status, reason, len(payload), SESSION_ID.encode(), payload))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    server = BenchServer(args.port)
    print(server.base_url, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
