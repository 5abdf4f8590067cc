"""Resume operator actions a person decided in the inbox: ``operate(resume=<action id>, choice=...)``.

``client.operate(...)`` returns ``requires_human`` when the agent asks to run a command and the
inbox has no decision yet; the command's entry (``kind="operator"``) records the operator action
id. Once a person approved (once / for the run's session) or denied it, :func:`resume_decided`
sends that answer with a client configured like the one that started the action (the same
endpoint, and the same idempotency store, where the operator state lives), and follows the run:
from a worker, a cron job, a Celery task the inbox's ``on_decision`` hook enqueues, or
``hermes-sdk-inbox resume --watch``. It need not be the process that started the action.

Each decision is sent at most once: the entry is taken with a compare-and-set before anything is
sent (two workers never both send it), the resume call's idempotency key is derived from the
entry id, and its approval is the person's decision bound to the resume input (``{"resume":
{"source_action_id", "choice", "resolve_all"}}``), with ``policy_decision_id`` naming the entry.
Entries are taken oldest first, as Hermes answers a run's requests; an entry whose expiry
(Hermes' approval timeout) passed before its decision could be sent is closed unsent, since
Hermes blocked that command and an answer now would land on the run's next request.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, NamedTuple, Optional, Union

import attrs

from hermes_sdk import ExecutionContext, HermesError, OperatorResult

from .inbox import Inbox
from .queue import ApprovalQueue

#: The prefix of a resume call's idempotency key and of its approval's ``policy_decision_id``.
RESUME_KEY_PREFIX = "hermes-sdk-inbox"
log = logging.getLogger("hermes_sdk_inbox")


class Resumed(NamedTuple):
    """What :func:`resume_decided` did with one decided operator entry.

    ``result`` is the operator action's :class:`~hermes_sdk.OperatorResult` after the decision
    was sent (``completed``, ``requires_human`` again for the agent's next command, ...), or None
    when nothing was sent (``skipped`` says why) or the call raised (``error``).
    """

    entry_id: str
    action_id: str
    choice: Optional[str]
    result: Optional[OperatorResult]
    error: Optional[HermesError] = None
    skipped: Optional[str] = None


def choice_of(entry: dict[str, Any]) -> str:
    """The run approval choice an entry's decision stands for: ``once`` / ``session`` / ``deny``."""
    decision = entry.get("decision") or {}
    if decision.get("decision") != "approved":
        return "deny"
    return "session" if decision.get("scope") == "session" else "once"


def resume_decided(client: Any, inbox: Union[Inbox, ApprovalQueue, str], *, entry_id: Optional[str] = None,
                   timeout: Optional[float] = None, limit: int = 100) -> list[Resumed]:
    """Send every decided, unsent operator entry's decision and follow its action (see the module doc).

    Args:
        client: a :class:`~hermes_sdk.HermesClient` on the action's endpoint and idempotency store.
        inbox: the inbox (or its queue or store URL).
        entry_id: only this entry (e.g. from the blueprint's ``on_decision`` hook).
        timeout: seconds each resumed action is followed (``operate(timeout=...)``, default the
            operator's 900 s); the answer is sent either way, a run still going then comes back
            ``outcome_unknown`` and ``operate(resume=action_id)`` follows it again.
        limit: at most this many entries per call.

    Returns:
        one :class:`Resumed` per entry looked at, oldest first.
    """
    box = inbox if isinstance(inbox, Inbox) else Inbox(inbox)
    decided: list[dict[str, Any]] = []
    for state in ("approved", "denied"):
        decided += [e for e in box.queue.list(state=state, limit=max(limit * 4, 200))
                    if e.get("kind") == "operator" and e.get("open_key") is not None
                    and (entry_id is None or e["id"] == entry_id)]
    decided.sort(key=lambda e: (float(e["requested_at"]), e["id"]))
    done: list[Resumed] = []
    for entry in decided[:limit]:
        done.append(_resume_one(client, box, entry, timeout))
    return done


def _resume_one(client: Any, box: Inbox, entry: dict[str, Any], timeout: Optional[float]) -> Resumed:
    action_id = str((entry.get("operator") or {}).get("action_id") or "")
    choice = choice_of(entry)
    stale = box._stale(entry)
    if stale is None and box.clock() >= float(entry["expires_at"]):
        stale = "Hermes' approval timeout passed before the decision was sent (Hermes blocked the command)"
    if stale is not None or not action_id:
        why = stale or "the entry names no operator action"
        box._close(entry, state=entry["state"], reason=f"{why}; nothing was sent")
        return Resumed(entry["id"], action_id, choice, None, skipped=why)
    resume_key = f"{RESUME_KEY_PREFIX}:{entry['id']}"
    if not box.consume(entry, resume_key):
        return Resumed(entry["id"], action_id, choice, None, skipped="taken by another worker")
    decision = entry["decision"]
    reason = decision.get("reason") or entry.get("reason") or "decided in the approval inbox"
    answer = {"resume": {"source_action_id": action_id, "choice": choice, "resolve_all": False}}
    result: Optional[OperatorResult] = None
    error: Optional[HermesError] = None
    try:
        approval = client.approval_request("operator", answer, reason=reason,
                                           endpoint=entry.get("endpoint_id") or None).approve(
            approver=decision.get("authenticated_as") or decision["approver"], policy_decision_id=resume_key,
            reason=reason)
        result = client.operate(resume=action_id, choice=choice, idempotency_key=resume_key, approval=approval,
                                reason=reason, endpoint=entry.get("endpoint_id") or None, timeout=timeout,
                                execution_context=_context_of(client, entry))
    except HermesError as exc:
        error = exc
    box.record_resume(entry["id"], {
        "at": time.time(), "choice": choice, "idempotency_key": resume_key,
        "status": result.status if result is not None else "error",
        "run_id": result.run_id if result is not None else None,
        "error": (result.error.to_dict() if result is not None and result.error is not None
                  else error.to_dict() if error is not None else None)})
    return Resumed(entry["id"], action_id, choice, result, error)


def _context_of(client: Any, entry: dict[str, Any]) -> Any:
    """The context to resume under: the client's, with the tenant the action was started in (an
    operator action is found only under its own endpoint and tenant)."""
    tenant = entry.get("tenant_id")
    context = client.context
    if not tenant or (context is not None and context.tenant_id == tenant):
        return None
    return attrs.evolve(context, tenant_id=tenant) if context is not None else ExecutionContext(tenant_id=tenant)


class ResumeWorker:
    """A thread that runs :func:`resume_decided` every ``interval`` seconds, and at once when woken.

    Give ``worker.wake`` as the blueprint's ``on_decision`` hook so a decision is sent within
    milliseconds; the interval catches decisions made in another process. ``hermes-sdk-inbox
    serve --resume`` and ``hermes-sdk-inbox resume --watch`` run one.
    """

    def __init__(self, client: Any, inbox: Union[Inbox, ApprovalQueue, str], *, interval: float = 2.0,
                 timeout: Optional[float] = None) -> None:
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval > 0:
            raise ValueError("interval must be a positive number of seconds")
        self.client = client
        self.inbox = inbox if isinstance(inbox, Inbox) else Inbox(inbox)
        self.interval = float(interval)
        self.timeout = timeout
        self.resumed: list[Resumed] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def wake(self, entry: Optional[dict[str, Any]] = None) -> None:
        """Look for decided entries now (the ``on_decision`` hook's signature)."""
        self._wake.set()

    def run_once(self) -> list[Resumed]:
        done = resume_decided(self.client, self.inbox, timeout=self.timeout)
        self.resumed.extend(done)
        del self.resumed[:-1000]
        for item in done:
            log.info("hermes-sdk-inbox: entry %s: %s %s -> %s", item.entry_id, item.action_id, item.choice,
                     item.result.status if item.result is not None else item.skipped or item.error)
        return done

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.clear()
            try:
                self.run_once()
            except Exception:
                log.exception("hermes-sdk-inbox: resuming decided entries failed; trying again")
            self._wake.wait(self.interval)

    def start(self) -> "ResumeWorker":
        self._thread = threading.Thread(target=self._loop, name="hermes-sdk-inbox-resume", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: Optional[float] = None) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
