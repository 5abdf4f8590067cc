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

SettleCallback = Callable[[dict[str, object]], None]


class _Sealed:
    """Read-only to hooks: attribute assignment raises. The SDK keeps its own state elsewhere and
    never reads a decision back from what a plugin was given; it fills these slots through ``_init``."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only (hooks may add attributes with set_attribute)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def _init(self, **values: object) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)


class CallView(_Sealed):
    """One call, as ``hermes_call``, ``hermes_stream_event`` and ``hermes_call_result`` see it (the
    same object for all three, so a tracer can key on it). Read-only.

    ``attributes`` are redacted facts (names, numbers and flags: never prompts, outputs, ids or
    credentials); ``set_attribute`` adds one; ``headers`` are the request headers, their values
    replaced unless allowlisted (``SHOWN_HEADERS``); ``on_stream_settled(callback)`` tells when a stream
    ended.
    """

    __slots__ = ("_operation", "_capability_id", "_action_id", "_contract", "_attributes", "_started_at",
                 "_executed", "_stream_settled", "_headers", "_settle_callbacks", "__weakref__")
    _operation: str
    _capability_id: str
    _action_id: str
    _contract: Contract
    _attributes: dict[str, Any]
    _started_at: float
    _executed: bool
    _stream_settled: bool
    _headers: Mapping[str, str]
    _settle_callbacks: list[SettleCallback]

    def __init__(self, operation: str, capability_id: str, action_id: str, contract: Contract,
                 attributes: dict[str, object]) -> None:
        self._init(_operation=operation, _capability_id=capability_id, _action_id=action_id, _contract=contract,
                   _attributes=attributes, _started_at=time.time(), _executed=False, _stream_settled=False,
                   _headers={}, _settle_callbacks=[])

    def __repr__(self) -> str:
        return f"CallView(operation={self.operation!r}, capability_id={self.capability_id!r})"

    @property
    def operation(self) -> str:
        """The operation name (``chat``, ``response_get``, ...)."""
        return self._operation

    @property
    def capability_id(self) -> str:
        """``cap:hermes_agent:<endpoint_id>:<operation>``."""
        return self._capability_id

    @property
    def action_id(self) -> str:
        """The AIP action id (an opaque id the SDK or the caller chose)."""
        return self._action_id

    @property
    def contract(self) -> Contract:
        """The operation's published contract (public data)."""
        return self._contract

    @property
    def attributes(self) -> dict[str, Any]:
        """The redacted attributes; hooks add their own with ``set_attribute``."""
        return self._attributes

    @property
    def started_at(self) -> float:
        """When the call was built (epoch seconds)."""
        return self._started_at

    @property
    def executed(self) -> bool:
        """Whether the call was handed to the transport (its outcome may be uncertain from then on).

        Told to hooks, never read back: the SDK decides outcomes from its own record of the call."""
        return self._executed

    @property
    def stream_settled(self) -> bool:
        """Whether the call's stream has ended."""
        return self._stream_settled

    @property
    def endpoint_id(self) -> str:
        """The normalised endpoint id."""
        return str(self.attributes.get("endpoint_id", ""))

    @property
    def headers(self) -> Mapping[str, str]:
        """The request headers, redacted: names kept, values replaced unless allowlisted (filled
        when a plugin other than the built-ins is loaded)."""
        return self._headers

    def set_attribute(self, key: str, value: object) -> None:
        """Add a (non-secret) attribute for later hooks and observers."""
        self.attributes[key] = value

    @property
    def settle_watched(self) -> bool:
        """Whether a plugin waits for this stream to settle (so its redacted outcome must be built)."""
        return bool(self._settle_callbacks)

    def on_stream_settled(self, callback: SettleCallback) -> None:
        """Register ``callback(redacted_result)`` for when a stream ends (tracing spans end there)."""
        self._settle_callbacks.append(callback)

def settle(view: CallView, redacted: dict[str, object]) -> None:
    """The SDK marks the stream settled and runs the view's callbacks once; a failing one is logged."""
    if view._stream_settled:
        return
    object.__setattr__(view, "_stream_settled", True)
    for callback in view._settle_callbacks:
        try:
            callback(redacted)
        except Exception as exc:
            owner, hook = _origin(callback)
            log.warning("hermes_sdk plugin %r failed in %s: %s", owner, f"{hook} (stream-settled callback)",
                        type(exc).__name__)


def mark_executed(view: "CallView") -> None:
    """Tell hooks the call was handed to the transport (one way: the SDK keeps the truth on the call)."""
    object.__setattr__(view, "_executed", True)


def show_headers(view: "CallView", headers: Mapping[str, str]) -> None:
    """Give hooks the (already redacted) request headers."""
    object.__setattr__(view, "_headers", headers)


def _origin(callback: Callable[..., object]) -> tuple[str, str]:
    """Which plugin class and hook registered a callback, read from its qualified name."""
    qualname = str(getattr(callback, "__qualname__", "") or type(callback).__qualname__)
    parts = qualname.rsplit(".<locals>.", 1)[0].split(".")  # "Plugin.hook.<locals>.<lambda>" -> Plugin, hook
    if len(parts) >= 2:
        return parts[-2], parts[-1]
    return (getattr(callback, "__module__", None) or "unknown"), parts[-1]


class ClientView(_Sealed):
    """What the construction hooks (``hermes_idempotency_store``, ``hermes_approval_provider``,
    ``hermes_redaction_filters``) are told about the client being built: its endpoint ids and
    origins, never a key, the store or the plugin manager."""

    __slots__ = ("endpoint_ids", "base_urls", "tenant_ids")
    endpoint_ids: tuple[str, ...]  #: the normalised endpoint ids
    base_urls: tuple[str, ...]  #: each endpoint's origin (``http://host:port``)
    tenant_ids: tuple[Optional[str], ...]  #: each endpoint's owning tenant, or None

    def __init__(self, endpoint_ids: tuple[str, ...], base_urls: tuple[str, ...],
                 tenant_ids: tuple[Optional[str], ...]) -> None:
        self._init(endpoint_ids=endpoint_ids, base_urls=base_urls, tenant_ids=tenant_ids)

    def __repr__(self) -> str:
        return f"ClientView(endpoint_ids={self.endpoint_ids!r})"


#: Header values a tracer may see as they are; every other value is replaced (an allowlist, as
#: azure-core's logging policy does: ids, keys and session values hide in the rest).
SHOWN_HEADERS = frozenset({"accept", "content-type", "content-length", "content-encoding", "transfer-encoding",
                           "retry-after", "user-agent", "x-aip-deadline-unix-ms"})


def redacted_headers(headers: Mapping[str, str], redact: Callable[[str, str], str]) -> dict[str, str]:
    """Header names with values a tracer may read: allowlisted ones scrubbed by ``redact(value, name)``,
    the rest replaced."""
    return {name: redact(value, name) if name.lower() in SHOWN_HEADERS else "[REDACTED]"
            for name, value in headers.items()}


__all__ = ["CallView", "ClientView", "SettleCallback", "mark_executed", "redacted_headers", "settle", "show_headers"]
