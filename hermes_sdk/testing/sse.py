"""Server-sent events: framing, flushing, keepalives and the agent pump.

Every event is flushed on its own (chunked by default like aiohttp, or
close-delimited) so clients can prove they see the first event while the
server still holds the rest.
"""

from __future__ import annotations

import queue
import select
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, Protocol

from .model import AgentResult, Cancelled
from .wire import dumps


class _Sink(Protocol):
    def write(self, data: bytes) -> int: ...

    def flush(self) -> None: ...


class ClientGone(Exception):
    """Writing to the client failed, or a fault switch cut the connection."""


def data_event(payload: dict | str) -> bytes:  # type: ignore[type-arg]
    """A bare ``data:`` event (chat completions; no ``event:`` line)."""
    body = payload if isinstance(payload, str) else dumps(payload).decode("utf-8")
    return f"data: {body}\n\n".encode()


def named_event(event_type: str, payload: dict) -> bytes:  # type: ignore[type-arg]
    """An ``event:`` + ``data:`` pair (Responses streaming)."""
    return f"event: {event_type}\ndata: {dumps(payload).decode('utf-8')}\n\n".encode()


KEEPALIVE = b": keepalive\n\n"


class SSEWriter:
    """An SSE body writer with the chosen framing, which can cut the connection on purpose."""

    def __init__(
        self,
        wfile: BinaryIO | _Sink,
        sock: socket.socket,
        framing: str,
        drop_after_events: int | None = None,
        discard: bool = False,
        check_alive: bool = False,
    ) -> None:
        self._check_alive = check_alive
        self._wfile = wfile
        self._discard = discard
        self._sock = sock
        self.chunked = framing != "close"
        self._drop_after = drop_after_events
        self.events_written = 0
        self.last_write = time.monotonic()

    def event(self, raw: bytes) -> None:
        """Write one event, flushed on its own; a fault armed for this point cuts the connection instead."""
        if self._drop_after is not None and self.events_written >= self._drop_after:
            self.cut()
        self._write(raw)
        self.events_written += 1

    def keepalive(self) -> None:
        """Write a ``: keepalive`` comment."""
        self._write(KEEPALIVE)

    def comment(self, text: str) -> None:
        self._write(f": {text}\n\n".encode())

    def client_gone(self) -> bool:
        """True once the peer closed its end (aiohttp's transport knows this before a write)."""
        try:
            readable, _, _ = select.select([self._sock], [], [], 0)
            if not readable:
                return False
            return self._sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def finish(self) -> None:
        """End the body (the terminating chunk when chunked); a discarding writer hangs up instead."""
        if self._discard:
            self.cut()  # the "drop before response" fault: the run is over, hang up
        if self.chunked:
            self._raw(b"0\r\n\r\n")

    def cut(self) -> None:
        """Abort mid-stream: no terminating chunk, just a closed socket."""
        try:
            self._wfile.flush()
        except OSError:
            pass
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        raise ClientGone("connection dropped by fault switch")

    def _write(self, data: bytes) -> None:
        if self.chunked:
            self._raw(b"%x\r\n%s\r\n" % (len(data), data))
        else:
            self._raw(data)
        self.last_write = time.monotonic()

    def _raw(self, data: bytes) -> None:
        if self._check_alive and not self._discard and self.client_gone():
            raise ClientGone("client closed the connection")
        try:
            self._wfile.write(data)
            self._wfile.flush()
        except (OSError, ValueError) as exc:
            raise ClientGone(str(exc)) from exc


# ("delta", str) | ("done", AgentResult) | ("error", BaseException) | (other, payload) posted by hooks
Item = tuple[str, Any]


class AgentPump:
    """The agent, run on its own thread so the writer can send keepalives meanwhile."""

    def __init__(
        self,
        run: Callable[[Callable[[str], None], threading.Event], AgentResult],
        cancel: threading.Event,
        start: bool = True,
    ) -> None:
        self._queue: queue.Queue[Item] = queue.Queue()
        self.cancel = cancel
        self._thread = threading.Thread(target=self._target, args=(run,), daemon=True, name="hermes-emulator-agent")
        if start:
            self._thread.start()

    def start(self) -> None:
        self._thread.start()

    def post(self, kind: str, value: Any) -> None:
        """Hand a side event (e.g. tool progress) to the writer, in order with the deltas."""
        self._queue.put((kind, value))

    def _target(self, run: Callable[[Callable[[str], None], threading.Event], AgentResult]) -> None:
        try:
            result = run(lambda piece: self._queue.put(("delta", piece)), self.cancel)
        except BaseException as exc:  # noqa: BLE001 - handed to the writer thread
            self._queue.put(("error", exc))
        else:
            self._queue.put(("done", result))

    def items(self, writer: SSEWriter, keepalive_seconds: float, batch_seconds: float = 0.0) -> Iterator[Item]:
        """Yield pump items, writing ``: keepalive`` whenever the writer idles."""
        pending = ""
        deadline: float | None = None
        while True:
            now = time.monotonic()
            timeout = max(0.0, writer.last_write + keepalive_seconds - now)
            if deadline is not None:
                timeout = min(timeout, max(0.0, deadline - now))
            try:
                kind, value = self._queue.get(timeout=timeout)
            except queue.Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    yield ("delta", pending)
                    pending, deadline = "", None
                else:
                    writer.keepalive()
                continue
            if kind == "delta" and batch_seconds > 0:
                if deadline is None:
                    deadline = time.monotonic() + batch_seconds
                pending += value
                continue
            if pending:
                yield ("delta", pending)
                pending, deadline = "", None
            yield (kind, value)
            if kind in ("done", "error"):
                return

    def join(self, timeout: float = 5.0) -> None:
        """Wait up to ``timeout`` seconds for the agent thread to end."""
        if self._thread.ident is not None:
            self._thread.join(timeout)


__all__ = [
    "AgentPump",
    "Cancelled",
    "ClientGone",
    "SSEWriter",
    "data_event",
    "named_event",
]
