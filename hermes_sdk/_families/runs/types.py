"""The runs family's result types: a start's 202, the run object, an approval's and a steer's answer,
and how a run ended (:class:`RunResult`)."""

from __future__ import annotations

import threading
from typing import Any, Optional

import attrs

from hermes_sdk.errors import InvalidResponseError
from hermes_sdk.plugin import NO_CONTEXT, DecodeContext, HermesStream, json_object, one, opt_str, read, shape

from .events import MessageDelta, RunEvent, ToolCompleted, ToolStarted

#: The statuses a run ends in. ``started`` exists only in the 202; ``queued`` is practically never seen;
#: ``interrupted`` (0.21+) is a run the gateway's shutdown ended.
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "interrupted"})
RUN_STATUSES = ("queued", "running", "waiting_for_approval", "stopping", "completed", "failed", "cancelled",
                "interrupted")
@shape("a run start reply", required=("run_id",), malformed="the run start reply has no run_id",
       keys={"server_replayed": "replayed"})
@attrs.frozen
class RunStarted:
    """The 202 of ``run_start``: the run id (``status`` is ``started``, a value seen only here).

    ``replayed`` is True when the SDK's idempotency store answered: the same run as the first call
    with this key, and nothing was sent. ``server_replayed`` is True when the server answered a
    resent start with the run the key had already started (Hermes 0.21+: ``"replayed": true``).
    """

    run_id: str
    status: str = "started"
    session_key: Optional[str] = None
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)
    server_replayed: bool = attrs.field(default=False, kw_only=True, eq=False)

    @property
    def id(self) -> str:
        """The run id: the same as ``run_id`` (the canonical name), for code written against :class:`Run`."""
        return self.run_id


@shape("a run object", required=("run_id", "status"), malformed="the run object has no run_id or status")
@attrs.frozen
class RunStatus:
    """The run object of ``GET /v1/runs/{id}`` (or the 200 of ``/stop``).

    ``output`` and ``usage`` are set only when ``completed`` (``output`` may still be None: a
    completed run can hide a denied or timed-out command); ``error`` only when ``failed``.
    ``approval`` is the pending approval request while ``waiting_for_approval`` (0.21+), and
    ``runtime``, ``completed``, ``partial``, ``interrupted`` are a newer server's terminal fields.
    """

    run_id: str
    status: str
    created_at: Optional[float] = None
    updated_at: Optional[float] = None
    session_id: Optional[str] = None
    model: Optional[str] = None
    last_event: Optional[str] = None
    output: Optional[str] = None
    usage: Optional[dict[str, Any]] = None
    error: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)
    approval: Optional[dict[str, Any]] = attrs.field(default=None, repr=False, eq=False)
    runtime: Optional[dict[str, Any]] = attrs.field(default=None, eq=False)
    completed: Optional[bool] = attrs.field(default=None, eq=False)
    partial: Optional[bool] = attrs.field(default=None, eq=False)
    interrupted: Optional[bool] = attrs.field(default=None, eq=False)

    @property
    def id(self) -> str:
        """The run id: the same as ``run_id`` (the canonical name), for code written against :class:`Run`."""
        return self.run_id

    @property
    def terminal(self) -> bool:
        """Whether the run has ended (completed, failed, cancelled or interrupted)."""
        return self.status in TERMINAL_STATUSES


@shape("an approval reply", required=("run_id",), malformed="the approval reply has no run_id")
@attrs.frozen
class ApprovalAnswer:
    """The 200 of ``run_approval``: the choice as Hermes normalised it and how many it resolved."""

    run_id: str
    choice: str
    resolved: int


@shape("a steer reply")
@attrs.frozen
class SteerAnswer:
    """The 200 of ``run_steer``: whether Hermes took the message into the running agent."""

    run_id: str
    accepted: bool
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)


@attrs.define
class RunResult:
    """How a run ended, as far as this client saw it.

    ``output`` is the server's final output (it lacks the ``"\\n\\n"`` the deltas carry after a
    tool turn); ``text`` joins the ``MessageDelta`` pieces (``ReasoningAvailable`` never enters it).
    ``events_complete`` is True only when ``events`` holds every event of the run, each once; it is
    False when the events stream broke (the SDK then polled the status), was never subscribed (a
    replayed start), or a resumed stream skipped, renumbered or replayed events in a way that
    cannot be checked; ``events_note`` then says why (None when complete). A status that is not
    terminal means the deadline passed first: the run goes on at Hermes.
    """

    run_id: str
    status: str
    output: Optional[str] = None
    usage: Optional[dict[str, Any]] = None
    error: Optional[str] = None
    events: list[RunEvent] = attrs.field(factory=list)
    events_complete: bool = False
    events_note: Optional[str] = None

    @property
    def id(self) -> str:
        """The run id: the same as ``run_id`` (the canonical name), for code written against :class:`Run`."""
        return self.run_id

    @property
    def done(self) -> bool:
        """Whether the run ended (completed, failed or cancelled)."""
        return self.status in TERMINAL_STATUSES

    @property
    def ok(self) -> bool:
        """Whether the run completed (a denied command still completes: inspect ``tools``)."""
        return self.status == "completed"

    @property
    def text(self) -> str:
        """The streamed assistant text: the ``MessageDelta`` pieces joined."""
        return "".join(e.delta for e in self.events if isinstance(e, MessageDelta))

    @property
    def tools(self) -> list[RunEvent]:
        """The ``ToolStarted`` and ``ToolCompleted`` events, in order."""
        return [e for e in self.events if isinstance(e, (ToolStarted, ToolCompleted))]


def run_started(data: object, ctx: DecodeContext = NO_CONTEXT) -> RunStarted:
    """Decode the 202 of ``POST /v1/runs`` (or its record, when replayed); the session key is the
    reply's, else its ``X-Hermes-Session-Key`` header."""
    obj = json_object(data, "a run start reply")
    if not obj.get("run_id"):
        raise InvalidResponseError("the run start reply has no run_id")
    return read(RunStarted, obj, ctx, session_key=opt_str(obj.get("session_key")) or ctx.headers.get(
        "X-Hermes-Session-Key"))


#: A run object (fields Hermes leaves out stay None).
run_status = one(RunStatus)
#: The 200 of ``POST /v1/runs/{id}/approval``.
approval_answer = one(ApprovalAnswer)
#: The 200 of ``POST /v1/runs/{id}/steer`` (its run id is the one asked about).
steer_answer = one(SteerAnswer)



class RunEventStream(HermesStream):
    """A ``run_events`` subscription: data-only SSE (the event type is the JSON ``event`` field, no
    ``[DONE]``); it ends after ``run.completed|failed|cancelled`` with the comment ``: stream closed``.

    Hermes has one queue per run and no resume: never open a second one for the same run
    (:class:`~hermes_sdk.types.Run` holds the only one, read on a thread of its own).
    """

    #: The thread that reads this stream (set by :class:`~hermes_sdk.types.Run`), or None.
    owner: Optional[threading.Thread] = None

    def close(self) -> None:
        """Cancel the subscription; from another thread than its reader, only interrupt the read
        (the reader settles the stream: two threads must never read one socket)."""
        owner = self.owner
        if owner is not None and owner is not threading.current_thread() and owner.is_alive():
            if self._result is None:
                self.abort()
            return
        super().close()


__all__ = ["ApprovalAnswer", "RunResult", "RunStarted", "RunEventStream", "RunStatus", "SteerAnswer",
           "TERMINAL_STATUSES"]
