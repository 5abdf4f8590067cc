"""The emulator's ``state.db``: session rows and message rows, shared by every route.

Hermes keeps one SQLite table of sessions and one of messages (global autoincrement ids).
``/api/sessions`` reads and writes them directly; chat completions with
``X-Hermes-Session-Id``, Responses and ``/v1/runs`` append their turns through the
``history``/``append`` pair (the old ``SessionTranscripts`` surface), creating rows on the
fly. See ``spec/hermes-sessions-jobs.md`` sections 2-4 and 6.
"""

from __future__ import annotations

import copy
import re
import secrets
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from .wire import DEFAULT_MODEL

UPSTREAM_MODEL = "fake-model"  # the model the first agent turn writes into the row (Hermes' config)
MAX_TITLE_LENGTH = 100
PREVIEW_CHARS = 60
_ZERO_WIDTH = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_LINEAGE = re.compile(r"^(.*?) #(\d+)$")


class TitleError(ValueError):
    """A title that is in use or too long (the message is Hermes' own)."""


@dataclass
class SessionRow:
    """One ``sessions`` row plus its messages."""

    id: str
    source: str = "api_server"
    model: str | None = DEFAULT_MODEL
    title: str | None = None
    started_at: float = field(default_factory=time.time)
    ended_at: float | None = None
    end_reason: str | None = None
    tool_call_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_cost_usd: float | None = None
    api_call_count: int = 0
    parent_session_id: str | None = None
    system_prompt: str | None = None
    model_config: bool = False
    messages: list[dict[str, object]] = field(default_factory=list)

    @property
    def last_active(self) -> float:
        if not self.messages:
            return self.started_at
        stamp = self.messages[-1]["timestamp"]
        assert isinstance(stamp, (int, float))  # _add() stores time.time()
        return float(stamp)

    def payload(self, listing: bool = False, flags: bool = False) -> dict[str, object]:
        """``_session_response``: keys in the row's order; list rows add ``last_active``/``preview``;
        ``flags``: 0.20+'s ``pinned``/``archived``/``hidden`` (never set by the emulator: false)."""
        out: dict[str, object] = {
            "id": self.id,
            "source": self.source,
            "user_id": None,
            "model": self.model,
            "title": self.title,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "end_reason": self.end_reason,
            "message_count": len(self.messages),
            "tool_call_count": self.tool_call_count,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": 0,
            "cache_write_tokens": 0,
            "reasoning_tokens": 0,
            "estimated_cost_usd": self.estimated_cost_usd,
            "actual_cost_usd": None,
            "api_call_count": self.api_call_count,
            "parent_session_id": self.parent_session_id,
        }
        if flags:
            out.update(pinned=False, archived=False, hidden=False)
        if listing:
            out["last_active"] = self.last_active
            out["preview"] = self.preview
        out["has_system_prompt"] = self.system_prompt is not None
        out["has_model_config"] = self.model_config
        return out

    @property
    def preview(self) -> str:
        for message in self.messages:
            if message["role"] == "user" and message["content"]:
                text = " ".join(str(message["content"]).split())
                return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "..."
        return ""


def sanitize_title(raw: object) -> str | None:
    """``SessionDB.sanitize_title``: controls and zero-width/bidi characters out, whitespace
    collapsed, trimmed; empty is None; more than 100 characters raises ``TitleError``."""
    if raw is None:
        return None
    text = _ZERO_WIDTH.sub("", str(raw))
    text = "".join(ch if not unicodedata.category(ch).startswith("C") or ch in "\t\n\r" else "" for ch in text)
    text = " ".join(text.split())
    if not text:
        return None
    if len(text) > MAX_TITLE_LENGTH:
        raise TitleError(f"Title too long ({len(text)} chars, max {MAX_TITLE_LENGTH})")
    return text


def generated_session_id() -> str:
    """``api_<epoch seconds>_<8 hex>``, as create and fork make them."""
    return f"api_{int(time.time())}_{secrets.token_hex(4)}"


class SessionDB:
    """Thread-safe sessions and messages; every accessor returns copies."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._rows: dict[str, SessionRow] = {}
        self._message_seq = 0

    # -- the SessionTranscripts surface (chat, Responses, runs) ---------------------
    def history(self, session_id: str) -> list[dict[str, str]]:
        """The session's user/assistant text turns (empty when unknown)."""
        with self.lock:
            row = self._rows.get(session_id)
            if row is None:
                return []
            return [
                {"role": str(m["role"]), "content": str(m["content"] or "")}
                for m in row.messages
                if m["role"] in ("user", "assistant") and not m.get("tool_calls")
            ]

    def append(self, session_id: str, messages: list[dict[str, str]]) -> None:
        """Append a turn written by another route; creates the row like Hermes' agent does."""
        with self.lock:
            row = self._rows.get(session_id)
            if row is None:
                row = self._rows[session_id] = SessionRow(id=session_id)
            for message in messages:
                self._add(row, message["role"], message.get("content"), finish="stop")
            row.system_prompt = row.system_prompt or ""
            row.model_config = True
            if any(m["role"] == "assistant" for m in messages):
                row.model = UPSTREAM_MODEL
                row.api_call_count += 1
                row.estimated_cost_usd = 0.0

    def sessions(self) -> dict[str, list[dict[str, str]]]:
        """Every session's text turns, by session id."""
        with self.lock:
            return {sid: self.history(sid) for sid in self._rows}

    def clear(self) -> None:
        """Forget every session and message (ids restart at 1)."""
        with self.lock:
            self._rows.clear()
            self._message_seq = 0

    # -- rows ----------------------------------------------------------------------------
    def get(self, session_id: str) -> SessionRow | None:
        with self.lock:
            row = self._rows.get(session_id)
            return copy.deepcopy(row) if row is not None else None

    def exists(self, session_id: str) -> bool:
        with self.lock:
            return session_id in self._rows

    def title_owner(self, title: str, exclude: str | None = None) -> str | None:
        with self.lock:
            for row in self._rows.values():
                if row.title == title and row.id != exclude:
                    return row.id
            return None

    def create(self, row: SessionRow) -> bool:
        """Insert ``row``; False when the id is taken (one check-and-insert, like the transaction)."""
        with self.lock:
            if row.id in self._rows:
                return False
            self._rows[row.id] = row
            return True

    def delete(self, session_id: str) -> bool:
        """Delete a row and its messages; its children are orphaned, not deleted."""
        with self.lock:
            if self._rows.pop(session_id, None) is None:
                return False
            for row in self._rows.values():
                if row.parent_session_id == session_id:
                    row.parent_session_id = None
            return True

    def update(self, session_id: str, fn: Callable[[SessionRow], None]) -> SessionRow | None:
        """Apply ``fn(row)`` under the lock; return a copy of the row afterwards."""
        with self.lock:
            row = self._rows.get(session_id)
            if row is None:
                return None
            fn(row)
            return copy.deepcopy(row)

    def end(self, session_id: str, reason: str) -> None:
        """``end_session``: the first end reason wins."""
        with self.lock:
            row = self._rows.get(session_id)
            if row is not None and row.ended_at is None:
                row.ended_at = time.time()
                row.end_reason = reason

    def listing(self, *, source: str | None, include_children: bool) -> list[SessionRow]:
        """Rows by most recent activity first, with the default list's child filter."""
        with self.lock:
            rows = []
            for row in self._rows.values():
                if source is not None and row.source != source:
                    continue
                if not include_children and row.parent_session_id is not None:
                    parent = self._rows.get(row.parent_session_id)
                    shown = (
                        parent is not None
                        and parent.end_reason == "branched"
                        and parent.ended_at is not None
                        and row.started_at >= parent.ended_at
                    )
                    if not shown:
                        continue
                rows.append(copy.deepcopy(row))
        rows.sort(key=lambda r: r.last_active, reverse=True)
        return rows

    def next_title_in_lineage(self, base_title: str) -> str:
        """``get_next_title_in_lineage``: ``"T"`` -> ``"T #2"``, ``"T #3"``, ... (``#N`` stripped first)."""
        match = _LINEAGE.match(base_title)
        base = match.group(1) if match else base_title
        with self.lock:
            existing = [
                r.title for r in self._rows.values() if r.title == base or (r.title or "").startswith(base + " #")
            ]
        if not existing:
            return base
        highest = 1
        for title in existing:
            found = _LINEAGE.match(title or "")
            if found and found.group(1) == base:
                highest = max(highest, int(found.group(2)))
        return f"{base} #{highest + 1}"

    def resolve_resume(self, session_id: str) -> str:
        """``resolve_resume_session_id``: walk the most recently started child repeatedly and
        answer the deepest one that has messages (after a fork: the newest fork)."""
        with self.lock:
            answer = current = session_id
            seen = {session_id}
            while True:
                children = [r for r in self._rows.values() if r.parent_session_id == current and r.id not in seen]
                if not children:
                    return answer
                child = max(children, key=lambda r: r.started_at)
                seen.add(child.id)
                current = child.id
                if child.messages:
                    answer = child.id

    def copy_messages(self, source_id: str, target_id: str) -> None:
        """Copy every message (new global ids, same timestamps and content)."""
        with self.lock:
            source, target = self._rows.get(source_id), self._rows.get(target_id)
            if source is None or target is None:
                return
            for message in source.messages:
                clone = copy.deepcopy(message)
                self._message_seq += 1
                clone["id"] = self._message_seq
                clone["session_id"] = target_id
                target.messages.append(clone)

    # -- messages ---------------------------------------------------------------------------
    def add_message(
        self,
        session_id: str,
        role: str,
        content: str | None,
        *,
        finish: str | None = None,
        tool_calls: list[dict[str, object]] | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        reasoning: str | None = None,
    ) -> None:
        with self.lock:
            row = self._rows.get(session_id)
            if row is not None:
                self._add(row, role, content, finish, tool_calls, tool_call_id, tool_name, reasoning)

    def messages(self, session_id: str) -> list[dict[str, object]] | None:
        with self.lock:
            row = self._rows.get(session_id)
            return copy.deepcopy(row.messages) if row is not None else None

    def _add(
        self,
        row: SessionRow,
        role: str,
        content: str | None,
        finish: str | None = None,
        tool_calls: list[dict[str, object]] | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        reasoning: str | None = None,
    ) -> None:
        self._message_seq += 1
        row.messages.append(
            {
                "id": self._message_seq,
                "session_id": row.id,
                "role": role,
                "content": content,
                "tool_call_id": tool_call_id,
                "tool_calls": tool_calls,
                "tool_name": tool_name,
                "timestamp": time.time(),
                "token_count": None,
                "finish_reason": finish if role == "assistant" else None,
                "reasoning": reasoning,
                "reasoning_content": reasoning,
            }
        )


__all__ = ["UPSTREAM_MODEL", "SessionDB", "SessionRow", "TitleError", "generated_session_id", "sanitize_title"]
