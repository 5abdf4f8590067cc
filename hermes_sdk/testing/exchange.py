"""One request as the family handlers see it, and the gates Hermes applies before any agent work.

The server (``server.py``) builds an :class:`Exchange` per request and hands it to a family's
route handler; families import this module, never the server, so no family closes a cycle.
"""

from __future__ import annotations

import json
from email.message import Message
from typing import TYPE_CHECKING, Protocol

from .wire import JSON_CONTENT_TYPE, Headers, dumps, openai_error

if TYPE_CHECKING:
    from .sse import SSEWriter
    from .state import EmulatorState, Fault, RunSlot


class DropConnection(Exception):
    """Raised to abandon a request without (finishing) a response."""


class Wire(Protocol):
    """What an :class:`Exchange` needs of the HTTP handler that received the request."""

    command: str
    path: str
    client_address: tuple[str, int]
    headers: Message

    def send_body(self, status: int, body: bytes, content_type: str, headers: Headers, *, security: bool,
                  fault: Fault | None = None) -> None: ...

    def open_sse(self, headers: Headers, fault: Fault | None, check_alive: bool = False) -> SSEWriter: ...

    def send_crash(self) -> None: ...


class Exchange:
    """One request/response as seen by the endpoint handlers."""

    def __init__(
        self,
        handler: Wire,
        state: EmulatorState,
        path: str,
        raw_body: bytes,
        oversize: bool,
        fault: Fault | None,
    ) -> None:
        self._handler = handler
        self.state = state
        self.method = handler.command
        self.path = path
        self.query = handler.path.split("?", 1)[1] if "?" in handler.path else ""
        self.client_ip = str(handler.client_address[0])
        self.headers = handler.headers
        self.raw_body = raw_body
        self.oversize = oversize
        self.fault = fault

    def header(self, name: str) -> str | None:
        """A request header by name (case-insensitive), or None."""
        value = self.headers.get(name)
        return None if value is None else str(value)

    def json_object(self) -> dict[str, object] | None:
        """The body as a JSON object, or None (a chunked oversize body ends here too)."""
        if self.oversize:
            return None
        try:
            body = json.loads(self.raw_body.decode("utf-8"))
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    def send_json(self, status: int, payload: object, headers: Headers | None = None) -> None:
        """Send a JSON response with Hermes' security headers, unless an armed fault cuts it."""
        self._handler.send_body(
            status,
            dumps(payload),
            JSON_CONTENT_TYPE,
            headers or [],
            security=True,
            fault=self.fault,
        )

    def open_sse(self, headers: Headers, check_alive: bool = False) -> SSEWriter:
        return self._handler.open_sse(headers, self.fault, check_alive)

    def send_crash(self) -> None:
        """aiohttp's answer to an unhandled exception: text/plain 500, connection closed."""
        self._handler.send_crash()


# -- the gates every agent route passes (chat, responses, runs, session chat) ------------------
def draining(ex: Exchange) -> None:
    """Answer 503 ``gateway_draining`` with ``Retry-After: 1`` (source only, L1047-1058)."""
    ex.send_json(
        503,
        openai_error("Gateway is draining; retry shortly", err_type="server_error", code="gateway_draining"),
        [("Retry-After", "1")],
    )


def rate_limited(ex: Exchange) -> None:
    """Answer 429 ``rate_limit_exceeded`` with ``Retry-After: 1``, as Hermes does at its run cap."""
    cap = ex.state.settings.max_concurrent_runs
    ex.send_json(
        429,
        openai_error(
            f"Too many concurrent runs (max {cap})",
            err_type="rate_limit_error",
            code="rate_limit_exceeded",
        ),
        [("Retry-After", "1")],
    )


def admitted(ex: Exchange) -> RunSlot | None:
    """Hermes' gates after auth, before the body is parsed (draining 503, then the cap 429).

    The run slot to release when the turn ends, or None when the request was refused (and answered)."""
    if ex.state.settings.draining:
        draining(ex)
        return None
    slot = ex.state.try_acquire_run()
    if slot is None:
        rate_limited(ex)
    return slot


__all__ = ["DropConnection", "Exchange", "Wire", "admitted", "draining", "rate_limited"]
