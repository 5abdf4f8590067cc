"""HttpReply and Attempt: one HTTP exchange as hooks see it, in the SDK's own types.

Hooks get sealed views: a reply's status and allowlisted headers, never its body, the transport's
response or anything that leads back to the request (which carries the API key). The SDK keeps
what it received in :class:`Received`, which no hook is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable, Optional

import attrs

from ._deprecation import deprecated
from .view import _Sealed, redacted_headers

if TYPE_CHECKING:
    import requests

    from .view import CallView


@attrs.frozen
class HttpReply:
    """A 2xx reply as the ``hermes_http_attempt`` hook sees it: ``status``, ``headers`` (names kept,
    values replaced unless allowlisted) and whether it opened a stream. No body, no raw response."""

    status: int
    headers: Mapping[str, str]
    streaming: bool = False

    @property
    def status_code(self) -> int:
        """``status``, under the name requests uses."""
        return self.status


@attrs.frozen
class Received:
    """What the transport handed back (internal): the status, headers, whole body or the open response."""

    status: int
    headers: Mapping[str, str]
    body: Optional[bytes] = None
    stream: Optional["requests.Response"] = attrs.field(default=None, repr=False, eq=False)  #: a stream's, unread

    def view(self, redact: Callable[[str, str], str]) -> HttpReply:
        """The sealed reply hooks are given."""
        return HttpReply(self.status, redacted_headers(self.headers, redact), streaming=self.stream is not None)


class Attempt(_Sealed):
    """One HTTP attempt as the ``hermes_http_attempt`` hook sees it. Read-only.

    ``attributes`` hold ``method``, ``path`` (the URL template, never an id) and ``attempt`` (1-based);
    ``call`` is the :class:`~hermes_sdk.plugin.CallView` of the call it belongs to.
    """

    __slots__ = ("_call", "_number", "_attributes", "_executed", "__weakref__")
    _call: Optional["CallView"]
    _number: int
    _attributes: dict[str, object]
    _executed: bool

    def __init__(self, call: Optional["CallView"], number: int, method: str, path_template: str) -> None:
        self._init(_call=call, _number=number, _executed=False,
                   _attributes={"method": method, "path": path_template, "attempt": number})

    def __repr__(self) -> str:
        return f"Attempt(number={self._number!r}, attributes={self._attributes!r})"

    @property
    def call(self) -> Optional["CallView"]:
        """The view of the call this attempt belongs to."""
        return self._call

    @property
    def invocation(self) -> Optional["CallView"]:
        """``call``, under its former name (deprecated)."""
        deprecated("Attempt.invocation is deprecated: use Attempt.call")
        return self._call

    @property
    def number(self) -> int:
        """The attempt's number (1-based)."""
        return self._number

    @property
    def attributes(self) -> dict[str, object]:
        """``method``, ``path`` (template), ``attempt`` and what hooks added."""
        return self._attributes

    @property
    def executed(self) -> bool:
        """Whether this attempt was handed to the transport (told to hooks, never read back)."""
        return self._executed

    def set_attribute(self, key: str, value: object) -> None:
        """Add a (non-secret) attribute."""
        self._attributes[key] = value


def mark_sent(attempt: Attempt) -> None:
    """Tell hooks the attempt was handed to the transport (one way; the SDK's record is its own)."""
    object.__setattr__(attempt, "_executed", True)


__all__ = ["Attempt", "HttpReply", "Received", "mark_sent"]
