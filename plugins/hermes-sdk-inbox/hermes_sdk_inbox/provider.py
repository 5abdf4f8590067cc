"""The approval provider: queue the request in the inbox, then wait (a little, or for a run) for a person.

* A synchronous call (``response_delete``, and every other approval-gated capability: a job
  mutation, ``sessions.delete``, ``operate``: they are just capability ids here) waits at most
  ``wait`` seconds (default 0), then raises ``ApprovalRequiredError`` naming the entry
  (``details["inbox_entry_id"]``). The same call later (same input, so the same input hash) finds
  the decided entry and proceeds, or is denied. A decision is used once.
* A run's approval (capability ``…:run_approval``, asked by the Run follower) waits for the
  decision up to the run's deadline or Hermes' own approval timeout (``approvals.timeout``, 60 s
  by default), whichever comes first, and returns it: an approval for the ``session`` carries
  ``scope="session"``, which the SDK answers as Hermes' ``session`` choice. With no decision by
  then the entry is closed as expired and the request is left to Hermes (which blocks it). The
  follower asks about one request at a time, oldest first, as Hermes answers them; the entry's
  expiry is never past Hermes' approval timeout, so no decision is handed back once Hermes moved
  on to another command.
* A command in a ``client.operate`` run (``identifiers["operator_action_id"]``) is an
  ``operator`` entry: it waits at most ``wait`` seconds like a synchronous call, then stays
  pending (until Hermes' approval timeout) while ``operate()`` returns ``requires_human``; the
  person's decision is sent by :func:`~hermes_sdk_inbox.resume_decided`
  (``operate(resume=<action id>, choice=...)``), from any process sharing the stores.

Registered as a plugin (``HermesClient(plugins=[provider])``), the provider also answers the
``hermes_approval_provider`` hook and observes runs' ``approval.request`` events, so a run's entry
carries its pattern key and the choices Hermes offers. ``provider.until(deadline)`` bounds one
run's waits by that run's deadline.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Callable, Optional, Union

from hermes_sdk import ApprovalDecision, ApprovalRequest, ApprovalRequiredError, hookimpl
from hermes_sdk.plugin import visible

from .inbox import DECISION_TTL_SECONDS, Inbox
from .queue import ApprovalQueue

#: Hermes' default ``approvals.timeout`` (spec/hermes-runs.md): a command not answered by then is BLOCKED.
HERMES_APPROVAL_TIMEOUT = 60.0
RUN_APPROVAL = "run_approval"
_ALL_CHOICES = ["once", "session", "always", "deny"]


def _choices(smart_denied: bool, allow_permanent: bool) -> list[str]:
    """The choices Hermes offers for a request (its ``_approval_event_choices``, spec/hermes-runs.md)."""
    if smart_denied:
        return ["once", "deny"]
    return list(_ALL_CHOICES) if allow_permanent else ["once", "session", "deny"]


class InboxProvider:
    """An approval provider backed by the inbox.

    Args:
        store: a store URL (default ``sqlite:///hermes-inbox.db``), an ApprovalQueue, or an Inbox.
        wait: seconds a synchronous call waits for a decision before raising ApprovalRequiredError.
        approval_timeout: Hermes' ``approvals.timeout`` (seconds) for runs' approvals.
        poll_interval: seconds between looks at the queue while waiting.
        policy_decision_id: the prefix of the decisions' ``policy_decision_id`` (``<prefix>:<entry id>``).
        inbox_url: where operators answer (put into the error's details and message), optional.
        clock, sleep: the time source and the wait between looks (``time.time``, ``time.sleep``);
            a test passes its own to decide in simulated time.
    """

    def __init__(self, store: Union[str, ApprovalQueue, Inbox] = "sqlite:///hermes-inbox.db", *,
                 wait: float = 0.0, approval_timeout: float = HERMES_APPROVAL_TIMEOUT,
                 poll_interval: float = 0.2, policy_decision_id: str = "hermes-sdk-inbox",
                 inbox_url: Optional[str] = None, clock: Optional[Callable[[], float]] = None,
                 sleep: Optional[Callable[[float], None]] = None) -> None:
        self._clock = clock or time.time
        self._sleep = sleep or time.sleep
        self.inbox = store if isinstance(store, Inbox) else Inbox(store, clock=self._clock)
        self.wait = float(wait)
        self.approval_timeout = float(approval_timeout)
        self.poll_interval = float(poll_interval)
        self.policy_decision_id = policy_decision_id
        self.inbox_url = inbox_url
        self._observed: deque[dict[str, Any]] = deque(maxlen=256)
        self._lock = threading.Lock()
        self._deadline: Optional[float] = None

    # ------------------------------------------------------------ plugin hooks

    @hookimpl
    def hermes_approval_provider(self, client: Any) -> "InboxProvider":
        return self

    @hookimpl
    def hermes_stream_event(self, call: Any, event: dict[str, Any]) -> None:
        """Note a run's ``approval.request``: its pattern key and whether Hermes offers ``session``.

        Observers see events redacted (no run id, no command); the request the follower hands the
        provider next carries the pattern key in ``identifiers``, which is how the two are matched.
        """
        if getattr(call, "operation", None) != "run_events":
            return
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        if data.get("event") != "approval.request":
            return
        smart_denied = data.get("smart_denied") is True
        allow_permanent = data.get("allow_permanent") is not False and not smart_denied
        # (the request's pattern key is visible() as every text an approver is shown: matched as such)
        info = {"pattern_key": visible(data["pattern_key"]) if isinstance(data.get("pattern_key"), str) else None,
                "choices": _choices(smart_denied, allow_permanent), "choices_observed": True,
                "allow_permanent": allow_permanent, "smart_denied": smart_denied, "seen_at": time.time()}
        with self._lock:
            self._observed.append(info)

    def _run_info(self, request: ApprovalRequest) -> dict[str, Any]:
        """What the observed ``approval.request`` of this request said (matched on its pattern key)."""
        found: Optional[dict[str, Any]] = None
        pattern_key = dict(getattr(request, "identifiers", None) or {}).get("pattern_key") or None
        with self._lock:
            for info in list(self._observed):
                if time.time() - info["seen_at"] > 600:
                    self._observed.remove(info)
                elif found is None and info["pattern_key"] is not None and info["pattern_key"] == pattern_key:
                    found = info
                    self._observed.remove(info)
        run = {"command": request.input_snapshot.get("command"),
               "pattern_key": pattern_key, "choices": list(_ALL_CHOICES), "choices_observed": False,
               "allow_permanent": True, "smart_denied": False}
        if found is not None:
            run.update({k: v for k, v in found.items() if k not in ("seen_at", "pattern_key")})
        run["deadline"] = self._deadline
        return run

    def until(self, deadline: Optional[float]) -> "InboxProvider":
        """This provider for one run whose deadline is ``deadline`` (epoch seconds): its approvals
        wait no longer than that (``client.run(..., deadline=d, approval_provider=inbox.until(d))``)."""
        copy = object.__new__(InboxProvider)
        copy.__dict__.update(self.__dict__)
        copy._deadline = deadline
        return copy

    # ------------------------------------------------------------ the provider

    def request_approval(self, request: ApprovalRequest) -> Optional[ApprovalDecision]:
        """Queue ``request``; return the decision once a person made it (see the module doc)."""
        is_run = request.capability_id.rsplit(":", 1)[-1] == RUN_APPROVAL
        # A command in an operator run: operate() returns requires_human rather than holding a thread
        in_operator = is_run and bool(dict(getattr(request, "identifiers", None) or {}).get("operator_action_id"))
        now = self._clock()
        run = None
        until = now + max(0.0, self.wait)
        entry_expiry = None
        if is_run:
            run = self._run_info(request)
            entry_expiry = now + self.approval_timeout
            if self._deadline is not None:
                entry_expiry = min(entry_expiry, float(self._deadline))
            until = min(until, entry_expiry) if in_operator else entry_expiry
        entry = self.inbox.submit(request, run=run, expires_at=entry_expiry)
        while True:
            if entry["state"] in ("approved", "denied") and entry["input_hash"] == request.input_hash:
                if self.inbox.consume(entry, request.action_id):
                    return self._decision(entry, request)
                entry = self.inbox.submit(request, run=run, expires_at=entry_expiry)  # taken: queue anew
                continue
            if entry["state"] not in ("pending", "approved", "denied") or entry.get("open_key") is None:
                entry = self.inbox.submit(request, run=run, expires_at=entry_expiry)
                continue
            remaining = until - self._clock()
            if remaining <= 0:
                break
            self._sleep(min(self.poll_interval, remaining))
            entry = self.inbox.get(entry["id"])
        if in_operator:
            return None  # stays pending: operate() returns requires_human; resume_decided() sends the decision
        if is_run:
            self.inbox.expire(entry, "no decision before Hermes' approval timeout or the run's deadline")
            return None
        details = {"inbox_entry_id": entry["id"], "input_hash": request.input_hash,
                   "approval_request_id": request.id, "expires_at": entry["expires_at"]}
        where = ""
        if self.inbox_url:
            details["inbox_url"] = f"{self.inbox_url.rstrip('/')}/{entry['id']}"
            where = f" at {details['inbox_url']}"
        raise ApprovalRequiredError(
            f"{entry['operation']} waits for a person's decision in the approval inbox (entry {entry['id']}"
            f"{where}); nothing was sent. Call again with the same input once it is decided", details=details)

    def _decision(self, entry: dict[str, Any], request: ApprovalRequest) -> ApprovalDecision:
        d = entry["decision"]
        decided_at = float(d["decided_at"])
        scope = d.get("scope")
        return ApprovalDecision(
            # the signed-in operator (an entry decided before it was the approver kept it beside a typed name)
            approval_id=d["approval_id"], decision=d["decision"], approver=d.get("authenticated_as") or d["approver"],
            decided_at=decided_at,
            expires_at=min(decided_at + DECISION_TTL_SECONDS, request.expires_at), input_hash=entry["input_hash"],
            reason=d.get("reason") or request.reason,
            policy_decision_id=f"{self.policy_decision_id}:{entry['id']}" if d["decision"] == "approved" else None,
            input_snapshot=request.input_snapshot, approval_request_id=request.id,
            scope=scope if scope == "session" else None)

    def close(self) -> None:
        self.inbox.close()
