"""Helpers for the core-client suite (imported by conftest and the tests).

Everything talks to real sockets on loopback: the Hermes emulator for wire-compatible behaviour,
or ``RawServer`` (below) when a test needs exact control over status lines, framing, delays and
byte counts.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import Any, Callable, Optional

from hermes_sdk import ApprovalRequest, HermesClient
from hermes_sdk.testing import HermesEmulator

AGENT_PATHS = ("/v1/chat/completions", "/v1/responses")

# The deadline's own tests: a deadline is a wall-clock promise, so these files (and only these:
# test_suite_rules.py checks it) compare the wall clock with a bound. Some hold a call to a
# sub-second deadline while pushing tens of MiB through it, or measure memory over thousands of
# calls; all run alone (conftest marks them `serial`; tox runs the rest with pytest-xdist first,
# then `-m serial` on its own), so no sibling worker adds to what the clock sees.
DEADLINE_FILES = {"test_deadlines.py", "test_faults.py", "test_memory.py", "test_decompression.py"}


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def approve_all(request: ApprovalRequest) -> Any:
    return request.approve(approver="test-approver", policy_decision_id="pd-1", reason="test cleanup")


def agent_requests(emu: HermesEmulator) -> list[Any]:
    return [r for r in emu.requests_seen if r.path in AGENT_PATHS]


class RawRequest:
    def __init__(self, request_line: str, headers: dict[str, str], body: bytes) -> None:
        self.request_line = request_line
        self.headers = headers
        self.body = body

    @property
    def method(self) -> str:
        return self.request_line.split(" ")[0]

    @property
    def target(self) -> str:
        return self.request_line.split(" ")[1]

    def header(self, name: str) -> Optional[str]:
        for k, v in self.headers.items():
            if k.lower() == name.lower():
                return v
        return None


Handler = Callable[[socket.socket, RawRequest, "RawServer"], None]


class RawServer:
    """A tiny HTTP/1.1 server: records each raw request, then lets ``handler`` write raw bytes.

    Each connection serves requests until the handler closes it or the client goes away.
    ``handler(sock, request, server)``; return normally to keep the connection for another request.
    """

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[RawRequest] = []
        self.connections = 0
        self.disconnects = 0
        self.events: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._stop = False
        self._threads: list[threading.Thread] = []
        self._conns: list[socket.socket] = []
        self._accept = threading.Thread(target=self._serve, daemon=True)
        self._accept.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def event(self, name: str) -> threading.Event:
        with self._lock:
            return self.events.setdefault(name, threading.Event())

    def _serve(self) -> None:
        while not self._stop:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._conns.append(conn)
            t = threading.Thread(target=self._conn, args=(conn,), daemon=True)
            t.start()  # before it is listed: close() on another thread joins only started threads
            self._threads.append(t)

    def _conn(self, conn: socket.socket) -> None:
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip()] = v.strip()
                length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
                while len(buf) < length:
                    data = conn.recv(max(65536, length - len(buf)))
                    if not data:
                        return
                    buf += data
                body, buf = buf[:length], buf[length:]
                request = RawRequest(lines[0], headers, body)
                with self._lock:
                    self.requests.append(request)
                self.handler(conn, request, self)
                if conn.fileno() < 0:
                    return
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def close(self) -> None:
        self._stop = True
        self._sock.close()
        for c in list(self._conns):
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(2)


class SchedulerLag:
    """How late this machine wakes a sleeping thread, measured while the block runs: a thread sleeps
    5 ms at a time and keeps its worst overshoot. On an idle machine it is about 0.1 ms; on a busy
    one it is what the scheduler, not the code under test, adds to any wall-clock bound."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        while not self._stop.is_set():
            began = time.monotonic()
            time.sleep(0.005)
            self.worst = max(self.worst, time.monotonic() - began - 0.005)

    def __enter__(self) -> "SchedulerLag":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> bool:
    """Poll ``predicate`` until it holds; ``timeout`` is a guard against a hang, never a bound a test
    asserts (tests/core/test_suite_rules.py refuses one under 10 s: a busy machine reaches it)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def json_response(status: int, body: bytes, extra: str = "", reason: str = "X") -> bytes:
    return (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            f"{extra}\r\n").encode() + body


def sse_head(chunked: bool = True, extra: str = "") -> bytes:
    framing = "Transfer-Encoding: chunked\r\n" if chunked else "Connection: close\r\n"
    return f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n{framing}{extra}\r\n".encode()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def raw_client(server: RawServer, **kwargs: Any) -> HermesClient:
    kwargs.setdefault("api_key", "raw-key")
    kwargs.setdefault("load_entrypoints", False)
    return HermesClient(server.base_url, **kwargs)


def uniq(prefix: str) -> str:
    """A name no other test (or earlier run against the same emulator) has used."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
