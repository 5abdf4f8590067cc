"""A real browser: headless Chromium (Selenium) answers runs' approvals in the standalone inbox.

Runs against the emulator with tools on ask for ``rm -rf`` on scratch directories; the approval
provider queues each request in a SQLite inbox that ``hermes-sdk-inbox --store ...`` (a separate
process) serves. The browser signs in with the token, sees the pending entry, approves one (the run
finishes, the directory is gone) and denies the other (its file survives).

Skipped only when Chromium or its driver is missing and not under CI (``CI=true`` fails instead).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
from hermes_sdk_inbox import InboxProvider

from hermes_sdk import ExecutionContext, HermesClient
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.emulator import TOOLSETS

pytestmark = [pytest.mark.slow, pytest.mark.browser]

TOKEN = "browser-test-token-0123456789abcdef"
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
DRIVER = shutil.which("chromedriver") or next(
    (p for p in ("/usr/lib/chromium/chromedriver",) if os.path.exists(p)), None)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1280,900")


def _need_browser() -> None:
    missing = [name for name, path in (("chromium", CHROMIUM), ("chromedriver", DRIVER)) if path is None]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium")
    if missing:
        message = (f"browser test needs {', '.join(missing)} "
                   "(apt-get install chromium chromium-driver; pip install selenium)")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    _need_browser()
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager must not look for downloads
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


@contextlib.contextmanager
def _serve(tmp_path: Path, operator: str = "operator",
           hermes: Optional[HermesEmulator] = None) -> Iterator[tuple[str, str]]:
    """The standalone command on a free port, signed in as ``operator``: (base URL, store URL). Stopped by its PID.
    With ``hermes``, it is given that server (HERMES_BASE_URL, HERMES_API_KEY) to show runs' outcomes."""
    store = f"sqlite:///{tmp_path / 'inbox.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    if hermes is not None:
        env.update(HERMES_BASE_URL=hermes.base_url, HERMES_API_KEY=hermes.api_key)
    proc = subprocess.Popen([sys.executable, "-m", "hermes_sdk_inbox.cli", "--store", store, "--port", "0",
                             "--token", TOKEN, "--operator", operator],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, encoding="utf-8", env=env)
    try:
        base = None
        deadline = time.monotonic() + 30
        assert proc.stderr is not None
        while base is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            match = re.search(r"serving (http://127\.0\.0\.1:\d+)/", line)
            if match:
                base = match.group(1)
        assert base, "hermes-sdk-inbox did not start"
        yield base, store
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def inbox_server(tmp_path: Path) -> Iterator[tuple[str, str]]:
    with _serve(tmp_path) as served:
        yield served


def _wait(predicate: Any, timeout: float = 20.0) -> Any:
    from selenium.common.exceptions import WebDriverException

    deadline = time.monotonic() + timeout
    last: Optional[BaseException] = None
    while True:
        try:
            value = predicate()
        # The page navigated between the find and the read, or the next page (a form's answer, a
        # reload) is not there yet: on a busy machine that takes a while, and it is no failure.
        # Besides stale and missing elements, ChromeDriver reports an element read mid-navigation
        # as an "unhandled inspector error" ("Node with given id does not belong to the document").
        except (WebDriverException, IndexError) as exc:
            value, last = None, exc
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting") from last
        time.sleep(0.05)


def _answer_in_browser(driver: Any, base: str, action: str, reason: str) -> dict[str, float]:
    from selenium.webdriver.common.by import By

    marks: dict[str, float] = {}

    def pending_rows() -> Any:
        driver.get(base + "/?state=pending&kind=run")
        return driver.find_elements(By.CSS_SELECTOR, "tr.entry")

    rows = _wait(pending_rows)
    assert "rm -rf /scratch/victim" in rows[0].text and "pending" in rows[0].text
    rows[0].find_element(By.TAG_NAME, "a").click()
    assert driver.find_element(By.ID, "state").text == "pending"
    assert driver.find_element(By.ID, "operation").text.startswith("run_approval (run)")
    assert driver.find_element(By.ID, "pattern").text == "delete in root path"
    assert re.fullmatch(r"[0-9a-f]{64}", driver.find_element(By.ID, "input-hash").text)
    name = driver.find_element(By.ID, "operator-name")
    name.clear()
    name.send_keys("Olga Operator")
    driver.find_element(By.ID, "decision-reason-input").send_keys(reason)
    marks["clicked"] = time.time()
    driver.find_element(By.ID, action).click()
    _wait(lambda: driver.find_element(By.ID, "state").text != "pending")
    return marks


def test_a_person_approves_one_run_and_denies_another_in_chromium(browser: Any,
                                                                  inbox_server: tuple[str, str]) -> None:
    from selenium.webdriver.common.by import By

    base, store = inbox_server
    files = {"/scratch/victim/a/data.txt": "delete me", "/scratch/victim/b/data.txt": "keep me"}
    emulator = HermesEmulator(toolsets=TOOLSETS, files=files, approval_timeout=60).start()
    provider = InboxProvider(store, poll_interval=0.05)
    client = HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False, plugins=[provider])
    try:
        # sign in with the token (the form is CSRF-protected too)
        browser.get(base + "/")
        assert "/login" in browser.current_url
        browser.find_element(By.ID, "token").send_keys(TOKEN)
        browser.find_element(By.ID, "sign-in").click()
        _wait(lambda: browser.find_elements(By.ID, "entries"))

        timings: dict[str, dict[str, float]] = {}
        for label, target, action in (("approved", "a", "approve-once"), ("denied", "b", "deny")):
            outcome: dict[str, Any] = {}

            def follow(target: str = target, outcome: dict[str, Any] = outcome) -> None:
                run = client.run(f"TOOL:terminal:rm -rf /scratch/victim/{target}", idempotency_key=f"browser-{target}")
                outcome["result"] = run.wait(timeout=90)
                outcome["finished"] = time.time()

            worker = threading.Thread(target=follow)
            worker.start()
            marks = _answer_in_browser(browser, base, action, f"reviewed by the browser test ({label})")
            worker.join(timeout=90)
            result = outcome["result"]
            assert result.status == "completed", result
            entry = provider.inbox.entries(state=label, kind="run")[0]
            # the signed-in operator is the approver; the typed name is only shown beside it
            assert entry["decision"]["approver"] == "operator" and entry["decision"]["display_name"] == "Olga Operator"
            assert entry["decision"]["input_hash"] == entry["input_hash"] and entry["used"]
            assert browser.find_element(By.ID, "approver").text == "operator"
            assert browser.find_element(By.ID, "display-name").text == "Olga Operator"
            timings[label] = {"enqueue_to_decision": entry["decision"]["decided_at"] - entry["requested_at"],
                              "click_to_decision": entry["decision"]["decided_at"] - marks["clicked"],
                              "decision_to_run_resumed": entry["used"]["at"] - entry["decision"]["decided_at"],
                              "decision_to_run_finished": outcome["finished"] - entry["decision"]["decided_at"]}
            if label == "approved":
                assert "/scratch/victim/a/data.txt" not in emulator.files
                assert "approved by the user" in str(result.output)
            else:
                assert emulator.files.get("/scratch/victim/b/data.txt") == "keep me"  # it survives
                assert "BLOCKED: Command denied" in str(result.output)
        print("inbox end-to-end timings (s):", {k: {m: round(v, 3) for m, v in t.items()} for k, t in timings.items()})
        assert all(t["decision_to_run_resumed"] < 2 for t in timings.values())
        # the audit trail in the page: both decisions, who and why
        browser.get(base + "/?state=all")
        listing = browser.find_element(By.ID, "entries").text
        assert listing.count("approved") >= 1 and listing.count("denied") >= 1
    finally:
        client.close()
        provider.close()
        emulator.stop()


OPERATOR = "Дана Ковальчук"  # the identity the token signs in as: not ASCII


def _sign_in(driver: Any, base: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(base + "/")
    driver.find_element(By.ID, "token").send_keys(TOKEN)
    driver.find_element(By.ID, "sign-in").click()
    _wait(lambda: driver.find_elements(By.ID, "entries"))


def test_an_operator_named_dana_sees_the_countdown_and_approves_from_the_detail_page(
        browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    files = {"/scratch/victim/c/data.txt": "delete me"}
    emulator = HermesEmulator(toolsets=TOOLSETS, files=files, approval_timeout=60).start()
    with _serve(tmp_path, OPERATOR) as (base, store):
        provider = InboxProvider(store, poll_interval=0.05)
        client = HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False, plugins=[provider],
                              context=ExecutionContext(principal_id="user-7", tenant_id="acme"))
        objective = "TOOL:terminal:rm -rf /scratch/victim/c"
        outcome: dict[str, Any] = {}

        def follow() -> None:
            run = client.run(objective, idempotency_key="browser-dana", session_id="cleanup-session-3")
            outcome["run_id"] = run.id
            outcome["result"] = run.wait(timeout=90)

        worker = threading.Thread(target=follow)
        try:
            _sign_in(browser, base)
            assert browser.find_element(By.ID, "operator").text == OPERATOR
            worker.start()

            # the list: the run's entry counts down to Hermes' own timeout, reloading by itself
            def countdown() -> Any:
                browser.get(base + "/?state=pending&kind=run")
                return browser.find_elements(By.CSS_SELECTOR, "tr.entry .left")

            first = _wait(countdown)[0]
            seconds = int(first.get_attribute("data-seconds"))
            assert 0 < seconds <= 60 and "until Hermes blocks it" in browser.find_element(By.ID, "entries").text
            shown_at = time.monotonic()
            _wait(lambda: browser.find_elements(By.CSS_SELECTOR, "tr.entry .left")[0] != first, timeout=20)
            reloaded_after = time.monotonic() - shown_at  # no browser.get: the page's meta refresh
            later = int(browser.find_elements(By.CSS_SELECTOR, "tr.entry .left")[0].get_attribute("data-seconds"))
            assert later < seconds, (seconds, later)
            print(f"list reloaded itself after {reloaded_after:.1f} s; time left {seconds} s -> {later} s")

            # the detail page: what the agent was asked, where, for whom, and what Hermes accepts
            browser.find_element(By.CSS_SELECTOR, "tr.entry a").click()
            _wait(lambda: browser.find_elements(By.ID, "decide"))
            text = {name: browser.find_element(By.ID, name).text for name in (
                "objective", "endpoint", "tenant", "principal", "session", "pattern", "choices", "time-left")}
            assert text["objective"] == objective
            assert (text["endpoint"], text["tenant"], text["principal"]) == ("default", "acme", "user-7")
            assert text["session"] == "cleanup-session-3"
            assert text["pattern"] == "delete in root path"
            assert not browser.find_elements(By.ID, "description")  # Hermes' description is that text: shown once
            assert not browser.find_elements(By.ID, "reason")  # no "Caller's reason": Hermes gave none
            offered = text["choices"].split()[0:4]
            assert [c.strip(",") for c in offered] == ["once", "session", "always", "deny"]
            buttons = {b.get_attribute("value") for b in browser.find_elements(By.CSS_SELECTOR, "#decide button")}
            assert buttons == {"approve_once", "approve_session", "deny"}  # each one a choice Hermes accepts
            assert 0 < int(browser.find_element(By.ID, "time-left").get_attribute("data-seconds")) <= later
            browser.find_element(By.ID, "decision-reason-input").send_keys("переглянуто: scratch only")
            browser.find_element(By.ID, "approve-once").click()
            _wait(lambda: browser.find_element(By.ID, "state").text == "approved")
            worker.join(timeout=90)
            assert outcome["result"].status == "completed", outcome
            assert "/scratch/victim/c/data.txt" not in emulator.files
            entry = provider.inbox.entries(state="approved", kind="run")[0]
            assert entry["decision"]["authenticated_as"] == OPERATOR
            assert entry["decision"]["reason"] == "переглянуто: scratch only" and entry["used"]
            assert entry["identifiers"]["run_id"] == outcome["run_id"]
        finally:
            worker.join(timeout=90)
            client.close()
            provider.close()
            emulator.stop()


def test_an_operator_approves_a_run_and_then_sees_what_became_of_it(browser: Any, tmp_path: Path) -> None:
    # Issue 33: after the decision the page says who decided, when, and the run's outcome (asked of
    # Hermes by the inbox's own client), instead of the pending entry's "Hermes blocks it at ...".
    from selenium.webdriver.common.by import By

    emulator = HermesEmulator(toolsets=TOOLSETS, files={"/scratch/victim/d/data.txt": "delete me"},
                              approval_timeout=60).start()
    try:
        with _serve(tmp_path, "José Ñúñez", hermes=emulator) as (base, store):
            provider = InboxProvider(store, poll_interval=0.05)
            client = HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False, plugins=[provider],
                                  context=ExecutionContext(principal_id="user-9", tenant_id="acme"))
            outcome: dict[str, Any] = {}

            def follow() -> None:
                run = client.run("TOOL:terminal:rm -rf /scratch/victim/d", idempotency_key="browser-outcome")
                outcome["run_id"] = run.id
                outcome["result"] = run.wait(timeout=90)

            worker = threading.Thread(target=follow)
            try:
                _sign_in(browser, base)
                worker.start()
                rows = _wait(lambda: (browser.get(base + "/?state=pending&kind=run"),
                                      browser.find_elements(By.CSS_SELECTOR, "tr.entry"))[1])
                assert "acme / user-9" in rows[0].text  # the tenant / principal column
                rows[0].find_element(By.TAG_NAME, "a").click()
                assert "Hermes blocks it" in browser.find_element(By.ID, "fields").text
                browser.find_element(By.ID, "decision-reason-input").send_keys("the scratch directory may go")
                browser.find_element(By.ID, "approve-once").click()
                _wait(lambda: browser.find_element(By.ID, "state").text == "approved")
                worker.join(timeout=90)
                assert outcome["result"].status == "completed"

                def outcome_shown() -> Any:
                    browser.refresh()
                    cell = browser.find_element(By.ID, "run-outcome")
                    return cell if cell.get_attribute("data-status") == "completed" else None

                cell = _wait(outcome_shown, timeout=30)
                assert cell.text.startswith("completed") and "as Hermes reported it at" in cell.text
                fields = browser.find_element(By.ID, "fields").text
                assert browser.find_element(By.ID, "approver").text == "José Ñúñez"
                assert re.search(r"approved \(once\) by José Ñúñez\s+at \d{4}-\d\d-\d\d", fields), fields
                assert "Hermes blocks it" not in fields and "by action act_" not in fields
                assert "/scratch/victim/d/data.txt" not in emulator.files  # the approved command ran
                # the list says it too, for the entry the operator decided
                browser.get(base + "/?state=all&kind=run")
                assert "run completed" in browser.find_element(By.ID, "entries").text
            finally:
                worker.join(timeout=90)
                client.close()
                provider.close()
    finally:
        emulator.stop()
