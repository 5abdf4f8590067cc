"""CallView: what a plugin hook is given about one call. No credential, no raw input, no runtime.

The internal call (``hermes_sdk._core.call.Call``) carries the endpoint's key, the caller's input and the
client's store; hooks get this view instead, so what ``hookspecs`` promises is what a hook can reach.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any, Callable, Optional

from .capabilities import Contract

log = logging.getLogger("hermes_sdk")

SettleCallback = Callable[[dict[str, Any]], None]


class CallView:
    """One capability invocation, as ``hermes_invocation``, ``hermes_stream_event`` and
    ``hermes_action_result`` see it (the same object for all three, so a tracer can key on it).

    ``attributes`` are redacted facts (names, numbers and flags: never prompts, outputs, ids or
    credentials); ``set_attribute`` adds one; ``headers`` are the request headers, their values
    replaced unless allowlisted (``SHOWN_HEADERS``); ``on_stream_settled(callback)`` tells when a stream
    ended.
    """

    __slots__ = ("operation", "capability_id", "action_id", "contract", "attributes", "started_at",
                 "executed", "stream_settled", "_headers", "_settle_callbacks", "__weakref__")

    def __init__(self, operation: str, capability_id: str, action_id: str, contract: Contract,
                 attributes: dict[str, Any]) -> None:
        self.operation = operation  #: the operation name (``chat``, ``response_get``, ...)
        self.capability_id = capability_id  #: ``cap:hermes_agent:<endpoint_id>:<operation>``
        self.action_id = action_id  #: the AIP action id (an opaque id the SDK or the caller chose)
        self.contract = contract  #: the operation's published contract (public data)
        self.attributes = attributes
        self.started_at = time.time()
        #: Whether the call was handed to the transport (its outcome may be uncertain from then on).
        self.executed = False
        self.stream_settled = False
        self._headers: Mapping[str, str] = {}
        self._settle_callbacks: list[SettleCallback] = []

    def __repr__(self) -> str:
        return f"CallView(operation={self.operation!r}, capability_id={self.capability_id!r})"

    @property
    def endpoint_id(self) -> str:
        """The normalised endpoint id."""
        return str(self.attributes.get("endpoint_id", ""))

    @property
    def headers(self) -> Mapping[str, str]:
        """The request headers, redacted: names kept, values replaced unless allowlisted (filled
        when a plugin other than the built-ins is loaded)."""
        return self._headers

    def set_attribute(self, key: str, value: Any) -> None:
        """Add a (non-secret) attribute for later hooks and observers."""
        self.attributes[key] = value

    @property
    def settle_watched(self) -> bool:
        """Whether a plugin waits for this stream to settle (so its redacted outcome must be built)."""
        return bool(self._settle_callbacks)

    def on_stream_settled(self, callback: SettleCallback) -> None:
        """Register ``callback(redacted_result)`` for when a stream ends (tracing spans end there)."""
        self._settle_callbacks.append(callback)

    def settle(self, redacted: dict[str, Any]) -> None:
        """Mark the stream settled and run the callbacks once; a failing one is logged, never raised."""
        if self.stream_settled:
            return
        self.stream_settled = True
        for callback in self._settle_callbacks:
            try:
                callback(redacted)
            except Exception as exc:
                owner, hook = _origin(callback)
                log.warning("hermes_sdk plugin %r failed in %s: %s", owner, f"{hook} (stream-settled callback)",
                            type(exc).__name__)


def _origin(callback: Callable[..., Any]) -> tuple[str, str]:
    """Which plugin class and hook registered a callback, read from its qualified name."""
    qualname = str(getattr(callback, "__qualname__", "") or type(callback).__qualname__)
    parts = qualname.rsplit(".<locals>.", 1)[0].split(".")  # "Plugin.hook.<locals>.<lambda>" -> Plugin, hook
    if len(parts) >= 2:
        return parts[-2], parts[-1]
    return (getattr(callback, "__module__", None) or "unknown"), parts[-1]


class ClientView:
    """What the construction hooks (``hermes_idempotency_store``, ``hermes_approval_provider``,
    ``hermes_redaction_filters``) are told about the client being built: its endpoint ids and
    origins, never a key, the store or the plugin manager."""

    __slots__ = ("endpoint_ids", "base_urls", "tenant_ids")

    def __init__(self, endpoint_ids: tuple[str, ...], base_urls: tuple[str, ...],
                 tenant_ids: tuple[Optional[str], ...]) -> None:
        self.endpoint_ids = endpoint_ids  #: the normalised endpoint ids
        self.base_urls = base_urls  #: each endpoint's origin (``http://host:port``)
        self.tenant_ids = tenant_ids  #: each endpoint's owning tenant, or None

    def __repr__(self) -> str:
        return f"ClientView(endpoint_ids={self.endpoint_ids!r})"


#: Header values a tracer may see as they are; every other value is replaced (an allowlist, as
#: azure-core's logging policy does: ids, keys and session values hide in the rest).
SHOWN_HEADERS = frozenset({"accept", "content-type", "content-length", "user-agent", "x-aip-deadline-unix-ms"})


def redacted_headers(headers: Mapping[str, str], redact: Callable[[str, str], str]) -> dict[str, str]:
    """Header names with values a tracer may read: allowlisted ones scrubbed by ``redact(value, name)``,
    the rest replaced."""
    return {name: redact(value, name) if name.lower() in SHOWN_HEADERS else "[REDACTED]"
            for name, value in headers.items()}


__all__ = ["CallView", "ClientView", "SettleCallback", "redacted_headers"]
