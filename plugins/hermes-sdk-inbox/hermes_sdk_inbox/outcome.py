"""What became of a decided run: the inbox closes the loop for the operator who decided.

A decided run entry shows the run's status as Hermes reports it (``GET /v1/runs/{id}`` through the
SDK, with the Hermes client the inbox was given): ``completed``, ``failed``, ``cancelled`` (blocked
or stopped), or still running. A final status is kept with the entry (``outcome``), so later views
and ``hermes-sdk-inbox list`` show it without asking again; without a client the page says that the
inbox cannot know.
"""

from __future__ import annotations

import time
from typing import Any, Optional

from hermes_sdk import HermesError
from hermes_sdk.plugin import Redactor

from .queue import identifiers_of

FINAL = frozenset({"completed", "failed", "cancelled", "interrupted"})
#: How long the page waits for Hermes' answer (seconds): a slow server must not hold the page.
ASK_TIMEOUT = 3.0
_scrubber = Redactor()
NO_CLIENT = "not known to the inbox: it was not given a Hermes client (hermes-sdk-inbox documentation: 'Serving it')"


def run_outcome(inbox: Any, entry: dict[str, Any], client: Any) -> Optional[dict[str, Any]]:
    """The run's outcome for a decided run entry (``status``, ``checked_at``, ``note``), else None."""
    if entry.get("kind") != "run" or not entry.get("decision"):
        return None
    known = entry.get("outcome")
    if isinstance(known, dict) and known.get("status") in FINAL:
        return known
    run_id = identifiers_of(entry).get("run_id")
    if client is None or not run_id:
        return known if isinstance(known, dict) else {"status": None, "checked_at": None, "note": NO_CLIENT}
    now = time.time()
    try:
        status = client.runs.get(run_id, endpoint=entry.get("endpoint_id") or None, timeout=ASK_TIMEOUT)
    except HermesError as exc:
        return {"status": None, "checked_at": now, "note": f"Hermes could not say ({exc.code})"}
    outcome: dict[str, Any] = {"status": status.status, "checked_at": now, "note": None}
    if status.status == "failed" and status.error:
        # Hermes' error text may echo the key (or ids, a credential): shown and stored scrubbed,
        # cut after scrubbing (a cut first could leave part of a key).
        outcome["note"] = _scrubber.text(str(status.error))[:300]
    if status.status in FINAL:
        try:
            inbox.record_outcome(entry["id"], outcome)
        except Exception:  # shown now; asked again on the next view
            pass
    return outcome


def describe(outcome: Optional[dict[str, Any]]) -> str:
    """One line for the operator: what the run did after the decision."""
    if outcome is None:
        return ""
    status = outcome.get("status")
    if status is None:
        return str(outcome.get("note") or "not known")
    words = {"completed": "completed", "failed": "failed", "cancelled": "cancelled (stopped or blocked)",
             "interrupted": "interrupted (Hermes shut down)",
             "waiting_for_approval": "still running: waiting for an approval",
             "stopping": "stopping"}.get(status, "still running")
    # (scrubbed again: an outcome an earlier version stored kept Hermes' error as it came)
    return words + (f": {_scrubber.text(str(outcome['note']))}" if outcome.get("note") else "")
