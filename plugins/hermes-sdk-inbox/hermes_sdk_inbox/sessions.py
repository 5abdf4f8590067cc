"""Server-side control of the standalone inbox's login sessions: sign one out, end them all.

A login cookie is signed, so without state on the server it stays good until it expires. Two facts
in the queue's own store (one record, shared by every process serving that store) take it back:

* the **generation**: every cookie names the generation it was issued in, and ending every
  session (``hermes-sdk-inbox end-sessions``, or the page's "End every session") moves to the
  next one, so every cookie issued before stops working at once, in every process;
* the **signed-out** sessions: a cookie's session id, kept until the cookie would have expired
  anyway, so a copy of a cookie whose owner signed out is refused too.

The record is a queue entry with the reserved id (and open key) ``inb_sessions`` and state
``sessions``, which the inbox never lists; it changes by compare-and-set like every entry.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from .queue import ApprovalQueue

SESSIONS_ID = "inb_sessions"
SESSIONS_STATE = "sessions"


class LoginSessions:
    """The generation and the signed-out session ids of ``queue``'s store."""

    def __init__(self, queue: ApprovalQueue, clock: Callable[[], float] = time.time) -> None:
        self.queue = queue
        self.clock = clock

    def _record(self) -> Optional[dict[str, Any]]:
        return self.queue.get(SESSIONS_ID)

    def generation(self) -> int:
        record = self._record()
        return int(record.get("generation", 0)) if record else 0

    def valid(self, generation: Any, session_id: Any) -> bool:
        """Whether a cookie of ``generation`` and ``session_id`` is still good."""
        record = self._record() or {}
        if generation != int(record.get("generation", 0)):
            return False
        return float((record.get("signed_out") or {}).get(str(session_id), 0)) <= self.clock()

    def end_all(self) -> int:
        """Make every session issued so far invalid; return the new generation."""
        return self._change(lambda r: {"generation": int(r.get("generation", 0)) + 1, "signed_out": {}})["generation"]

    def sign_out(self, session_id: str, until: float) -> None:
        """Refuse ``session_id`` from now until ``until`` (when its cookie expires anyway)."""
        def change(record: dict[str, Any]) -> dict[str, Any]:
            now = self.clock()
            kept = {sid: t for sid, t in (record.get("signed_out") or {}).items() if float(t) > now}
            return {"signed_out": {**kept, session_id: float(until)}}
        self._change(change)

    def _change(self, how: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        for _ in range(20):
            record = self._record()
            if record is None:  # the first change: its open key makes the add atomic across processes
                record = self.queue.add({
                    "id": SESSIONS_ID, "version": 1, "state": SESSIONS_STATE, "kind": SESSIONS_STATE,
                    "capability_id": "hermes-sdk-inbox:sessions", "open_key": SESSIONS_ID, "requested_at": 0.0,
                    "expires_at": 0.0, "generation": 0, "signed_out": {}})
            new = {**record, **how(record), "version": int(record["version"]) + 1}
            if self.queue.update(new, int(record["version"])):
                return new
        raise RuntimeError("could not change the login sessions (contention)")
