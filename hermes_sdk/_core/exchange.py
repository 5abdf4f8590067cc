"""HttpReply and Attempt: one HTTP exchange as hooks see it, in the SDK's own types."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Optional

import attrs

if TYPE_CHECKING:
    from .view import CallView


@attrs.frozen
class HttpReply:
    """A 2xx reply: status, headers and the whole body; ``body`` is None for an opened SSE stream.

    ``stream`` is the transport's open body for a streaming reply (opaque to hooks).
    """

    status: int
    headers: Mapping[str, str]
    body: Optional[bytes] = None
    stream: Any = attrs.field(default=None, repr=False, eq=False)

    @property
    def status_code(self) -> int:
        """``status``, under the name requests uses."""
        return self.status


class Attempt:
    """One HTTP attempt as the ``hermes_http_attempt`` hook sees it.

    ``attributes`` hold ``method``, ``path`` (the URL template, never an id) and ``attempt`` (1-based);
    ``invocation`` is the :class:`~hermes_sdk.plugin.CallView` of the call it belongs to.
    """

    __slots__ = ("invocation", "number", "attributes", "executed", "__weakref__")

    def __init__(self, invocation: Optional["CallView"], number: int, method: str, path_template: str) -> None:
        self.invocation = invocation
        self.number = number
        self.attributes: dict[str, Any] = {"method": method, "path": path_template, "attempt": number}
        self.executed = False

    @property
    def call(self) -> Optional["CallView"]:
        """``invocation``, under its older name."""
        return self.invocation

    def set_attribute(self, key: str, value: Any) -> None:
        """Add a (non-secret) attribute."""
        self.attributes[key] = value
