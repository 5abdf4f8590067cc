"""Hermes sessions (``/api/sessions``): typed results, the session chat stream and its typed events.

What Hermes 0.19.0 does and the SDK relies on (``spec/hermes-sessions-jobs.md``):

- a session object is sent as ``{"object": "hermes.session", "session": {...}}``; list rows add
  ``last_active`` and ``preview``; every type keeps the object itself in ``raw``;
- after a fork, ``GET /api/sessions/{parent}/messages`` answers with the newest child's
  transcript: :attr:`SessionTranscript.session_id` is the id Hermes resolved, not the one asked for;
- session chat never signals failure: an upstream failure is a 200 whose reply is the error text,
  and a turn that produced no text is a 200 with ``content: null`` (the SDK raises
  :class:`~hermes_sdk.AgentIncompleteError` for that one, see docs/sessions.md);
- the stream's ``tool.progress`` event named ``_thinking`` repeats the whole reply: it is not text.
"""

from __future__ import annotations

from typing import Any, ClassVar, Iterator, Mapping, Optional

import attrs

from hermes_sdk.errors import AgentIncompleteError, InvalidResponseError
from hermes_sdk.plugin import (
    NO_CONTEXT,
    TOOL_EVENT_CLASSES,
    DecodeContext,
    HermesStream,
    json_object,
    one,
    opt_object,
    opt_str,
    read,
    shape,
)

# ------------------------------------------------------------------ results


@shape("a session object", required=("id",), malformed="the session object has no id")
@attrs.frozen
class HermesSession:
    """One Hermes session (a state.db row).

    ``raw`` is the session object itself (not its envelope), with every field Hermes sent
    (token counters, costs, ``has_system_prompt``...). ``last_active`` and ``preview`` are set on
    list rows only. ``model`` is overwritten by the session's first agent turn. ``pinned``,
    ``archived`` and ``hidden`` are Hermes 0.20+'s flags (None on 0.19, which has none).
    """

    id: str
    title: Optional[str] = None
    source: Optional[str] = None
    model: Optional[str] = None
    started_at: Optional[float] = None
    ended_at: Optional[float] = None
    end_reason: Optional[str] = None
    message_count: int = 0
    parent_session_id: Optional[str] = None
    last_active: Optional[float] = None
    preview: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)
    pinned: Optional[bool] = None
    archived: Optional[bool] = None
    hidden: Optional[bool] = None

    @property
    def ended(self) -> bool:
        """Whether the session has an end reason (it still accepts chat turns)."""
        return self.ended_at is not None or self.end_reason is not None


Session = HermesSession  # the former name (it collides with requests'); hermes_sdk.Session warns


@shape("a session list", required=("data",), malformed="the session list has no 'data' array")
@attrs.frozen
class SessionPage:
    """One page of ``GET /api/sessions``; iterable over its sessions.

    ``has_more`` is Hermes' own flag, which is only ``len(data) == limit``: it is True on an exact
    last page (and for ``limit=0``). :meth:`~hermes_sdk.types.Sessions.iter` stops on a
    short or empty page instead.
    """

    data: list[Session]
    has_more: bool
    limit: int
    offset: int
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)

    def __iter__(self) -> Iterator[Session]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@shape("a delete receipt", required=("id",), malformed="the session delete receipt has no id")
@attrs.frozen
class SessionDeleted:
    """The 200 of ``DELETE /api/sessions/{id}``. Forks of the session are not deleted: they lose
    their ``parent_session_id``."""

    id: str
    deleted: bool = True
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)


@shape("a message object")
@attrs.frozen
class SessionMessage:
    """One stored message of a transcript. ``id`` is a global counter across all sessions."""

    id: Optional[int]
    role: str
    content: Optional[str] = None
    session_id: Optional[str] = None
    tool_call_id: Optional[str] = None
    tool_calls: Optional[list[Any]] = None
    tool_name: Optional[str] = None
    timestamp: Optional[float] = None
    finish_reason: Optional[str] = None
    reasoning: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)


@shape("a transcript", required=("session_id", "data"), keys={"messages": "data"},
       malformed="the transcript has no session_id or no 'data' array",
       given=("requested_id", "fork_redirect", "pages"))
@attrs.frozen
class SessionTranscript:
    """``GET /api/sessions/{id}/messages``: the messages of the session **Hermes resolved**.

    On Hermes 0.19 and 0.20, asking for a forked parent answers with the newest fork's
    transcript, and ``session_id`` names that fork: read it from here, never assume it is the id
    you asked for. 0.21+ (0.22.2) answers with the parent's own. ``fork_redirect`` says which
    behaviour the server has, by its version (True: 0.19/0.20, False: 0.21+, None: unknown). ``pages`` is how many
    requests it took (0.20+ pages by 500; 0.19 sends everything at once).
    """

    session_id: str
    messages: list[SessionMessage]
    requested_id: Optional[str] = None
    pagination: Optional[dict[str, Any]] = attrs.field(default=None, repr=False, eq=False)
    fork_redirect: Optional[bool] = attrs.field(default=None, eq=False)
    pages: int = attrs.field(default=1, eq=False)

    @property
    def redirected(self) -> bool:
        """Whether Hermes answered with another session's transcript than the one asked for."""
        return self.requested_id is not None and self.requested_id != self.session_id

    def __iter__(self) -> Iterator[SessionMessage]:
        return iter(self.messages)

    def __len__(self) -> int:
        return len(self.messages)


@shape("a session chat reply", given=("text", "session_id"))
@attrs.frozen
class SessionReply:
    """The 200 of ``POST /api/sessions/{id}/chat``: one agent turn on the stored history.

    Hermes never signals a failed turn here: an upstream failure comes back as a reply whose
    ``text`` is the error message, with zero ``usage``. A turn without any text (``content:
    null``) is not returned as a reply: the SDK raises AgentIncompleteError.
    """

    text: str
    session_id: str
    usage: Optional[dict[str, Any]] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)


#: ``{"object": "hermes.session", "session": {...}}`` (create, get, patch, fork).
session = one(Session, envelope="session", what="a session envelope")
#: The list ``{"object": "list", "data": [...], "limit", "offset", "has_more"}``.
session_page = one(SessionPage)
#: ``{"object": "hermes.session.deleted", "id", "deleted": true}``.
session_deleted = one(SessionDeleted)
#: ``{"object": "list", "session_id": <resolved id>, "data": [...]}``.
transcript = one(SessionTranscript)


def no_text_error(session_id: Optional[str], usage: object, where: str) -> AgentIncompleteError:
    """The error for a session turn Hermes answered with ``content: null``."""
    return AgentIncompleteError(
        "Hermes answered the session turn without any text (content: null): the agent did not finish. "
        "Its user message is stored and will be merged into the next turn's message",
        uncertain_outcome=True, http_status=200,
        details={"reason": "content_null", "session_id": session_id, "usage": usage, "where": where,
                 "user_message_stored": True})


def session_reply(data: object, ctx: DecodeContext = NO_CONTEXT) -> SessionReply:
    """Decode ``{"object": "hermes.session.chat.completion", "session_id", "message", "usage"}``."""
    obj = json_object(data, "a session chat reply")
    message = obj.get("message")
    sid = opt_str(obj.get("session_id")) or ctx.session_id
    if not isinstance(message, dict) or sid is None:
        raise InvalidResponseError("the session chat reply has no message or session_id")
    content = message.get("content")
    if content is None:
        raise no_text_error(sid, opt_object(obj.get("usage")), "session_chat")
    if not isinstance(content, str):
        raise InvalidResponseError("the session chat reply's content is not a string")
    return read(SessionReply, obj, ctx, text=content, session_id=sid)


# ------------------------------------------------------------------ the stream's typed events


@attrs.frozen(kw_only=True)
class SessionEvent:
    """One event of a session chat stream; every payload carries ``session_id``, ``run_id`` (fresh
    per stream, not a ``/v1/runs`` run), ``seq`` and ``ts``. Unknown events arrive as this class."""

    event: str = ""
    session_id: Optional[str] = None
    run_id: Optional[str] = None
    seq: Optional[int] = None
    ts: Optional[float] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)


@attrs.frozen(kw_only=True)
class SessionRunStarted(SessionEvent):
    """``run.started``: the user message of this turn."""

    user_message: Optional[dict[str, Any]] = None


@attrs.frozen(kw_only=True)
class SessionMessageStarted(SessionEvent):
    """``message.started``: the assistant message's id (``msg_<32 hex>``)."""

    message_id: Optional[str] = None


@attrs.frozen(kw_only=True)
class SessionDelta(SessionEvent):
    """``assistant.delta``: a piece of the reply's visible text."""

    message_id: Optional[str] = None
    delta: str = ""


@attrs.frozen(kw_only=True)
class SessionToolEvent(SessionEvent):
    """The base of ``tool.started``, ``tool.completed`` and ``tool.failed``."""

    message_id: Optional[str] = None
    tool_name: str = ""
    preview: Optional[str] = None
    args: Any = None
    kind: ClassVar[str] = "session_tool"


@attrs.frozen(kw_only=True)
class SessionToolStarted(SessionToolEvent):
    """``tool.started``: ``preview`` is the command or file name, ``args`` the tool arguments."""

    kind: ClassVar[str] = "session_tool_started"


@attrs.frozen(kw_only=True)
class SessionToolCompleted(SessionToolEvent):
    """``tool.completed``: the tool ended (a blocked dangerous command completes too)."""

    kind: ClassVar[str] = "session_tool_completed"


@attrs.frozen(kw_only=True)
class SessionToolFailed(SessionToolEvent):
    """``tool.failed``: the tool raised."""

    kind: ClassVar[str] = "session_tool_failed"


@attrs.frozen(kw_only=True)
class SessionThinking(SessionEvent):
    """``tool.progress`` (``tool_name`` ``_thinking`` when no tool): Hermes' reasoning callback. On
    0.19.0 its ``delta`` repeats the whole text of a model turn, so it is never reply text."""

    message_id: Optional[str] = None
    tool_name: Optional[str] = None
    delta: str = ""


@attrs.frozen(kw_only=True)
class SessionAssistantCompleted(SessionEvent):
    """``assistant.completed``: the final text, or None when the turn produced none. Its
    ``completed`` flag is a constant True on 0.19.0, even for a failed turn."""

    message_id: Optional[str] = None
    content: Optional[str] = None
    completed: bool = True


@attrs.frozen(kw_only=True)
class SessionRunCompleted(SessionEvent):
    """``run.completed``: this turn's stored assistant/tool rows and its usage (``messages`` is
    unreliable after a failed turn)."""

    message_id: Optional[str] = None
    messages: list[Any] = attrs.field(factory=list)
    usage: Optional[dict[str, Any]] = None


@attrs.frozen(kw_only=True)
class SessionStreamError(SessionEvent):
    """``error``: the turn's wrapper raised (redacted exception text); ``done`` follows."""

    message: str = ""


@attrs.frozen(kw_only=True)
class SessionDone(SessionEvent):
    """``done``: always the last event."""


_EVENT_CLASSES: dict[str, type[SessionEvent]] = {
    "run.started": SessionRunStarted, "message.started": SessionMessageStarted, "assistant.delta": SessionDelta,
    "tool.started": SessionToolStarted, "tool.completed": SessionToolCompleted, "tool.failed": SessionToolFailed,
    "tool.progress": SessionThinking, "assistant.completed": SessionAssistantCompleted,
    "run.completed": SessionRunCompleted, "error": SessionStreamError, "done": SessionDone,
}
for _tool in (SessionToolStarted, SessionToolCompleted, SessionToolFailed):
    TOOL_EVENT_CLASSES[_tool.kind] = _tool  # a replayed stream's record rebuilds them
_SHAPED: list[type[SessionEvent]] = [SessionEvent, *_EVENT_CLASSES.values()]
for _klass in _SHAPED:  # the name is the SSE event's, not the JSON's
    shape("a session event", given=("event",),
          keys={"message_id": "message.id"} if _klass is SessionMessageStarted else None)(_klass)


def parse_session_event(name: Optional[str], data: Mapping[str, object]) -> SessionEvent:
    """The typed event for one session stream event (an unknown name: a plain SessionEvent)."""
    event = name or ""
    klass: type[SessionEvent] = _EVENT_CLASSES.get(event, SessionEvent)
    return read(klass, data, event=event)


class SessionChatStream(HermesStream):
    """The live stream of :meth:`client.sessions.chat_stream <hermes_sdk.types.Sessions.chat_stream>`.

    Iterate it for raw events, ``typed()`` for :class:`SessionEvent` subclasses, ``text_deltas()``
    for the reply's text (``assistant.delta`` only: the ``_thinking`` repeat is left out) and
    ``result()`` for the aggregate, read to ``done`` (the last event, after ``run.completed``).
    ``result().status`` is ``failed`` for an ``error`` event, a stream without ``run.completed``,
    and a turn that produced no text (AgentIncompleteError); ``result().final`` is the
    ``assistant.completed`` payload.

    Closing the stream early drops the connection but does **not** stop the turn: Hermes finishes
    and stores it anyway.
    """


__all__ = [
    "Session", "SessionAssistantCompleted", "SessionChatStream", "SessionDelta", "SessionDeleted", "SessionDone",
    "SessionEvent", "SessionMessage", "SessionMessageStarted", "SessionPage", "SessionReply", "SessionRunCompleted",
    "SessionRunStarted", "SessionStreamError", "SessionThinking", "SessionToolCompleted", "SessionToolEvent",
    "SessionToolFailed", "SessionToolStarted", "SessionTranscript", "parse_session_event",
]
