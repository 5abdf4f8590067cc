"""HTTP plumbing: a stdlib HTTP/1.1 server that frames bytes the way Hermes does.

It names no route: the table is built from the family modules it is given (``families/``).

The order of checks follows Hermes' middleware chain: Origin (CORS 403), body
size from Content-Length (413, before auth), route resolution (aiohttp's plain
404/405), auth (401), then the endpoint handler (429 before the body is
parsed, then 400 validation).
"""

from __future__ import annotations

import hmac
import json
import socket
import sys
import threading
from collections.abc import Sequence
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import ModuleType

from .exchange import DropConnection, Exchange
from .model import Cancelled
from .routes import Router
from .sse import SSEWriter
from .state import EmulatorState, Fault, SeenRequest
from .wire import (
    JSON_CONTENT_TYPE,
    MAX_REQUEST_BYTES,
    SECURITY_HEADERS,
    SSE_HEADERS,
    TEXT_CONTENT_TYPE,
    Headers,
    auth_error,
    dumps,
    openai_error,
)

SERVER_HEADER = f"Python/{sys.version_info[0]}.{sys.version_info[1]} hermes-sdk-emulator"


class HermesHandler(BaseHTTPRequestHandler):
    """The request handler: every method goes through Hermes' middleware order (see the module)."""

    protocol_version = "HTTP/1.1"
    # TCP_NODELAY: headers and body leave in separate writes; with Nagle on, the body waits for the
    # client's delayed ACK (about 40 ms) on every keep-alive request. The real Hermes answers in ~3 ms.
    disable_nagle_algorithm = True
    server: HermesHTTPServer

    def send_header(self, keyword: str, value: str) -> None:
        """As aiohttp does, a header value leaves as UTF-8 (http.server would refuse non-Latin-1 text)."""
        super().send_header(keyword, value.encode("utf-8", "surrogateescape").decode("latin-1"))

    # Quiet by default: the emulator lives inside test runs.
    def log_message(self, format: str, *args: object) -> None:
        """Log a request line only when the emulator is verbose."""
        if self.server.verbose:
            super().log_message(format, *args)

    def do_GET(self) -> None:
        """Dispatch a GET."""
        self._dispatch()

    def do_POST(self) -> None:
        """Dispatch a POST."""
        self._dispatch()

    def do_DELETE(self) -> None:
        """Dispatch a DELETE."""
        self._dispatch()

    def do_PUT(self) -> None:
        """Dispatch a PUT (no route accepts one)."""
        self._dispatch()

    def do_PATCH(self) -> None:
        """Dispatch a PATCH (no route accepts one)."""
        self._dispatch()

    def do_HEAD(self) -> None:
        """Dispatch a HEAD."""
        self._dispatch()

    def do_OPTIONS(self) -> None:
        """Dispatch an OPTIONS (no route accepts one)."""
        self._dispatch()

    # -- dispatch ---------------------------------------------------------------
    def _dispatch(self) -> None:
        state = self.server.state
        path = _strip_profile(self.path.split("?", 1)[0])
        length_header = self.headers.get("Content-Length")
        if self.headers.get("Origin") is not None:
            self._read_body(length_header)
            return self._send_raw(403, b"", None, [])
        if length_header is not None:
            try:
                length = int(length_header)
                if length < 0:
                    raise ValueError(length_header)
            except ValueError:
                self.close_connection = True
                return self.send_body(
                    400,
                    dumps(
                        openai_error(
                            "Invalid Content-Length header.",
                            code="invalid_content_length",
                        )
                    ),
                    JSON_CONTENT_TYPE,
                    [],
                    security=False,
                )
            if length > MAX_REQUEST_BYTES:
                state.record(SeenRequest(self.command, path, _headers(self), None))
                self.send_body(
                    413,
                    dumps(openai_error("Request body too large.", code="body_too_large")),
                    JSON_CONTENT_TYPE,
                    [],
                    security=False,
                )
                self._drain(length)
                self.close_connection = True
                return None
        raw_body, oversize = self._read_body(length_header)
        parsed: object = None
        if raw_body and not oversize:
            try:
                parsed = json.loads(raw_body.decode("utf-8"))
            except ValueError:
                parsed = None
        state.record(
            SeenRequest(
                self.command,
                path,
                _headers(self),
                parsed,
                b"" if oversize else raw_body,
            )
        )
        route = self.server.router.resolve(self.command, path)
        if not isinstance(route, int) and route[0].since and not getattr(state.behaviour, route[0].since):
            route = 404
        if isinstance(route, int):
            return self._plain_error(route, path)
        found, params = route
        if found.auth and not self._authorised():
            body = auth_error(state.behaviour.gateway_auth_401)
            return self.send_body(401, dumps(body), JSON_CONTENT_TYPE, [], security=True)
        fault = state.take_fault(self.command, path)
        if fault is not None and fault.mode == "refuse":  # before the route runs: nothing applied
            extra = [("Retry-After", fault.retry_after)] if fault.retry_after is not None else []
            body = {"error": {"message": "Service unavailable", "type": "server_error", "code": None}}
            return self.send_body(fault.status, dumps(body), JSON_CONTENT_TYPE, extra, security=True)
        if fault is not None and fault.mode == "before_response" and not fault.after_execution:
            self._abort()
            return None
        ex = Exchange(self, state, path, raw_body, oversize, fault)
        try:
            found.handler(ex, *params)
        except DropConnection:
            self._abort()

    def _authorised(self) -> bool:
        header = self.headers.get("Authorization") or ""
        if not header.startswith("Bearer "):
            return False
        token = header[len("Bearer ") :].strip()
        return hmac.compare_digest(token.encode("utf-8"), self.server.state.settings.api_key.encode("utf-8"))

    def _plain_error(self, status: int, path: str) -> None:
        if status == 404:
            return self._send_raw(404, b"404: Not Found", TEXT_CONTENT_TYPE, [])
        allow = self.server.router.allowed(path)
        return self._send_raw(405, b"405: Method Not Allowed", TEXT_CONTENT_TYPE, [("Allow", allow)])

    # -- body reading -------------------------------------------------------------
    def _read_body(self, length_header: str | None) -> tuple[bytes, bool]:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            return self._read_chunked()
        if length_header is None:
            return b"", False
        try:
            length = int(length_header)
        except ValueError:
            return b"", False
        return self.rfile.read(length) if length > 0 else b"", False

    def _read_chunked(self) -> tuple[bytes, bool]:
        """Decode a chunked body; past the limit keep draining but flag oversize."""
        parts: list[bytes] = []
        total = 0
        while True:
            line = self.rfile.readline(65537)
            if not line:
                break
            size = int(line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            data = self.rfile.read(size)
            self.rfile.readline(3)
            total += len(data)
            if total <= MAX_REQUEST_BYTES:
                parts.append(data)
        return b"".join(parts), total > MAX_REQUEST_BYTES

    def _drain(self, length: int) -> None:
        """Swallow an unread oversize body so the client can read our 413."""
        try:
            self.connection.settimeout(2.0)
            remaining = length
            while remaining > 0:
                chunk = self.rfile.read(min(remaining, 1 << 20))
                if not chunk:
                    break
                remaining -= len(chunk)
        except OSError:
            pass

    # -- writing --------------------------------------------------------------------
    def _status_line(self, status: int) -> None:
        # aiohttp's reason phrases; http.server's differ by Python version (3.13 says "Content Too Large").
        self.send_response_only(status, _REASONS.get(status))

    def _send_raw(self, status: int, body: bytes, content_type: str | None, headers: Headers) -> None:
        self._status_line(status)
        if content_type is not None:
            self.send_header("Content-Type", content_type)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self._trailing_headers()
        self.end_headers()
        self._write_body(body)

    def _write_body(self, body: bytes) -> None:
        """The body, except to a HEAD: its reply carries the GET's headers and no body (RFC 9110
        9.3.2); a body there would be read as the start of the next reply on the connection."""
        if self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def send_body(
        self,
        status: int,
        body: bytes,
        content_type: str,
        headers: Headers,
        *,
        security: bool,
        fault: Fault | None = None,
    ) -> None:
        """Send a response with headers in Hermes' order: handler headers, type, security, length."""
        if fault is not None and fault.mode == "before_response":
            raise DropConnection()
        self._status_line(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Type", content_type)
        if security:
            for key, value in SECURITY_HEADERS:
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self._trailing_headers()
        self.end_headers()
        if fault is not None and fault.mode in ("mid_body", "mid_stream"):
            self.wfile.write(body[: max(1, len(body) // 2)])
            raise DropConnection()
        self._write_body(body)

    def send_crash(self) -> None:
        body = b"500 Internal Server Error\n\nServer got itself in trouble"
        self._status_line(500)
        self.send_header("Content-Type", TEXT_CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self._trailing_headers()
        self.send_header("Connection", "close")
        self.end_headers()
        self._write_body(body)
        self.close_connection = True

    def open_sse(self, headers: Headers, fault: Fault | None, check_alive: bool = False) -> SSEWriter:
        """Send the SSE response headers and return a writer, or a discarding one for a ``before_response`` fault."""
        framing = self.server.state.settings.framing
        if fault is not None and fault.mode == "before_response":
            # The agent still runs; the client just never hears about it.
            return SSEWriter(_NullFile(), self.connection, framing, discard=True)
        self._status_line(200)
        for key, value in SSE_HEADERS:
            self.send_header(key, value)
        for key, value in headers:
            self.send_header(key, value)
        if framing == "close":
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Transfer-Encoding", "chunked")
        self._trailing_headers()
        self.end_headers()
        self.wfile.flush()
        drop_after: int | None = None
        if fault is not None:
            drop_after = 0 if fault.mode == "mid_body" else fault.after_events
        return SSEWriter(
            self.wfile, self.connection, framing, drop_after_events=drop_after, check_alive=check_alive
        )

    def _trailing_headers(self) -> None:
        self.send_header("Date", formatdate(usegmt=True))
        self.send_header("Server", SERVER_HEADER)

    def _abort(self) -> None:
        self.close_connection = True
        try:
            self.wfile.flush()
        except OSError:
            pass
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class _NullFile:
    def write(self, data: bytes) -> int:
        return len(data)

    def flush(self) -> None:
        return None


_REASONS = {413: "Request Entity Too Large", 422: "Unprocessable Entity"}


class HermesHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that tracks its connections, so ``stop()`` can close idle keep-alive ones."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # socketserver's default of 5 resets bursts of concurrent clients

    def __init__(self, address: tuple[str, int], state: EmulatorState, families: Sequence[ModuleType],
                 verbose: bool = False) -> None:
        self.state = state
        self.router = Router(families)  # the families' own ROUTES: this module names no route
        self.verbose = verbose
        self._open: dict[int, socket.socket] = {}
        self._conn_threads: list[threading.Thread] = []
        self._track_lock = threading.Lock()
        super().__init__(address, HermesHandler)

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: tuple[str, int]
    ) -> None:
        """Count and track the connection, then serve it on its own daemon thread."""
        self.state.count_connection()
        with self._track_lock:
            if isinstance(request, socket.socket):  # always, for TCP (the tuple is UDP's)
                self._open[id(request)] = request
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            daemon=True,
            name="hermes-emulator-conn",
        )
        with self._track_lock:
            self._conn_threads = [t for t in self._conn_threads if t.is_alive()]
            self._conn_threads.append(thread)
        thread.start()

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: tuple[str, int]
    ) -> None:
        # A run interrupted by stop() or a client that went away is expected, not an emulator bug.
        """Stay quiet about runs interrupted by ``stop()`` and clients that went away; report the rest."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (Cancelled, ConnectionError)):
            return
        super().handle_error(request, client_address)

    def shutdown_request(self, request: socket.socket | tuple[bytes, socket.socket]) -> None:
        """Stop tracking the connection and close it."""
        with self._track_lock:
            self._open.pop(id(request), None)
        super().shutdown_request(request)

    def close_all(self, timeout: float = 5.0) -> None:
        """Close idle keep-alive sockets and join connection threads."""
        with self._track_lock:
            sockets = list(self._open.values())
            threads = list(self._conn_threads)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for thread in threads:
            thread.join(timeout)


def _strip_profile(path: str) -> str:
    # /p/<profile>/... mirrors every route; the prefix is ignored without multiplexing.
    if path.startswith("/p/"):
        rest = path[3:]
        slash = rest.find("/")
        if slash > 0:
            return rest[slash:]
    return path


def _headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    return {key: str(value) for key, value in handler.headers.items()}
