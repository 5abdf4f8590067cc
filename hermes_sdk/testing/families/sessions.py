"""``/api/sessions``: session resources, fork, and session chat (JSON and SSE), as Hermes 0.19.0.

Mirrors ``spec/hermes-sessions-jobs.md`` sections 1-5 (transcripts ``hermes-wire/51``-``62``,
``71``): OpenAI error envelopes, 404 before the body is read, ``has_more`` as
``len(data) == limit``, fork = end the source ``branched`` + copy + lineage title (not
atomic), the messages route following the newest child, and session chat that never signals
failure (200 with the error text, or ``content: null``). The scripted model answers every turn.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import parse_qs

from ..exchange import DropConnection, rate_limited
from ..model import AgentHooks, AgentResult, Cancelled, RequestInfo, io_usage
from ..routes import Route
from ..sessiondb import UPSTREAM_MODEL, SessionDB, SessionRow, TitleError, generated_session_id, sanitize_title
from ..sse import AgentPump, ClientGone, named_event
from ..tools import ToolCall, ToolRecord
from ..wire import (
    DEFAULT_MODEL,
    SESSION_ID_MAX,
    ContentError,
    Headers,
    JSONDict,
    bare_error,
    content_text,
    openai_error,
)

if TYPE_CHECKING:
    from ..exchange import Exchange
    from ..state import EmulatorState

LIST_LIMIT_DEFAULT = 50
LIST_LIMIT_MAX = 200
LIST_OFFSET_MAX = 1_000_000
_BOOL_TRUE = {"true", "1", "yes", "on"}
_CONTINUATIONS = 4
CONTINUATION_PROMPT = (
    "[System: Your previous response was truncated by the output length limit. Continue "
    "exactly where you left off. Do not restart or repeat prior text. Finish the answer directly.]"
)


class _Row(TypedDict, total=False):
    """One transcript row a turn writes (``role`` always set)."""

    role: str
    content: str | None
    finish_reason: str
    reasoning: None
    tool_calls: list[JSONDict]
    tool_call_id: str
    tool_name: str


class _Reject(Exception):
    """A JSON error answer computed before any work."""

    def __init__(self, status: int, payload: JSONDict) -> None:
        super().__init__(status)
        self.status = status
        self.payload = payload


def _error(status: int, message: str, code: str | None = None, param: str | None = None) -> _Reject:
    return _Reject(status, openai_error(message, code=code, param=param))


def _not_found(session_id: str) -> _Reject:
    return _error(404, f"Session not found: {session_id}", "session_not_found")


def _db(ex: Exchange) -> SessionDB:
    db = ex.state.transcripts
    assert isinstance(db, SessionDB)
    return db


def _body(ex: Exchange) -> JSONDict:
    """``_read_json_object``: no body or bad JSON, then a non-object, are 400s without a code."""
    try:
        if not ex.raw_body or ex.oversize:
            raise ValueError("empty")
        body = json.loads(ex.raw_body.decode("utf-8"))
    except ValueError:
        raise _error(400, "Invalid JSON in request body") from None
    if not isinstance(body, dict):
        raise _error(400, "Request body must be a JSON object")
    return body


def _existing(ex: Exchange, session_id: str) -> SessionRow:
    row = _db(ex).get(session_id)
    if row is None:
        raise _not_found(session_id)
    return row


def _guarded(fn: Callable[..., None]) -> Callable[..., None]:
    def wrapper(ex: Exchange, *args: str) -> None:
        try:
            fn(ex, *args)
        except _Reject as rej:
            ex.send_json(rej.status, rej.payload)
        except _Crash:
            ex.send_crash()

    return wrapper


class _Crash(Exception):
    """An uncaught exception in Hermes' handler: aiohttp's plain-text 500."""


def _session_payload(row: SessionRow, ex: Exchange) -> JSONDict:
    return {"object": "hermes.session", "session": row.payload(flags=ex.state.behaviour.session_flags)}


MESSAGES_LIMIT_MAX = 500


def _requested_id(body: JSONDict) -> str:
    raw = body.get("id") or body.get("session_id")
    return str(raw).strip() if raw else ""


# --------------------------------------------------------------------------- list / create


def _int_param(query: dict[str, list[str]], name: str, default: int) -> int:
    try:
        value = int(query[name][0])
    except (KeyError, IndexError, ValueError):
        return default
    return value


@_guarded
def handle_list(ex: Exchange) -> None:
    query = parse_qs(ex.query, keep_blank_values=True)
    limit = _int_param(query, "limit", LIST_LIMIT_DEFAULT)
    limit = LIST_LIMIT_DEFAULT if limit < 0 else min(limit, LIST_LIMIT_MAX)
    offset = min(max(_int_param(query, "offset", 0), 0), LIST_OFFSET_MAX)
    source = query["source"][0] if query.get("source") else None
    children = (query.get("include_children") or ["false"])[0].strip().lower() in _BOOL_TRUE
    rows = _db(ex).listing(source=source, include_children=children)
    page = rows[offset : offset + limit]
    ex.send_json(
        200,
        {
            "object": "list",
            "data": [r.payload(listing=True, flags=ex.state.behaviour.session_flags) for r in page],
            "limit": limit,
            "offset": offset,
            "has_more": len(page) == limit,
        },
    )


def _create_id_problem(session_id: str) -> str | None:
    if any(ch in session_id for ch in ("\r", "\n", "\x00")):
        return "Invalid session ID"
    if len(session_id) > SESSION_ID_MAX:
        return "Session ID too long"
    if "/" in session_id or "\\" in session_id or ".." in session_id:
        return "Invalid session ID"
    if len(session_id) >= 2 and session_id[1] == ":" and session_id[0].isalpha():
        return "Invalid session ID"
    return None


@_guarded
def handle_create(ex: Exchange) -> None:
    body = _body(ex)
    session_id = _requested_id(body) or generated_session_id()
    problem = _create_id_problem(session_id)
    if problem:
        raise _error(400, problem, "invalid_session_id")
    system_prompt = body.get("system_prompt")
    if system_prompt is not None and not isinstance(system_prompt, str):
        raise _error(400, "system_prompt must be a string", "invalid_system_prompt")
    try:
        title = sanitize_title(body.get("title"))
    except TitleError:
        raise _Crash() from None  # the ValueError escapes the handler (L2322): plain 500
    model = body.get("model") or DEFAULT_MODEL
    db = _db(ex)
    with db.lock:
        if db.exists(session_id):
            raise _error(409, f"Session already exists: {session_id}", "session_exists")
        owner = db.title_owner(title) if title else None
        if owner is not None:  # the insert is rolled back
            raise _error(400, f"Title already in use by session {owner}", "invalid_title")
        row = SessionRow(id=session_id, model=str(model), title=title, system_prompt=system_prompt)
        db.create(row)
    ex.send_json(201, _session_payload(row, ex))


# --------------------------------------------------------------------------- one session


@_guarded
def handle_get(ex: Exchange, session_id: str) -> None:
    ex.send_json(200, _session_payload(_existing(ex, session_id), ex))


PATCH_FIELDS = ("title", "end_reason")


@_guarded
def handle_patch(ex: Exchange, session_id: str) -> None:
    _existing(ex, session_id)
    body = _body(ex)
    unknown = sorted(k for k in body if k not in PATCH_FIELDS)
    if unknown:
        raise _error(400, f"Unsupported session fields: {', '.join(unknown)}", "unsupported_session_field")
    db = _db(ex)
    with db.lock:
        if "title" in body:
            raw = body["title"]
            try:
                title = sanitize_title(raw) if raw not in (None, "") else None
            except TitleError as exc:
                raise _error(400, str(exc), "invalid_title") from None
            owner = db.title_owner(title, exclude=session_id) if title else None
            if owner is not None:
                raise _error(400, f"Title '{title}' is already in use by session {owner}", "invalid_title")
            db.update(session_id, lambda r: setattr(r, "title", title))
        reason = body.get("end_reason")
        if reason:
            db.end(session_id, str(reason))
    ex.send_json(200, _session_payload(_existing(ex, session_id), ex))


@_guarded
def handle_delete(ex: Exchange, session_id: str) -> None:
    if not _db(ex).delete(session_id):
        raise _not_found(session_id)
    ex.send_json(200, {"object": "hermes.session.deleted", "id": session_id, "deleted": True})


@_guarded
def handle_messages(ex: Exchange, session_id: str) -> None:
    _existing(ex, session_id)
    db = _db(ex)
    behaviour = ex.state.behaviour
    resolved = db.resolve_resume(session_id) if behaviour.fork_redirect else session_id
    data = db.messages(resolved) or []
    if not behaviour.paginated_messages:
        return ex.send_json(200, {"object": "list", "session_id": resolved, "data": data})
    # 0.20+ (measured on 0.20.1 and 0.22.2): limit clamped to 0-500 (default 500), offset >= 0,
    # order oldest|latest (default latest: the newest page, in chronological order).
    query = parse_qs(ex.query, keep_blank_values=True)
    order = query.get("order", ["oldest" if "limit" in query else "latest"])[0]
    if order not in ("oldest", "latest"):
        raise _error(400, "order must be one of: oldest, latest", "invalid_pagination")
    try:
        limit = min(max(int(query.get("limit", ["500"])[0]), 0), MESSAGES_LIMIT_MAX)
        offset = int(query.get("offset", ["0"])[0])
    except ValueError:
        raise _error(400, "limit and offset must be integers", "invalid_pagination") from None
    if offset < 0:
        raise _error(400, "offset must be >= 0", "invalid_pagination")
    if order == "oldest":
        page = data[offset : offset + limit]
    else:
        end = max(len(data) - offset, 0)
        page = data[max(end - limit, 0) : end]
    pagination = {"limit": limit, "offset": offset, "order": order, "returned": len(page)}
    ex.send_json(200, {"object": "list", "session_id": resolved, "data": page, "pagination": pagination})


@_guarded
def handle_fork(ex: Exchange, session_id: str) -> None:
    source = _existing(ex, session_id)
    body = _body(ex)
    child_id = _requested_id(body) or generated_session_id()
    if any(ch in child_id for ch in ("\r", "\n", "\x00")):  # fork skips create's other checks
        raise _error(400, "Invalid session ID", "invalid_session_id")
    db = _db(ex)
    with db.lock:
        if db.exists(child_id):
            raise _error(409, f"Session already exists: {child_id}", "session_exists")
        db.end(session_id, "branched")
        child = SessionRow(
            id=child_id,
            model=source.model,
            system_prompt=source.system_prompt,
            parent_session_id=session_id,
        )
        db.create(child)
        db.copy_messages(session_id, child_id)
        raw_title = body.get("title")
        try:
            if raw_title is not None:
                title = sanitize_title(str(raw_title))
            else:
                title = db.next_title_in_lineage(source.title or "fork")
        except TitleError as exc:
            raise _error(400, str(exc), "invalid_title") from None
        owner = db.title_owner(title, exclude=child_id) if title else None
        if owner is not None:  # not atomic: the child and its messages stay (hermes-wire/57 F8)
            raise _error(400, f"Title '{title}' is already in use by session {owner}", "invalid_title")
        db.update(child_id, lambda r: setattr(r, "title", title))
    ex.send_json(201, _session_payload(_existing(ex, child_id), ex))


# --------------------------------------------------------------------------- chat


class _Turn:
    def __init__(self, session_id: str, text: str, system_message: str, key_echo: Headers) -> None:
        self.session_id = session_id
        self.text = text
        self.system_message = system_message
        self.key_echo = key_echo


def _prepare_turn(ex: Exchange, session_id: str) -> _Turn:
    """Validation in Hermes' order: draining, session key, 404, JSON, message, system message."""
    if ex.state.settings.draining:
        raise _Reject(
            503,
            openai_error("Gateway is draining; retry shortly", err_type="server_error", code="gateway_draining"),
        )
    key = ex.header("X-Hermes-Session-Key")
    key_echo: Headers = []
    if key is not None:
        if any(ch in key for ch in ("\r", "\n", "\x00")):
            raise _Reject(400, bare_error("Invalid session key"))
        key_echo.append(("X-Hermes-Session-Key", key))
    _existing(ex, session_id)
    body = _body(ex)
    raw = body.get("message") or body.get("input")
    try:
        text = content_text(raw)
    except ContentError as exc:
        raise _error(400, str(exc), exc.code, param="message") from None
    if not text.strip():
        raise _error(400, "Missing 'message' field", "missing_message")
    system = body.get("system_message")
    if system is None:
        system = body.get("instructions")
    if system is not None and not isinstance(system, str):
        raise _error(400, "system_message must be a string", "invalid_system_message")
    return _Turn(session_id, text, system or "", key_echo)


def _tool_calls(records: list[ToolRecord]) -> list[JSONDict]:
    out: list[JSONDict] = []
    for record in records:
        call_id = record.call.call_id
        suffix = call_id[len("call_") :] if call_id.startswith("call_") else call_id
        out.append(
            {
                "id": call_id,
                "call_id": call_id,
                "response_item_id": f"fc_{suffix}",
                "type": "function",
                "function": {"name": record.call.name, "arguments": record.call.display_arguments},
            }
        )
    return out


def _turn_rows(result: AgentResult | None) -> list[_Row]:
    """The rows a turn writes after its user message (also ``run.completed.messages``)."""
    if result is None or result.failed:
        return []
    if result.partial:
        pieces = list(result.streamed) + [""] * _CONTINUATIONS
        rows: list[_Row] = []
        for index in range(_CONTINUATIONS):
            if index:
                rows.append({"role": "user", "content": CONTINUATION_PROMPT})
            rows.append({"role": "assistant", "content": pieces[index], "finish_reason": "length", "reasoning": None})
        return rows
    rows = []
    if result.tool_records:
        rows.append(
            {
                "role": "assistant",
                "content": result.preamble,
                "tool_calls": _tool_calls(result.tool_records),
                "finish_reason": "tool_calls",
                "reasoning": None,
            }
        )
        for record in result.tool_records:
            rows.append(
                {
                    "role": "tool",
                    "content": record.result,
                    "tool_call_id": record.call.call_id,
                    "tool_name": record.call.name,
                }
            )
    rows.append(
        {"role": "assistant", "content": result.final_response or "", "finish_reason": "stop", "reasoning": None}
    )
    return rows


def _persist(db: SessionDB, turn: _Turn, result: AgentResult | None) -> list[_Row]:
    rows = _turn_rows(result)
    for row in rows:
        db.add_message(
            turn.session_id,
            row["role"],
            row.get("content"),
            finish=row.get("finish_reason"),
            tool_calls=row.get("tool_calls"),
            tool_call_id=row.get("tool_call_id"),
            tool_name=row.get("tool_name"),
        )
    if result is not None and result.completed:

        def account(r: SessionRow) -> None:
            r.model = UPSTREAM_MODEL
            r.input_tokens += result.prompt_tokens
            r.output_tokens += result.completion_tokens
            r.api_call_count += 2 if result.tool_records else 1
            r.tool_call_count += len(result.tool_records)
            r.estimated_cost_usd = 0.0

        db.update(turn.session_id, account)
    return rows


def _begin(ex: Exchange, turn: _Turn) -> tuple[RequestInfo, SessionDB]:
    """Load the history, then write the user message (before the agent runs, like Hermes)."""
    db = _db(ex)
    history = db.history(turn.session_id)
    db.add_message(turn.session_id, "user", turn.text)

    def mark(r: SessionRow) -> None:
        if r.system_prompt is None:  # the agent stores its own prompt (the created one is ignored)
            r.system_prompt = ""
        r.model_config = True

    db.update(turn.session_id, mark)
    info = RequestInfo(
        endpoint="sessions",
        prompt=turn.text,
        history=history,
        system_prompt=turn.system_message,
        session_id=turn.session_id,
        stream=False,
        body={},
        headers={k: str(v) for k, v in ex.headers.items()},
    )
    return info, db


@_guarded
def handle_chat(ex: Exchange, session_id: str) -> None:
    turn = _prepare_turn(ex, session_id)
    state = ex.state
    slot = state.try_acquire_run()
    if slot is None:
        return rate_limited(ex)
    try:
        info, db = _begin(ex, turn)
        result: AgentResult | None
        try:
            result = state.model.run(info, lambda _piece: None, threading.Event())
        except Cancelled:
            result = None
        _persist(db, turn, result)
    finally:
        slot.release()
    content = result.final_response if result is not None else None
    payload = {
        "object": "hermes.session.chat.completion",
        "session_id": session_id,
        "message": {"role": "assistant", "content": content},
        "usage": io_usage(result) if result is not None else io_usage(AgentResult(None, completed=False)),
    }
    ex.send_json(200, payload, [("X-Hermes-Session-Id", session_id)] + turn.key_echo)


@_guarded
def handle_chat_stream(ex: Exchange, session_id: str) -> None:
    turn = _prepare_turn(ex, session_id)
    state = ex.state
    slot = state.try_acquire_run()
    if slot is None:
        return rate_limited(ex)
    run_id = "run_" + uuid.uuid4().hex
    message_id = "msg_" + uuid.uuid4().hex
    seq = 0
    started = False
    pump: AgentPump | None = None
    try:
        info, db = _begin(ex, turn)
        writer = ex.open_sse([("X-Hermes-Session-Id", session_id)] + turn.key_echo)

        def frame(name: str, fields: JSONDict, lead: bool = False) -> None:
            nonlocal seq
            seq += 1
            payload: JSONDict = {"session_id": session_id, **fields} if lead else dict(fields)
            payload.update(session_id=session_id, run_id=run_id, seq=seq, ts=time.time())
            writer.event(named_event(name, payload))

        frame("run.started", {"user_message": {"role": "user", "content": turn.text}})
        frame("message.started", {"message": {"id": message_id, "role": "assistant"}})
        hooks = AgentHooks()

        def work(on_delta: Callable[[str], None], cancel: threading.Event) -> AgentResult:
            # The turn outlives the client (hermes-wire/56 T8): persist here, release the slot here.
            result: AgentResult | None = None
            try:
                result = state.model.run(info, on_delta, cancel, hooks)
                return result
            finally:
                _persist(db, turn, result)
                slot.release()

        pump = AgentPump(work, threading.Event(), start=False)
        hooks.tool_started = lambda call: pump.post("tool.started", call)
        hooks.tool_completed = lambda record: pump.post("tool.completed", record)
        hooks.assistant_message = lambda text: pump.post("thinking", text)
        pump.start()
        started = True
        for kind, value in pump.items(writer, state.settings.keepalive_seconds):
            if kind == "delta":
                if value:
                    frame("assistant.delta", {"message_id": message_id, "delta": value})
            elif kind == "thinking":
                if value:
                    frame("tool.progress", {"message_id": message_id, "tool_name": "_thinking", "delta": value})
            elif kind == "tool.started":
                call: ToolCall = value
                frame(
                    "tool.started",
                    {"message_id": message_id, "tool_name": call.name, "preview": call.preview, "args": call.args},
                )
            elif kind == "tool.completed":
                record: ToolRecord = value
                frame(
                    "tool.completed",
                    {"message_id": message_id, "tool_name": record.call.name, "preview": None, "args": None},
                )
            elif kind == "done":
                result: AgentResult = value
                frame(
                    "assistant.completed",
                    {
                        "message_id": message_id,
                        "content": result.final_response,
                        "completed": True,
                        "partial": False,
                        "interrupted": False,
                    },
                    lead=True,
                )
                frame(
                    "run.completed",
                    {
                        "message_id": message_id,
                        "completed": True,
                        "messages": [r for r in _turn_rows(result) if r["role"] != "user"],
                        "usage": io_usage(result),
                    },
                    lead=True,
                )
            elif kind == "error":
                if isinstance(value, Cancelled):
                    raise ClientGone("emulator stopping")
                frame("error", {"message": str(value) or type(value).__name__})
        frame("done", {})
        writer.finish()
    except ClientGone:
        raise DropConnection() from None  # the agent thread keeps going and persists
    finally:
        if not started:
            slot.release()


class SessionsControl:
    """``emulator.sessions``: the session store (Hermes' state.db) as the routes see it."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state

    def get(self, session_id: str) -> JSONDict | None:
        """The session object ``GET /api/sessions/{id}`` would return, or None."""
        row = self._state.transcripts.get(session_id)
        return None if row is None else row.payload()

    def ids(self) -> list[str]:
        """Every session id in the store (any source), most recently active first."""
        return [row.id for row in self._state.transcripts.listing(source=None, include_children=True)]

    def rows(self, session_id: str) -> list[JSONDict]:
        """The session's message rows as ``GET …/messages`` shapes them (no fork redirect)."""
        return self._state.transcripts.messages(session_id) or []

    def transcript(self, session_id: str) -> list[dict[str, str]]:
        """The chat transcript kept for ``session_id`` (any route's turns)."""
        return self._state.transcripts.history(session_id)


def reset(state: EmulatorState) -> None:
    """Empty the session store (state.db): sessions and every route's transcripts."""
    state.transcripts.clear()


_ITEM = "/api/sessions/{session_id}"  # the id percent-decoded, "+" literal
ROUTES = (
    Route(("GET",), "/api/sessions", handle_list),
    Route(("POST",), "/api/sessions", handle_create),
    Route(("GET",), _ITEM, handle_get, decoded=True),
    Route(("PATCH",), _ITEM, handle_patch, decoded=True),
    Route(("DELETE",), _ITEM, handle_delete, decoded=True),
    Route(("GET",), _ITEM + "/messages", handle_messages, decoded=True),
    Route(("POST",), _ITEM + "/fork", handle_fork, decoded=True),
    Route(("POST",), _ITEM + "/chat", handle_chat, decoded=True),
    Route(("POST",), _ITEM + "/chat/stream", handle_chat_stream, decoded=True),
)


CONTROL = SessionsControl

__all__ = ["CONTROL", "ROUTES", "SessionsControl", "reset"]
