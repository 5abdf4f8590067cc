"""In-memory state of the emulator: response store, idempotency cache, transcripts.

Hermes keeps responses in SQLite; the emulator keeps the same semantics in
memory so every test starts clean: a true LRU (reads refresh), conversation
name pointers to the latest stored turn, cleared on eviction and deletion.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass
class StoredResponse:
    """One stored response: its envelope and what a follow-up turn continues from."""

    response: dict[str, object]
    conversation_history: list[dict[str, str]]
    instructions: str | None
    session_id: str


class ResponseStore:
    """LRU of stored Responses plus the ``conversations`` name → id table."""

    def __init__(self, max_items: int = 100) -> None:
        self.max_items = max_items
        self._lock = threading.Lock()
        self._items: OrderedDict[str, StoredResponse] = OrderedDict()
        self._conversations: dict[str, str] = {}

    def put(self, rid: str, item: StoredResponse, conversation: str | None = None) -> None:
        """Store a response (evicting the least recently used beyond ``max_items``); point ``conversation`` at it."""
        with self._lock:
            self._items[rid] = copy.deepcopy(item)
            self._items.move_to_end(rid)
            if conversation:
                self._conversations[conversation] = rid
            while len(self._items) > max(self.max_items, 0):
                evicted, _ = self._items.popitem(last=False)
                self._drop_pointers(evicted)

    def get(self, rid: str) -> StoredResponse | None:
        """A copy of the stored response, or None; a read refreshes its LRU position, as in Hermes."""
        with self._lock:
            item = self._items.get(rid)
            if item is None:
                return None
            self._items.move_to_end(rid)  # a read refreshes, as Hermes' accessed_at does
            return copy.deepcopy(item)

    def delete(self, rid: str) -> bool:
        """Delete a stored response and the conversation names pointing at it; return whether it existed."""
        with self._lock:
            if self._items.pop(rid, None) is None:
                return False
            self._drop_pointers(rid)
            return True

    def conversation_head(self, name: str) -> str | None:
        """The id of the latest stored turn of conversation ``name``, or None."""
        with self._lock:
            return self._conversations.get(name)

    def ids(self) -> list[str]:
        """Stored ids, least recently used first (does not refresh)."""
        with self._lock:
            return list(self._items)

    def peek(self, rid: str) -> dict[str, object] | None:
        """The stored envelope without refreshing its LRU position."""
        with self._lock:
            item = self._items.get(rid)
            return copy.deepcopy(item.response) if item else None

    def conversations(self) -> dict[str, str]:
        """A copy of the conversation name to response id table."""
        with self._lock:
            return dict(self._conversations)

    def clear(self) -> None:
        """Forget every stored response and conversation."""
        with self._lock:
            self._items.clear()
            self._conversations.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, rid: object) -> bool:
        with self._lock:
            return rid in self._items

    def _drop_pointers(self, rid: str) -> None:
        for name in [n for n, target in self._conversations.items() if target == rid]:
            del self._conversations[name]


class _Slot(Generic[T]):
    def __init__(self, fp: str) -> None:
        self.fp = fp
        self.done = threading.Event()
        self.value: T | None = None
        self.failed = False
        self.created = time.monotonic()


class IdempotencyCache(Generic[T]):
    """Hermes' ``_IdempotencyCache``: keyed by header value alone, 1000 items, 300 s.

    Same key and fingerprint reuses the result (concurrent callers share the
    in-flight computation); a different fingerprint recomputes and overwrites.
    """

    def __init__(self, max_items: int = 1000, ttl_seconds: float = 300.0) -> None:
        self.max_items = max_items
        self.ttl_seconds = ttl_seconds
        self._lock = threading.Lock()
        self._slots: OrderedDict[str, _Slot[T]] = OrderedDict()

    def get_or_compute(self, key: str, fp: str, compute: Callable[[], T]) -> tuple[T, bool]:
        """Return ``(value, hit)``; ``hit`` is True when nothing was computed."""
        while True:
            with self._lock:
                self._expire()
                slot = self._slots.get(key)
                if slot is not None and slot.fp == fp and not slot.failed:
                    owner = False
                else:
                    slot = _Slot(fp)
                    self._slots[key] = slot
                    self._slots.move_to_end(key)
                    while len(self._slots) > self.max_items:
                        self._slots.popitem(last=False)
                    owner = True
            if owner:
                try:
                    value = compute()
                except BaseException:
                    slot.failed = True
                    with self._lock:
                        if self._slots.get(key) is slot:
                            del self._slots[key]
                    slot.done.set()
                    raise
                slot.value = value
                slot.done.set()
                return value, False
            slot.done.wait()
            if not slot.failed and slot.value is not None:
                return slot.value, True
            # The owner failed: try again, possibly computing ourselves.

    def clear(self) -> None:
        """Forget every cached result."""
        with self._lock:
            self._slots.clear()

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, s in self._slots.items() if s.done.is_set() and now - s.created > self.ttl_seconds]:
            del self._slots[key]


@dataclass
class SessionTranscripts:
    """Chat transcripts per session id (Hermes' ``state.db`` messages)."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _sessions: dict[str, list[dict[str, str]]] = field(default_factory=dict)

    def history(self, session_id: str) -> list[dict[str, str]]:
        """A copy of the messages kept for ``session_id`` (empty when unknown)."""
        with self._lock:
            return [dict(m) for m in self._sessions.get(session_id, [])]

    def append(self, session_id: str, messages: list[dict[str, str]]) -> None:
        """Append ``messages`` to the transcript of ``session_id``."""
        with self._lock:
            self._sessions.setdefault(session_id, []).extend(dict(m) for m in messages)

    def sessions(self) -> dict[str, list[dict[str, str]]]:
        """A copy of every transcript, by session id."""
        with self._lock:
            return {k: [dict(m) for m in v] for k, v in self._sessions.items()}

    def clear(self) -> None:
        """Forget every transcript."""
        with self._lock:
            self._sessions.clear()
