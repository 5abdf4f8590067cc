"""POST /v1/responses and GET/DELETE /v1/responses/{id}, as Hermes 0.19.0 serves them."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..exchange import DropConnection, admitted
from ..model import AgentHooks, AgentResult, RequestInfo
from ..model import io_usage as _usage
from ..routes import Route
from ..sse import AgentPump, ClientGone, named_event
from ..store import ResponseStore, StoredResponse
from ..tools import ToolRecord
from ..wire import (
    DEFAULT_MODEL,
    ContentError,
    Headers,
    JSONDict,
    bare_error,
    content_text,
    fingerprint,
    message_item_id,
    new_session_uuid,
    openai_error,
    parse_bool,
    response_id,
)

if TYPE_CHECKING:
    from ..exchange import Exchange
    from ..state import EmulatorState

FINGERPRINT_KEYS = (
    "input",
    "instructions",
    "previous_response_id",
    "conversation",
    "model",
    "tools",
)
TRUNCATION_AUTO_KEEP = 100


class _Invalid(Exception):
    def __init__(self, status: int, payload: JSONDict) -> None:
        super().__init__(str(payload))
        self.status = status
        self.payload = payload


@dataclass
class _Turn:
    info: RequestInfo
    model: str
    instructions: str | None
    conversation: str | None
    store: bool
    # Hermes bug (hermes-wire/40): a chained non-stream response repeats earlier tool items.
    prior_items: list[JSONDict] = field(default_factory=list)


def handle_create(ex: Exchange) -> None:
    """Serve ``POST /v1/responses`` (JSON or SSE), holding one run slot for its duration."""
    slot = admitted(ex)
    if slot is None:
        return
    try:
        try:
            turn = _prepare(ex)
        except _Invalid as exc:
            return ex.send_json(exc.status, exc.payload)
        key_echo: Headers = []
        session_key = ex.header("X-Hermes-Session-Key")
        if session_key is not None:
            key_echo.append(("X-Hermes-Session-Key", session_key))
        if turn.info.stream:
            return _stream(ex, turn, key_echo)
        idem_key = ex.header("Idempotency-Key")
        if idem_key:
            # A hit reuses the agent result only: a new id is minted and stored again.
            result, _hit = ex.state.idempotency.get_or_compute(
                idem_key,
                fingerprint(turn.info.body, FINGERPRINT_KEYS),
                lambda: _run(ex, turn),
            )
        else:
            result = _run(ex, turn)
        envelope = _envelope(response_id(), int(time.time()), turn.model, result, turn.prior_items)
        _save(ex, turn, envelope, result)
        ex.send_json(200, envelope, [("X-Hermes-Session-Id", turn.info.session_id)] + key_echo)
    finally:
        slot.release()


def handle_get(ex: Exchange, rid: str) -> None:
    """Serve ``GET /v1/responses/{id}``: the stored envelope, or 404."""
    item = ex.state.store.get(rid)
    if item is None:
        return ex.send_json(404, openai_error(f"Response not found: {rid}"))
    ex.send_json(200, item.response)


def handle_delete(ex: Exchange, rid: str) -> None:
    """Serve ``DELETE /v1/responses/{id}``: a deletion receipt, or 404."""
    if not ex.state.store.delete(rid):
        return ex.send_json(404, openai_error(f"Response not found: {rid}"))
    ex.send_json(200, {"id": rid, "object": "response", "deleted": True})


# -- request preparation -------------------------------------------------------
def _prepare(ex: Exchange) -> _Turn:
    body = ex.json_object()
    if body is None:
        raise _Invalid(400, bare_error("Invalid JSON in request body"))
    raw_input = body.get("input")
    if raw_input is None:
        raise _Invalid(400, openai_error("Missing 'input' field"))
    conversation = body.get("conversation")
    previous_id = body.get("previous_response_id")
    if conversation and previous_id:
        raise _Invalid(
            400,
            openai_error("Cannot use both 'conversation' and 'previous_response_id'"),
        )
    items = _input_items(raw_input)
    history = _explicit_history(body.get("conversation_history"))
    instructions = body.get("instructions")
    session_id: str | None = None
    prior_items: list[JSONDict] = []
    if history is None:
        history = []
        if conversation and not previous_id:
            # An unknown name simply starts a new conversation.
            previous_id = ex.state.store.conversation_head(str(conversation))
        if previous_id:
            stored = ex.state.store.get(str(previous_id))
            if stored is None:
                raise _Invalid(404, openai_error(f"Previous response not found: {previous_id}"))
            history = stored.conversation_history
            session_id = stored.session_id
            prior_items = _tool_items_of(stored.response)
            if instructions is None:
                instructions = stored.instructions
    history = history + items[:-1]
    if body.get("truncation") == "auto":
        history = history[-TRUNCATION_AUTO_KEEP:]
    info = RequestInfo(
        endpoint="responses",
        prompt=items[-1]["content"],
        history=history,
        system_prompt=str(instructions or ""),
        session_id=session_id or new_session_uuid(),
        stream=parse_bool(body.get("stream")),
        body=body,
        headers={k: str(v) for k, v in ex.headers.items()},
    )
    return _Turn(
        info=info,
        model=str(body.get("model") or DEFAULT_MODEL),
        instructions=None if instructions is None else str(instructions),
        conversation=str(conversation) if conversation else None,
        store=bool(body.get("store", True)),
        prior_items=prior_items,
    )


def _tool_items_of(response: JSONDict) -> list[JSONDict]:
    items: list[JSONDict] = []
    output = response.get("output")
    for item in output if isinstance(output, list) else []:  # the emulator's own envelope: a list
        if not isinstance(item, dict) or item.get("type") not in ("function_call", "function_call_output"):
            continue
        item = dict(item)
        if isinstance(item.get("output"), list):
            item["output"] = "".join(str(p.get("text", "")) for p in item["output"] if isinstance(p, dict))
        items.append(item)
    return items


def function_call_item(record: ToolRecord) -> JSONDict:
    call = record.call
    return {"type": "function_call", "name": call.name, "arguments": call.display_arguments, "call_id": call.call_id}


def function_call_output_item(record: ToolRecord, streamed: bool) -> JSONDict:
    output: object = [{"type": "input_text", "text": record.result}] if streamed else record.result
    return {"type": "function_call_output", "call_id": record.call.call_id, "output": output}


def _input_items(raw: object) -> list[dict[str, str]]:
    if isinstance(raw, str):
        items = [{"role": "user", "content": raw}]
    elif isinstance(raw, list):
        items = []
        for index, entry in enumerate(raw):
            if isinstance(entry, str):
                items.append({"role": "user", "content": entry})
            elif isinstance(entry, dict):
                try:
                    role = str(entry.get("role") or "user")
                    text = content_text(entry.get("content"), role)
                except ContentError as exc:
                    raise _Invalid(
                        400,
                        openai_error(str(exc), param=f"input[{index}].content", code=exc.code),
                    ) from None
                items.append({"role": role, "content": text})
    else:
        raise _Invalid(400, openai_error("'input' must be a string or array"))
    if not items or not items[-1]["content"].strip():
        raise _Invalid(400, openai_error("No user message found in input"))
    return items


def _explicit_history(raw: object) -> list[dict[str, str]] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise _Invalid(
            400,
            openai_error("'conversation_history' must be an array of message objects"),
        )
    history: list[dict[str, str]] = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict) or "role" not in entry or "content" not in entry:
            raise _Invalid(
                400,
                openai_error(f"conversation_history[{index}] must have 'role' and 'content' fields"),
            )
        try:
            text = content_text(entry["content"], str(entry["role"]))
        except ContentError as exc:
            raise _Invalid(
                400,
                openai_error(str(exc), param=f"conversation_history[{index}].content", code=exc.code),
            ) from None
        history.append({"role": str(entry["role"]), "content": text})
    return history


# -- execution and envelopes ---------------------------------------------------
def _run(ex: Exchange, turn: _Turn) -> AgentResult:
    return ex.state.model.run(turn.info, lambda _piece: None, threading.Event())


def _output_text(result: AgentResult) -> str:
    return result.final_response or result.error or ""


def _message(text: str) -> JSONDict:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


def _envelope(
    rid: str, created_at: int, model: str, result: AgentResult, prior_items: list[JSONDict] | None = None
) -> JSONDict:
    # Non-streaming Responses never signal failure: completed, error text, zero usage.
    # Tool items come from the transcript: every function_call, then every output (L4505-4552).
    items = list(prior_items or [])
    items += [function_call_item(r) for r in result.tool_records]
    items += [function_call_output_item(r, streamed=False) for r in result.tool_records]
    return {
        "id": rid,
        "object": "response",
        "status": "completed",
        "created_at": created_at,
        "model": model,
        "output": items + [_message(_output_text(result))],
        "usage": _usage(result),
    }


def _save(ex: Exchange, turn: _Turn, envelope: JSONDict, result: AgentResult | None) -> None:
    if not turn.store:
        return
    history = turn.info.history + [{"role": "user", "content": turn.info.prompt}]
    if result is not None and result.final_response and not result.failed:  # failed: no assistant turn
        history.append({"role": "assistant", "content": result.final_response})
    ex.state.store.put(
        str(envelope["id"]),
        StoredResponse(
            response=envelope,
            conversation_history=history,
            instructions=turn.instructions,
            session_id=turn.info.session_id,
        ),
        turn.conversation,
    )


def _stream(ex: Exchange, turn: _Turn, key_echo: Headers) -> None:
    state = ex.state
    rid, created_at = response_id(), int(time.time())
    head: JSONDict = {
        "id": rid,
        "object": "response",
        "status": "in_progress",
        "created_at": created_at,
        "model": turn.model,
        "output": [],
    }
    seq = [0]
    text: list[str] = []
    item_id: list[str] = []
    final_saved = [False]
    next_index = [0]  # output_index of the next item opened (streamed order != final order)
    msg_index = [0]
    tool_items: list[JSONDict] = []

    writer = ex.open_sse([("X-Hermes-Session-Id", turn.info.session_id)] + key_echo)

    def emit(event_type: str, fields: JSONDict) -> None:
        payload: JSONDict = {"type": event_type}
        payload.update(fields)
        payload["sequence_number"] = seq[0]
        seq[0] += 1
        writer.event(named_event(event_type, payload))

    def delta(piece: str) -> None:
        if not item_id:
            item_id.append(message_item_id())
            msg_index[0] = next_index[0]
            next_index[0] += 1
            emit(
                "response.output_item.added",
                {
                    "output_index": msg_index[0],
                    "item": {
                        "id": item_id[0],
                        "type": "message",
                        "status": "in_progress",
                        "role": "assistant",
                        "content": [],
                    },
                },
            )
        text.append(piece)
        emit(
            "response.output_text.delta",
            {
                "item_id": item_id[0],
                "output_index": msg_index[0],
                "content_index": 0,
                "delta": piece,
                "logprobs": [],
            },
        )

    def tool_done(record: ToolRecord) -> None:
        # Sent at tool completion: the call (no argument deltas), then its output (L3420-3480).
        call_item = function_call_item(record)
        output_item = function_call_output_item(record, streamed=True)
        fc: JSONDict = {
            "id": "fc_" + secrets.token_hex(12),
            "type": "function_call",
            "status": "in_progress",
            "name": call_item["name"],
            "call_id": call_item["call_id"],
            "arguments": call_item["arguments"],
        }
        index = next_index[0]
        next_index[0] += 2
        emit("response.output_item.added", {"output_index": index, "item": fc})
        emit("response.output_item.done", {"output_index": index, "item": dict(fc, status="completed")})
        fco = {"id": "fco_" + secrets.token_hex(12), **output_item, "status": "completed"}
        emit("response.output_item.added", {"output_index": index + 1, "item": fco})
        emit("response.output_item.done", {"output_index": index + 1, "item": fco})
        tool_items.extend([call_item, output_item])

    def finish(result: AgentResult | None, error: str | None) -> None:
        if result is not None and not text and result.final_response:
            delta(result.final_response)  # e.g. retry text after an upstream 500
        full = "".join(text)
        if full:
            emit(
                "response.output_text.done",
                {
                    "item_id": item_id[0],
                    "output_index": msg_index[0],
                    "content_index": 0,
                    "text": full,
                    "logprobs": [],
                },
            )
            emit(
                "response.output_item.done",
                {
                    "output_index": msg_index[0],
                    "item": {
                        "id": item_id[0],
                        "type": "message",
                        "status": "completed",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": full}],
                    },
                },
            )
        failure = error if error is not None else (result.error if result else None)
        if not full and failure:
            envelope: JSONDict = dict(
                head,
                status="failed",
                output=[_message(failure)],
                error={"message": failure, "type": "server_error"},
                usage=_usage(AgentResult(None, completed=False)),
            )
            event_type = "response.failed"
        else:
            usage = _usage(result) if result else _usage(AgentResult(None, completed=False))
            envelope = dict(
                head,
                status="completed",
                output=tool_items + ([_message(full)] if full else []),
                usage=usage,
            )
            event_type = "response.completed"
        _save(ex, turn, envelope, result)
        final_saved[0] = True
        emit(event_type, {"response": envelope})

    cancel = threading.Event()
    pump: AgentPump | None = None
    try:
        # The in-progress snapshot (L3351-3357); saved just before the event is
        # written so a client that saw response.created can always GET it.
        _save(ex, turn, dict(head), None)
        emit("response.created", {"response": head})
        hooks = AgentHooks()
        pump = AgentPump(
            lambda on_delta, ev: state.model.run(turn.info, on_delta, ev, hooks), cancel, start=False
        )
        hooks.tool_completed = lambda record: pump.post("tool", record)
        pump.start()
        batch = max(0.0, float(state.settings.delta_batch_ms)) / 1000.0
        for kind, value in pump.items(writer, state.settings.keepalive_seconds, batch):
            if kind == "delta":
                if value:
                    delta(value)
            elif kind == "tool":
                tool_done(value)
            elif kind == "done":
                finish(value, None)
            else:
                finish(None, str(value) or type(value).__name__)
        writer.finish()
    except ClientGone:
        cancel.set()
        if not final_saved[0]:
            output = [_message("".join(text))] if text else []
            _save(ex, turn, dict(head, status="incomplete", output=output), None)
        raise DropConnection() from None
    finally:
        if pump is not None:
            pump.join(0.5)


class ResponsesControl:
    """``emulator.responses``: the response store ``GET``/``DELETE /v1/responses/{id}`` read."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state

    @property
    def store(self) -> ResponseStore:
        """The response store (``ids()``, ``peek(id)``, ``conversations()``, ``len()``, ``in``)."""
        return self._state.store

    def stored(self, response_id: str) -> JSONDict | None:
        """The stored envelope for ``response_id``, or None (does not refresh its LRU position)."""
        return self._state.store.peek(response_id)


def reset(state: EmulatorState) -> None:
    """Empty the response store and restore its constructor size."""
    state.store.clear()
    state.store.max_items = state.default_store_size


ROUTES = (
    Route(("POST",), "/v1/responses", handle_create),
    Route(("GET", "HEAD"), "/v1/responses/{response_id}", handle_get),
    Route(("DELETE",), "/v1/responses/{response_id}", handle_delete),
)

CONTROL = ResponsesControl
