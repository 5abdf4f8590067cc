"""A run's inbox entry lives as long as Hermes waits for the answer (its ``approvals.timeout``, named to
the entry-point wiring by ``HERMES_SDK_INBOX_APPROVAL_TIMEOUT``), not a fixed 60 s; and a page with no
Hermes client says that runs' outcomes cannot be shown. Time is simulated: the provider is given a
clock and a sleep that moves it."""

from __future__ import annotations

from typing import Any, Optional

import attrs
import pytest
from hermes_sdk_inbox import HERMES_APPROVAL_TIMEOUT, Inbox, InboxPlugin, InboxProvider, create_app
from hermes_sdk_inbox.plugin import APPROVAL_TIMEOUT_ENV
from hermes_sdk_inbox.plugin import _approval_timeout as _timeout_from_env

from hermes_sdk import HermesClient, InvalidInputError

START = 1_800_000_000.0
TOKEN = "timeout-test-token-0123456789"


class SimulatedTime:
    """A clock that moves only when the provider sleeps; ``at(t, fn)`` runs fn once t seconds in."""

    def __init__(self) -> None:
        self.now = START
        self.sleeps = 0
        self._due: list[tuple[float, Any]] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.now += seconds
        for due in [d for d in self._due if d[0] <= self.now - START]:
            self._due.remove(due)
            due[1]()

    def at(self, seconds: float, action: Any) -> None:
        self._due.append((seconds, action))


def _run_request(command: str = "rm -rf /scratch/build") -> Any:
    with HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False) as client:
        request = client.runs.approval_request("run_1", command, pattern_key="delete in root path")
    return attrs.evolve(request, requested_at=START, expires_at=START + 900)


def _provider(time: SimulatedTime, timeout: Optional[float] = None) -> InboxProvider:
    options = {} if timeout is None else {"approval_timeout": timeout}
    return InboxProvider("memory:", poll_interval=5, clock=time.clock, sleep=time.sleep, **options)


def _decide(provider: InboxProvider) -> None:
    [entry] = provider.inbox.entries(kind="run")
    provider.inbox.decide(entry["id"], decision="approved", approver="sam", reason="ok",
                          input_hash=entry["input_hash"])


def test_a_decision_made_while_hermes_still_waits_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(APPROVAL_TIMEOUT_ENV, "240")  # the server's approvals.timeout: 240
    time = SimulatedTime()
    provider = _provider(time, _timeout_from_env())
    time.at(200, lambda: _decide(provider))  # the person answers 200 s in: Hermes still waits
    decision = provider.request_approval(_run_request())
    assert decision is not None and decision.decision == "approved"
    [entry] = provider.inbox.entries(state="approved", kind="run")
    assert entry["expires_at"] - entry["requested_at"] == 240
    assert 200 <= time.now - START < 210


def test_with_no_decision_the_entry_closes_when_hermes_stops_waiting() -> None:
    time = SimulatedTime()
    provider = _provider(time, 240)
    assert provider.request_approval(_run_request()) is None  # left to Hermes, which blocks it now
    [entry] = provider.inbox.entries(state="expired", kind="run")
    assert entry["expires_at"] == START + 240 and time.now == START + 240 and time.sleeps == 240 // 5
    # Without the setting: Hermes' default, 60 s.
    default = SimulatedTime()
    provider = _provider(default)
    assert provider.request_approval(_run_request()) is None and default.now == START + HERMES_APPROVAL_TIMEOUT


def test_the_entry_point_wiring_reads_the_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("HERMES_SDK_INBOX_STORE", f"sqlite:///{tmp_path / 'env.db'}")
    monkeypatch.delenv(APPROVAL_TIMEOUT_ENV, raising=False)
    assert InboxPlugin().hermes_approval_provider(client=None).approval_timeout == HERMES_APPROVAL_TIMEOUT
    monkeypatch.setenv(APPROVAL_TIMEOUT_ENV, "240")
    provider = InboxPlugin().hermes_approval_provider(client=None)
    assert provider.approval_timeout == 240.0
    for bad in ("soon", "0", "-5", "inf", "nan"):
        monkeypatch.setenv(APPROVAL_TIMEOUT_ENV, bad)
        with pytest.raises(InvalidInputError, match=APPROVAL_TIMEOUT_ENV) as refused:
            InboxPlugin().hermes_approval_provider(client=None)
        assert refused.value.details["field"] == APPROVAL_TIMEOUT_ENV


def test_a_page_without_a_hermes_client_says_outcomes_cannot_be_shown(tmp_path: Any) -> None:
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    inbox = Inbox(store)
    entry = inbox.submit(_run_request(), run={"command": "rm -rf /scratch/build"}, expires_at=START + 60)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for hermes, shown in ((None, True), (object(), False)):
        web = create_app(inbox, token=TOKEN, hermes=hermes).test_client()
        listing = web.get("/?state=all", headers=headers).text
        detail = web.get(f"/{entry['id']}", headers=headers).text
        for page in (listing, detail):
            assert ('id="no-outcomes"' in page) is shown
            assert ("cannot be shown here: this inbox has no Hermes client" in page) is shown
            assert ("HERMES_BASE_URL" in page) is shown
    inbox.close()
