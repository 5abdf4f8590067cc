"""The inbox's rules over a queue: what an entry holds, who may decide it, when, and how once.

An entry (a JSON-able dict; what an operator sees):

- ``id`` (``inb_…``), ``kind`` (``run`` for a run's approval, ``operator`` for a command in a
  ``client.operate`` run, else ``call``), ``capability_id``, ``endpoint_id``, ``operation``
  (``ApprovalRequest.operation``: ``response_delete``, ``job_pause``, ``session_delete``,
  ``operator``, ``run_approval``, ...);
- ``identifiers``: the ids the operation acts on, in clear (``ApprovalRequest.identifiers``:
  ``response_id``, ``session_id``, ``job_id``; for a run's command ``run_id`` and
  ``pattern_key``, plus ``operator_action_id`` in an operator run); ``input_snapshot``: the
  input as the approver is shown it (every value but a secret's: ``ApprovalRequest.input_snapshot``);
  ``input_hash``: the hash every decision
  is bound to;
- ``reason``: the caller's reason (None for a run's command: Hermes gives none);
  ``requested_at`` / ``expires_at`` (epoch seconds; for a run's command, when Hermes' approval
  timeout blocks it);
- ``objective``: for a run's command, what the run was asked to do, as the client's redaction
  policy shows it (``ApprovalRequest.objective``), or None;
- ``run``: for a run's approval, ``command`` (scrubbed of credentials), ``pattern_key``,
  ``description`` (Hermes' text for the pattern), ``choices`` (what Hermes accepts;
  ``choices_observed`` says whether the provider saw Hermes' request or assumed them),
  ``allow_permanent`` and the run's ``deadline``; ``identifiers["session_id"]`` is the run's session;
- ``fully_shown`` / ``not_shown``: ``ApprovalRequest.fully_shown`` and what hid part of the
  command; an entry not fully shown can be denied, never approved (an operator cannot approve
  what they cannot read);
- ``operator``: for an operator entry, ``action_id`` (what ``operate(resume=...)`` takes) and,
  once :func:`~hermes_sdk_inbox.resume_decided` sent the decision, ``resumed`` (``at``,
  ``choice``, ``status``, ``run_id``, ``error``);
- ``principal_id``, ``tenant_id``, ``request_id``, ``action_id`` of the asking call;
- ``state``: ``pending`` → ``approved`` | ``denied`` (or ``expired``), with ``decision``: who
  (``approver``: the signed-in operator when decided in the page, which is ``authenticated_as``;
  ``display_name``: a name they typed, beside it), when (``decided_at``), why (``reason``), ``scope``
  (``once`` | ``session``) and the ``input_hash`` the decision was made on;
- ``used``: when the SDK took the decision (``at``, ``action_id``); ``closed_reason``.

``open_key`` (SHA-256 of capability id and input hash) is held while the entry is pending or decided
and unused: the same call asking again finds this entry instead of queueing another.
"""

from __future__ import annotations

import hashlib
import inspect
import time
import uuid
from typing import Any, Callable, Optional, Union

from hermes_sdk import ApprovalRequest, parse_capability_id
from hermes_sdk.plugin import Redactor

from .queue import ApprovalQueue, holds_identifier, identifiers_of, queue_from_url

#: An approved decision is honoured this long after it was made (the SDK's approval TTL).
DECISION_TTL_SECONDS = 15 * 60
STATES = ("pending", "approved", "denied", "expired")
#: Entries on one page of the inbox.
PER_PAGE = 50
#: The kinds of entry that answer a run's command (``session`` scope allowed): a run's, an operator run's.
RUN_KINDS = ("run", "operator")
_scrubber = Redactor()


class InboxError(Exception):
    """A decision the inbox refuses; ``code`` says why (the page shows it, HTTP 4xx)."""

    code = "inbox_error"
    status = 400


class EntryNotFound(InboxError):
    code, status = "not_found", 404


class EntryExpired(InboxError):
    code, status = "expired", 409


class EntryNotPending(InboxError):
    code, status = "not_pending", 409


class InputHashMismatch(InboxError):
    code, status = "input_mismatch", 409


class InvalidDecision(InboxError):
    code, status = "invalid_decision", 400


def open_key(capability_id: str, input_hash: str) -> str:
    return hashlib.sha256(f"{capability_id}\n{input_hash}".encode("utf-8")).hexdigest()


def display_state(entry: dict[str, Any], now: Optional[float] = None) -> str:
    """The state an operator sees: a pending entry past its expiry is ``expired``."""
    now = time.time() if now is None else now
    if entry["state"] == "pending" and now >= float(entry["expires_at"]):
        return "expired"
    return str(entry["state"])


class Inbox:
    """The rules, over any :class:`~hermes_sdk_inbox.ApprovalQueue` (or a store URL).

    Args:
        queue: a queue object or a store URL (``sqlite:///inbox.db``, ``postgresql://…``, ``redis://…``).
    """

    def __init__(self, queue: Union[str, ApprovalQueue], *, clock: Callable[[], float] = time.time) -> None:
        self.queue: ApprovalQueue = queue_from_url(queue) if isinstance(queue, str) else queue
        self.clock = clock
        try:  # a queue written before list(identifier=...) is read page by page instead
            self._by_identifier = "identifier" in inspect.signature(self.queue.list).parameters
        except (TypeError, ValueError):
            self._by_identifier = False

    # ------------------------------------------------------------ reading

    def get(self, entry_id: str) -> dict[str, Any]:
        entry = self.queue.get(entry_id)
        if entry is None:
            raise EntryNotFound(f"no inbox entry {entry_id}")
        return entry

    def entries(self, *, state: Optional[str] = "pending", operation: Optional[str] = None,
                kind: Optional[str] = None, identifier: Optional[str] = None,
                limit: Optional[int] = 100) -> list[dict[str, Any]]:
        """Entries newest first; ``state`` is the displayed state (``expired`` included), None for all;
        ``limit`` None: every match.

        ``operation`` and ``kind`` match exactly; ``identifier`` matches an entry whose id or any of
        whose ``identifiers`` (a response, session, job, run or operator action id) is that value.
        """
        now = self.clock()
        stored = {"pending": "pending", "expired": None}.get(state or "", state) if state else None
        wanted = identifier.strip() if identifier else None
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        page = max(limit or 0, 200)
        read = 0
        while limit is None or len(out) < limit:  # every row: the filters below are not all in the query
            batch = self._list(stored, page, read, wanted)
            read += len(batch)
            for entry in batch:
                shown = display_state(entry, now)
                if entry["id"] in seen or entry.get("state") not in STATES or (state and shown != state):
                    continue
                if (operation and entry.get("operation") != operation) or (kind and entry.get("kind") != kind):
                    continue
                if wanted and not holds_identifier(entry, wanted):
                    continue
                seen.add(entry["id"])
                out.append({**entry, "identifiers": identifiers_of(entry), "display_state": shown})
                if limit is not None and len(out) >= limit:
                    break
            if len(batch) < page:
                break
        return out

    def page(self, *, state: Optional[str] = "pending", operation: Optional[str] = None,
             kind: Optional[str] = None, identifier: Optional[str] = None, number: int = 1,
             per_page: int = PER_PAGE) -> tuple[list[dict[str, Any]], int]:
        """Page ``number`` (from 1) of the entries :meth:`entries` matches, and how many match.

        Pending entries come soonest to lapse first (for a run's command: the first Hermes blocks),
        so the oldest are never pushed off the first page by newer ones; the others newest first.
        """
        matched = self.entries(state=state, operation=operation, kind=kind, identifier=identifier, limit=None)
        if state == "pending":
            matched.sort(key=lambda e: (float(e["expires_at"]), float(e["requested_at"]), e["id"]))
        start = (max(1, number) - 1) * max(1, per_page)
        return matched[start:start + max(1, per_page)], len(matched)

    def _list(self, state: Optional[str], limit: int, offset: int, identifier: Optional[str]) -> list[dict[str, Any]]:
        """One page of the queue, filtered by identifier in the backend's query when it can."""
        if identifier is not None and self._by_identifier:
            return self.queue.list(state=state, limit=limit, offset=offset, identifier=identifier)
        return self.queue.list(state=state, limit=limit, offset=offset)

    # ------------------------------------------------------------ asking

    def submit(self, request: ApprovalRequest, *, run: Optional[dict[str, Any]] = None,
               expires_at: Optional[float] = None) -> dict[str, Any]:
        """Queue ``request`` (or find the open entry of the same capability and input hash)."""
        endpoint_id, parsed = _split(request.capability_id)
        operation = getattr(request, "operation", "") or parsed
        snapshot = dict(request.input_snapshot)
        identifiers = {str(k): str(v) for k, v in dict(getattr(request, "identifiers", None) or {}).items()}
        operator_action = identifiers.get("operator_action_id") if operation == "run_approval" else None
        kind = "operator" if operator_action else "run" if operation == "run_approval" else "call"
        said = _scrubber.text(request.reason) if request.reason else None
        objective = getattr(request, "objective", None)
        if kind in RUN_KINDS:  # a run's request carries Hermes' description of the pattern, not a caller's reason
            run = {**(run or {}), "description": said}
            said = None
        entry: dict[str, Any] = {
            "id": f"inb_{uuid.uuid4().hex}", "version": 1, "state": "pending",
            "open_key": open_key(request.capability_id, request.input_hash),
            "kind": kind, "capability_id": request.capability_id, "endpoint_id": endpoint_id,
            "operation": operation, "identifiers": identifiers,
            "input_snapshot": snapshot, "input_hash": request.input_hash,
            "reason": said, "objective": _scrubber.text(objective) if isinstance(objective, str) else None,
            "requested_at": request.requested_at,
            "expires_at": min(request.expires_at, expires_at) if expires_at else request.expires_at,
            "request_id": request.id, "action_id": request.action_id,
            "principal_id": request.principal_id, "tenant_id": request.tenant_id,
            "fully_shown": getattr(request, "fully_shown", True) is not False,
            "not_shown": _scrubber.text(str(request.not_shown)) if getattr(request, "not_shown", None) else None,
            "run": run, "operator": {"action_id": operator_action, "resumed": None} if operator_action else None,
            "decision": None, "used": None, "closed_reason": None,
        }
        for _ in range(10):
            stored = self.queue.add(entry)
            if stored["id"] == entry["id"]:
                return stored
            stale = self._stale(stored)
            if stale is None:
                return stored
            self._close(stored, state="expired" if stored["state"] == "pending" else stored["state"],
                        reason=stale)
        raise RuntimeError("could not queue the approval request (contention)")

    def _stale(self, entry: dict[str, Any]) -> Optional[str]:
        """Why an open entry no longer answers its input, or None while it does."""
        now = self.clock()
        if entry["state"] == "pending" and now >= float(entry["expires_at"]):
            return "expired before anyone decided"
        decision = entry.get("decision") or {}
        if entry["state"] in ("approved", "denied") and now - float(decision.get("decided_at", 0)) \
                >= DECISION_TTL_SECONDS:
            return "the decision was not used within 15 minutes"
        return None

    def _close(self, entry: dict[str, Any], *, state: str, reason: str,
               used: Optional[dict[str, Any]] = None) -> bool:
        new = {**entry, "version": int(entry["version"]) + 1, "state": state, "open_key": None,
               "closed_reason": reason, "used": used or entry.get("used")}
        return self.queue.update(new, int(entry["version"]))

    def expire(self, entry: dict[str, Any], reason: str) -> bool:
        """Close a pending entry as expired (e.g. Hermes' approval timeout passed)."""
        return entry["state"] == "pending" and self._close(entry, state="expired", reason=reason)

    def consume(self, entry: dict[str, Any], action_id: str) -> bool:
        """Mark a decided entry used by ``action_id`` (once: False if someone else took it)."""
        if entry["state"] not in ("approved", "denied") or entry.get("open_key") is None:
            return False
        return self._close(entry, state=entry["state"], reason="decision used",
                           used={"at": self.clock(), "action_id": action_id})

    # ------------------------------------------------------------ deciding

    def decide(self, entry_id: str, *, decision: str, approver: str, reason: str, input_hash: str,
               scope: Optional[str] = None, authenticated_as: Optional[str] = None,
               display_name: Optional[str] = None) -> dict[str, Any]:
        """Approve or deny a pending, unexpired entry whose input hash is ``input_hash``.

        ``approver`` is who decides, as the caller knows it; ``authenticated_as``, when given (the
        page gives the signed-in operator), is who is recorded as the approver, whatever
        ``approver`` says. ``display_name`` (a name typed into the page) is kept beside it, never
        in its place.

        Raises:
            EntryNotFound, EntryExpired, EntryNotPending, InputHashMismatch, InvalidDecision.
        """
        if decision not in ("approved", "denied"):
            raise InvalidDecision("decision must be approved or denied")
        approver = (authenticated_as or approver or "").strip()
        display_name = (display_name or "").strip() or None
        reason = (reason or "").strip()
        if not approver:
            raise InvalidDecision("the operator's name is required")
        if not reason:
            raise InvalidDecision("a reason is required")
        for _ in range(5):
            entry = self.get(entry_id)
            if entry["input_hash"] != input_hash:
                raise InputHashMismatch("the decision was made on another input than this entry's")
            if entry["state"] != "pending":
                raise EntryNotPending(f"the entry is already {entry['state']}")
            now = self.clock()
            if now >= float(entry["expires_at"]):
                raise EntryExpired("the entry expired; nothing can be approved any more")
            scope = scope or "once"
            if decision == "approved" and entry.get("fully_shown") is False:
                raise InvalidDecision("the command is not fully shown (" + str(entry.get("not_shown") or "part of "
                                      "it is hidden") + "); it can only be denied")
            if decision == "denied":
                scope = None
            elif scope not in ("once", "session"):
                raise InvalidDecision("scope must be once or session")
            elif scope == "session":
                run = entry.get("run") or {}
                if entry["kind"] not in RUN_KINDS or "session" not in (run.get("choices") or ["session"]):
                    raise InvalidDecision("only a run's approval can be approved for the session")
            new = {**entry, "version": int(entry["version"]) + 1, "state": decision, "decision": {
                "decision": decision, "approver": approver, "authenticated_as": authenticated_as,
                "display_name": display_name,
                "reason": reason, "scope": scope, "decided_at": now, "input_hash": input_hash,
                "approval_id": f"apr_{uuid.uuid4().hex}"}}
            if self.queue.update(new, int(entry["version"])):
                return new
        raise EntryNotPending("the entry changed while deciding; reload it")

    def record_resume(self, entry_id: str, resumed: dict[str, Any]) -> dict[str, Any]:
        """Keep what resuming an operator entry's action did (``operator.resumed``) with the entry."""
        for _ in range(5):
            entry = self.get(entry_id)
            operator = dict(entry.get("operator") or {})
            operator["resumed"] = resumed
            new = {**entry, "version": int(entry["version"]) + 1, "operator": operator}
            if self.queue.update(new, int(entry["version"])):
                return new
        raise EntryNotPending("the entry changed while recording its resume; reload it")

    def record_outcome(self, entry_id: str, outcome: dict[str, Any]) -> dict[str, Any]:
        """Keep a decided run's final status with its entry (``outcome``: see :mod:`.outcome`)."""
        for _ in range(5):
            entry = self.get(entry_id)
            new = {**entry, "version": int(entry["version"]) + 1, "outcome": outcome}
            if self.queue.update(new, int(entry["version"])):
                return new
        raise EntryNotPending("the entry changed while recording its run's outcome; reload it")

    def close(self) -> None:
        self.queue.close()


def _split(capability_id: str) -> tuple[Optional[str], str]:
    try:
        parsed = parse_capability_id(capability_id)
    except Exception:
        return None, capability_id.rsplit(":", 1)[-1]
    endpoint = getattr(parsed, "endpoint_id", None)
    operation = getattr(parsed, "operation", None)
    if isinstance(parsed, tuple) and len(parsed) >= 2:
        endpoint, operation = parsed[-2], parsed[-1]
    return endpoint, str(operation or capability_id.rsplit(":", 1)[-1])
