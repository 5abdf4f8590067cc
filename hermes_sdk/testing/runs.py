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
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .model import AgentHooks, AgentResult, Cancelled, RequestInfo, io_usage
from .sse import ClientGone
from .tools import Danger, ToolCall, ToolRecord
from .wire import DEFAULT_MODEL, JSONDict, bare_error, openai_error, parse_bool

if TYPE_CHECKING:
    from .server import Exchange
    from .state import EmulatorState

TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "interrupted"})
REQUEST_ID_MAX = 256
RUN_KEY_MAX = 255
APPROVAL_CHOICES = ("once", "session", "always", "deny")
CHOICE_ALIASES = {"approve": "once", "approved": "once", "allow": "once"}
SESSION_KEY_MAX = 256
SUBSCRIBE_TRIES = 20  # the events route waits 20 x 50 ms for the run's queue (L5147-5152)
SUBSCRIBE_STEP = 0.05
APPROVAL_POLL_SECONDS = 1.0  # the approval wait notices a stop within ~1 s (tools/approval.py:3134)
INVALID_CHOICE = "Invalid approval choice; expected one of: once, session, always, deny"


HANDOFF_WAIT_SECONDS = 1.0


def _no_ack() -> None:
    return None


class RunQueue:
    """``asyncio.Queue`` semantics for threads: each item goes to ONE getter, oldest waiter first.

    A hand-off to a waiting subscriber blocks the producer until that subscriber has written
    the item (or found its client gone), as Hermes' single event loop orders it: a dead
    subscriber then drops the buffer before the next event is queued.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: deque[JSONDict | None] = deque()
        self._waiters: deque[_Waiter] = deque()

    def put(self, item: JSONDict | None) -> None:
        with self._lock:
            waiter = self._waiters.popleft() if self._waiters else None
            if waiter is None:
                self._items.append(item)
                return
            waiter.item = item
            waiter.ready.set()
        waiter.processed.wait(HANDOFF_WAIT_SECONDS)

    def get(self, timeout: float) -> tuple[bool, JSONDict | None, Callable[[], None]]:
        """``(True, item, ack)``, or ``(False, None, ack)`` after ``timeout`` s without one.

        Call ``ack()`` once the item was written (or the write failed).
        """
        with self._lock:
            if self._items:
                return True, self._items.popleft(), _no_ack
            waiter = _Waiter()
            self._waiters.append(waiter)
        if waiter.ready.wait(max(0.0, timeout)):
            return True, waiter.item, waiter.processed.set
        with self._lock:
            if waiter.ready.is_set():  # handed over just as the wait timed out
                return True, waiter.item, waiter.processed.set
            self._waiters.remove(waiter)
        return False, None, _no_ack

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


@dataclass
class _Waiter:
    ready: threading.Event = field(default_factory=threading.Event)
    processed: threading.Event = field(default_factory=threading.Event)
    item: JSONDict | None = None


@dataclass
class PendingApproval:
    danger: Danger
    answered: threading.Event = field(default_factory=threading.Event)
    choice: str | None = None
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)


class Run:
    """One run: its status object, control state and pending approvals."""

    def __init__(self, run_id: str, session_id: str, model: object, created_at: float) -> None:
        self.run_id = run_id
        self.lock = threading.Lock()
        self.status: JSONDict = {
            "object": "hermes.run",
            "run_id": run_id,
            "status": "queued",
            "updated_at": created_at,
            "created_at": created_at,
            "session_id": session_id,
            "model": model,
        }
        self.cancel = threading.Event()
        self.stop_requested = threading.Event()  # POST /stop was answered; cancel lands later
        self.done = threading.Event()  # the agent task has finished
        # The approval session closes when the agent returns, before the terminal status and event:
        # a caller who saw ``run.completed`` must get ``approval_not_active``, never ``not_pending``.
        self.approvals_closed = threading.Event()
        self.approvals: deque[PendingApproval] = deque()
        self.session_patterns: set[str] = set()
        self.steers: list[str] = []  # 0.20+: steer messages taken in
        self.exact_approvals = False  # 0.21+: an answer's request_id resolves exactly that request
        self.events_emitted: list[JSONDict] = []  # everything the agent queued (for tests; 0.21+: replay log)
        self.closed = False  # 0.21+: the log is complete (the run's task ended)
        self.changed = threading.Condition(self.lock)  # 0.21+: a log reader waits for the next event

    def set_status(self, status: str | None = None, **fields: object) -> None:
        """Hermes' ``_set_run_status``: status and ``updated_at`` first, then the fields."""
        with self.lock:
            if status is not None:
                self.status["status"] = status
            self.status["updated_at"] = time.time()
            self.status.update(fields)

    def snapshot(self) -> JSONDict:
        with self.lock:
            return dict(self.status)

    @property
    def state(self) -> str:
        with self.lock:
            return str(self.status["status"])


class RunRegistry:
    """All runs of one emulator plus the per-run event queues (Hermes' ``_run_streams``)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: dict[str, Run] = {}
        self.streams: dict[str, RunQueue] = {}
        self.streams_created: dict[str, float] = {}
        self.subscribers: set[str] = set()

    def get(self, run_id: str) -> Run | None:
        with self.lock:
            return self.runs.get(run_id)

    def put_event(self, run_id: str, queue: RunQueue, event: JSONDict | None) -> None:
        """``_put_event_if_active``: only while this run still owns its transport."""
        with self.lock:
            if self.streams.get(run_id) is not queue:
                return
        queue.put(event)

    def drop_stream(self, run_id: str) -> None:
        with self.lock:
            self.subscribers.discard(run_id)
            self.streams.pop(run_id, None)
            self.streams_created.pop(run_id, None)

    def sweep(self, now: float, stream_ttl: float, status_ttl: float) -> None:
        """Unsubscribed buffers older than ``stream_ttl``; terminal runs ``status_ttl`` after update."""
        with self.lock:
            for run_id, created in list(self.streams_created.items()):
                if now - created > stream_ttl and run_id not in self.subscribers:
                    self.streams.pop(run_id, None)
                    self.streams_created.pop(run_id, None)
            for run_id, run in list(self.runs.items()):
                snap = run.snapshot()
                updated = snap["updated_at"]
                assert isinstance(updated, float)  # set_status() stores time.time()
                if snap["status"] in TERMINAL_STATUSES and now - updated > status_ttl:
                    del self.runs[run_id]

    def clear_finished(self) -> None:
        with self.lock:
            for run_id, run in list(self.runs.items()):
                if run.done.is_set():
                    del self.runs[run_id]
                    self.streams.pop(run_id, None)
                    self.streams_created.pop(run_id, None)
                    self.subscribers.discard(run_id)


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
        ex.send_json(
            503,
            openai_error("Gateway is draining; retry shortly", err_type="server_error", code="gateway_draining"),
            [("Retry-After", "1")],
        )
        return
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
    if not state.try_acquire_run():  # before the body is parsed (hermes-wire/37)
        from .chat import rate_limited  # chat imports state, which imports this module

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
            target=_execute, args=(state, run, queue, info), daemon=True, name=f"hermes-emulator-{run_id}"
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
            state.release_run()


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
    from .server import DropConnection

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
    from .server import DropConnection

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
    emitter = _Emitter(ex.state, run, _queue_of(ex.state, run_id))
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
    _Emitter(ex.state, run, _queue_of(ex.state, run_id)).event("run.steered", accepted=True)
    ex.send_json(200, {"object": "hermes.run.steer", "run_id": run_id, "accepted": True})


def _queue_of(state: EmulatorState, run_id: str) -> RunQueue | None:
    with state.runs.lock:
        return state.runs.streams.get(run_id)


# --------------------------------------------------------------------------- the agent task


class _Emitter:
    """Queues events for the run's subscriber and keeps ``last_event`` current."""

    def __init__(self, state: EmulatorState, run: Run, queue: RunQueue | None) -> None:
        self.state = state
        self.run = run
        self.queue = queue

    def put(self, event: JSONDict | None) -> None:
        numbered = self.state.behaviour.event_ids
        with self.run.lock:
            if event is not None:
                if numbered:
                    event["seq"] = len(self.run.events_emitted)
                self.run.events_emitted.append(event)
            else:
                self.run.closed = True
            self.run.changed.notify_all()
        if self.queue is not None:
            self.state.runs.put_event(self.run.run_id, self.queue, event)

    def event(self, event_type: str, **fields: object) -> None:
        event: JSONDict = {"event": event_type, "run_id": self.run.run_id, "timestamp": time.time()}
        event.update(fields)
        if event_type != "message.delta":  # deltas never touch the status object
            self.run.set_status(last_event=event_type)
        self.put(event)


def _execute(state: EmulatorState, run: Run, queue: RunQueue, info: RequestInfo) -> None:
    emit = _Emitter(state, run, queue)
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
        state.release_run()
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


def _tool_started(emit: _Emitter, call: ToolCall) -> None:
    emit.event("tool.started", tool=call.name, preview=call.preview)


def _tool_completed(emit: _Emitter, run: Run, record: ToolRecord) -> None:
    emit.event("tool.completed", tool=record.call.name, duration=round(record.duration, 3), error=record.error)
    if run.stop_requested.is_set():
        # Hermes checks its interrupt flag when a tool returns: a stop lands here at the latest,
        # however late the stop_latency timer fires on a busy machine.
        run.cancel.set()


def await_approval(state: EmulatorState, run: Run, emit: _Emitter, danger: Danger) -> str:
    """Block like ``_await_gateway_decision``: answer, timeout, or a stop (resolved as deny)."""
    pending = PendingApproval(danger)
    with run.lock:
        run.approvals.append(pending)
    event = approval_event(state, danger, pending, run.run_id)
    run.set_status("waiting_for_approval", last_event="approval.request")
    if state.behaviour.exact_approvals:  # 0.21+: the status embeds the pending request
        run.set_status(approval=dict(event))
    emit.put(event)
    deadline = time.monotonic() + state.settings.approval_timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or state.model.stopping.is_set():
            outcome = "timeout"
            break
        if pending.answered.wait(min(remaining, APPROVAL_POLL_SECONDS)):
            return pending.choice or "deny"
        if run.cancel.is_set():
            outcome = "deny"
            break
    with run.lock:
        if pending in run.approvals:
            run.approvals.remove(pending)
    if pending.answered.is_set():
        return pending.choice or "deny"
    return outcome


def approval_event(state: EmulatorState, danger: Danger, pending: PendingApproval, run_id: str) -> JSONDict:
    """An ``approval.request`` as the played version sends it (0.20+: ``request_id``, ``allow_session``)."""
    event: JSONDict = danger.payload()
    if state.behaviour.request_ids:
        event.update(allow_session="session" in danger.choices, request_id=pending.request_id)
    event.update(event="approval.request", run_id=run_id, timestamp=time.time(), choices=danger.choices)
    return event


def _transcript(info: RequestInfo, result: AgentResult | None) -> list[dict[str, str]]:
    """What Hermes writes to state.db for the run's session (simplified to text turns)."""
    turn = [{"role": "user", "content": info.prompt}]
    if result is not None:
        if result.final_response and not result.failed:
            turn.append({"role": "assistant", "content": result.final_response})
    return turn


__all__ = [
    "Run",
    "RunQueue",
    "RunRegistry",
    "handle_approval",
    "handle_create",
    "handle_events",
    "handle_get",
    "handle_steer",
    "handle_stop",
]
