"""The events only a run sends (``/v1/runs/{id}/events``), and the parser of a run's event payloads.

The events a run shares with chat streams (text pieces, approval requests, ...) are the kernel's
stream events (``hermes_sdk.types``). Correlate ``ToolStarted`` and ``ToolCompleted`` by order:
Hermes runs one run's tools one after another and sends no tool-call id on runs
(``spec/hermes-runs.md`` section 3).
"""

from __future__ import annotations

from typing import ClassVar, Mapping, Optional

import attrs

from hermes_sdk.plugin import (
    ApprovalRequested,
    EventFields,
    MessageDelta,
    RunEvent,
    approval_requested,
    event_fields,
    opt_bool,
    opt_float,
    opt_int,
    opt_object,
    opt_str,
)
from hermes_sdk.plugin import opt_text as text


@attrs.frozen(kw_only=True)
class ToolStarted(RunEvent):
    """A tool began (``tool.started``): ``preview`` is the command of ``terminal``, a file name, ..."""

    tool: str = ""
    preview: Optional[str] = None


@attrs.frozen(kw_only=True)
class ToolCompleted(RunEvent):
    """A tool ended (``tool.completed``); ``error`` is true for a failed, denied or timed-out command.

    ``preview``: a bounded, redacted preview of the result (0.21+), else None."""

    tool: str = ""
    duration: Optional[float] = None
    error: bool = False
    preview: Optional[str] = None


@attrs.frozen(kw_only=True)
class ReasoningAvailable(RunEvent):
    """``reasoning.available``: despite its name it carries the assistant's **content** (think tags
    removed, inner text kept, at most 500 characters), not model reasoning. Never part of ``text``."""

    text: str = ""


@attrs.frozen(kw_only=True)
class ApprovalResponded(RunEvent):
    """An answer was applied (``approval.responded``): the normalised ``choice`` and how many it resolved."""

    choice: str = ""
    resolved: int = 0


@attrs.frozen(kw_only=True)
class RunEnded(RunEvent):
    """What every terminal event may carry (Hermes 0.20+; None on older servers): ``runtime``
    (``{provider, model, route_source, ...}``), ``completed``, ``partial``, ``interrupted``,
    ``turn_exit_reason`` and ``pending_steer``."""

    runtime: Optional[dict[str, object]] = None
    completed: Optional[bool] = None
    partial: Optional[bool] = None
    interrupted: Optional[bool] = None
    turn_exit_reason: Optional[str] = None
    pending_steer: object = None
    terminal: ClassVar[bool] = True


@attrs.frozen(kw_only=True)
class RunCompleted(RunEnded):
    """The run ended ``completed``; ``output`` may be None, and a denied command still completes."""

    output: Optional[str] = None
    usage: Optional[dict[str, object]] = None


@attrs.frozen(kw_only=True)
class RunFailed(RunEnded):
    """The run ended ``failed`` (an agent-level failure, e.g. the model's upstream refused)."""

    error: Optional[str] = None


@attrs.frozen(kw_only=True)
class RunCancelled(RunEnded):
    """The run ended ``cancelled`` (after a stop)."""


@attrs.frozen(kw_only=True)
class RunInterrupted(RunEnded):
    """The run ended ``interrupted`` (Hermes 0.21+: the gateway shut down under it)."""

    output: Optional[str] = None
    error: Optional[str] = None


@attrs.frozen(kw_only=True)
class RunSteered(RunEvent):
    """``run.steered`` (Hermes 0.20+): a steer message reached the running agent (``accepted``).
    Text the agent had not taken in when the run ended is the terminal event's ``pending_steer``."""

    accepted: Optional[bool] = None


@attrs.frozen(kw_only=True)
class SubagentEvent(RunEvent):
    """``subagent.start`` / ``subagent.complete`` (0.20+) and ``subagent.spawn_requested`` /
    ``.progress`` / ``.tool`` (0.21+): a delegated subagent's life; its fields stay in ``raw``."""

    subagent_id: Optional[str] = None
    goal: Optional[str] = None
    status: Optional[str] = None


class _EndedFields(EventFields):
    """What every :class:`RunEnded` is built with."""

    runtime: Optional[dict[str, object]]
    completed: Optional[bool]
    partial: Optional[bool]
    interrupted: Optional[bool]
    turn_exit_reason: Optional[str]
    pending_steer: object


def parse_run_event(data: Mapping[str, object]) -> RunEvent:
    """The typed event for one decoded ``/v1/runs/{id}/events`` payload."""
    base = event_fields(data)
    raw, name = base["raw"], base["event"]
    if name == "message.delta":
        return MessageDelta(delta=text(raw.get("delta")), **base)
    if name == "tool.started":
        return ToolStarted(tool=text(raw.get("tool")), preview=opt_str(raw.get("preview")), **base)
    if name == "tool.completed":
        return ToolCompleted(tool=text(raw.get("tool")), duration=opt_float(raw.get("duration")),
                             error=raw.get("error") is True, preview=opt_str(raw.get("preview")), **base)
    if name == "reasoning.available":
        return ReasoningAvailable(text=text(raw.get("text")), **base)
    if name == "approval.request":
        return approval_requested(base)
    if name == "approval.responded":
        return ApprovalResponded(choice=text(raw.get("choice")), resolved=opt_int(raw.get("resolved")) or 0, **base)
    if name in _ENDED:
        ended = _ended_fields(base)
        if name == "run.completed":
            return RunCompleted(output=opt_str(raw.get("output")), usage=opt_object(raw.get("usage")), **ended)
        if name == "run.failed":
            return RunFailed(error=opt_str(raw.get("error")), **ended)
        if name == "run.interrupted":
            return RunInterrupted(output=opt_str(raw.get("output")), error=opt_str(raw.get("error")), **ended)
        return RunCancelled(**ended)
    if name == "run.steered":
        return RunSteered(accepted=opt_bool(raw.get("accepted")), **base)
    if name.startswith("subagent."):
        sub = raw.get("subagent_id") if "subagent_id" in raw else raw.get("id")
        return SubagentEvent(subagent_id=opt_str(sub), goal=opt_str(raw.get("goal")),
                             status=opt_str(raw.get("status")), **base)
    return RunEvent(**base)


_ENDED = frozenset({"run.completed", "run.failed", "run.cancelled", "run.interrupted"})


def _ended_fields(base: EventFields) -> _EndedFields:
    raw = base["raw"]
    return {**base, "runtime": opt_object(raw.get("runtime")),
            "completed": opt_bool(raw.get("completed")), "partial": opt_bool(raw.get("partial")),
            "interrupted": opt_bool(raw.get("interrupted")),
            "turn_exit_reason": opt_str(raw.get("turn_exit_reason")), "pending_steer": raw.get("pending_steer")}


__all__ = [
    "ApprovalRequested", "ApprovalResponded", "MessageDelta", "ReasoningAvailable", "RunCancelled", "RunCompleted",
    "RunEnded", "RunEvent", "RunFailed", "RunInterrupted", "RunSteered", "SubagentEvent", "ToolCompleted",
    "ToolStarted", "parse_run_event",
]
