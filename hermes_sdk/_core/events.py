"""Typed events: the events of a run (``/v1/runs/{id}/events``) and the tool events of chat and
Responses streams.

Every class keeps the event's JSON in ``raw``, so a field the SDK does not model is never lost; an
event type the SDK does not know arrives as a plain :class:`RunEvent`. Correlate ``ToolStarted``
and ``ToolCompleted`` by order: Hermes runs one run's tools one after another and sends no tool-call
id on runs (``spec/hermes-runs.md`` section 3).
"""

from __future__ import annotations

from typing import ClassVar, Mapping, Optional, TypedDict, Union

import attrs

from .aggregate import event_name
from .lenient import opt_bool, opt_float, opt_int, opt_object, opt_str, strings, text
from .models import StreamEvent


@attrs.frozen(kw_only=True)
class RunEvent:
    """One event of a run. Unknown event types arrive as this class, with their JSON in ``raw``.

    ``seq`` is the event's position in the run (Hermes 0.21+ numbers every event and sends it as
    the SSE ``id:`` too, which makes the stream resumable); None on older servers.
    """

    event: str = ""
    run_id: Optional[str] = None
    timestamp: Optional[float] = None
    seq: Optional[int] = None
    raw: dict[str, object] = attrs.field(factory=dict, repr=False, eq=False)
    #: Whether this event ends the run (``run.completed``, ``run.failed``, ``run.cancelled``).
    terminal: ClassVar[bool] = False


@attrs.frozen(kw_only=True)
class MessageDelta(RunEvent):
    """A piece of the assistant's visible text (``message.delta``).

    The first delta after a tool turn starts with ``"\\n\\n"``; the run's final ``output`` does not.
    """

    delta: str = ""


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
class ApprovalRequested(RunEvent):
    """The agent waits for a decision on a dangerous command (``approval.request``).

    ``request_id`` names the request (Hermes 0.20+; None on 0.19). Hermes 0.19 and 0.20 answer a
    run's approvals oldest first whatever the id; 0.21+ resolves exactly the named request.
    ``allow_session``: whether ``session`` is offered (0.20+; None when not said).
    """

    request_id: Optional[str] = None
    allow_session: Optional[bool] = None

    command: str = ""
    pattern_key: Optional[str] = None
    pattern_keys: tuple[str, ...] = ()
    description: Optional[str] = None
    choices: tuple[str, ...] = ()
    allow_permanent: bool = False
    smart_denied: bool = False


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


@attrs.frozen(kw_only=True)
class HermesStatus(RunEvent):
    """``hermes.status`` (chat streams, Hermes 0.21+): a lifecycle notice (``kind``, ``text``) such
    as a retry or "API failed after N retries". Not part of the answer's text."""

    kind: Optional[str] = None
    text: str = ""


@attrs.frozen(kw_only=True)
class ReasoningDelta(RunEvent):
    """A ``delta.reasoning_content`` piece of a chat stream (Hermes 0.21+, when the model reasons).
    Never part of the visible text."""

    delta: str = ""


class _EventFields(TypedDict):
    """What every :class:`RunEvent` is built with."""

    event: str
    run_id: Optional[str]
    timestamp: Optional[float]
    raw: dict[str, object]
    seq: Optional[int]


class _EndedFields(_EventFields):
    """What every :class:`RunEnded` is built with."""

    runtime: Optional[dict[str, object]]
    completed: Optional[bool]
    partial: Optional[bool]
    interrupted: Optional[bool]
    turn_exit_reason: Optional[str]
    pending_steer: object


def parse_run_event(data: Mapping[str, object]) -> RunEvent:
    """The typed event for one decoded ``/v1/runs/{id}/events`` payload."""
    raw = dict(data)
    name = text(raw.get("event"))
    seq = raw.get("seq")
    base: _EventFields = {"event": name, "run_id": opt_str(raw.get("run_id")),
                     "timestamp": opt_float(raw.get("timestamp")), "raw": raw,
                     "seq": opt_int(seq)}
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
        return ApprovalRequested(
            command=text(raw.get("command")), pattern_key=opt_str(raw.get("pattern_key")),
            pattern_keys=strings(raw.get("pattern_keys")), description=opt_str(raw.get("description")),
            choices=strings(raw.get("choices")), allow_permanent=raw.get("allow_permanent") is True,
            smart_denied=raw.get("smart_denied") is True, request_id=opt_str(raw.get("request_id")) or None,
            allow_session=opt_bool(raw.get("allow_session")), **base)
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


def _ended_fields(base: _EventFields) -> _EndedFields:
    raw = base["raw"]
    return {**base, "runtime": opt_object(raw.get("runtime")),
            "completed": opt_bool(raw.get("completed")), "partial": opt_bool(raw.get("partial")),
            "interrupted": opt_bool(raw.get("interrupted")),
            "turn_exit_reason": opt_str(raw.get("turn_exit_reason")), "pending_steer": raw.get("pending_steer")}


# ------------------------------------------------------------------ chat and Responses tool events


@attrs.frozen(kw_only=True)
class ToolProgress:
    """A chat stream's ``hermes.tool.progress`` event: ``status`` is ``running`` or ``completed``.

    ``completed`` carries no error flag: Hermes says ``completed`` even for a blocked command.
    """

    tool: str
    tool_call_id: Optional[str] = None
    status: Optional[str] = None
    label: Optional[str] = None
    raw: dict[str, object] = attrs.field(factory=dict, repr=False, eq=False)
    kind: ClassVar[str] = "tool_progress"


@attrs.frozen(kw_only=True)
class FunctionCall:
    """A Responses ``function_call`` item (streamed when the tool completed; no argument deltas).

    ``output_index`` is the streamed index, which need not match the item's position in the
    final ``response.completed`` output array.
    """

    name: str
    call_id: Optional[str] = None
    arguments: Optional[str] = None
    id: Optional[str] = None
    status: Optional[str] = None
    output_index: Optional[int] = None
    raw: dict[str, object] = attrs.field(factory=dict, repr=False, eq=False)
    kind: ClassVar[str] = "function_call"


@attrs.frozen(kw_only=True)
class FunctionCallOutput:
    """A Responses ``function_call_output`` item; ``output`` is the tool result's text.

    The stream sends a list of ``input_text`` parts and a stored or non-stream response a plain
    string: both become ``output`` text here (the original stays in ``raw``).
    """

    call_id: Optional[str] = None
    output: str = ""
    id: Optional[str] = None
    status: Optional[str] = None
    output_index: Optional[int] = None
    raw: dict[str, object] = attrs.field(factory=dict, repr=False, eq=False)
    kind: ClassVar[str] = "function_call_output"


ToolEvent = Union[ToolProgress, FunctionCall, FunctionCallOutput]
TOOL_EVENT_CLASSES: dict[str, type] = {c.kind: c for c in (ToolProgress, FunctionCall, FunctionCallOutput)}


def _output_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(str(p.get("text", "")) for p in value if isinstance(p, dict))
    return ""


def tool_item(item: Mapping[str, object], output_index: Optional[int] = None) -> Optional[ToolEvent]:
    """The typed form of a Responses output item, when it is a tool item (else None)."""
    kind = item.get("type")
    raw = dict(item)
    call_id, item_id, status = (opt_str(item.get(k)) for k in ("call_id", "id", "status"))
    if kind == "function_call":
        return FunctionCall(name=text(item.get("name")), arguments=opt_str(item.get("arguments")),
                            output_index=output_index, raw=raw, call_id=call_id, id=item_id, status=status)
    if kind == "function_call_output":
        return FunctionCallOutput(output=_output_text(item.get("output")), output_index=output_index, raw=raw,
                                  call_id=call_id, id=item_id, status=status)
    return None


def tool_event(name: Optional[str], data: object) -> Optional[ToolEvent]:
    """The tool event a chat or Responses SSE event carries, or None.

    Chat: the named event ``hermes.tool.progress``. Responses: ``response.output_item.done`` of a
    ``function_call`` or ``function_call_output`` item (``.added`` announces the same item).
    """
    if not isinstance(data, dict):
        return None
    if name == "hermes.tool.progress":
        return ToolProgress(tool=text(data.get("tool")), tool_call_id=opt_str(data.get("toolCallId")),
                            status=opt_str(data.get("status")), label=opt_str(data.get("label")), raw=dict(data))
    item = data.get("item")
    if name == "response.output_item.done" and isinstance(item, dict):
        return tool_item(item, opt_int(data.get("output_index")))
    return None


def typed_stream_event(event: StreamEvent, piece: Optional[str]) -> Union[ToolEvent, RunEvent, None]:
    """What ``HermesStream.typed()`` yields for one chat or Responses event: its text piece as a
    :class:`MessageDelta`, its tool event, an :class:`ApprovalRequested` (``approval.request``,
    0.21+), a :class:`HermesStatus` (``hermes.status``), a :class:`ReasoningDelta`
    (``delta.reasoning_content``), or None for the rest."""
    data = event.data
    name = event_name(event.event, data)
    found = tool_event(name, data)
    if found is not None:
        return found
    if isinstance(data, dict) and name == "approval.request":
        return parse_run_event({**data, "event": "approval.request"})
    if isinstance(data, dict) and name == "hermes.status":
        return HermesStatus(event="hermes.status", kind=opt_str(data.get("kind")), text=text(data.get("text")),
                            raw=dict(data))
    if piece:
        return MessageDelta(event="message.delta", delta=piece, raw=data if isinstance(data, dict) else {})
    reasoning = reasoning_piece(data)
    if reasoning:
        return ReasoningDelta(event="reasoning.delta", delta=reasoning, raw=dict(data))
    return None


def reasoning_piece(data: object) -> Optional[str]:
    """The ``delta.reasoning_content`` of a chat completion chunk, if any."""
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        return None
    choice = choices[0]
    delta = choice.get("delta") if isinstance(choice, dict) else None
    piece = delta.get("reasoning_content") if isinstance(delta, dict) else None
    return piece if isinstance(piece, str) and piece else None


def tool_event_to_json(value: ToolEvent) -> dict[str, object]:
    """A tool event as JSON for a durable record (its ``kind`` names the class)."""
    out = attrs.asdict(value)
    out["kind"] = value.kind
    return out


def tool_event_from_json(data: Mapping[str, object]) -> Union[ToolEvent, dict[str, object]]:
    """Rebuild a recorded tool event (an unknown kind stays a dict)."""
    klass = TOOL_EVENT_CLASSES.get(str(data.get("kind")))
    if klass is None:
        return dict(data)
    names = {f.name for f in attrs.fields(klass)}
    event: ToolEvent = klass(**{k: v for k, v in data.items() if k in names})  # one of ToolEvent's classes
    return event


__all__ = [
    "ApprovalRequested", "ApprovalResponded", "FunctionCall", "FunctionCallOutput", "HermesStatus", "MessageDelta",
    "ReasoningAvailable", "ReasoningDelta", "RunCancelled", "RunCompleted", "RunEnded", "RunEvent", "RunFailed",
    "RunInterrupted", "RunSteered", "SubagentEvent", "ToolCompleted",
    "ToolEvent", "ToolProgress", "ToolStarted", "parse_run_event", "tool_event", "tool_item",
]
