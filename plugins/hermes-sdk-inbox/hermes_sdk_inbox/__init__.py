"""An approval inbox for hermes-sdk: a durable queue, an approval provider, and a page where people answer."""

from ._version import __version__ as __version__
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
from .plugin import InboxPlugin
from .provider import HERMES_APPROVAL_TIMEOUT, InboxProvider
from .queue import ApprovalQueue, CorruptEntryError, MemoryQueue, SQLiteQueue, identifiers_of, queue_from_url
from .resume import RESUME_KEY_PREFIX, Resumed, ResumeWorker, resume_decided
from .web import create_app, inbox_blueprint

__all__ = ["DECISION_TTL_SECONDS", "HERMES_APPROVAL_TIMEOUT", "RESUME_KEY_PREFIX", "ApprovalQueue",
           "CorruptEntryError", "EntryExpired", "EntryNotFound", "EntryNotPending", "Inbox", "InboxError",
           "InboxPlugin", "InboxProvider", "InputHashMismatch", "InvalidDecision", "MemoryQueue", "ResumeWorker",
           "Resumed", "SQLiteQueue", "create_app", "display_state", "identifiers_of", "inbox_blueprint",
           "queue_from_url", "resume_decided"]
