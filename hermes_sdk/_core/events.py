"""Typed stream events that several families' streams yield: the event base class and the events a
chat or Responses stream shares with a run's (text pieces, approval requests, status notices,
reasoning), and the tool events of chat and Responses streams. The events only a run sends (its
tools, answers, ends, steers, subagents) and their parser are the runs family's.

Every class keeps the event's JSON in ``raw``, so a field the SDK does not model is never lost; an
event type the SDK does not know arrives as a plain :class:`RunEvent`.
"""

from __future__ import annotations

from typing import ClassVar, Mapping, Optional, TypedDict, Union

import attrs

from .aggregate import event_name
from .lenient import opt_bool, opt_float, opt_int, opt_str, strings, text
from .models import StreamEvent


@attrs.frozen(kw_only=True)
class RunEvent:
    """One typed stream event (the base class). Unknown event types arrive as this class, with their JSON in ``raw``.

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


class EventFields(TypedDict):
    """What every :class:`RunEvent` is built with."""

    event: str
    run_id: Optional[str]
    timestamp: Optional[float]
    raw: dict[str, object]
    seq: Optional[int]


def event_fields(data: Mapping[str, object]) -> EventFields:
    """The base fields of one decoded event payload (its JSON kept in ``raw``)."""
    raw = dict(data)
    return {"event": text(raw.get("event")), "run_id": opt_str(raw.get("run_id")),
            "timestamp": opt_float(raw.get("timestamp")), "raw": raw, "seq": opt_int(raw.get("seq"))}


def approval_requested(base: EventFields) -> ApprovalRequested:
    """The :class:`ApprovalRequested` of an ``approval.request`` payload (a run's or a chat stream's)."""
    raw = base["raw"]
    return ApprovalRequested(
        command=text(raw.get("command")), pattern_key=opt_str(raw.get("pattern_key")),
        pattern_keys=strings(raw.get("pattern_keys")), description=opt_str(raw.get("description")),
        choices=strings(raw.get("choices")), allow_permanent=raw.get("allow_permanent") is True,
        smart_denied=raw.get("smart_denied") is True, request_id=opt_str(raw.get("request_id")) or None,
        allow_session=opt_bool(raw.get("allow_session")), **base)


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
        return approval_requested(event_fields({**data, "event": "approval.request"}))
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
    "ApprovalRequested", "FunctionCall", "FunctionCallOutput", "HermesStatus", "MessageDelta", "ReasoningDelta",
    "RunEvent", "ToolEvent", "ToolProgress", "tool_event", "tool_item",
]
