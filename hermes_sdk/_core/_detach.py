"""Cut the SDK's own frames out of an error before it leaves a boundary (a hook step, the public call).

The frames of the call path hold the credential: the Call (its ``Authorization`` header and its
Endpoint), requests' PreparedRequest, urllib3's and http.client's ``headers`` locals. An error
tracker (Sentry and others) records every frame's locals of a traceback and of each exception
chained to it, and a ``hermes_call`` wrapper can read them too. So an error that leaves the innermost
hook step or a public method keeps only the frames of other code (plugins, pluggy, the caller): the
frames of ``hermes_sdk._core``, requests, urllib3 and the standard library's HTTP and socket modules
are dropped from its traceback and from the tracebacks of its ``__cause__``/``__context__`` chain, a
suppressed ``__context__`` is dropped, and a chained requests/urllib3 exception (which holds the
PreparedRequest) is replaced by its redacted stand-in.
"""

from __future__ import annotations

from types import TracebackType
from typing import Optional, TypeVar

E = TypeVar("E", bound=BaseException)

#: Modules whose frames may hold the key (prefixes of ``__name__``).
_HOLDERS = ("hermes_sdk._core", "requests", "urllib3", "http.client", "socket", "ssl")


def _holds_secrets(module: object) -> bool:
    return isinstance(module, str) and any(module == p or module.startswith(p + ".") for p in _HOLDERS)


def _foreign_frames(tb: Optional[TracebackType]) -> Optional[TracebackType]:
    """A new traceback with only the frames of modules that are not in :data:`_HOLDERS`."""
    kept: list[TracebackType] = []
    while tb is not None:
        if not _holds_secrets(tb.tb_frame.f_globals.get("__name__")):
            kept.append(tb)
        tb = tb.tb_next
    out: Optional[TracebackType] = None
    for entry in reversed(kept):
        out = TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def _stand_in(exc: BaseException) -> BaseException:
    """A requests/urllib3/http.client exception (it holds the request and its headers) as its redacted cause."""
    import requests

    module = type(exc).__module__
    if isinstance(exc, requests.RequestException) or (_holds_secrets(module) and not module.startswith("hermes_sdk")):
        from .transport import _redacted_cause

        return _redacted_cause(exc)
    return exc


def detach(exc: E) -> E:
    """``exc`` without the credential-holding frames, in its traceback and its whole chain; raise it
    with a plain ``raise`` (the raising frame is added back on top)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        cur = todo.pop()
        if id(cur) in seen:
            continue
        seen.add(id(cur))
        cur.__traceback__ = _foreign_frames(cur.__traceback__)
        cause = cur.__cause__
        if cause is not None:
            new = _stand_in(cause)
            if new is not cause:
                cur.__cause__ = new  # (assigning a cause suppresses the context as well)
            todo.append(new)
        if cur.__suppress_context__:
            cur.__context__ = None  # shown nowhere, yet a tracker or a wrapper still walks it
        elif cur.__context__ is not None:
            cur.__context__ = _stand_in(cur.__context__)
            todo.append(cur.__context__)
    return exc
