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

from hermes_sdk._families._shared import contract, encode_body, only_fields, require_input
from hermes_sdk.errors import STREAM_FAILED, STREAM_INCOMPLETE, HermesError, StreamError
from hermes_sdk.plugin import (
    CONFIDENTIAL,
    DEFAULT_MAX_EVENTS,
    MODEL_SIDE_EFFECTS,
    Accumulator,
    Aggregate,
    OperationSpec,
    RequestParts,
    StreamEvent,
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
_BAD_PATH_CHARS = ("\r", "\n", "\x00")  # what a list filter may not hold
_DRIVE = re.compile(r"^[A-Za-z]:")


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
    if not isinstance(value, str) or not value.strip():
        raise bad(field, f"'{field}' must be a non-empty string (leave it out to let Hermes generate one)")
    value = path_segment_id(field, value)
    stripped = value.strip()
    if len(stripped) > MAX_CREATE_ID_CHARS:
        raise bad(field, f"'{field}' is longer than {MAX_CREATE_ID_CHARS} characters")
    if ".." in stripped or "/" in stripped or "\\" in stripped or _DRIVE.match(stripped):
        raise bad(field, f"'{field}' must not contain '..', '/' or '\\' nor start with a drive letter "
                         "(Hermes refuses such ids on create)")
    return value


# ------------------------------------------------------------------ builders


def build_list(operation: str, raw: object) -> RequestParts:
    """``GET /api/sessions?limit&offset&source&include_children``."""
    data = require_input(raw)
    only_fields(data, ("limit", "offset", "source", "include_children"))
    query: list[tuple[str, str]] = []
    for name, top in (("limit", MAX_LIST_LIMIT), ("offset", MAX_LIST_OFFSET)):
        value = data.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
            raise bad(name, f"'{name}' must be an integer from 0 to {top}")
        query.append((name, str(value)))
    source = data.get("source")
    if source is not None:
        if not isinstance(source, str) or not source or any(c in source for c in _BAD_PATH_CHARS):
            raise bad("source", "'source' must be a non-empty string without CR, LF or NUL")
        query.append(("source", source))
    children = data.get("include_children")
    if children is not None:
        if not isinstance(children, bool):
            raise bad("include_children", "'include_children' must be a boolean")
        query.append(("include_children", "true" if children else "false"))
    return RequestParts({}, query=tuple(query))


def build_create(operation: str, raw: object) -> RequestParts:
    """``POST /api/sessions``: ``id`` (or ``session_id``), ``title``, ``system_prompt``, ``model``."""
    data = require_input(raw)
    only_fields(data, ("id", "session_id", "title", "system_prompt", "model"))
    if data.get("id") is not None and data.get("session_id") is not None and data["id"] != data["session_id"]:
        raise bad("session_id", "give 'id' or 'session_id', not both")
    body: dict[str, object] = {}
    new_id = create_id(data["id"], "id") if data.get("id") is not None else create_id(data.get("session_id"),
                                                                                        "session_id")
    if new_id is not None:
        body["id"] = new_id
    title = _title(data.get("title"))
    if title is not None:
        body["title"] = title
    for name in ("system_prompt", "model"):
        value = data.get(name)
        if value is not None:
            if not isinstance(value, str):
                raise bad(name, f"'{name}' must be a string")
            body[name] = value
    return RequestParts({}, encode_body(body))


def build_session(operation: str, raw: object) -> RequestParts:
    """``GET``/``DELETE /api/sessions/{id}`` and ``GET …/messages``: the session id only, no body."""
    data = require_input(raw)
    only_fields(data, ("session_id",))
    return RequestParts({}, path_params={"session_id": _session_id(data)})


#: Hermes 0.20+ pages a session's messages: ``limit`` at most 500 (also its default: the latest 500).
MESSAGES_PAGE_MAX = 500
MESSAGES_ORDERS = ("oldest", "latest")


def build_messages(operation: str, raw: object) -> RequestParts:
    """``GET …/messages``: the session id and, for a 0.20+ server's pages, ``limit`` (1-500),
    ``offset`` (>= 0) and ``order`` (``oldest``/``latest``); 0.19 ignores them and sends all."""
    data = require_input(raw)
    only_fields(data, ("session_id", "limit", "offset", "order"))
    query: list[tuple[str, str]] = []
    for name, low, high in (("limit", 1, MESSAGES_PAGE_MAX), ("offset", 0, 10**9)):
        value = data.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise bad(name, f"'{name}' must be an integer from {low} to {high}")
        query.append((name, str(value)))
    order = data.get("order")
    if order is not None:
        if order not in MESSAGES_ORDERS:
            raise bad("order", "'order' must be 'oldest' or 'latest'")
        query.append(("order", order))
    return RequestParts({}, path_params={"session_id": _session_id(data)}, query=tuple(query))


def build_patch(operation: str, raw: object) -> RequestParts:
    """``PATCH /api/sessions/{id}``: only ``title`` (null clears it) and ``end_reason`` (the first wins)."""
    data = require_input(raw)
    only_fields(data, ("session_id", "title", "end_reason"))
    sid = _session_id(data)
    body: dict[str, object] = {}
    if "title" in data:
        body["title"] = _title(data["title"])
    if "end_reason" in data:
        reason = data["end_reason"]
        if not isinstance(reason, str) or not reason.strip():
            raise bad("end_reason", "'end_reason' must be a non-empty string (an ended session cannot be re-opened)")
        body["end_reason"] = reason
    return RequestParts({}, encode_body(body), path_params={"session_id": sid})


def build_fork(operation: str, raw: object) -> RequestParts:
    """``POST /api/sessions/{id}/fork``: the new session's ``id`` and ``title`` (both optional)."""
    data = require_input(raw)
    only_fields(data, ("session_id", "id", "title"))
    sid = _session_id(data)
    body: dict[str, object] = {}
    if data.get("id") is not None:
        if not isinstance(data["id"], str) or not data["id"].strip():
            raise bad("id", "'id' must be a non-empty string (leave it out to let Hermes generate one)")
        body["id"] = path_segment_id("id", data["id"])
    title = _title(data.get("title"))
    if title is not None:
        if not clean_title(title):
            raise bad("title", "'title' must have visible characters (leave it out for the lineage title)")
        body["title"] = title
    return RequestParts({}, encode_body(body), path_params={"session_id": sid})


def build_chat(operation: str, raw: object) -> RequestParts:
    """``POST /api/sessions/{id}/chat`` (and ``/chat/stream``): ``message`` (or ``input``), an
    ephemeral ``system_message`` (or ``instructions``), ``session_key`` as a header."""
    data = require_input(raw)
    streaming = operation == "session_chat_stream"
    only_fields(data, ("session_id", "message", "input", "system_message", "instructions", "session_key")
          + (("max_events",) if streaming else ()))
    sid = _session_id(data)
    name = "message" if data.get("message") is not None else "input"
    message = data.get(name)
    if message is None:
        raise bad("message", "'message' is required")
    if isinstance(message, list):
        for i, part in enumerate(message):
            if not isinstance(part, Mapping) and not isinstance(part, str):
                raise bad(f"{name}[{i}]", f"{name}[{i}] must be a content part object")
    elif not isinstance(message, str):
        raise bad(name, f"'{name}' must be a string or a list of content parts")
    if not visible_text(message):
        raise bad(name, f"'{name}' has no visible content")
    body: dict[str, object] = {"message": message}
    given = [n for n in ("system_message", "instructions") if data.get(n) is not None]
    if len(given) == 2 and data["system_message"] != data["instructions"]:
        raise bad("instructions", "give 'system_message' or 'instructions', not both")
    if given:
        text = data[given[0]]
        if not isinstance(text, str):
            raise bad(given[0], f"'{given[0]}' must be a string")
        body["system_message"] = text
    headers = control_headers({"session_key": data.get("session_key")})
    max_events = max_events_value(data.get("max_events"), DEFAULT_MAX_EVENTS) if streaming else 0
    return RequestParts(headers, encode_body(body), max_events, path_params={"session_id": sid})


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
    contract("sessions_list", "GET", "/api/sessions", read_only=True), build_list, decode=session_page)
SESSION_CREATE: OperationSpec[Session] = OperationSpec(
    contract("session_create", "POST", "/api/sessions", read_only=False, key_requirement="required"),
    build_create, decode=session)
SESSION_GET: OperationSpec[Session] = OperationSpec(
    contract("session_get", "GET", _S, read_only=True), build_session, decode=session, reply_id="session.id")
SESSION_PATCH: OperationSpec[Session] = OperationSpec(
    contract("session_patch", "PATCH", _S, read_only=False, key_requirement="required"),
    build_patch, decode=session, reply_id="session.id")
SESSION_DELETE: OperationSpec[SessionDeleted] = OperationSpec(
    contract("session_delete", "DELETE", _S, read_only=False, risk="high", requires_approval=True,
             key_requirement="required", side_effects=("read", "delete", "external_network"), data=dict(RESTRICTED)),
    build_session, decode=session_deleted, reply_id="id")
SESSION_MESSAGES: OperationSpec[SessionTranscript] = OperationSpec(
    contract("session_messages", "GET", _S + "/messages", read_only=True), build_messages, decode=transcript)
SESSION_FORK: OperationSpec[Session] = OperationSpec(
    contract("session_fork", "POST", _S + "/fork", read_only=False, key_requirement="required"),
    build_fork, decode=session)
SESSION_CHAT: OperationSpec[SessionReply] = OperationSpec(
    contract("session_chat", "POST", _S + "/chat", read_only=False, side_effects=MODEL_SIDE_EFFECTS,
             data=dict(CONFIDENTIAL), kind="agent"),
    build_chat, decode=session_reply)
SESSION_CHAT_STREAM: OperationSpec[SessionChatStream] = OperationSpec(
    contract("session_chat_stream", "POST", _S + "/chat/stream", read_only=False, streaming=True,
             side_effects=MODEL_SIDE_EFFECTS, data=dict(CONFIDENTIAL), expected_latency_ms=30_000,
             timeout_ms=300_000, supports_cancel=True, kind="agent"),
    build_chat, stream_class=SessionChatStream, accumulator=SessionChatAccumulator)

SPECS = (SESSIONS_LIST, SESSION_CREATE, SESSION_GET, SESSION_PATCH, SESSION_DELETE, SESSION_MESSAGES,
         SESSION_FORK, SESSION_CHAT, SESSION_CHAT_STREAM)
