"""Filters reach every row: an old entry behind hundreds of newer ones is found by id, kind, operation
and state, on every backend, in the API, the page and the CLI."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from hermes_sdk_inbox import Inbox, MemoryQueue, queue_from_url
from hermes_sdk_inbox.cli import main as cli_main

NEWER = 450  # more than the ~400 rows the filters used to look at


def _entry(n: int, at: float, **over: Any) -> dict[str, Any]:
    entry = {"id": f"inb_{n:06d}", "version": 1, "state": "approved", "kind": "call",
             "capability_id": "cap:hermes_agent:default:job_pause", "endpoint_id": "default",
             "operation": "job_pause", "open_key": None, "requested_at": at, "expires_at": at + 3600,
             "identifiers": {"job_id": f"job_{n}"}, "input_snapshot": {}, "input_hash": f"{n:064x}",
             "reason": None, "run": None, "operator": None, "decision": None, "used": None}
    entry.update(over)
    return entry


def _fill(queue: Any) -> dict[str, Any]:
    """One old pending run entry acting on run_old (and a decoy whose reason quotes that id), then
    NEWER newer decided ones."""
    now = time.time()
    old = _entry(0, now - 3000, state="pending", kind="run", operation="run_approval",
                 identifiers={"run_id": "run_old", "pattern_key": "recursive delete"}, open_key="k0")
    decoy = _entry(1, now - 2999, reason='"run_old"', identifiers={"job_id": "job_RUN_OLD"})
    for entry in (old, decoy):
        queue.add(entry)
    for n in range(2, NEWER + 2):
        queue.add(_entry(n, now - 2000 + n))
    return old


def test_filters_reach_an_old_entry_on_every_backend(queue_url: Any) -> None:
    queue = queue_from_url(queue_url) if isinstance(queue_url, str) else queue_url
    old = _fill(queue)
    inbox = Inbox(queue)
    try:
        for found in (inbox.entries(state="pending", identifier="run_old"),
                      inbox.entries(state=None, identifier="run_old"),
                      inbox.entries(state=None, identifier=old["id"]),
                      inbox.entries(state=None, kind="run"),
                      inbox.entries(state=None, operation="run_approval")):
            assert [e["id"] for e in found] == [old["id"]]
        # exact matches only: quoted in another entry's reason, or differing in case, is not a match
        assert inbox.entries(state=None, identifier="RUN_OLD") == []
        assert [e["id"] for e in inbox.entries(state=None, identifier="job_RUN_OLD")] == ["inb_000001"]
        # LIKE's wildcards are literal here
        assert inbox.entries(state=None, identifier="run%") == []
        assert inbox.entries(state=None, identifier="run_ol_") == []
        # in the backend's query: one page holds the match
        assert [e["id"] for e in queue.list(identifier="run_old", limit=5)] == [old["id"]]
        assert [e["id"] for e in queue.list(identifier="job_2", limit=5)] == ["inb_000002"]
        assert queue.list(identifier="run_old", offset=1) == []
        assert len(inbox.entries(state="approved", limit=1000)) == NEWER + 1
    finally:
        inbox.close()


def test_the_expired_filter_reaches_every_row() -> None:
    queue = MemoryQueue()
    old = _fill(queue)
    clock = [old["expires_at"] + 1]
    inbox = Inbox(queue, clock=lambda: clock[0])
    assert [e["id"] for e in inbox.entries(state="expired")] == [old["id"]]


def test_the_page_and_the_cli_find_an_old_entry_by_id(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from flask import Flask
    from hermes_sdk_inbox import inbox_blueprint

    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    inbox = Inbox(store)
    old = _fill(inbox.queue)
    app = Flask("host")
    app.config["SECRET_KEY"] = "s"
    app.register_blueprint(inbox_blueprint(inbox, authenticate=lambda r: "alice"))
    html = app.test_client().get("/?id=run_old").text
    assert old["id"] in html and "Nothing here" not in html
    html = app.test_client().get("/?id=run_old&state=all").text
    assert old["id"] in html
    assert cli_main(["--store", store, "list", "--id", "run_old", "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["id"] for e in lines] == [old["id"]]
    inbox.close()


def test_a_queue_without_the_identifier_filter_is_read_page_by_page() -> None:
    class OldQueue(MemoryQueue):
        def list(self, *, state: Any = None, limit: int = 100, offset: int = 0) -> list[dict[str, Any]]:  # type: ignore[override]
            return super().list(state=state, limit=limit, offset=offset)

    queue = OldQueue()
    old = _fill(queue)
    assert [e["id"] for e in Inbox(queue).entries(identifier="run_old")] == [old["id"]]
