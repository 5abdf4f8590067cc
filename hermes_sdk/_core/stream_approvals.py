"""Approvals asked on a streamed chat turn (Hermes 0.21+).

A streamed ``/v1/chat/completions`` turn whose agent needs an approval sends
``event: approval.request`` with ``run_id`` set to the completion's ``chatcmpl-…`` id and waits
(``approvals.timeout``, 60 s by default); the answer goes to ``POST /v1/runs/{chatcmpl id}/approval``
with the request's ``request_id`` (``spec/hermes-next.md``). The stream's reader hands each such
request to the approval provider, as a run's are, and sends the provider's answer. Hermes 0.19
and 0.20 never send it (their streamed turn returns a ``pending_approval`` tool result instead).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Optional, TypeVar

from ..errors import ApprovalNotActiveError, ApprovalNotPendingError
from .approval import ApprovalProvider
from .endpoints import Deadline, ExecutionContext, deadline_epoch
from .events import ApprovalRequested, RunEvent, parse_run_event
from .models import StreamEvent
from .runs import choice_for
from .stages.approval import ask_provider
from .streaming import HermesStream

if TYPE_CHECKING:
    from .resources.runs import Runs

log = logging.getLogger("hermes_sdk")
S = TypeVar("S", bound=HermesStream)


class StreamApprovals:
    """Answers a chat stream's approval requests through the approval provider (one per stream).

    Only a request about this stream's own completion is answered: one that names another id is
    not this turn's, and answering it would approve a command of another conversation. Without a
    provider, or when it returns None, the request is left to Hermes' timeout (BLOCKED). Each
    answered request shows in :attr:`answered` as ``(request, choice)``.
    """

    def __init__(self, runs: "Runs", provider: Optional[ApprovalProvider], endpoint: Optional[str],
                 context: Optional[ExecutionContext], deadline: Optional[float]) -> None:
        self._runs = runs
        self._provider = provider
        self._endpoint = endpoint
        self._context = context
        self._deadline = deadline
        self._completion_id: Optional[str] = None
        self.answered: list[tuple[ApprovalRequested, str]] = []

    #: Whether the stream shows this every event: only until the completion id is known, then
    #: only named ones (an approval request is ``event: approval.request``).
    every = True

    def __call__(self, event: StreamEvent) -> None:
        data = event.data
        if not isinstance(data, dict):
            return
        if event.event != "approval.request":
            if self._completion_id is None and isinstance(data.get("id"), str):
                self._completion_id = data["id"]  # the chunks' id: the turn's run id at Hermes
                self.every = False
            return
        self._answer(parse_run_event({**data, "event": "approval.request"}))

    def _answer(self, request: RunEvent) -> None:
        if not isinstance(request, ApprovalRequested) or not request.run_id or self._provider is None:
            return
        if self._completion_id is not None and request.run_id != self._completion_id:
            log.warning("hermes_sdk: a chat stream sent an approval request about another completion; not answered")
            return
        runs = self._runs
        approval = runs.approval_request(request.run_id, request.command, reason=request.description,
                                         endpoint=self._endpoint, pattern_key=request.pattern_key)
        decision = ask_provider(self._provider, approval)
        if decision is None:
            return  # left to Hermes' own timeout; the caller may answer with client.runs.approve()
        choice = choice_for(decision, approval, request, runs.allow_permanent_approvals)
        try:
            runs.approve(request.run_id, choice, request_id=request.request_id, endpoint=self._endpoint,
                         context=self._context, deadline=self._deadline)
        except (ApprovalNotPendingError, ApprovalNotActiveError) as exc:
            # Resolved meanwhile (timed out, answered elsewhere, or the turn ended): nothing approved.
            log.info("hermes_sdk: a chat stream's approval was no longer pending (%s)", type(exc).__name__)
            return
        self.answered.append((request, choice))


def answer_approvals(stream: S, runs: "Runs", provider: Optional[ApprovalProvider], endpoint: Optional[str],
                     context: Optional[ExecutionContext], deadline: Deadline) -> S:
    """Attach a :class:`StreamApprovals` to a live chat stream (``provider`` None: the client's)."""
    if not stream.replayed:
        chosen = provider if provider is not None else runs._executor.runtime.approval_provider
        stream._on_event = StreamApprovals(runs, chosen, endpoint, context, deadline_epoch(deadline))
    return stream


__all__ = ["StreamApprovals", "answer_approvals"]
