"""POST /v1/chat/completions, as Hermes 0.19.0 serves it.

Chat keeps no state of its own (its idempotency replays and transcripts are the emulator's shared
stores), so it has no ``reset``; a streamed turn on 0.21+ is a run of ``runmachine.py``.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from ..exchange import DropConnection, admitted
from ..model import AgentHooks, AgentResult, RequestInfo
from ..routes import Route
from ..runmachine import Emitter, Run, await_approval
from ..sse import AgentPump, ClientGone, data_event, named_event
from ..state import CachedChat
from ..tools import EMOJI, ToolCall, ToolRecord
from ..wire import (
    DEFAULT_MODEL,
    ContentError,
    Headers,
    JSONDict,
    bare_error,
    chat_id,
    content_text,
    derive_chat_session_id,
    fingerprint,
    openai_error,
    parse_bool,
    session_id_problem,
)

if TYPE_CHECKING:
    from ..exchange import Exchange
    from ..state import EmulatorState

FINGERPRINT_KEYS = ("model", "messages", "tools", "tool_choice", "stream")


def handle(ex: Exchange) -> None:
    # The cap is checked before the body is even parsed (Hermes L2654).
    """Serve ``POST /v1/chat/completions`` (JSON or SSE), holding one run slot for its duration."""
    slot = admitted(ex)
    if slot is None:
        return
    try:
        _handle(ex)
    finally:
        slot.release()


def _handle(ex: Exchange) -> None:
    body = ex.json_object()
    if body is None:
        return ex.send_json(400, openai_error("Invalid JSON in request body"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return ex.send_json(400, bare_error("Missing or invalid 'messages' field"))
    try:
        system_prompt, conversation = _split_messages(messages)
    except _BadPart as exc:
        return ex.send_json(
            400,
            openai_error(
                exc.message,
                param=f"messages[{exc.index}].content",
                code=exc.code,
            ),
        )
    users = [m["content"] for m in conversation if m["role"] == "user" and m["content"].strip()]
    if not users:
        return ex.send_json(400, bare_error("No user message found in messages"))
    prompt = conversation[-1]["content"]
    history = conversation[:-1]

    header_sid = ex.header("X-Hermes-Session-Id")
    if header_sid is not None:
        problem = session_id_problem(header_sid)
        if problem:
            return ex.send_json(400, bare_error(problem))
        session_id = header_sid
        # With an explicit session the stored transcript wins over body history.
        history = ex.state.transcripts.history(session_id)
    else:
        session_id = derive_chat_session_id(system_prompt, users[0])

    stream = parse_bool(body.get("stream"))
    info = RequestInfo(
        endpoint="chat",
        prompt=prompt,
        history=history,
        system_prompt=system_prompt,
        session_id=session_id,
        stream=stream,
        body=body,
        headers={k: str(v) for k, v in ex.headers.items()},
    )
    model = body.get("model") or DEFAULT_MODEL
    key_echo: Headers = []
    session_key = ex.header("X-Hermes-Session-Key")
    if session_key is not None:
        key_echo.append(("X-Hermes-Session-Key", session_key))
    if stream:
        return _stream(ex, info, str(model), key_echo)

    idem_key = ex.header("Idempotency-Key")
    if idem_key:
        cached, _hit = ex.state.idempotency.get_or_compute(
            idem_key,
            fingerprint(body, FINGERPRINT_KEYS),
            lambda: CachedChat(_run(ex, info), session_id),
        )
        result, session_id = cached.result, cached.session_id
    else:
        result = _run(ex, info)
    _respond(ex, result, str(model), session_id, key_echo)


class _BadPart(Exception):
    def __init__(self, index: int, message: str, code: str) -> None:
        super().__init__(message)
        self.index = index
        self.message = message
        self.code = code


def _split_messages(messages: list[object]) -> tuple[str, list[dict[str, str]]]:
    """System text joined by newlines; only user/assistant turns are kept."""
    system: list[str] = []
    conversation: list[dict[str, str]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        try:
            text = content_text(message.get("content"), str(role))
        except ContentError as exc:
            raise _BadPart(index, str(exc), exc.code) from None
        if role == "system":
            system.append(text)
        elif role in ("user", "assistant"):
            conversation.append({"role": str(role), "content": text})
    return "\n".join(system), conversation


def _run(ex: Exchange, info: RequestInfo) -> AgentResult:
    result = ex.state.model.run(info, lambda _piece: None, threading.Event())
    _persist(ex, info, result)
    return result


def _persist(ex: Exchange, info: RequestInfo, result: AgentResult) -> None:
    turn = [{"role": "user", "content": info.prompt}]
    if result.final_response and not result.failed:  # a failed run leaves no assistant turn
        turn.append({"role": "assistant", "content": result.final_response})
    ex.state.transcripts.append(info.session_id, turn)


def hermes_state(result: AgentResult) -> JSONDict:
    """The ``hermes`` state object Hermes attaches to a partial or failed completion."""
    return {
        "completed": result.completed,
        "partial": result.partial,
        "failed": result.failed,
        "error": result.error,
        "error_code": result.error_code,
    }


def _usage(result: AgentResult) -> JSONDict:
    if not result.completed:
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


def _respond(ex: Exchange, result: AgentResult, model: str, session_id: str, key_echo: Headers) -> None:
    headers: Headers = [("X-Hermes-Session-Id", session_id)] + key_echo
    text = result.final_response
    if not text and not result.completed:
        # No text at all: the hard failure (502 agent_incomplete, no X-Hermes-Error).
        headers += [
            ("X-Hermes-Completed", "false"),
            ("X-Hermes-Partial", "true" if result.partial else "false"),
        ]
        err: JSONDict = openai_error(
            result.error or "Agent did not produce a response",
            err_type="server_error",
            code="agent_incomplete",
        )
        envelope = err["error"]
        assert isinstance(envelope, dict)  # openai_error() builds it
        envelope["hermes"] = {
            "completed": result.completed,
            "partial": result.partial,
            "failed": result.failed,
        }
        return ex.send_json(502, err, headers)
    payload: JSONDict = {
        "id": chat_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text or ""},
                "finish_reason": result.finish_reason,
            }
        ],
        "usage": _usage(result),
    }
    if not result.completed:
        payload["hermes"] = hermes_state(result)
        headers += [
            ("X-Hermes-Completed", "false"),
            ("X-Hermes-Partial", "true" if result.partial else "false"),
        ]
        if result.error:
            headers.append(("X-Hermes-Error", _header_safe(result.error)[:200]))
    ex.send_json(200, payload, headers)


def _header_safe(text: str) -> str:
    return " ".join(text.split())


def _stream(ex: Exchange, info: RequestInfo, model: str, key_echo: Headers) -> None:
    state = ex.state
    base: JSONDict = {
        "id": chat_id(),
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: JSONDict, finish: str | None) -> JSONDict:
        return dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": finish}])

    writer = ex.open_sse([("X-Hermes-Session-Id", info.session_id)] + key_echo)
    cancel = threading.Event()
    pump: AgentPump | None = None
    run: Run | None = None
    try:
        # The role chunk goes out before the agent is even started (L3025-3031).
        writer.event(data_event(chunk({"role": "assistant"}, None)))
        hooks = AgentHooks()
        pump = AgentPump(lambda on_delta, ev: state.model.run(info, on_delta, ev, hooks), cancel, start=False)
        hooks.tool_started = lambda call: pump.post("progress", tool_progress(call, None))
        hooks.tool_completed = lambda record: pump.post("progress", tool_progress(record.call, record))
        run = stream_run(state, str(base["id"]), info, pump, hooks, cancel)
        pump.start()
        for kind, value in pump.items(writer, state.settings.keepalive_seconds):
            if kind == "approval":
                writer.event(named_event("approval.request", value))
            elif kind == "delta":
                if value:
                    writer.event(data_event(chunk({"content": value}, None)))
            elif kind == "progress":
                if value is not None:
                    writer.event(named_event("hermes.tool.progress", value))
            elif kind == "done":
                _persist(ex, info, value)
                final = chunk({}, value.finish_reason)
                final["usage"] = _usage(value)
                if not value.completed:
                    final["error"] = {
                        "message": value.error or "",
                        "type": "agent_error",
                    }
                    final["hermes"] = hermes_state(value)
                writer.event(data_event(final))
            else:
                final = chunk({}, "error")
                final["error"] = {"message": str(value), "type": type(value).__name__}
                writer.event(data_event(final))
        writer.event(data_event("[DONE]"))
        writer.finish()
    except ClientGone:
        cancel.set()  # Hermes interrupts the agent when the client goes away
        raise DropConnection() from None
    finally:
        if pump is not None:
            pump.join(0.5)
        if run is not None:
            end_stream_run(state, run)


class _StreamEmitter(Emitter):
    """Sends a streamed turn's approval request on its own stream (0.21+), with its session id."""

    def __init__(self, state: EmulatorState, run: Run, pump: AgentPump, session_id: str) -> None:
        super().__init__(state, run, None)
        self.pump = pump
        self.session_id = session_id

    def put(self, event: JSONDict | None) -> None:
        super().put(event)
        if event is not None and event.get("event") == "approval.request":
            self.pump.post("approval", {**event, "session_id": self.session_id})


def stream_run(state: EmulatorState, completion_id: str, info: RequestInfo, pump: AgentPump,
               hooks: AgentHooks, cancel: threading.Event) -> Run | None:
    """0.21+: a streamed turn is a run at ``/v1/runs/{chatcmpl id}`` whose approvals the client
    answers there (``approval.request`` on the stream); older versions: None (``pending_approval``)."""
    if not state.behaviour.stream_approvals:
        return None
    run = Run(completion_id, info.session_id, None, time.time())
    run.exact_approvals = True
    with run.lock:
        run.status.pop("model", None)
    run.set_status("running")
    with state.runs.lock:
        state.runs.runs[completion_id] = run
    emit = _StreamEmitter(state, run, pump, info.session_id)
    hooks.approver = lambda danger: await_approval(state, run, emit, danger)
    hooks.session_patterns = run.session_patterns
    run.cancel = cancel
    return run


def end_stream_run(state: EmulatorState, run: Run) -> None:
    """The turn ended: no approval can be answered any more; the run object says how it ended."""
    run.approvals_closed.set()
    run.set_status("cancelled" if run.cancel.is_set() else "completed")
    run.done.set()


def tool_progress(call: ToolCall, record: ToolRecord | None) -> JSONDict | None:
    """The ``hermes.tool.progress`` payload (L2806-2848); ``_``-prefixed tools are skipped.

    ``completed`` carries no error flag: a blocked command also says ``completed``.
    """
    if call.name.startswith("_"):
        return None
    if record is not None:
        return {"tool": call.name, "toolCallId": call.call_id, "status": "completed"}
    return {
        "tool": call.name,
        "emoji": EMOJI.get(call.name, "\u26a1"),
        "label": call.preview,
        "toolCallId": call.call_id,
        "status": "running",
    }


ROUTES = (Route(("POST",), "/v1/chat/completions", handle),)
