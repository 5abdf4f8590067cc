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

from ..errors import AgentIncompleteError, InvalidResponseError
from .events import TOOL_EVENT_CLASSES
from .streaming import HermesStream

JSONDict = dict[str, Any]


def _opt_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _opt_float(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _object(data: Any, what: str) -> JSONDict:
    if not isinstance(data, dict):
        raise InvalidResponseError(f"Hermes returned a {type(data).__name__} where {what} was expected")
    return data


# ------------------------------------------------------------------ results


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
    raw: JSONDict = attrs.field(factory=dict, repr=False, eq=False)
    pinned: Optional[bool] = None
    archived: Optional[bool] = None
    hidden: Optional[bool] = None

    @property
    def ended(self) -> bool:
        """Whether the session has an end reason (it still accepts chat turns)."""
        return self.ended_at is not None or self.end_reason is not None


Session = HermesSession  # the former name (it collides with requests'); hermes_sdk.Session warns


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
    raw: JSONDict = attrs.field(factory=dict, repr=False, eq=False)

    def __iter__(self) -> Iterator[Session]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


@attrs.frozen
class SessionDeleted:
    """The 200 of ``DELETE /api/sessions/{id}``. Forks of the session are not deleted: they lose
    their ``parent_session_id``."""

    id: str
    deleted: bool = True
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)


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
    raw: JSONDict = attrs.field(factory=dict, repr=False, eq=False)


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
    pagination: Optional[JSONDict] = attrs.field(default=None, repr=False, eq=False)
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
    raw: JSONDict = attrs.field(factory=dict, repr=False, eq=False)
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)


def session_of(data: Any) -> Session:
    """A Session from a session object (not its envelope)."""
    obj = _object(data, "a session object")
    if not isinstance(obj.get("id"), str):
        raise InvalidResponseError("the session object has no id")
    return Session(
        id=obj["id"], title=_opt_str(obj.get("title")), source=_opt_str(obj.get("source")),
        model=_opt_str(obj.get("model")), started_at=_opt_float(obj.get("started_at")),
        ended_at=_opt_float(obj.get("ended_at")), end_reason=_opt_str(obj.get("end_reason")),
        message_count=_int(obj.get("message_count")), parent_session_id=_opt_str(obj.get("parent_session_id")),
        last_active=_opt_float(obj.get("last_active")), preview=_opt_str(obj.get("preview")), raw=obj,
        **{k: obj[k] if isinstance(obj.get(k), bool) else None for k in ("pinned", "archived", "hidden")})


def session(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
            replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> Session:
    """Decode ``{"object": "hermes.session", "session": {...}}`` (create, get, patch, fork)."""
    return session_of(_object(data, "a session envelope").get("session"))


def session_page(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
                 replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> SessionPage:
    """Decode the list ``{"object": "list", "data": [...], "limit", "offset", "has_more"}``."""
    obj = _object(data, "a session list")
    rows = obj.get("data")
    if not isinstance(rows, list):
        raise InvalidResponseError("the session list has no 'data' array")
    return SessionPage(data=[session_of(row) for row in rows], has_more=obj.get("has_more") is True,
                       limit=_int(obj.get("limit")), offset=_int(obj.get("offset")), raw=obj)


def session_deleted(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
                    replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> SessionDeleted:
    """Decode ``{"object": "hermes.session.deleted", "id", "deleted": true}``."""
    obj = _object(data, "a delete receipt")
    if not isinstance(obj.get("id"), str):
        raise InvalidResponseError("the session delete receipt has no id")
    return SessionDeleted(id=obj["id"], deleted=obj.get("deleted") is not False, action_id=action_id,
                          replayed=replayed)


def message_of(data: Any) -> SessionMessage:
    """A SessionMessage from one message object."""
    obj = _object(data, "a message object")
    tool_calls = obj.get("tool_calls")
    msg_id = obj.get("id")
    return SessionMessage(
        id=msg_id if isinstance(msg_id, int) and not isinstance(msg_id, bool) else None,
        role=str(obj.get("role") or ""), content=_opt_str(obj.get("content")),
        session_id=_opt_str(obj.get("session_id")), tool_call_id=_opt_str(obj.get("tool_call_id")),
        tool_calls=tool_calls if isinstance(tool_calls, list) else None, tool_name=_opt_str(obj.get("tool_name")),
        timestamp=_opt_float(obj.get("timestamp")), finish_reason=_opt_str(obj.get("finish_reason")),
        reasoning=_opt_str(obj.get("reasoning")), raw=obj)


def transcript(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
               replayed: bool = False, headers: Optional[Mapping[str, str]] = None,
               requested_id: Optional[str] = None) -> SessionTranscript:
    """Decode ``{"object": "list", "session_id": <resolved id>, "data": [...]}``."""
    obj = _object(data, "a transcript")
    rows = obj.get("data")
    if not isinstance(obj.get("session_id"), str) or not isinstance(rows, list):
        raise InvalidResponseError("the transcript has no session_id or no 'data' array")
    pagination = obj.get("pagination")
    return SessionTranscript(session_id=obj["session_id"], messages=[message_of(row) for row in rows],
                             requested_id=requested_id, pagination=pagination if isinstance(pagination, dict) else None)


def no_text_error(session_id: Optional[str], usage: Any, where: str) -> AgentIncompleteError:
    """The error for a session turn Hermes answered with ``content: null``."""
    return AgentIncompleteError(
        "Hermes answered the session turn without any text (content: null): the agent did not finish. "
        "Its user message is stored and will be merged into the next turn's message",
        uncertain_outcome=True, http_status=200,
        details={"reason": "content_null", "session_id": session_id, "usage": usage, "where": where,
                 "user_message_stored": True})


def session_reply(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
                  replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> SessionReply:
    """Decode ``{"object": "hermes.session.chat.completion", "session_id", "message", "usage"}``."""
    obj = _object(data, "a session chat reply")
    message = obj.get("message")
    sid = _opt_str(obj.get("session_id")) or session_id
    if not isinstance(message, dict) or sid is None:
        raise InvalidResponseError("the session chat reply has no message or session_id")
    usage = obj.get("usage") if isinstance(obj.get("usage"), dict) else None
    content = message.get("content")
    if content is None:
        raise no_text_error(sid, usage, "session_chat")
    if not isinstance(content, str):
        raise InvalidResponseError("the session chat reply's content is not a string")
    return SessionReply(text=content, session_id=sid, usage=usage, raw=obj, action_id=action_id, replayed=replayed)


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
    raw: JSONDict = attrs.field(factory=dict, repr=False, eq=False)


@attrs.frozen(kw_only=True)
class SessionRunStarted(SessionEvent):
    """``run.started``: the user message of this turn."""

    user_message: Optional[JSONDict] = None


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
    usage: Optional[JSONDict] = None


@attrs.frozen(kw_only=True)
class SessionStreamError(SessionEvent):
    """``error``: the turn's wrapper raised (redacted exception text); ``done`` follows."""

    message: str = ""


@attrs.frozen(kw_only=True)
class SessionDone(SessionEvent):
    """``done``: always the last event."""


_EVENT_CLASSES: dict[str, type] = {
    "run.started": SessionRunStarted, "message.started": SessionMessageStarted, "assistant.delta": SessionDelta,
    "tool.started": SessionToolStarted, "tool.completed": SessionToolCompleted, "tool.failed": SessionToolFailed,
    "tool.progress": SessionThinking, "assistant.completed": SessionAssistantCompleted,
    "run.completed": SessionRunCompleted, "error": SessionStreamError, "done": SessionDone,
}
for _klass in (SessionToolStarted, SessionToolCompleted, SessionToolFailed):
    TOOL_EVENT_CLASSES[_klass.kind] = _klass  # a replayed stream's record rebuilds them


def parse_session_event(name: Optional[str], data: Mapping[str, Any]) -> SessionEvent:
    """The typed event for one session stream event (an unknown name: a plain SessionEvent)."""
    event = name or ""
    klass = _EVENT_CLASSES.get(event, SessionEvent)
    seq = data.get("seq")
    common: dict[str, Any] = {"event": event, "session_id": _opt_str(data.get("session_id")),
                              "run_id": _opt_str(data.get("run_id")),
                              "seq": seq if isinstance(seq, int) and not isinstance(seq, bool) else None,
                              "ts": _opt_float(data.get("ts")), "raw": dict(data)}
    if klass is SessionRunStarted:
        user = data.get("user_message")
        return SessionRunStarted(user_message=user if isinstance(user, dict) else None, **common)
    if klass is SessionMessageStarted:
        message = data.get("message")
        return SessionMessageStarted(message_id=_opt_str(message.get("id")) if isinstance(message, dict) else None,
                                     **common)
    message_id = _opt_str(data.get("message_id"))
    if klass is SessionDelta:
        return SessionDelta(message_id=message_id, delta=_opt_str(data.get("delta")) or "", **common)
    if issubclass(klass, SessionToolEvent):
        tool = klass(message_id=message_id, tool_name=_opt_str(data.get("tool_name")) or "",
                                   preview=_opt_str(data.get("preview")), args=data.get("args"), **common)
        return tool
    if klass is SessionThinking:
        return SessionThinking(message_id=message_id, tool_name=_opt_str(data.get("tool_name")),
                               delta=_opt_str(data.get("delta")) or "", **common)
    if klass is SessionAssistantCompleted:
        return SessionAssistantCompleted(message_id=message_id, content=_opt_str(data.get("content")),
                                         completed=data.get("completed") is not False, **common)
    if klass is SessionRunCompleted:
        messages, usage = data.get("messages"), data.get("usage")
        return SessionRunCompleted(message_id=message_id, messages=messages if isinstance(messages, list) else [],
                                   usage=usage if isinstance(usage, dict) else None, **common)
    if klass is SessionStreamError:
        return SessionStreamError(message=str(data.get("message") or ""), **common)
    result = klass(**common)
    assert isinstance(result, SessionEvent)
    return result


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
