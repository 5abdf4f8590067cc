"""``/v1/runs``: durable agent runs with tool and approval events, as Hermes 0.19.0 serves them.

Everything mirrors ``spec/hermes-runs.md`` (transcripts ``hermes-wire/25``-``49``):

- ``POST /v1/runs`` answers ``202 {"run_id", "status": "started"}`` and runs the agent on a
  thread; ``Idempotency-Key`` is ignored (every POST is a new run);
- ``GET /v1/runs/{id}`` is the pollable status object (``last_event`` ignores deltas);
- ``GET /v1/runs/{id}/events`` is data-only SSE over ONE queue per run: concurrent
  subscribers split the events, a finished or broken subscription deletes the buffer (later
  subscribes get 404 after ~1 s, later events are dropped), an unsubscribed buffer is swept
  ``run_stream_ttl`` seconds after creation;
- ``POST /v1/runs/{id}/approval`` resolves the oldest pending approval (FIFO, no id);
- ``POST /v1/runs/{id}/stop`` interrupts; 404 once the run's task has finished.

A newer ``server_version`` (``versions.py``) adds request ids on approvals (0.20; exact answers
0.21+), steer (0.20), durable run keys, numbered resumable events and terminal fields (0.21+).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
from typing import TYPE_CHECKING

from ..exchange import DropConnection, draining, rate_limited
from ..model import AgentHooks, AgentResult, Cancelled, RequestInfo, io_usage
from ..routes import Route
from ..runmachine import Emitter, PendingApproval, Run, RunQueue, await_approval
from ..sse import ClientGone
from ..tools import ToolCall, ToolRecord
from ..wire import DEFAULT_MODEL, JSONDict, bare_error, openai_error, parse_bool

if TYPE_CHECKING:
    from ..exchange import Exchange
    from ..state import EmulatorState, RunSlot

REQUEST_ID_MAX = 256
RUN_KEY_MAX = 255
APPROVAL_CHOICES = ("once", "session", "always", "deny")
CHOICE_ALIASES = {"approve": "once", "approved": "once", "allow": "once"}
SESSION_KEY_MAX = 256
SUBSCRIBE_TRIES = 20  # the events route waits 20 x 50 ms for the run's queue (L5147-5152)
SUBSCRIBE_STEP = 0.05
INVALID_CHOICE = "Invalid approval choice; expected one of: once, session, always, deny"



class _BadInput(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class _Crash(Exception):
    """Hermes raises an unhandled AttributeError here: aiohttp's text/plain 500."""


# --------------------------------------------------------------------------- routes


def not_found(ex: Exchange, run_id: str) -> None:
    ex.send_json(404, openai_error(f"Run not found: {run_id}", code="run_not_found"))


def _sweep(state: EmulatorState) -> None:
    s = state.settings
    state.runs.sweep(time.time(), s.run_stream_ttl, s.run_status_ttl)


def handle_create(ex: Exchange) -> None:
    state = ex.state
    _sweep(state)
    if state.settings.draining:
        return draining(ex)
    session_key = ex.header("X-Hermes-Session-Key")
    if session_key is not None:
        if len(session_key) > SESSION_KEY_MAX:
            return ex.send_json(400, bare_error("Session key too long"))
        if any(ch in session_key for ch in ("\r", "\n", "\x00")):
            return ex.send_json(400, bare_error("Invalid session key"))
    behaviour = state.behaviour
    run_key = ex.header("Idempotency-Key") if behaviour.runs_idempotency else None
    fingerprint = ""
    if run_key is not None:
        if not 1 <= len(run_key) <= RUN_KEY_MAX or not all("\x21" <= ch <= "\x7e" for ch in run_key):
            return ex.send_json(400, openai_error("Idempotency-Key must be 1-255 visible ASCII characters",
                                                  code="invalid_idempotency_key"))
        fingerprint = hashlib.sha256(ex.raw_body + (session_key or "").encode()).hexdigest()
        known = state.run_keys.get(run_key)
        if known is not None:  # answered even while the cap is full
            if known[0] != fingerprint:
                return ex.send_json(409, openai_error("Idempotency-Key was used with a different request",
                                                      code="idempotency_key_conflict"))
            run = state.runs.get(known[1])
            status = run.state if run is not None else "started"
            return ex.send_json(202, {"run_id": known[1], "status": status, "replayed": True})
    slot = state.try_acquire_run()  # before the body is parsed (hermes-wire/37)
    if slot is None:
        return rate_limited(ex)
    started = False
    try:
        try:
            body = json.loads(ex.raw_body.decode("utf-8")) if ex.raw_body and not ex.oversize else None
        except ValueError:
            body = None
        if body is None:
            return ex.send_json(400, openai_error("Invalid JSON"))
        try:
            info, model = _prepare(ex, body)
        except _BadInput as exc:
            return ex.send_json(400, openai_error(exc.message))
        except _Crash:
            return ex.send_crash()
        run_id = "run_" + uuid.uuid4().hex
        session_id = info.session_id or run_id
        info = RequestInfo(
            endpoint="runs",
            prompt=info.prompt,
            history=info.history,
            system_prompt=info.system_prompt,
            session_id=session_id,
            stream=True,
            body=info.body,
            headers=info.headers,
        )
        created = time.time()
        run = Run(run_id, session_id, model, created)
        run.exact_approvals = behaviour.exact_approvals
        run.set_status("running")  # "queued" only lasts until the task's first step: never observed
        queue = RunQueue()
        with state.runs.lock:
            state.runs.runs[run_id] = run
            state.runs.streams[run_id] = queue
            state.runs.streams_created[run_id] = created
        thread = threading.Thread(
            target=_execute, args=(state, run, queue, info, slot), daemon=True, name=f"hermes-emulator-{run_id}"
        )
        if run_key is not None:
            state.run_keys[run_key] = (fingerprint, run_id)
        thread.start()
        started = True
        headers = [("X-Hermes-Session-Key", session_key)] if session_key is not None else []
        reply: JSONDict = {"run_id": run_id, "status": "started"}
        if behaviour.runs_idempotency:
            reply["replayed"] = False
        ex.send_json(202, reply, headers)
    finally:
        if not started:
            slot.release()


def _prepare(ex: Exchange, body: object) -> tuple[RequestInfo, object]:
    if not isinstance(body, dict):
        raise _Crash()  # body.get on a list (L4794)
    raw = body.get("input")
    if not raw:
        raise _BadInput("Missing 'input' field")
    history: list[dict[str, str]] = []
    if isinstance(raw, str):
        prompt = raw
    elif isinstance(raw, list):
        last = raw[-1]
        if not isinstance(last, dict):
            raise _Crash()  # "str" has no .get (L4798)
        prompt = _flatten(last.get("content"))
        for item in raw[:-1]:
            if isinstance(item, dict) and item.get("role") and item.get("content"):
                history.append({"role": str(item["role"]), "content": _flatten(item["content"])})
    else:
        prompt = ""
    if not prompt:
        raise _BadInput("No user message found in input")
    instructions = body.get("instructions")
    session_id = body.get("session_id")
    explicit = body.get("conversation_history")
    if explicit is not None:
        if not isinstance(explicit, list):
            raise _BadInput("'conversation_history' must be an array of message objects")
        for index, entry in enumerate(explicit):
            if not isinstance(entry, dict) or "role" not in entry or "content" not in entry:
                raise _BadInput(f"conversation_history[{index}] must have 'role' and 'content' fields")
        history = [{"role": str(e["role"]), "content": str(e["content"])} for e in explicit] + history
    elif body.get("previous_response_id"):
        stored = ex.state.store.get(str(body["previous_response_id"]))
        if stored is not None:  # an unknown id is not an error: just no history
            # Hermes duplicates the user turn on this path (L4436-4439, hermes-wire/33).
            history = list(stored.conversation_history) + history
            session_id = session_id or stored.session_id
            if instructions is None:
                instructions = stored.instructions
    info = RequestInfo(
        endpoint="runs",
        prompt=prompt,
        history=history,
        system_prompt=str(instructions or ""),
        session_id=str(session_id) if session_id else "",
        stream=True,
        body=body,
        headers={k: str(v) for k, v in ex.headers.items()},
    )
    return info, body.get("model") or DEFAULT_MODEL


def _flatten(content: object) -> str:
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") in ("text", "input_text")]
        return "".join(str(p) for p in parts if p)
    if content is None:
        return ""
    return content if isinstance(content, str) else str(content)


def handle_get(ex: Exchange, run_id: str) -> None:
    _sweep(ex.state)
    run = ex.state.runs.get(run_id)
    if run is None:
        return not_found(ex, run_id)
    ex.send_json(200, run.snapshot())


def handle_events(ex: Exchange, run_id: str) -> None:
    state = ex.state
    _sweep(state)
    if state.behaviour.event_ids:
        return _events_from_log(ex, run_id)
    registry = state.runs
    queue: RunQueue | None = None
    for _attempt in range(SUBSCRIBE_TRIES):
        with registry.lock:
            queue = registry.streams.get(run_id)
            if queue is not None:
                registry.subscribers.add(run_id)
                break
        time.sleep(SUBSCRIBE_STEP)
    if queue is None:
        return not_found(ex, run_id)
    writer = ex.open_sse([], check_alive=True)
    try:
        while True:
            got, event, ack = queue.get(state.settings.run_events_keepalive_seconds)
            try:
                if not got:
                    writer.keepalive()
                    continue
                if event is None:
                    # Gone before the client can see the end: one who subscribes again at once
                    # gets the 404 Hermes gives (its handler drops the buffer before it returns).
                    registry.drop_stream(run_id)
                    writer.comment("stream closed")
                    break
                writer.event(f"data: {json.dumps(event)}\n\n".encode())
            except ClientGone:
                registry.drop_stream(run_id)  # before the producer may queue the next event
                raise
            finally:
                ack()
        writer.finish()
    except ClientGone:
        raise DropConnection() from None
    finally:
        registry.drop_stream(run_id)


def _resume_point(ex: Exchange) -> int:
    """0.21+: the first seq to send: after ``Last-Event-ID`` or ``?last_seq=`` (else 0)."""
    from urllib.parse import parse_qs

    given = ex.header("Last-Event-ID")
    if given is None:
        values = parse_qs(ex.query).get("last_seq")
        given = values[0] if values else None
    try:
        return int(given) + 1 if given is not None else 0
    except ValueError:
        return 0


def _events_from_log(ex: Exchange, run_id: str) -> None:
    """0.21+: every subscriber reads the run's numbered log from its resume point (``: open``
    first, ``id: N`` per event), so a dropped connection resumes without loss or repeats."""
    run = ex.state.runs.get(run_id)
    if run is None:
        return not_found(ex, run_id)
    position = _resume_point(ex)
    writer = ex.open_sse([], check_alive=True)
    keepalive = ex.state.settings.run_events_keepalive_seconds
    try:
        writer.comment("open")
        while True:
            with run.changed:
                if position >= len(run.events_emitted) and not run.closed:
                    run.changed.wait(keepalive)
                batch = run.events_emitted[position:]
                closed = run.closed
            if not batch and not closed:
                writer.keepalive()
                continue
            for event in batch:
                writer.event(f"id: {event['seq']}\ndata: {json.dumps(event)}\n\n".encode())
                position += 1
            if closed and position >= len(run.events_emitted):
                writer.comment("stream closed")
                break
        writer.finish()
    except ClientGone:
        raise DropConnection() from None


def _pick(run: Run, body: JSONDict, resolve_all: bool) -> list[PendingApproval] | str:
    """The pending approvals an answer resolves, or the error code: 0.21+ resolves exactly a
    given ``request_id``; otherwise (and on 0.19/0.20, which ignore it) the oldest first."""
    request_id = body.get("request_id")
    with run.lock:
        if request_id is not None and run.exact_approvals:
            if not isinstance(request_id, str) or not request_id or len(request_id) > REQUEST_ID_MAX:
                return "invalid_approval_request"
            for pending in run.approvals:
                if pending.request_id == request_id:
                    run.approvals.remove(pending)
                    return [pending]
            return []
        resolved: list[PendingApproval] = []
        while run.approvals and (resolve_all or not resolved):
            resolved.append(run.approvals.popleft())
        return resolved


def handle_approval(ex: Exchange, run_id: str) -> None:
    run = ex.state.runs.get(run_id)
    if run is None:  # looked up before the body is read (hermes-wire/36)
        return not_found(ex, run_id)
    try:
        body = json.loads(ex.raw_body.decode("utf-8")) if ex.raw_body else None
    except ValueError:
        body = None
    if body is None:
        return ex.send_json(400, openai_error("Invalid JSON"))
    if not isinstance(body, dict):
        return ex.send_crash()
    choice = str(body.get("choice", "")).strip().lower()
    choice = CHOICE_ALIASES.get(choice, choice)
    if choice not in APPROVAL_CHOICES:
        return ex.send_json(400, openai_error(INVALID_CHOICE, code="invalid_approval_choice"))
    if run.approvals_closed.is_set():
        return ex.send_json(
            409, openai_error(f"Run has no active approval session: {run_id}", code="approval_not_active")
        )
    resolve_all = parse_bool(body.get("all")) or parse_bool(body.get("resolve_all"))
    resolved = _pick(run, body, resolve_all)
    if isinstance(resolved, str):
        return ex.send_json(400, openai_error("Invalid approval request_id", code=resolved))
    if not resolved:
        return ex.send_json(409, openai_error(f"Run has no pending approval: {run_id}", code="approval_not_pending"))
    for pending in resolved:
        pending.choice = choice
        pending.answered.set()
    emitter = Emitter(ex.state, run, _queue_of(ex.state, run_id))
    run.set_status("running", last_event="approval.responded")
    with run.lock:
        run.status.pop("approval", None)
    emitter.put({"event": "approval.responded", "run_id": run_id, "timestamp": time.time(),
                 "choice": choice, "resolved": len(resolved)})
    ex.send_json(
        200,
        {"object": "hermes.run.approval_response", "run_id": run_id, "choice": choice, "resolved": len(resolved)},
    )


def handle_stop(ex: Exchange, run_id: str) -> None:
    run = ex.state.runs.get(run_id)
    if run is not None and run.done.is_set() and ex.state.behaviour.terminal_fields:
        return ex.send_json(200, run.snapshot())  # 0.21+: a finished run's /stop answers its object
    if run is None or run.done.is_set():
        return not_found(ex, run_id)
    run.set_status("stopping", last_event="run.stopping")
    run.stop_requested.set()
    delay = ex.state.settings.stop_latency
    if delay > 0:
        # Hermes' interrupt lands a moment later (~0.2 s for an upstream call in flight).
        timer = threading.Timer(delay, run.cancel.set)
        timer.daemon = True
        timer.start()
    else:
        run.cancel.set()
    ex.send_json(200, {"run_id": run_id, "status": "stopping"})


def handle_steer(ex: Exchange, run_id: str) -> None:
    """0.20+: ``{input|message|text}`` reaches the running agent; ``run.steered`` is emitted."""
    run = ex.state.runs.get(run_id)
    if run is None:
        return not_found(ex, run_id)
    try:
        body = json.loads(ex.raw_body.decode("utf-8")) if ex.raw_body else None
    except ValueError:
        body = None
    text = next((body.get(k) for k in ("input", "message", "text") if isinstance(body, dict) and body.get(k)), None)
    if not isinstance(text, str) or not text.strip():
        return ex.send_json(400, openai_error("Steer input must be a non-empty string", code="invalid_steer_input"))
    if run.done.is_set() or run.state not in ("running", "waiting_for_approval"):
        return ex.send_json(409, openai_error(f"Run is not accepting steer input: {run_id}",
                                              code="run_not_accepting_steer"))
    with run.lock:
        run.steers.append(text)
    Emitter(ex.state, run, _queue_of(ex.state, run_id)).event("run.steered", accepted=True)
    ex.send_json(200, {"object": "hermes.run.steer", "run_id": run_id, "accepted": True})


def _queue_of(state: EmulatorState, run_id: str) -> RunQueue | None:
    with state.runs.lock:
        return state.runs.streams.get(run_id)


# --------------------------------------------------------------------------- the agent task


def _execute(state: EmulatorState, run: Run, queue: RunQueue, info: RequestInfo, slot: RunSlot) -> None:
    emit = Emitter(state, run, queue)
    try:
        hooks = AgentHooks(
            tool_started=lambda call: _tool_started(emit, call),
            tool_completed=lambda record: _tool_completed(emit, run, record),
            assistant_message=lambda text: emit.event("reasoning.available", text=text),
            approver=lambda danger: await_approval(state, run, emit, danger),
            session_patterns=run.session_patterns,
        )
        result: AgentResult | None = None
        failure: str | None = None
        try:
            result = state.model.run(info, lambda piece: emit.event("message.delta", delta=piece), run.cancel, hooks)
        except Cancelled:
            result = None
        except Exception as exc:  # noqa: BLE001 - Hermes reports a raising agent as run.failed
            failure = str(exc) or type(exc).__name__
        run.approvals_closed.set()
        state.transcripts.append(info.session_id, _transcript(info, result))
        if run.cancel.is_set() or (result is None and failure is None):
            ended = _cancelled(state)
            run.set_status("cancelled", **ended)
            emit.event("run.cancelled", **ended)
        elif failure is not None or (result is not None and result.failed):
            error = failure if failure is not None else (result.error if result else None) or "agent failed"
            ended = _ended(state, run, completed=False)
            run.set_status("failed", error=error, **ended)
            emit.event("run.failed", error=error, **ended)
        else:
            assert result is not None
            usage = io_usage(result)
            ended = _ended(state, run, completed=True)
            if state.behaviour.terminal_fields:
                usage = {**usage, "cache_read_tokens": 0, "cache_write_tokens": 0}
            run.set_status("completed", output=result.final_response, usage=usage, **ended)
            emit.event("run.completed", output=result.final_response, usage=usage, **ended)
    finally:
        run.approvals_closed.set()
        run.done.set()
        with run.lock:
            leftovers = list(run.approvals)
            run.approvals.clear()
        for pending in leftovers:
            pending.choice = "deny"
            pending.answered.set()
        slot.release()
        emit.put(None)  # the close sentinel: the subscriber writes ": stream closed"


def _cancelled(state: EmulatorState) -> JSONDict:
    """0.21+: a stopped run's terminal fields (measured on 0.22.2)."""
    if not state.behaviour.terminal_fields:
        return {}
    return {"completed": False, "partial": False, "interrupted": True,
            "turn_exit_reason": "interrupted_during_api_call"}


def _ended(state: EmulatorState, run: Run, completed: bool) -> JSONDict:
    """What terminal events and statuses add: 0.20+ ``pending_steer`` (steer text the agent never
    took in: the scripted model takes none), 0.21+ ``runtime``, ``completed``, ``partial``, ``interrupted``."""
    fields: JSONDict = {}
    if state.behaviour.terminal_fields:
        fields.update(runtime={"provider": "custom", "model": "fake-model", "route_source": "global"},
                      completed=completed, partial=False, interrupted=False)
    with run.lock:
        if run.steers:
            fields["pending_steer"] = "\n".join(run.steers)
    return fields


def _tool_started(emit: Emitter, call: ToolCall) -> None:
    emit.event("tool.started", tool=call.name, preview=call.preview)


def _tool_completed(emit: Emitter, run: Run, record: ToolRecord) -> None:
    emit.event("tool.completed", tool=record.call.name, duration=round(record.duration, 3), error=record.error)
    if run.stop_requested.is_set():
        # Hermes checks its interrupt flag when a tool returns: a stop lands here at the latest,
        # however late the stop_latency timer fires on a busy machine.
        run.cancel.set()


def _transcript(info: RequestInfo, result: AgentResult | None) -> list[dict[str, str]]:
    """What Hermes writes to state.db for the run's session (simplified to text turns)."""
    turn = [{"role": "user", "content": info.prompt}]
    if result is not None:
        if result.final_response and not result.failed:
            turn.append({"role": "assistant", "content": result.final_response})
    return turn


class RunsControl:
    """``emulator.runs``: the runs' observations and settings (Hermes' ``approvals.timeout``, the
    events keepalive, the unsubscribed-buffer sweep, finished-run retention and the stop latency)."""

    def __init__(self, state: EmulatorState) -> None:
        self._state = state

    def status(self, run_id: str) -> JSONDict | None:
        """The run object ``GET /v1/runs/{id}`` would return, or None."""
        run = self._state.runs.get(run_id)
        return None if run is None else run.snapshot()

    def ids(self) -> list[str]:
        """Every run id the emulator still knows, oldest first."""
        with self._state.runs.lock:
            return list(self._state.runs.runs)

    def events(self, run_id: str) -> list[JSONDict]:
        """Every event the run queued so far, whoever (if anyone) received it."""
        run = self._state.runs.get(run_id)
        if run is None:
            return []
        with run.lock:
            return [dict(e) for e in run.events_emitted]

    def pending_approvals(self, run_id: str) -> list[JSONDict]:
        """The run's unanswered approval requests, oldest first (payload fields only)."""
        run = self._state.runs.get(run_id)
        if run is None:
            return []
        with run.lock:
            return [p.danger.payload() for p in run.approvals]

    def wait(self, run_id: str, timeout: float = 10.0) -> JSONDict | None:
        """Block until the run's task finished (or ``timeout``); return its run object."""
        run = self._state.runs.get(run_id)
        if run is None:
            return None
        run.done.wait(timeout)
        return run.snapshot()

    @property
    def approval_timeout(self) -> float:
        return self._state.settings.approval_timeout

    @approval_timeout.setter
    def approval_timeout(self, seconds: float) -> None:
        self._state.settings.approval_timeout = float(seconds)

    @property
    def events_keepalive_seconds(self) -> float:
        return self._state.settings.run_events_keepalive_seconds

    @events_keepalive_seconds.setter
    def events_keepalive_seconds(self, seconds: float) -> None:
        self._state.settings.run_events_keepalive_seconds = float(seconds)

    @property
    def stream_ttl(self) -> float:
        return self._state.settings.run_stream_ttl

    @stream_ttl.setter
    def stream_ttl(self, seconds: float) -> None:
        self._state.settings.run_stream_ttl = float(seconds)

    @property
    def status_ttl(self) -> float:
        return self._state.settings.run_status_ttl

    @status_ttl.setter
    def status_ttl(self, seconds: float) -> None:
        self._state.settings.run_status_ttl = float(seconds)

    @property
    def stop_latency(self) -> float:
        return self._state.settings.stop_latency

    @stop_latency.setter
    def stop_latency(self, seconds: float) -> None:
        self._state.settings.stop_latency = max(0.0, float(seconds))


def reset(state: EmulatorState) -> None:
    """Forget finished runs and the run keys; runs in flight belong to requests still open."""
    state.runs.clear_finished()
    state.run_keys.clear()


_RUN = "/v1/runs/{run_id}"
# aiohttp lists only the registered method in Allow (hermes-wire/34).
ROUTES = (
    Route(("POST",), "/v1/runs", handle_create),
    Route(("GET",), _RUN, handle_get),
    Route(("GET",), _RUN + "/events", handle_events),
    Route(("POST",), _RUN + "/approval", handle_approval),
    Route(("POST",), _RUN + "/stop", handle_stop),
    Route(("POST",), _RUN + "/steer", handle_steer, since="steer"),
)


CONTROL = RunsControl

__all__ = ["CONTROL", "ROUTES", "RunsControl", "reset"]
