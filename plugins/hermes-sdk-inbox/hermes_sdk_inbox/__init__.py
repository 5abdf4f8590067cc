"""An approval inbox for hermes-sdk: a durable queue, an approval provider, and a page where people answer."""

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
from .queue import ApprovalQueue, CorruptEntryError, MemoryQueue, SQLiteQueue, queue_from_url
from .web import create_app, inbox_blueprint

__all__ = ["DECISION_TTL_SECONDS", "HERMES_APPROVAL_TIMEOUT", "ApprovalQueue", "CorruptEntryError",
           "EntryExpired", "EntryNotFound", "EntryNotPending", "Inbox", "InboxError", "InboxPlugin",
           "InboxProvider", "InputHashMismatch", "InvalidDecision", "MemoryQueue", "SQLiteQueue",
           "create_app", "display_state", "inbox_blueprint", "queue_from_url"]
