"""What an operator is shown (Flask's test client; the browser test drives the same page in Chromium)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from flask import Flask
from hermes_sdk_inbox import Inbox, InboxProvider, MemoryQueue, inbox_blueprint

from hermes_sdk import ExecutionContext, HermesClient, hookimpl

RUN = "run_1234567890abcdef"


class HideObjectives:
    """A deployment's redaction policy: objectives are never shown."""

    @hookimpl
    def hermes_redaction_filters(self, client: Any) -> Any:
        return [lambda key, text: "[HIDDEN]" if key == "objective" else text]


@pytest.fixture
def sdk() -> Any:
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False,
                          context=ExecutionContext(principal_id="user-7", tenant_id="acme"))
    yield client
    client.close()


def page_of(inbox: Inbox, path: str) -> Any:
    app = Flask("host")
    app.config["SECRET_KEY"] = "s"
    app.register_blueprint(inbox_blueprint(inbox, authenticate=lambda r: "alice"))
    return app.test_client().get(path)


def field(html: str, name: str) -> str:
    match = re.search(r'id="%s"[^>]*>(.*?)</' % re.escape(name), html, re.S)
    assert match, name
    return match.group(1)


def observed(provider: InboxProvider, **data: Any) -> None:
    """What the provider, as a plugin, sees of Hermes' approval.request (redacted: names, bools, numbers)."""
    class Invocation:
        operation = "run_events"
    provider.hermes_stream_event(Invocation(), {"data": {"event": "approval.request", "pattern_key": "recursive delete",
                                                         **data}})


def submit_run(sdk: HermesClient, provider: InboxProvider, objective: str = "clean the scratch dir") -> dict[str, Any]:
    request = sdk.runs.approval_request(RUN, "rm -r /scratch/cache", reason="recursive delete",
                                        pattern_key="recursive delete", session_id="sess-42", objective=objective)
    return provider.inbox.submit(request, run=provider._run_info(request), expires_at=time.time() + 60)


def test_a_run_entry_shows_objective_endpoint_tenant_principal_session_and_time_left(sdk: HermesClient) -> None:
    provider = InboxProvider(MemoryQueue())
    entry = submit_run(sdk, provider, objective="clean the scratch dir; key sk-abcdefghijkl0123 is not for you")
    html = page_of(provider.inbox, f"/{entry['id']}").text
    assert field(html, "objective") == "clean the scratch dir; key [REDACTED] is not for you"  # scrubbed like logs
    assert (field(html, "endpoint"), field(html, "tenant"), field(html, "principal")) == ("default", "acme", "user-7")
    assert field(html, "session") == "sess-42"
    # Hermes' pattern text is labelled as Hermes', not as a reason someone gave, and shown once: its
    # description is the same text, so it has no row of its own
    assert field(html, "pattern") == "recursive delete" and "Caller&#39;s reason" not in html
    assert 'id="description"' not in html and html.count("recursive delete") == 1
    assert entry["reason"] is None and entry["run"]["description"] == "recursive delete"
    left = int(re.search(r'id="time-left" class="left" data-seconds="(\d+)"', html).group(1))  # type: ignore[union-attr]
    assert 55 <= left <= 60 and "Hermes blocks it" in html
    # the detail page never reloads under an operator typing a reason; the list does, without script
    assert 'http-equiv="refresh"' not in html and "<script" not in html
    listing = page_of(provider.inbox, "/")
    assert '<meta http-equiv="refresh" content="5">' in listing.text and "<script" not in listing.text
    assert "script-src" not in listing.headers["Content-Security-Policy"]  # default-src 'none': no script at all
    assert re.search(r'class="left" data-seconds="\d+">\d+ s</span> <small>until Hermes blocks it', listing.text)


def test_an_objective_is_text_never_markup(sdk: HermesClient) -> None:
    provider = InboxProvider(MemoryQueue())
    entry = submit_run(sdk, provider, objective='<script>alert(1)</script><img src=x onerror="alert(2)">')
    html = page_of(provider.inbox, f"/{entry['id']}").text
    assert "<script>alert" not in html and "<img" not in html and "&lt;script&gt;alert(1)" in field(html, "objective")


def test_the_redaction_policy_decides_what_of_the_objective_is_shown() -> None:
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False, plugins=[HideObjectives()])
    provider = InboxProvider(MemoryQueue())
    entry = submit_run(client, provider, objective="move the payroll export to the public bucket")
    assert entry["objective"] == "[HIDDEN]"
    assert field(page_of(provider.inbox, f"/{entry['id']}").text, "objective") == "[HIDDEN]"
    client.close()


@pytest.mark.parametrize("seen, choices, buttons", [
    ({}, "once, session, always, deny", {"approve_once", "approve_session", "deny"}),
    ({"allow_permanent": False}, "once, session, deny", {"approve_once", "approve_session", "deny"}),  # tirith
    ({"smart_denied": True, "allow_permanent": False}, "once, deny", {"approve_once", "deny"}),
])
def test_the_buttons_are_choices_hermes_accepts(sdk: HermesClient, seen: dict[str, Any], choices: str,
                                                buttons: set[str]) -> None:
    provider = InboxProvider(MemoryQueue())
    observed(provider, **seen)
    entry = submit_run(sdk, provider)
    html = page_of(provider.inbox, f"/{entry['id']}").text
    assert field(html, "choices").split("<")[0].strip() == choices and entry["run"]["choices_observed"] is True
    assert set(re.findall(r'name="action" value="(\w+)"', html)) == buttons


def test_choices_the_inbox_did_not_see_are_labelled_assumed(sdk: HermesClient) -> None:
    provider = InboxProvider(MemoryQueue())
    entry = submit_run(sdk, provider)
    assert entry["run"]["choices_observed"] is False
    html = page_of(provider.inbox, f"/{entry['id']}").text
    assert "(assumed: the inbox did not see Hermes' request" in html.replace("&#39;", "'")


def test_a_call_entry_keeps_the_callers_reason_and_its_expiry(sdk: HermesClient) -> None:
    inbox = Inbox(MemoryQueue())
    entry = inbox.submit(sdk.approval_request("response_delete", {"response_id": "resp_1"}, reason="GDPR ticket 9"))
    html = page_of(inbox, f"/{entry['id']}").text
    assert field(html, "reason") == "GDPR ticket 9" and 'id="objective"' not in html
    assert (field(html, "tenant"), field(html, "principal")) == ("acme", "user-7")
    assert re.search(r'id="time-left" class="left" data-seconds="(8\d\d|9\d\d)">1[45] min', html)
    assert set(re.findall(r'name="action" value="(\w+)"', html)) == {"approve_once", "deny"}
