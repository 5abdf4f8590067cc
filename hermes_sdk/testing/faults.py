"""A misbehaving Hermes on loopback: every fault an attacker or a broken proxy can produce, by name.

Standard library only, like the emulator. ``FaultServer`` answers each request with a scripted
fault (``server.script("drip_headers", "ok")``) or its default one (``server.fault = "half_open"``),
counts connections, and reports how many are still open, so a test can assert that the client
left no socket behind::

    with FaultServer(fault="keepalive_forever") as server:
        client = HermesClient(base_url=server.base_url, api_key=server.api_key)
        ...
        assert server.wait_idle(1.0)

Bounded: it listens on loopback only, serves at most ``max_connections`` at once (others are
closed at once), ends each connection after ``max_seconds``, and stops by itself after
``lifetime`` seconds, or on ``stop()``. Error bodies echo ``server.secret`` and the caller's bearer
token, to prove that neither leaks into the SDK's messages.
"""

from __future__ import annotations

import email.utils
import json
import select
import socket
import struct
import threading
import time
import zlib
from typing import Callable, Optional, Union

__all__ = ["FAULTS", "Fault", "FaultServer", "FaultRequest"]

SECRET = "sk-fault-secret-7f3a9c1e"
_MiB = 1024 * 1024
_BOM = b"\xef\xbb\xbf"


class _Gone(Exception):
    """The client closed its end, the connection's time is up, or the server is stopping."""


class FaultRequest:
    """One request as the server read it."""

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())

    @property
    def json(self) -> object:
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None

    @property
    def streaming(self) -> bool:
        data = self.json
        return isinstance(data, dict) and data.get("stream") is True

    @property
    def bearer(self) -> str:
        value = self.header("authorization") or ""
        return value[7:] if value.startswith("Bearer ") else value


class _Conn:
    """The server side of one connection, with the helpers faults are written with."""

    def __init__(self, server: "FaultServer", sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.ends_at = time.monotonic() + server.max_seconds
        self.sent = 0

    def _check(self) -> None:
        if self.server._stopping.is_set() or time.monotonic() >= self.ends_at:
            raise _Gone()

    def send(self, data: bytes) -> None:
        self._check()
        try:
            self.sock.sendall(data)
        except OSError:
            raise _Gone() from None
        self.sent += len(data)
        with self.server._lock:
            self.server.bytes_sent += len(data)

    def client_closed(self) -> bool:
        """Whether the client closed (or reset) its end; never consumes request bytes."""
        try:
            ready, _, _ = select.select([self.sock], [], [], 0)
            if not ready:
                return False
            return self.sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def wait(self, seconds: float) -> None:
        """Sleep, but end early (raising _Gone) when the client goes away or the server stops."""
        until = min(time.monotonic() + seconds, self.ends_at)
        while True:
            self._check()
            if self.client_closed():
                raise _Gone()
            left = until - time.monotonic()
            if left <= 0:
                return
            self.server._stopping.wait(min(left, 0.02))

    def drip(self, data: bytes) -> None:
        """Send one byte every ``server.drip_interval`` seconds."""
        for i in range(len(data)):
            self.send(data[i:i + 1])
            self.wait(self.server.drip_interval)

    def head(self, status: int, headers: dict[str, str], reason: str = "") -> bytes:
        lines = [f"HTTP/1.1 {status} {reason or _REASONS.get(status, 'Status')}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        lines.append("Connection: close")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def respond(self, status: int, body: bytes, content_type: str = "application/json",
                extra: Optional[dict[str, str]] = None) -> None:
        headers = {"Content-Type": content_type, "Content-Length": str(len(body)), **(extra or {})}
        self.send(self.head(status, headers) + body)

    def sse_head(self, chunked: bool = True) -> None:
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        if chunked:
            headers["Transfer-Encoding"] = "chunked"
        self.send(self.head(200, headers))

    def chunk(self, data: bytes) -> None:
        if data:
            self.send(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunks(self) -> None:
        self.send(b"0\r\n\r\n")

    def hold(self) -> None:
        """Keep the connection open, sending nothing, until the client leaves or time is up."""
        while True:
            self.wait(0.05)


_REASONS = {200: "OK", 302: "Found", 401: "Unauthorized", 404: "Not Found", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"}

FaultFn = Callable[[_Conn, FaultRequest], None]


class Fault:
    """A named fault: ``fn(conn, request)`` writes whatever it likes to the connection."""

    def __init__(self, name: str, fn: FaultFn, description: str) -> None:
        self.name = name
        self.fn = fn
        self.description = description

    def __repr__(self) -> str:
        return f"Fault({self.name!r})"


FAULTS: dict[str, Fault] = {}


def fault(name: str, description: str) -> Callable[[FaultFn], FaultFn]:
    def register(fn: FaultFn) -> FaultFn:
        FAULTS[name] = Fault(name, fn, description)
        return fn
    return register


# ---------------------------------------------------------------- well-formed payloads


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def _response_object(response_id: str = "resp_fault0000000000000000000000") -> dict[str, object]:
    return {"id": response_id, "object": "response", "status": "completed", "created_at": 1700000000,
            "model": "hermes-agent", "output": [
                {"type": "message", "id": "msg_fault", "role": "assistant", "status": "completed",
                 "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
            "usage": {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}}


def ok_body(request: FaultRequest) -> bytes:
    """The JSON a healthy Hermes would answer for this (non-streaming) request."""
    if request.path.startswith("/v1/chat/completions"):
        data: dict[str, object] = {"id": "chatcmpl-fault", "object": "chat.completion", "created": 1700000000,
                     "model": "hermes-agent", "usage": _usage(), "choices": [
                         {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
    elif request.method == "DELETE":
        data = {"id": request.path.rsplit("/", 1)[-1], "object": "response", "deleted": True}
    elif request.method == "GET":
        data = _response_object(request.path.rsplit("/", 1)[-1])
    else:
        data = _response_object()
    return json.dumps(data).encode()


def ok_events(request: FaultRequest) -> list[bytes]:
    """The SSE frames (boundaries included) of a healthy stream for this request."""
    if request.path.startswith("/v1/chat/completions"):
        def chunk(delta: dict[str, object], finish: Optional[str] = None) -> bytes:
            data = {"id": "chatcmpl-fault", "object": "chat.completion.chunk", "created": 1700000000,
                    "model": "hermes-agent", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            if finish:
                data["usage"] = _usage()
            return b"data: " + json.dumps(data).encode() + b"\n\n"
        return [chunk({"role": "assistant"}), chunk({"content": "ok"}), chunk({}, "stop"), b"data: [DONE]\n\n"]

    def event(name: str, data: dict[str, object]) -> bytes:
        return b"event: " + name.encode() + b"\ndata: " + json.dumps({"type": name, **data}).encode() + b"\n\n"
    final = _response_object()
    return [event("response.created", {"response": {**final, "status": "in_progress", "output": []}}),
            event("response.output_text.delta", {"item_id": "msg_fault", "delta": "ok"}),
            event("response.completed", {"response": final})]


def _error_body(request: FaultRequest, message: str, code: Optional[str] = None) -> bytes:
    echoed = f"{message}: key {request.bearer} rejected, internal token {SECRET}"
    return json.dumps({"error": {"message": echoed, "type": "fault", "code": code}}).encode()


# ---------------------------------------------------------------- the faults



@fault("ok", "a healthy answer (JSON, or a short SSE stream when the request asks for one)")
def _ok(conn: _Conn, req: FaultRequest) -> None:
    if req.streaming:
        conn.sse_head()
        for frame in ok_events(req):
            conn.chunk(frame)
        conn.end_chunks()
    else:
        conn.respond(200, ok_body(req))


@fault("drip_headers", "the status line and headers, one byte every drip_interval (0.2 s)")
def _drip_headers(conn: _Conn, req: FaultRequest) -> None:
    conn.drip(conn.head(200, {"Content-Type": "application/json", "Content-Length": "2"}) + b"{}")


@fault("drip_json_body", "headers at once, then the JSON body one byte every drip_interval (0.2 s)")
def _drip_json_body(conn: _Conn, req: FaultRequest) -> None:
    body = ok_body(req)
    conn.send(conn.head(200, {"Content-Type": "application/json", "Content-Length": str(len(body))}))
    conn.drip(body)


@fault("drip_error_body", "a 500 whose body arrives one byte every drip_interval (0.2 s)")
def _drip_error_body(conn: _Conn, req: FaultRequest) -> None:
    body = _error_body(req, "slow failure") + b" " * 2048
    conn.send(conn.head(500, {"Content-Type": "application/json", "Content-Length": str(len(body))}))
    conn.drip(body)


@fault("drip_sse", "an SSE stream whose bytes arrive one every drip_interval (0.2 s) (close-delimited)")
def _drip_sse(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head(chunked=False)
    conn.drip(b"".join(ok_events(req)[:-1]) * 1000)


@fault("keepalive_forever", "an SSE stream of `: keepalive` comments every 0.1 s, never an event")
def _keepalive_forever(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head()
    while True:
        conn.chunk(b": keepalive\n\n")
        conn.wait(0.1)


@fault("half_open", "accepts and reads the request, never answers")
def _half_open(conn: _Conn, req: FaultRequest) -> None:
    conn.hold()


@fault("close_mid_body", "a 200 announcing 4096 bytes of JSON, 20 sent, then the connection closes")
def _close_mid_body(conn: _Conn, req: FaultRequest) -> None:
    conn.send(conn.head(200, {"Content-Type": "application/json", "Content-Length": "4096"}) + ok_body(req)[:20])


@fault("close_mid_stream", "an SSE stream that closes after its first event, without a terminal event")
def _close_mid_stream(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head(chunked=False)
    conn.send(ok_events(req)[0])


@fault("non_json_200", "a 200 whose body is an HTML page")
def _non_json_200(conn: _Conn, req: FaultRequest) -> None:
    conn.respond(200, b"<html><body>502 Bad Gateway (proxy)</body></html>", "text/html")


@fault("json_wrong_shape", "a 200 with a JSON object of the wrong shape (no id, no fields)")
def _json_wrong_shape(conn: _Conn, req: FaultRequest) -> None:
    conn.respond(200, b'{"object": "unexpected", "detail": {"note": "not what you asked for"}}')


@fault("reply_about_another_id", "a well-formed 200 about another object: a stored response or a delete "
                                 "receipt naming another response id, a run, job or session naming another id")
def _reply_about_another_id(conn: _Conn, req: FaultRequest) -> None:
    other = "resp_another00000000000000000000"
    path = req.path.split("?", 1)[0]
    if path.startswith("/v1/runs/"):
        body = json.dumps({"object": "hermes.run", "run_id": "run_another000000000000000000000",
                           "status": "completed", "output": "not yours"}).encode()
    elif path.startswith("/api/jobs/"):
        job = {"id": "0ther0000000", "name": "not yours", "enabled": True, "state": "scheduled"}
        body = json.dumps({"ok": True, "id": job["id"]} if req.method == "DELETE" else {"job": job}).encode()
    elif path.startswith("/api/sessions/"):
        if req.method == "DELETE":
            body = json.dumps({"object": "hermes.session.deleted", "id": "sess-another", "deleted": True}).encode()
        else:
            body = json.dumps({"object": "hermes.session", "session": {"id": "sess-another", "title": "not yours",
                                                                       "message_count": 0}}).encode()
    elif req.method == "DELETE":
        body = json.dumps({"id": other, "object": "response", "deleted": True}).encode()
    elif req.method == "GET":
        body = json.dumps(_response_object(other)).encode()
    else:
        return _ok(conn, req)  # a model call creates a new object: nothing to compare its id with
    conn.respond(200, body)


@fault("repeat_page", "a list that ignores offset: every GET /api/sessions answers the same full page")
def _repeat_page(conn: _Conn, req: FaultRequest) -> None:
    from urllib.parse import parse_qs, urlsplit

    limit = int((parse_qs(urlsplit(req.path).query).get("limit") or ["50"])[0])
    rows = [{"id": f"sess-{i:04d}", "title": None, "message_count": 0} for i in range(limit)]
    conn.respond(200, json.dumps({"object": "list", "data": rows, "limit": limit, "offset": 0,
                                  "has_more": True}).encode())


@fault("json_array", "a 200 whose JSON is an array, not an object")
def _json_array(conn: _Conn, req: FaultRequest) -> None:
    conn.respond(200, b"[1, 2, 3]")


@fault("json_too_deep", "a 200 with JSON nested 100,000 deep (beyond any recursive decoder)")
def _json_too_deep(conn: _Conn, req: FaultRequest) -> None:
    conn.respond(200, b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def _bomb(size: int) -> bytes:
    """A gzip body of ``size`` zero bytes, built in milliseconds: after a full flush, deflate
    emits the same bytes for the same 1 MiB block, so one block is compressed and repeated."""
    cached = _BOMBS.get(size)
    if cached is None:
        block = b"\0" * _MiB
        deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
        piece = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
        crc = 0
        for _ in range(size // _MiB):
            crc = zlib.crc32(block, crc)
        header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
        cached = _BOMBS[size] = (header + piece * (size // _MiB) + b"\x03\x00"
                                 + struct.pack("<II", crc, size & 0xFFFFFFFF))
    return cached


_BOMBS: dict[int, bytes] = {}


@fault("gzip_bomb", "a 200 whose gzip body inflates to 256 MiB (about 250 KiB on the wire)")
def _gzip_bomb(conn: _Conn, req: FaultRequest) -> None:
    conn.respond(200, _bomb(256 * _MiB), extra={"Content-Encoding": "gzip"})


@fault("gzip_bomb_error", "a 500 whose gzip body inflates to 256 MiB")
def _gzip_bomb_error(conn: _Conn, req: FaultRequest) -> None:
    conn.respond(500, _bomb(256 * _MiB), extra={"Content-Encoding": "gzip"})


@fault("redirect_huge_body", "a 302 elsewhere, announcing a 300 MiB body and sending it as fast as it can")
def _redirect_huge_body(conn: _Conn, req: FaultRequest) -> None:
    size = 300 * _MiB
    conn.send(conn.head(302, {"Location": "http://127.0.0.1:9/stolen", "Content-Type": "text/plain",
                              "Content-Length": str(size)}))
    block = b"r" * 65536
    for _ in range(size // len(block)):
        conn.send(block)


def _retry_after(value: str) -> FaultFn:
    def run(conn: _Conn, req: FaultRequest) -> None:
        conn.respond(429, _error_body(req, "rate limited", "rate_limit_exceeded"), extra={"Retry-After": value})
    return run


for _name, _value in (("inf", "inf"), ("1e309", "1e309"), ("huge", "99999999999999999999"),
                      ("negative", "-30"), ("nan", "nan"), ("garbage", "soon, maybe"),
                      ("http_date", "__DATE__")):
    def _make(value: str) -> FaultFn:
        if value != "__DATE__":
            return _retry_after(value)

        def dated(conn: _Conn, req: FaultRequest) -> None:  # an HTTP-date 10 days ahead
            _retry_after(email.utils.formatdate(time.time() + 864_000, usegmt=True))(conn, req)
        return dated
    fault(f"retry_after_{_name}", f"a 429 with Retry-After: {_value}")(_make(_value))


@fault("sse_bom", "a healthy stream that starts with a UTF-8 byte-order mark")
def _sse_bom(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head()
    frames = ok_events(req)
    conn.chunk(_BOM + frames[0])
    for frame in frames[1:]:
        conn.chunk(frame)
    conn.end_chunks()


@fault("sse_split_boundaries", "2 MiB of small events (under 4096), each HTTP chunk ending inside a frame boundary")
def _sse_split_boundaries(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head()
    frames = ok_events(req)
    pad = b"data: " + json.dumps({"type": "fault.padding", "pad": "." * 1000}).encode() + b"\n\n"
    body = frames[0] + (frames[1] + pad) * (2 * _MiB // (len(frames[1]) + len(pad))) + b"".join(frames[2:])
    pieces = body.split(b"\n\n")[:-1]
    # p0 "\n" | "\n" p1 "\n" | ... | "\n": no chunk holds a whole boundary.
    out = [pieces[0] + b"\n"] + [b"\n" + p + b"\n" for p in pieces[1:]] + [b"\n"]
    conn.send(b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in out))
    conn.end_chunks()


@fault("sse_many_short_lines", "a frame of 120,000 one-character data lines (just under 1 MiB), then the end")
def _sse_many_short_lines(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head()
    frames = ok_events(req)
    conn.chunk(frames[0])
    body = b"data: x\n" * 120_000 + b"\n"
    for i in range(0, len(body), 4096):
        conn.chunk(body[i:i + 4096])
    for frame in frames[1:]:
        conn.chunk(frame)
    conn.end_chunks()


@fault("sse_frame_over_1mib", "one event, then a frame of 1 MiB + 1 byte")
def _sse_frame_over_1mib(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head()
    conn.chunk(ok_events(req)[0])
    frame = b"data: " + b"x" * (_MiB - 7) + b"\n\n"  # 1 MiB + 1, boundary included
    for i in range(0, len(frame), 65536):
        conn.chunk(frame[i:i + 65536])
    conn.hold()


@fault("sse_stream_over_limit", "one event, then keepalive comments past the 64 MiB stream limit")
def _sse_stream_over_limit(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head()
    conn.chunk(ok_events(req)[0])
    comment = b":" + b"k" * (512 * 1024 - 3) + b"\n\n"
    for _ in range(140):  # 70 MiB
        conn.chunk(comment)
    conn.hold()


@fault("sse_deep_json", "a healthy stream with one event whose data is JSON nested 100,000 deep")
def _sse_deep_json(conn: _Conn, req: FaultRequest) -> None:
    conn.sse_head()
    frames = ok_events(req)
    conn.chunk(frames[0])
    conn.chunk(b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n")
    for frame in frames[1:]:
        conn.chunk(frame)
    conn.end_chunks()


@fault("content_length_superscript", "a 200 whose Content-Length is `\u00b2` (str.isdigit() says yes, int() says no)")
def _content_length_superscript(conn: _Conn, req: FaultRequest) -> None:
    body = ok_body(req)
    head = conn.head(200, {"Content-Type": "application/json"}).replace(
        b"Connection: close", "Content-Length: \u00b2\r\nConnection: close".encode("latin-1"))
    conn.send(head + body)


@fault("negative_chunk_size", "a chunked 200 (JSON or SSE) whose first chunk size is `-5`, then the connection closes")
def _negative_chunk_size(conn: _Conn, req: FaultRequest) -> None:
    content_type = "text/event-stream" if req.streaming else "application/json"
    head = conn.head(200, {"Content-Type": content_type, "Transfer-Encoding": "chunked"})
    conn.send(head + b"-5\r\nhello\r\n0\r\n\r\n")


@fault("status_503_bad_framing", "a 503 whose Content-Length is `\u00b2`: the status is known, the body is not")
def _status_503_bad_framing(conn: _Conn, req: FaultRequest) -> None:
    body = _error_body(req, "failure 503")
    head = conn.head(503, {"Content-Type": "application/json"}).replace(
        b"Connection: close", "Content-Length: \u00b2\r\nConnection: close".encode("latin-1"))
    conn.send(head + body)


def _status(status: int, code: Optional[str] = None) -> FaultFn:
    def run(conn: _Conn, req: FaultRequest) -> None:
        conn.respond(status, _error_body(req, f"failure {status}", code))
    return run


for _code in (401, 404, 429, 500, 502, 503):
    fault(f"status_{_code}_secret", f"HTTP {_code} whose error message echoes the API key and a secret")(
        _status(_code))
fault("status_502_agent_incomplete", "HTTP 502 agent_incomplete, message echoing the API key")(
    _status(502, "agent_incomplete"))


# ---------------------------------------------------------------- the server


class FaultServer:
    """A threaded HTTP/1.1 server on loopback whose every answer is a named fault."""

    def __init__(self, fault: Union[str, Fault] = "ok", *, host: str = "127.0.0.1", port: int = 0,
                 api_key: str = "sk-hermes-fault-key-0123456789", max_connections: int = 32,
                 max_seconds: float = 8.0, lifetime: float = 300.0, drip_interval: float = 0.2) -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise ValueError("FaultServer listens on loopback only")
        self.fault = fault
        self.api_key = api_key
        self.secret = SECRET
        self.max_connections = max_connections
        self.max_seconds = max_seconds
        self.lifetime = lifetime
        self.drip_interval = drip_interval
        self.requests: list[FaultRequest] = []
        self.connections_total = 0
        self.open_connections = 0
        self.bytes_sent = 0
        self.errors: list[BaseException] = []
        self._script: list[Union[str, Fault]] = []
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._socks: set[socket.socket] = set()
        self._listener = socket.create_server((host, port))
        self._listener.settimeout(0.05)
        self.host, self.port = self._listener.getsockname()[:2]
        self.base_url = f"http://{self.host}:{self.port}"
        self._started_at = 0.0
        self._accept_thread: Optional[threading.Thread] = None

    # -------------------------------------------------------- control

    def script(self, *faults: Union[str, Fault]) -> "FaultServer":
        """The next requests get these faults, in order; then the default ``fault`` again."""
        for item in faults:
            _resolve(item)
        with self._lock:
            self._script.extend(faults)
        return self

    def start(self) -> "FaultServer":
        if self._accept_thread is None:
            _resolve(self.fault)
            self._started_at = time.monotonic()
            self._accept_thread = threading.Thread(target=self._accept, name="hermes-fault-accept", daemon=True)
            self._accept_thread.start()
        return self

    def stop(self) -> None:
        """Close the listener and every connection, and wait for the handler threads (bounded)."""
        self._stopping.set()
        with self._lock:
            socks = list(self._socks)
        for sock in socks:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._accept_thread is not None:
            self._accept_thread.join(2.0)
        for thread in list(self._threads):
            thread.join(2.0)
        try:
            self._listener.close()
        except OSError:
            pass

    def __enter__(self) -> "FaultServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def wait_idle(self, timeout: float = 1.0) -> bool:
        """Wait until no connection is open (the client closed or dropped every socket)."""
        end = time.monotonic() + timeout
        with self._idle:
            while self.open_connections:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    # -------------------------------------------------------- serving

    def _accept(self) -> None:
        while not self._stopping.is_set():
            if time.monotonic() - self._started_at > self.lifetime:
                self._stopping.set()
                break
            try:
                sock, _ = self._listener.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            # As the emulator: a reply written in pieces must not wait for the client's delayed ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                self.connections_total += 1
                if self.open_connections >= self.max_connections:
                    sock.close()
                    continue
                self.open_connections += 1
                self._socks.add(sock)
            thread = threading.Thread(target=self._serve, args=(sock,), name="hermes-fault-conn", daemon=True)
            self._threads = [t for t in self._threads if t.is_alive()] + [thread]
            thread.start()

    def _next_fault(self) -> Fault:
        with self._lock:
            item = self._script.pop(0) if self._script else self.fault
        return _resolve(item)

    def _serve(self, sock: socket.socket) -> None:
        conn = _Conn(self, sock)
        try:
            sock.settimeout(0.05)
            buf = b""
            while True:  # one request a connection: every answer says Connection: close
                request, buf = self._read_request(conn, buf)
                if request is None:
                    return
                with self._lock:
                    self.requests.append(request)
                try:
                    self._next_fault().fn(conn, request)
                except _Gone:
                    pass
                return
        except Exception as exc:  # a fault bug shows in server.errors, never kills the server
            self.errors.append(exc)
        finally:
            try:
                sock.close()
            except OSError:
                pass
            with self._idle:
                self._socks.discard(sock)
                self.open_connections -= 1
                self._idle.notify_all()

    def _read_request(self, conn: _Conn, buf: bytes) -> tuple[Optional[FaultRequest], bytes]:
        def more() -> bool:
            nonlocal buf
            while True:
                conn._check()
                try:
                    data = conn.sock.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    return False
                if not data:
                    return False
                buf += data
                return True
        try:
            while b"\r\n\r\n" not in buf:
                if len(buf) > 1 * _MiB or not more():
                    return None, b""
            head, _, buf = buf.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path = lines[0].split(" ")[:2]
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length") or 0)
            while len(buf) < length:
                if not more():
                    return None, b""
        except _Gone:
            return None, b""
        return FaultRequest(method, path, headers, buf[:length]), buf[length:]


def _resolve(item: Union[str, Fault]) -> Fault:
    if isinstance(item, Fault):
        return item
    try:
        return FAULTS[item]
    except KeyError:
        raise KeyError(f"unknown fault {item!r}; known: {', '.join(sorted(FAULTS))}") from None
