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

from hermes_sdk.errors import ApprovalNotActiveError, ApprovalNotPendingError, HermesError, OperatorRunError
from hermes_sdk.plugin import ApprovalProvider, Deadline, ExecutionContext, HermesStream, StreamEvent, deadline_epoch
from hermes_sdk.plugin import ask_approval_provider as ask_provider

from .events import ApprovalRequested, parse_run_event
from .run import choice_for, event_command

if TYPE_CHECKING:
    from .resource import Runs

log = logging.getLogger("hermes_sdk")
S = TypeVar("S", bound=HermesStream)


#: Approval requests kept while the stream's own id is not known yet (Hermes sends its first chunk,
#: with the id, before any): past this many, an early request is dropped, never answered.
EARLY_MAX = 8
#: What a chat completion's id starts with: the run id of a streamed turn's approvals (0.21+).
COMPLETION_PREFIX = "chatcmpl-"


class StreamApprovals:
    """Answers a chat stream's approval requests through the approval provider (one per stream).

    Only a request about this stream's own completion is answered, and only once its id is known
    (the first data chunk's ``id``, a ``chatcmpl-…`` id): one that names another id is not this
    turn's, and answering it would approve a command of another conversation or run. A request
    that comes before the id is kept (at most :data:`EARLY_MAX`) and answered when the id arrives
    and matches; every other one is dropped, logged (the ids, never the command) and listed in
    :attr:`dropped` as ``(request, reason)``, and nothing is sent for it. Without a provider, or
    when it returns None, the request is left to Hermes' timeout (BLOCKED). Each answered request
    shows in :attr:`answered` as ``(request, choice)``.
    """

    def __init__(self, runs: "Runs", provider: Optional[ApprovalProvider], endpoint: Optional[str],
                 context: Optional[ExecutionContext], deadline: Optional[float]) -> None:
        self._runs = runs
        self._provider = provider
        self._endpoint = endpoint
        self._context = context
        self._deadline = deadline
        self._completion_id: Optional[str] = None
        self._early: list[ApprovalRequested] = []
        self.answered: list[tuple[ApprovalRequested, str]] = []
        self.dropped: list[tuple[ApprovalRequested, str]] = []

    #: Whether the stream shows this every event: only until the completion id is known, then
    #: only named ones (an approval request is ``event: approval.request``).
    every = True

    def __call__(self, event: StreamEvent) -> None:
        data = event.data
        if not isinstance(data, dict):
            return
        if event.event == "approval.request":
            request = parse_run_event({**data, "event": "approval.request"})
            if isinstance(request, ApprovalRequested):
                self._request(request)
            return
        if self._completion_id is None and event.event is None and isinstance(data.get("id"), str):
            self._completion_id = data["id"]  # the chunks' id: the turn's run id at Hermes
            self.every = False
            early, self._early = self._early, []
            for request in early:
                self._request(request)

    def _request(self, request: ApprovalRequested) -> None:
        own = self._completion_id
        if own is None:
            if len(self._early) < EARLY_MAX:
                self._early.append(request)  # answered once the id is known, if it is ours
            else:
                self._drop(request, "too_many_before_id")
        elif request.run_id != own:
            self._drop(request, "another_id")
        elif not own.startswith(COMPLETION_PREFIX):
            self._drop(request, "not_a_completion_id")  # a stream naming itself a run: not a chat turn's
        else:
            self._answer(request)

    def _drop(self, request: ApprovalRequested, reason: str) -> None:
        self.dropped.append((request, reason))
        # The ids only: the command may hold secrets.
        log.warning("hermes_sdk: a chat stream's approval request was not answered (%s): request %r names %r, "
                    "the stream is %r", reason, (request.request_id or "")[:64], (request.run_id or "")[:64],
                    (self._completion_id or "")[:64])

    def ended(self) -> None:
        """The stream settled: requests still kept for an id that never came are dropped."""
        early, self._early = self._early, []
        for request in early:
            self._drop(request, "stream_ended_before_id")

    def _answer(self, request: ApprovalRequested) -> None:
        """Ask the provider and send its answer. A failure of either ends the stream with it (typed,
        ``details["reason"] == "stream_approval_failed"``, uncertain: the turn may have run)."""
        provider = self._provider
        if not request.run_id or provider is None:
            return
        try:
            self._ask_and_send(request, request.run_id, provider)
        except HermesError as exc:
            raise unanswered(exc) from exc

    def _ask_and_send(self, request: ApprovalRequested, run_id: str, provider: ApprovalProvider) -> None:
        runs = self._runs
        approval = runs.approval_request(run_id, event_command(request), reason=request.description,
                                         endpoint=self._endpoint, pattern_key=request.pattern_key)
        decision = ask_provider(provider, approval)
        if decision is None:
            return  # left to Hermes' own timeout; the caller may answer with client.runs.approve()
        choice = choice_for(decision, approval, request, runs.allow_permanent_approvals)
        try:
            runs.approve(run_id, choice, request_id=request.request_id, endpoint=self._endpoint,
                         context=self._context, deadline=self._deadline)
        except (ApprovalNotPendingError, ApprovalNotActiveError) as exc:
            # Resolved meanwhile (timed out, answered elsewhere, or the turn ended): nothing approved.
            log.info("hermes_sdk: a chat stream's approval was no longer pending (%s)", type(exc).__name__)
            return
        except OperatorRunError:
            self._drop(request, "operator_run")  # the stream names an operator's run: its gate refused, unsent
            return
        self.answered.append((request, choice))


def unanswered(exc: HermesError) -> HermesError:
    """The stream's own error for an approval it could not answer: the same class (a provider's
    ``PluginError``, Hermes' ``ServerError`` for a 503...), uncertain, saying what failed."""
    return type(exc)(
        f"a chat stream's approval request could not be answered ({type(exc).__name__}: {exc.message}); "
        "the turn may have run or may still be waiting", code=exc.code, category=exc.category,
        uncertain_outcome=True,
        details={**{k: v for k, v in exc.details.items() if k in ("hook", "plugin", "exception", "provider_error")},
                 "reason": "stream_approval_failed", "approval_error": type(exc).__name__,
                 "approval_http_status": exc.http_status})


def answer_approvals(stream: S, runs: "Runs", provider: Optional[ApprovalProvider], endpoint: Optional[str],
                     context: Optional[ExecutionContext], deadline: Deadline) -> S:
    """Attach a :class:`StreamApprovals` to a live chat stream (``provider`` None: the client's)."""
    if not stream.replayed:
        chosen = provider if provider is not None else runs.approval_provider
        stream._on_event = StreamApprovals(runs, chosen, endpoint, context, deadline_epoch(deadline))
    return stream


__all__ = ["StreamApprovals", "answer_approvals"]
