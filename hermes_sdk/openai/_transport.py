"""The httpx transport that openai sends through: every request becomes one hermes-sdk call.

openai builds each request and parses each reply as it always does; this transport executes it
through hermes-sdk's executor instead of a socket, so keys, approvals, deadlines, redaction,
tracing and plugins apply to every call even without the client's hooks (``http_client=`` is
openai's public extension point). It speaks only the public httpx API of the library openai uses.
"""

from __future__ import annotations

import importlib
import json
import random
import time
from collections.abc import Iterator, Mapping
from typing import Any, Callable, Optional

import openai

from hermes_sdk._core.deadline import CallTimeout
from hermes_sdk._core.redaction import scrub
from hermes_sdk.errors import (
    DeadlineExceededError,
    HermesError,
    InvalidInputError,
    NotFoundError,
    RemoteTemporaryError,
    TransportError,
    UnsupportedByServerError,
)

from . import _passthrough
from . import errors as dual
from ._options import CallExtras, call_retries, current
from ._streams import chat_frames, replayed_frames, responses_frames

#: The HTTP library of this openai release (httpx, or httpx2 from openai 3): the one whose Client
#: openai's public DefaultHttpxClient subclasses.
_CLIENT_BASE = next(c for c in openai.DefaultHttpxClient.__mro__[1:] if c.__name__ == "Client")
httpx: Any = importlib.import_module(_CLIENT_BASE.__module__.split(".")[0])

__all__ = ["HermesHttpClient", "HermesTransport", "httpx"]

#: How long a stream (or a call with timeout=None) may run in all when no deadline is given:
#: openai bounds only each read, and hermes-sdk's published defaults (60 s, 300 s) would cut
#: agent turns that plain openai let finish.
STREAM_TOTAL_SECONDS = 86400.0
MAX_STREAM_EVENTS = 100_000
#: Hermes-only events kept on ``stream.response.extensions["hermes_events"]`` (the first ones).
MAX_SIDE_EVENTS = 1000
_DROPPED_HEADERS = frozenset({"content-length", "transfer-encoding", "content-encoding", "connection",
                              "keep-alive"})


class _RetriedByOpenAI(httpx.TransportError):  # type: ignore[misc]
    """A GET that got no reply: raised as httpx's own error so openai's loop retries it as usual."""

    hermes: HermesError


class _TimedOutForOpenAI(httpx.ReadTimeout):  # type: ignore[misc]
    hermes: HermesError


class HermesTransport(httpx.BaseTransport):  # type: ignore[misc]
    """Routes openai's requests to a :class:`~hermes_sdk.HermesClient` (``hermes``)."""

    def __init__(self, hermes: Any, *, owns: bool, client_tools: str = "refuse",
                 deadline: Any = None, max_retries: int = 2) -> None:
        if client_tools not in ("refuse", "ignore"):
            raise InvalidInputError("client_tools must be 'refuse' or 'ignore'", details={"field": "client_tools"})
        self.hermes = hermes
        self.owns = owns
        self.client_tools = client_tools
        self.deadline = deadline
        self.max_retries = max_retries
        self._reads = hermes.with_options(max_attempts=1)  # openai's own loop retries GETs
        self._tool_execution: Optional[str] = None

    def evolve(self, **changes: Any) -> "HermesTransport":
        """A transport over the same HermesClient (not owned) with other settings."""
        made = HermesTransport(self.hermes, owns=False, client_tools=changes.get("client_tools", self.client_tools),
                               deadline=changes.get("deadline", self.deadline),
                               max_retries=changes.get("max_retries", self.max_retries))
        made._tool_execution = self._tool_execution
        return made

    def close(self) -> None:
        if self.owns:
            self.hermes.close()

    # ------------------------------------------------------------------ one request

    def handle_request(self, request: Any) -> Any:
        extras = current()
        method = request.method.upper()
        try:
            if method == "POST":
                return self._post_with_safe_retries(request, extras)
            return self._read_or_delete(method, request, extras)
        except HermesError as err:
            return self._failure(err, request, method)

    def _route(self, request: Any) -> str:
        path: str = request.url.path
        return path[3:] if path.startswith("/v1/") else path

    def _call_keywords(self, request: Any, extras: CallExtras, *, stream: bool) -> dict[str, Any]:
        key = request.headers.get("idempotency-key")
        if key is not None and extras.idempotency_key is not None and key != extras.idempotency_key:
            raise InvalidInputError("the Idempotency-Key header and call_options(idempotency_key=) differ; "
                                    "give one key per call", details={"field": "idempotency_key", "sent": False})
        deadline = extras.deadline
        if deadline is None and self.deadline is not None:
            deadline = self.deadline() if callable(self.deadline) else self.deadline
        return {"idempotency_key": key or extras.idempotency_key, "action_id": extras.action_id,
                "context": extras.context, "deadline": deadline, "timeout": _timeout_of(request, stream)}

    def _post_with_safe_retries(self, request: Any, extras: CallExtras) -> Any:
        retry_count = request.headers.get("x-stainless-retry-count")
        if retry_count not in (None, "0"):
            # openai's own loop is about to re-send a POST (its request hook is gone): never.
            raise TransportError("hermes_sdk.openai never re-sends a POST that may have reached Hermes",
                                 uncertain_outcome=True, details={"sent": False, "reason": "resend_refused"})
        limit = call_retries()
        limit = self.max_retries if limit is None else limit
        started = time.time()
        attempt = 0
        while True:
            try:
                return self._post(request, extras)
            except HermesError as err:
                wait = _safe_retry_wait(err, attempt)
                if wait is None or attempt >= limit or not _time_left(request, extras, started, wait):
                    raise
                attempt += 1
                time.sleep(wait)

    def _post(self, request: Any, extras: CallExtras) -> Any:
        route = self._route(request)
        body = json.loads(request.content or b"{}")
        if not isinstance(body, dict):
            raise InvalidInputError("the request body is not a JSON object", details={"field": "body", "sent": False})
        stream = bool(body.pop("stream", False))
        headers = request.headers
        if route == "/chat/completions":
            self._check_client_tools(body)
            call = self._call_keywords(request, extras, stream=stream)
            fields = {"messages": body.pop("messages", None), "model": body.pop("model", "hermes-agent"),
                      "session_id": headers.get("x-hermes-session-id"),
                      "session_key": headers.get("x-hermes-session-key"), "extra_body": body, **call}
            if stream:
                hs = self.hermes.chat_stream(max_events=MAX_STREAM_EVENTS, keep_events=False, **fields)
                return self._stream_reply(hs, request, extras, chat_frames)
            reply = _passthrough.chat(self.hermes, fields)
            return self._json_reply(reply.raw, request, reply, {"x-hermes-session-id": reply.session_id})
        if route == "/responses":
            self._check_client_tools(body)
            call = self._call_keywords(request, extras, stream=stream)
            session_key = headers.get("x-hermes-session-key")
            if stream:
                hs = self.hermes.responses_stream(body, session_key=session_key, max_events=MAX_STREAM_EVENTS,
                                                  keep_events=False, **call)
                return self._stream_reply(hs, request, extras, responses_frames)
            reply = _passthrough.responses(self.hermes, body, session_key, call)
            return self._json_reply(reply.raw, request, reply, {})
        raise _unsupported(request)

    def _read_or_delete(self, method: str, request: Any, extras: CallExtras) -> Any:
        route = self._route(request)
        call = self._call_keywords(request, extras, stream=False)
        if method == "GET" and route == "/models":
            models = self._reads.models(**_reading(call))
            return self._json_reply({"object": "list", "data": [_model(m) for m in models]}, request, None, {})
        if method == "GET" and route.startswith("/models/"):
            wanted = route[len("/models/"):]
            for model in self._reads.models(**_reading(call)):
                if model.id == wanted:
                    return self._json_reply(_model(model), request, None, {})
            found = {"code": "model_not_found", "type": "invalid_request_error"}
            raise NotFoundError(f"Hermes serves no model {wanted!r}", http_status=404,
                                details={"provider_error": found})
        if route.startswith("/responses/") and route.count("/") == 2:
            response_id = route[len("/responses/"):]
            session_key = request.headers.get("x-hermes-session-key")
            if method == "GET":
                result = self._reads.response_get(response_id, session_key=session_key, **_reading(call))
                return self._json_reply(result.raw, request, result, {})
            if method == "DELETE":
                key = call.pop("idempotency_key") or f"openai-delete:{response_id}"
                receipt = self.hermes.response_delete(
                    response_id, idempotency_key=key, approval=extras.approval,
                    reason=extras.reason or "openai responses.delete", session_key=session_key, **call)
                return self._json_reply({"id": receipt.id, "object": receipt.object, "deleted": receipt.deleted},
                                        request, receipt, {})
        raise _unsupported(request)

    # ------------------------------------------------------------------ client-declared tools

    def _check_client_tools(self, body: Mapping[str, Any]) -> None:
        """Refuse tools Hermes would silently ignore (it runs its own tools on the server)."""
        if self.client_tools == "ignore":
            return
        declared = "tools" in body or body.get("tool_choice") == "none" or any(
            isinstance(m, Mapping) and m.get("role") == "tool" for m in body.get("messages") or ())
        if not declared or self._server_runs_client_tools():
            return
        raise UnsupportedByServerError(
            "Hermes ignores client-declared tools (tools, tool_choice and role 'tool' messages): its agent "
            "runs its own tools on the server and never returns tool_calls. Remove them, or construct "
            "OpenAI(client_tools='ignore') to send them anyway", details={"feature": "client_tools", "sent": False})

    def _server_runs_client_tools(self) -> bool:
        if self._tool_execution is None:
            try:
                caps = self._reads.server_capabilities()
                runtime = caps.raw.get("runtime")
                execution = runtime.get("tool_execution") if isinstance(runtime, Mapping) else None
                client_tools = caps.raw.get("features", {}).get("client_tools") is True
                self._tool_execution = "client" if client_tools else str(execution or "server")
            except HermesError:
                self._tool_execution = "server"  # a Hermes without /v1/capabilities runs its tools itself
        return self._tool_execution == "client"

    # ------------------------------------------------------------------ replies

    def _json_reply(self, payload: object, request: Any, result: Any, extra: Mapping[str, Optional[str]]) -> Any:
        headers = _result_headers(result)
        headers.update({k: v for k, v in extra.items() if v is not None})
        headers["content-type"] = "application/json"
        if request.method.upper() != "GET":
            headers["x-should-retry"] = "false"
        # openai reads the reply with response.json(): it gets the JSON hermes-sdk already parsed
        # (parsed once per call); .content / .text keep the bytes for with_raw_response.
        return _ParsedResponse(200, headers=headers, content=json.dumps(payload).encode(), request=request,
                               parsed=payload)

    def _stream_reply(self, hs: Any, request: Any, extras: CallExtras, frames: Callable[..., Iterator[bytes]]) -> Any:
        side: list[Any] = []
        headers = _result_headers(hs)
        if hs.session_id:
            headers["x-hermes-session-id"] = hs.session_id
        headers.update({"content-type": "text/event-stream", "x-should-retry": "false"})
        body = _EventBytes(hs, request, frames, side, extras.on_hermes_event)
        return httpx.Response(200, headers=headers, stream=body, request=request,
                              extensions={"hermes_events": side, "hermes_stream": hs})

    def _failure(self, err: HermesError, request: Any, method: str) -> Any:
        status = err.http_status
        local = status is None and err.details.get("sent") is not True
        if status is None and local:
            status = dual.local_status(err)
        if status is None:
            if method == "POST":
                raise dual.from_hermes(err, request)
            # A GET or DELETE without a reply: openai's loop decides (it retries GETs), the client
            # hook turns its error into the dual class.
            wrapper = _TimedOutForOpenAI if isinstance(err, _TIMEOUTS) else _RetriedByOpenAI
            exc = wrapper(str(err), request=request)
            exc.hermes = err
            raise exc from err
        provider = err.details.get("provider_error")
        body = dict(provider) if isinstance(provider, Mapping) else {}
        body.setdefault("message", scrub(err.message))
        body.setdefault("type", "hermes_sdk_local" if local else "hermes_error")
        body.setdefault("code", _short_code(err))
        headers = _result_headers(None)
        if err.action_id:
            headers["x-hermes-sdk-action-id"] = err.action_id
        if err.retry_after_ms is not None:
            headers["retry-after-ms"] = str(err.retry_after_ms)
        if local:
            headers["x-hermes-sdk-local"] = "1"
        if method != "GET":
            headers["x-should-retry"] = "false"
        headers["content-type"] = "application/json"
        return httpx.Response(status, headers=headers, content=json.dumps({"error": body}).encode(),
                              request=request, extensions={"hermes_error": err})


class _ParsedResponse(httpx.Response):  # type: ignore[misc]
    """An httpx Response whose ``json()`` is the payload it was built from, not a second parse of it."""

    def __init__(self, *args: Any, parsed: object, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._hermes_parsed = parsed

    def json(self, **kwargs: Any) -> Any:
        if kwargs:  # a caller's own decoder options: parse the bytes as httpx would
            return super().json(**kwargs)
        return self._hermes_parsed


class _EventBytes(httpx.SyncByteStream):  # type: ignore[misc]
    """The SSE bytes openai parses, re-emitted from hermes-sdk's stream; Hermes-only events go aside."""

    def __init__(self, hs: Any, request: Any, frames: Callable[..., Iterator[bytes]], side: list[Any],
                 on_event: Optional[Callable[[Any], None]]) -> None:
        self._hs = hs
        self._request = request
        self._frames = frames
        self._side = side
        self._on_event = on_event

    def _aside(self, event: Any) -> None:
        if len(self._side) < MAX_SIDE_EVENTS:
            self._side.append(event)
        if self._on_event is not None:
            self._on_event(event)

    def __iter__(self) -> Iterator[bytes]:
        try:
            if self._hs.replayed:
                yield from replayed_frames(self._hs)
                return
            yield from self._frames(self._hs, self._aside)
        except HermesError as err:
            raise dual.from_hermes(err, self._request, body=err.details.get("provider_error")) from None

    def close(self) -> None:
        self._hs.close()


class HermesHttpClient(httpx.Client):  # type: ignore[misc]
    """The http client a facade hands openai (``http_client=``): only its transport matters."""

    def __init__(self, transport: HermesTransport) -> None:
        super().__init__(transport=transport)
        self.hermes_transport = transport


_TIMEOUTS = (DeadlineExceededError,)


def _safe_retry_wait(err: HermesError, attempt: int) -> Optional[float]:
    """Seconds to wait before re-sending a POST that provably ran nothing, or None: never re-send.

    Only two kinds qualify: nothing was sent (a refused connection), or Hermes refused before any
    agent work (429 from its concurrency gate, 503 while draining: ``details["before_agent_work"]``).
    """
    unsent = isinstance(err, TransportError) and err.details.get("sent") is False and not err.uncertain_outcome
    gate = isinstance(err, RemoteTemporaryError) and err.details.get("before_agent_work") is True
    if not (unsent or gate):
        return None
    if err.retry_after_ms is not None:
        return min(max(float(err.retry_after_ms) / 1000.0, 0.0), 60.0)
    return min(0.5 * 2.0 ** attempt, 8.0) * (0.75 + random.random() / 4)  # noqa: S311 - jitter, not crypto


def _time_left(request: Any, extras: CallExtras, started: float, wait: float) -> bool:
    """Whether a wait and another attempt still fit the call's deadline and its timeout."""
    ends = []
    deadline = extras.deadline
    if deadline is not None:
        ends.append(deadline.timestamp() if hasattr(deadline, "timestamp") else float(deadline))
    timeout = _timeout_of(request, False)
    if timeout is not None and timeout.total is not None:
        ends.append(started + timeout.total)
    return not ends or time.time() + wait < min(ends)


_TIMEOUTS_SEEN: dict[tuple[Any, Any, bool], Optional[CallTimeout]] = {}


def _timeout_of(request: Any, stream: bool) -> Optional[CallTimeout]:
    spec = request.extensions.get("timeout") or {}
    key = (spec.get("read"), spec.get("connect"), stream)
    found = _TIMEOUTS_SEEN.get(key, False)
    if found is False:
        found = _call_timeout(key[0], key[1], stream)
        if len(_TIMEOUTS_SEEN) < 256:  # apps use a handful of timeouts: each is built once
            _TIMEOUTS_SEEN[key] = found
    return found  # type: ignore[return-value]


def _call_timeout(read: Any, connect: Any, stream: bool) -> Optional[CallTimeout]:
    """openai's per-attempt timeout (httpx's ``timeout`` extension) as a hermes-sdk CallTimeout.

    A non-stream call is one long read, so its read timeout bounds the whole call; a stream is
    bounded per wait for bytes (keepalives count), as openai bounds it, and in all by the deadline.
    """
    if stream or read is None:  # no read bound (timeout=None): none in all either, as with openai
        return CallTimeout(total=STREAM_TOTAL_SECONDS, connect=connect, read=read)
    return CallTimeout(total=read, connect=min(connect, read) if connect is not None else None, read=read)


def _reading(call: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in call.items() if k in ("action_id", "context", "deadline", "timeout")}


def _model(model: Any) -> dict[str, Any]:
    raw = dict(model.raw) if model.raw else {}
    raw.setdefault("id", model.id)
    raw.setdefault("object", "model")
    raw.setdefault("owned_by", model.owned_by or "hermes")
    raw.setdefault("created", model.created or 0)
    return raw


def _result_headers(result: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    if result is None:
        return headers
    for name, value in (getattr(result, "headers", None) or {}).items():
        if name.lower() not in _DROPPED_HEADERS:
            headers[name.lower()] = value
    if result.action_id:
        headers["x-hermes-sdk-action-id"] = result.action_id
    headers["x-hermes-sdk-replayed"] = "true" if result.replayed else "false"
    return headers


def _short_code(err: HermesError) -> str:
    if isinstance(err, UnsupportedByServerError):
        return {"route": "unsupported_by_facade", "client_tools": "client_tools_unsupported"}.get(
            str(err.details.get("feature")), "unsupported_by_server")
    return err.code.rsplit(".", 1)[-1]


def _unsupported(request: Any) -> UnsupportedByServerError:
    return UnsupportedByServerError(
        f"Hermes does not serve {request.method.upper()} {request.url.path}; the facade did not send it "
        "(Hermes serves chat completions, Responses and models)",
        details={"feature": "route", "sent": False, "path": request.url.path})
