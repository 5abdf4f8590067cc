"""Round 6 (issue 38, item 1): the inbox's SQLite queue keeps its locks while other processes come and go.

A process that dropped its own SQLite locks (by opening and closing the file again) loses its -wal
and -shm when another process's last connection closes: its page then shows "0 pending" while a
request is pending, and a decision it records never reaches the worker. Real processes on one file.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from hermes_sdk_inbox import Inbox

# A worker on the same host: reads the state of one entry, submits one request, closes, exits.
WORKER = textwrap.dedent("""
    import json, sys, time
    from hermes_sdk import ApprovalRequest
    from hermes_sdk_inbox import Inbox
    db, n, look = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    inbox = Inbox("sqlite:///" + db)
    seen = inbox.get(look)["state"] if look != "-" else None
    now = time.time()
    entry = inbox.submit(ApprovalRequest(
        id="aprq_%d" % n, action_id="act_%d" % n, capability_id="cap:hermes_agent:default:job_pause",
        input_snapshot={"job_id": "job_%d" % n}, input_hash="%064x" % n, reason="pause it",
        requested_at=now, expires_at=now + 600, operation="job_pause", identifiers={"job_id": "job_%d" % n}))
    inbox.close()
    print(json.dumps({"id": entry["id"], "seen": seen}))
""")


def worker(db: str, n: int, look: str = "-") -> dict[str, str]:
    done = subprocess.run([sys.executable, "-c", WORKER, db, str(n), look], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, str] = json.loads(done.stdout)
    return out


def test_the_page_sees_what_workers_queue_and_workers_see_what_it_decides(tmp_path: Path) -> None:
    db = str(tmp_path / "inbox.db")
    page = Inbox("sqlite:///" + db)  # the inbox page's process, open the whole time
    assert page.entries() == []
    # The same process opens the file again: an InboxProvider, or resume_decided("sqlite:///..."),
    # builds its own Inbox from the URL. Its checks of the file must leave the page's locks alone.
    beside = Inbox("sqlite:///" + db)
    assert beside.entries() == []
    first = worker(db, 1)  # queues a request, then exits (its last connection closes)
    pending = page.entries()
    assert [e["id"] for e in pending] == [first["id"]]
    page.decide(first["id"], decision="approved", approver="ops", reason="fine",
                input_hash=pending[0]["input_hash"])
    # The next worker sees the decision (it would send the approval), and queues another request.
    second = worker(db, 2, look=first["id"])
    assert second["seen"] == "approved"
    assert [e["id"] for e in page.entries()] == [second["id"]]  # "0 pending" when the page lost its files
    third = worker(db, 3, look=second["id"])
    assert third["seen"] == "pending"
    assert {e["id"] for e in page.entries()} == {second["id"], third["id"]}
    assert [e["id"] for e in beside.entries()] == [e["id"] for e in page.entries()]
    page.close()
    beside.close()
    reopened = Inbox("sqlite:///" + db)
    assert {e["id"]: e["state"] for e in reopened.entries(state=None)} == {
        first["id"]: "approved", second["id"]: "pending", third["id"]: "pending"}
    reopened.close()
