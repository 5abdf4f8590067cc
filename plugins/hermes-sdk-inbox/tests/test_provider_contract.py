"""The inbox's provider passes the kit's ApprovalProviderContract on every queue backend: a person's
decision (``Inbox.decide``, as the page and the CLI make it) answers exactly the request it was
made on, and a request nobody decided is refused at once (``wait=0``)."""

from __future__ import annotations

from typing import Any

import pytest
from hermes_sdk_inbox import InboxProvider, queue_from_url

from hermes_sdk.testing.contracts import ApprovalProviderContract


class TestInboxProvider(ApprovalProviderContract):
    undecided_within = 10.0

    @pytest.fixture(autouse=True)
    def _queue(self, queue_url: Any) -> None:
        self.queue = queue_from_url(queue_url) if isinstance(queue_url, str) else queue_url

    def make_provider(self) -> InboxProvider:
        return InboxProvider(self.queue)

    def decide(self, provider: Any, request: Any, decision: str) -> None:
        entry = provider.inbox.submit(request)  # the entry the provider finds when asked (same input hash)
        provider.inbox.decide(entry["id"], decision=decision, approver="alice", reason="checked the ticket",
                              input_hash=request.input_hash)
