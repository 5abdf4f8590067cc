"""The objects that hooks receive: redacted views of one invocation and one HTTP attempt."""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Optional

from .capabilities import Contract

log = logging.getLogger("hermes_sdk")


class Invocation:
    """One capability invocation as hooks see it. ``attributes`` are already redacted."""

    __slots__ = ("capability_id", "endpoint_id", "operation", "action_id", "contract", "attributes",
                 "started_at", "stream_settled", "executed", "_run", "_on_settle")

    def __init__(self, capability_id: str, endpoint_id: str, action_id: str, contract: Contract,
                 run: Callable[["Invocation"], Any], has_key: bool) -> None:
        self.capability_id = capability_id
        self.endpoint_id = endpoint_id
        self.operation = contract.operation
        self.action_id = action_id
        self.contract = contract
        self.started_at = time.time()
        self.stream_settled = False
        self.executed = False  # set once the call was handed to the transport: its outcome may be uncertain
        self.attributes: dict[str, Any] = {
            "capability_id": capability_id, "endpoint_id": endpoint_id, "operation": contract.operation,
            "streaming": contract.streaming, "idempotency": has_key,
        }
        self._run = run
        self._on_settle: list[Callable[[dict[str, Any]], None]] = []

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    @property
    def settle_watched(self) -> bool:
        """Whether a plugin waits for this stream to settle (so its redacted outcome must be built)."""
        return bool(self._on_settle)

    def on_stream_settled(self, callback: Callable[[dict[str, Any]], None]) -> None:
        """Register ``callback(redacted_result)`` for when a stream ends (tracing spans end there)."""
        self._on_settle.append(callback)

    def execute(self) -> Any:
        """Run the call (the built-in innermost hook implementation calls this)."""
        self.executed = True
        return self._run(self)

    def settle(self, redacted: dict[str, Any]) -> None:
        """Mark the stream settled and run the callbacks; a failing callback is logged, never raised."""
        if self.stream_settled:
            return
        self.stream_settled = True
        for callback in self._on_settle:
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


class Attempt:
    """One HTTP attempt as hooks see it."""

    __slots__ = ("invocation", "number", "attributes", "executed", "_send")

    def __init__(self, invocation: Optional[Invocation], number: int, method: str, path_template: str,
                 send: Callable[[], Any]) -> None:
        self.invocation = invocation
        self.number = number
        self.attributes: dict[str, Any] = {"method": method, "path": path_template, "attempt": number}
        self.executed = False
        self._send = send

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def execute(self) -> Any:
        """Send the request (the built-in innermost hook implementation calls this)."""
        self.executed = True
        return self._send()
