"""The sessions family (``/api/sessions``), as specs, with the connector's contracts.

Inputs are the connector's (``spec/hermes-sessions-jobs.md`` section 9.2), with its mistakes
fixed: a session id is percent-encoded as one path segment (a space is ``%20``, not ``+``) and
refused before I/O when it is blank, over 512 bytes or holds a control character (the
one rule of every path id, ``common.path_id``); a create title over 100 characters
(an uncaught 500 at Hermes) and an id Hermes would refuse are refused here; PATCH sends only
``title`` and ``end_reason``; session chat sends no ``X-Hermes-Session-Id`` (Hermes ignores it).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Mapping, Optional

import attrs

from hermes_sdk._families._shared import contract, encode_body
from hermes_sdk.errors import STREAM_FAILED, STREAM_INCOMPLETE, HermesError, StreamError
from hermes_sdk.plugin import (
    CONFIDENTIAL,
    DEFAULT_MAX_EVENTS,
    MAX_MAX_EVENTS,
    MODEL_SIDE_EFFECTS,
    Accumulator,
    Aggregate,
    AllOf,
    Bool,
    Field,
    Header,
    Input,
    Int,
    ListOf,
    Object,
    OneOf,
    OperationSpec,
    PathId,
    RequestParts,
    Rule,
    StreamEvent,
    Text,
    control_headers,
    max_events_value,
    path_id,
    visible_text,
)
from hermes_sdk.plugin import invalid_input as bad

from .types import (
    Session,
    SessionChatStream,
    SessionDeleted,
    SessionEvent,
    SessionPage,
    SessionReply,
    SessionTranscript,
    no_text_error,
    parse_session_event,
    session,
    session_deleted,
    session_page,
    session_reply,
    transcript,
)

MAX_CREATE_ID_CHARS = 256
MAX_TITLE_CHARS = 100
MAX_LIST_LIMIT = 200
MAX_LIST_OFFSET = 1_000_000
_BAD_PATH_CHARS = "\r\n\x00"  # what a list filter may not hold
_DRIVE = re.compile(r"^[A-Za-z]:")
#: Hermes 0.20+ pages a session's messages: ``limit`` at most 500 (also its default: the latest 500).
MESSAGES_PAGE_MAX = 500
MESSAGES_ORDERS = ("oldest", "latest")


def path_segment_id(field: str, value: object) -> str:
    """An id that becomes one path segment: :func:`~hermes_sdk._core.operations.common.path_id`."""
    return path_id(field, value)


def _session_id(data: Mapping[str, object]) -> str:
    return path_segment_id("session_id", data.get("session_id"))


def clean_title(value: str) -> str:
    """A title as Hermes stores it: control, zero-width and bidi characters removed, whitespace
    runs collapsed, trimmed (``hermes_state.py`` ``sanitize_title``)."""
    kept = "".join(" " if c.isspace() else c for c in value
                   if c.isspace() or unicodedata.category(c) not in ("Cc", "Cf"))
    return " ".join(kept.split())


def _title(value: object, field: str = "title") -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad(field, f"'{field}' must be a string or null")
    cleaned = clean_title(value)
    if len(cleaned) > MAX_TITLE_CHARS:
        raise bad(field, f"'{field}' is {len(cleaned)} characters once cleaned; Hermes accepts at most "
                         f"{MAX_TITLE_CHARS}", limit=MAX_TITLE_CHARS)
    return value


def create_id(value: object, field: str = "id") -> Optional[str]:
    """A new session's id as ``POST /api/sessions`` accepts it (None: Hermes generates one)."""
    if value is None:
        return None
    _NEW_ID.check(field, value)
    value = path_segment_id(field, value)
    _NEW_ID_LENGTH.check(field, value)
    if ".." in value or "/" in value or "\\" in value or _DRIVE.match(value.strip()):
        raise bad(field, f"'{field}' must not contain '..', '/' or '\\' nor start with a drive letter "
                         "(Hermes refuses such ids on create)")
    return value


@attrs.frozen
class Title:
    """A session title: a string (null where ``nullable``) of at most 100 characters once cleaned as
    Hermes cleans it; with ``visible``, something must be left."""

    visible: bool = False

    def check(self, field: str, value: object) -> None:
        title = _title(value, field)
        if self.visible and title is not None and not clean_title(title):
            raise bad(field, "'title' must have visible characters (leave it out for the lineage title)")

    def schema(self) -> dict[str, object]:
        out: dict[str, object] = {"type": "string", "maxLength": MAX_TITLE_CHARS,
                                  "description": f"at most {MAX_TITLE_CHARS} characters once cleaned"}
        if self.visible:  # a character left once control, zero-width and bidi ones are removed
            out["pattern"] = r"[^\s\x00-\x1f\x7f-\x9f\xad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]"
        return out


@attrs.frozen
class NewSessionId:
    """The id of a session to create: one path segment, at most 256 characters, no ``..``, ``/``,
    ``\\`` or drive letter (Hermes' own rule on create)."""

    def check(self, field: str, value: object) -> None:
        create_id(value, field)

    def schema(self) -> dict[str, object]:
        return {"type": "string", "minLength": 1, "maxLength": MAX_CREATE_ID_CHARS,
                "pattern": r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
                "not": {"pattern": r"\.\.|/|\\|^\s*[A-Za-z]:"}}


_LEAVE_OUT = "'{field}' must be a non-empty string (leave it out to let Hermes generate one)"
_NEW_ID = Text(non_empty=True, message=_LEAVE_OUT)
_NEW_ID_LENGTH = Text(MAX_CREATE_ID_CHARS, strip_for_length=True,
                      too_long=f"'{{field}}' is longer than {MAX_CREATE_ID_CHARS} characters")
_SID = Field("session_id", PathId(), required=True, null="checked", doc="the session's id")
_LIMIT = "'{field}' must be an integer from {minimum} to {maximum}"


def _one_new_id(data: Mapping[str, object]) -> None:
    if data.get("id") is not None and data.get("session_id") is not None and data["id"] != data["session_id"]:
        raise bad("session_id", "give 'id' or 'session_id', not both")


def _one_system_message(data: Mapping[str, object]) -> None:
    if data.get("system_message") is not None and data.get("instructions") is not None \
            and data["system_message"] != data["instructions"]:
        raise bad("instructions", "give 'system_message' or 'instructions', not both")


def _message_visible(data: Mapping[str, object]) -> None:
    name = "message" if data.get("message") is not None else "input"
    if not visible_text(data.get(name)):
        raise bad(name, f"'{name}' has no visible content")


LIST_INPUT = Input((
    Field("limit", Int(0, MAX_LIST_LIMIT, message=_LIMIT)),
    Field("offset", Int(0, MAX_LIST_OFFSET, message=_LIMIT)),
    Field("source", Text(min_len=1, forbid=_BAD_PATH_CHARS, message="'{field}' must be a non-empty string without "
                                                                    "CR, LF or NUL")),
    Field("include_children", Bool()),
))
CREATE_INPUT = Input((
    Field("id", NewSessionId(), doc="the new session's id (Hermes generates one when left out)"),
    Field("session_id", NewSessionId(), alias_of="id"),
    Field("title", Title()),
    Field("system_prompt", Text()),
    Field("model", Text()),
), first=(Rule("one_new_id", _one_new_id, "id and session_id, when both given, are the same",
                   ("session_id",)),))
SESSION_INPUT = Input((_SID,))
MESSAGES_INPUT = Input((
    _SID,
    Field("limit", Int(1, MESSAGES_PAGE_MAX, message=_LIMIT), doc="Hermes 0.20+"),
    Field("offset", Int(0, 10**9, message=_LIMIT), doc="Hermes 0.20+"),
    Field("order", Text(one_of=MESSAGES_ORDERS, message="'order' must be 'oldest' or 'latest'"), doc="Hermes 0.20+"),
))
PATCH_INPUT = Input((
    _SID,
    Field("title", Title(), null="value", doc="null clears the title"),
    Field("end_reason", Text(non_empty=True, message="'{field}' must be a non-empty string (an ended session cannot "
                                                     "be re-opened)"), null="checked"),
))
FORK_INPUT = Input((
    _SID,
    Field("id", AllOf((Text(non_empty=True, message=_LEAVE_OUT), PathId())), doc="the new session's id"),
    Field("title", Title(visible=True), doc="the new session's title (default: the lineage title)"),
))
_MESSAGE = OneOf((Text(), ListOf(OneOf((Text(), Object()), "part"), item_message="{field} must be a content part "
                                                                                "object")),
                 "'{field}' must be a string or a list of content parts", by_type=True)
_CHAT_FIELDS = (
    _SID,
    Field("message", _MESSAGE, doc="the user's message"),
    Field("input", _MESSAGE, alias_of="message"),
    Field("system_message", Text(), doc="an ephemeral system message"),
    Field("instructions", Text(), alias_of="system_message"),
    Field("session_key", Header(), doc="sent as X-Hermes-Session-Key"),
)


def _chat_input(*extra: Field) -> Input:
    return Input(_CHAT_FIELDS + extra, at_least_one=(("message", "input"),), none_given="'message' is required",
                 none_given_field="message",
                 first=(Rule("one_system_message", _one_system_message,
                             "system_message and instructions, when both given, are the same", ("instructions",)),),
                 rules=(Rule("message_visible", _message_visible, "the message has visible content",
                             ("message", "input")),))


CHAT_INPUT = _chat_input()
CHAT_STREAM_INPUT = _chat_input(Field("max_events", Int(1, MAX_MAX_EVENTS, message=(
    f"max_events must be an integer from 1 to {MAX_MAX_EVENTS}"))))


# ------------------------------------------------------------------ builders


def build_list(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``GET /api/sessions?limit&offset&source&include_children``."""
    query = [(name, str(data[name])) for name in ("limit", "offset", "source") if data.get(name) is not None]
    if data.get("include_children") is not None:
        query.append(("include_children", "true" if data["include_children"] else "false"))
    return RequestParts({}, query=tuple(query))


def build_create(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``POST /api/sessions``: ``id`` (or ``session_id``), ``title``, ``system_prompt``, ``model``."""
    new_id = data.get("id") if data.get("id") is not None else data.get("session_id")
    body = {"id": new_id, **{k: data.get(k) for k in ("title", "system_prompt", "model")}}
    return RequestParts({}, encode_body({k: v for k, v in body.items() if v is not None}))


def build_session(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``GET``/``DELETE /api/sessions/{id}`` and ``GET …/messages``: the session id only, no body."""
    return RequestParts({}, path_params={"session_id": str(data["session_id"])})


def build_messages(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``GET …/messages``: the session id and, for a 0.20+ server's pages, ``limit`` (1-500),
    ``offset`` (>= 0) and ``order`` (``oldest``/``latest``); 0.19 ignores them and sends all."""
    query = tuple((name, str(data[name])) for name in ("limit", "offset", "order") if data.get(name) is not None)
    return RequestParts({}, path_params={"session_id": str(data["session_id"])}, query=query)


def build_patch(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``PATCH /api/sessions/{id}``: only ``title`` (null clears it) and ``end_reason`` (the first wins)."""
    body = {k: data[k] for k in ("title", "end_reason") if k in data}
    return RequestParts({}, encode_body(body), path_params={"session_id": str(data["session_id"])})


def build_fork(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``POST /api/sessions/{id}/fork``: the new session's ``id`` and ``title`` (both optional)."""
    body = {k: data[k] for k in ("id", "title") if data.get(k) is not None}
    return RequestParts({}, encode_body(body), path_params={"session_id": str(data["session_id"])})


def build_chat(operation: str, data: Mapping[str, object]) -> RequestParts:
    """``POST /api/sessions/{id}/chat`` (and ``/chat/stream``): ``message`` (or ``input``), an
    ephemeral ``system_message`` (or ``instructions``), ``session_key`` as a header."""
    streaming = operation == "session_chat_stream"
    message = data.get("message") if data.get("message") is not None else data.get("input")
    body: dict[str, object] = {"message": message}
    system = data.get("system_message") if data.get("system_message") is not None else data.get("instructions")
    if system is not None:
        body["system_message"] = system
    headers = control_headers({"session_key": data.get("session_key")})
    max_events = max_events_value(data.get("max_events"), DEFAULT_MAX_EVENTS) if streaming else 0
    return RequestParts(headers, encode_body(body), max_events, path_params={"session_id": str(data["session_id"])})


# ------------------------------------------------------------------ the stream's accumulator


class SessionChatAccumulator(Accumulator):
    """A session chat stream: ``assistant.delta`` is the text; the ``tool.progress`` ``_thinking``
    event (which repeats the whole reply) is not; ``tool.*`` events are the tools;
    ``assistant.completed`` is the final payload; the stream ends at ``done``, read past
    ``run.completed``. Failed: an ``error`` event, no ``run.completed``, or no text at all."""

    terminal_names = frozenset({"done"})

    def __init__(self) -> None:
        self.error: Optional[dict[str, object]] = None
        self.run_completed = False
        self.completed: Optional[dict[str, object]] = None

    def fold(self, agg: Aggregate, name: Optional[str], data: dict[str, object]) -> Optional[str]:
        if name == "assistant.delta":
            piece = data.get("delta")
            return piece if isinstance(piece, str) and piece else None
        if name in ("tool.started", "tool.completed", "tool.failed"):
            agg.tools.append(parse_session_event(name, data))
        elif name == "assistant.completed":
            self.completed = data
            agg.final = data
        elif name == "run.completed":
            self.run_completed = True
            usage = data.get("usage")
            if isinstance(usage, dict):
                agg.usage = usage
        elif name == "error":
            self.error = data
        return None

    def failure(self, agg: Aggregate) -> Optional[HermesError]:
        op = {"operation": agg.operation}
        if self.error is not None:
            return StreamError("the session stream sent an error event", code=STREAM_FAILED, uncertain_outcome=True,
                               details={**op, "event": "error", "data": self.error})
        if not self.run_completed:
            return StreamError("the session stream reached done without run.completed", code=STREAM_INCOMPLETE,
                               uncertain_outcome=True, details=op)
        if self.completed is not None and self.completed.get("content") is None:
            return no_text_error(agg.session_id, agg.usage, "session_chat_stream")
        return None

    def typed(self, event: StreamEvent, piece: Optional[str]) -> Optional[SessionEvent]:
        return parse_session_event(event.event, event.data) if isinstance(event.data, dict) else None


# ------------------------------------------------------------------ contracts

RESTRICTED = {"classification": "restricted", "contains_pii": True, "redaction_required": True}


_S = "/api/sessions/{session_id}"

SESSIONS_LIST: OperationSpec[SessionPage] = OperationSpec(
    contract("sessions_list", "GET", "/api/sessions", read_only=True), build_list, decode=session_page,
    input=LIST_INPUT)
SESSION_CREATE: OperationSpec[Session] = OperationSpec(
    contract("session_create", "POST", "/api/sessions", read_only=False, key_requirement="required"),
    build_create, decode=session, input=CREATE_INPUT)
SESSION_GET: OperationSpec[Session] = OperationSpec(
    contract("session_get", "GET", _S, read_only=True), build_session, decode=session, reply_id="session.id",
    input=SESSION_INPUT)
SESSION_PATCH: OperationSpec[Session] = OperationSpec(
    contract("session_patch", "PATCH", _S, read_only=False, key_requirement="required"),
    build_patch, decode=session, reply_id="session.id", input=PATCH_INPUT)
SESSION_DELETE: OperationSpec[SessionDeleted] = OperationSpec(
    contract("session_delete", "DELETE", _S, read_only=False, risk="high", requires_approval=True,
             key_requirement="required", side_effects=("read", "delete", "external_network"), data=dict(RESTRICTED)),
    build_session, decode=session_deleted, reply_id="id", input=SESSION_INPUT)
SESSION_MESSAGES: OperationSpec[SessionTranscript] = OperationSpec(
    contract("session_messages", "GET", _S + "/messages", read_only=True), build_messages, decode=transcript,
    input=MESSAGES_INPUT)
SESSION_FORK: OperationSpec[Session] = OperationSpec(
    contract("session_fork", "POST", _S + "/fork", read_only=False, key_requirement="required"),
    build_fork, decode=session, input=FORK_INPUT)
SESSION_CHAT: OperationSpec[SessionReply] = OperationSpec(
    contract("session_chat", "POST", _S + "/chat", read_only=False, side_effects=MODEL_SIDE_EFFECTS,
             data=dict(CONFIDENTIAL), kind="agent"),
    build_chat, decode=session_reply, input=CHAT_INPUT)
SESSION_CHAT_STREAM: OperationSpec[SessionChatStream] = OperationSpec(
    contract("session_chat_stream", "POST", _S + "/chat/stream", read_only=False, streaming=True,
             side_effects=MODEL_SIDE_EFFECTS, data=dict(CONFIDENTIAL), expected_latency_ms=30_000,
             timeout_ms=300_000, supports_cancel=True, kind="agent"),
    build_chat, stream_class=SessionChatStream, accumulator=SessionChatAccumulator, input=CHAT_STREAM_INPUT)

SPECS = (SESSIONS_LIST, SESSION_CREATE, SESSION_GET, SESSION_PATCH, SESSION_DELETE, SESSION_MESSAGES,
         SESSION_FORK, SESSION_CHAT, SESSION_CHAT_STREAM)
