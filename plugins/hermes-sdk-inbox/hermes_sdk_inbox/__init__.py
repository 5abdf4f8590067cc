"""An approval inbox for hermes-sdk: a durable queue, an approval provider, and a page where people answer."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__
from .plugin import InboxPlugin

if TYPE_CHECKING:
    from .inbox import (
        DECISION_TTL_SECONDS,
        EntryExpired,
        EntryNotFound,
        EntryNotPending,
        Inbox,
        InboxError,
        InputHashMismatch,
        InvalidDecision,
        display_state,
    )
    from .provider import HERMES_APPROVAL_TIMEOUT, InboxProvider
    from .queue import ApprovalQueue, CorruptEntryError, MemoryQueue, SQLiteQueue, identifiers_of, queue_from_url
    from .resume import RESUME_KEY_PREFIX, Resumed, ResumeWorker, resume_decided
    from .web import create_app, inbox_blueprint

__all__ = ["DECISION_TTL_SECONDS", "HERMES_APPROVAL_TIMEOUT", "RESUME_KEY_PREFIX", "ApprovalQueue",
           "CorruptEntryError", "EntryExpired", "EntryNotFound", "EntryNotPending", "Inbox", "InboxError",
           "InboxPlugin", "InboxProvider", "InputHashMismatch", "InvalidDecision", "MemoryQueue", "ResumeWorker",
           "Resumed", "SQLiteQueue", "create_app", "display_state", "identifiers_of", "inbox_blueprint",
           "queue_from_url", "resume_decided"]

#: Where each name lives, imported on first use (PEP 562): an installed inbox that no client
#: configures imports only its plugin module, and only the web page imports Flask.
_LAZY = {
    **dict.fromkeys(["DECISION_TTL_SECONDS", "EntryExpired", "EntryNotFound", "EntryNotPending", "Inbox",
                     "InboxError", "InputHashMismatch", "InvalidDecision", "display_state"], "inbox"),
    **dict.fromkeys(["HERMES_APPROVAL_TIMEOUT", "InboxProvider"], "provider"),
    **dict.fromkeys(["ApprovalQueue", "CorruptEntryError", "MemoryQueue", "SQLiteQueue", "identifiers_of",
                     "queue_from_url"], "queue"),
    **dict.fromkeys(["RESUME_KEY_PREFIX", "Resumed", "ResumeWorker", "resume_decided"], "resume"),
    **dict.fromkeys(["create_app", "inbox_blueprint"], "web"),
}
_SUBMODULES = frozenset({"cli", "inbox", "outcome", "provider", "queue", "redis_queue", "resume", "serving",
                         "sessions", "web"})


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
