"""A plain WSGI application (no framework) that uses hermes-sdk.

``POST /orders/<id>/summary`` summarizes an order once (one idempotency key per order), and
``GET /stream?prompt=...`` streams an answer as Server-Sent Events, ending with a ``done`` or an
``error`` event. Serve it with any WSGI server::

    python examples/wsgi_app/app.py [PORT]                   # wsgiref on 127.0.0.1:8000, a try-out
    gunicorn -c examples/wsgi_app/gunicorn.conf.py app:application --chdir examples/wsgi_app

The client is created lazily, once per process (``get_client``), and ``gunicorn.conf.py`` shows
the post-fork hook for ``--preload``. Guide: docs/frameworks/wsgi.md. Tests:
tests/examples/test_wsgi_app.py.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import threading
from collections.abc import Iterable, Iterator
from typing import Any, Callable, Optional
from urllib.parse import parse_qs

from hermes_sdk import HermesClient, HermesError, IdempotencyConflictError, OutcomeUnknownError

log = logging.getLogger(__name__)

_lock = threading.Lock()
_client: Optional[HermesClient] = None
_client_pid = 0


def get_client() -> HermesClient:
    """This process's client: created on first use, shared by every thread of the process.

    A client that came from the parent process (a fork after it was made) is not used: the child
    makes its own, so two processes never share one connection pool.
    """
    global _client, _client_pid
    client, pid = _client, os.getpid()
    if client is not None and _client_pid == pid:
        return client
    with _lock:
        if _client is None or _client_pid != pid:
            _client, _client_pid = HermesClient(), pid
        return _client


def close_client() -> None:
    """Close this process's client (at exit, or from a server's worker-exit hook)."""
    global _client
    with _lock:
        client, _client = _client, None
        if client is not None and _client_pid == os.getpid():
            client.close()


atexit.register(close_client)

StartResponse = Callable[..., Any]
SUMMARY = re.compile(r"^/orders/(?P<order_id>[A-Za-z0-9_-]{1,64})/summary$")


def json_response(start_response: StartResponse, status: str, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]


def sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def summarize(environ: dict[str, Any], start_response: StartResponse, order_id: str) -> list[bytes]:
    try:
        size = int(environ.get("CONTENT_LENGTH") or 0)
        notes = json.loads(environ["wsgi.input"].read(size) or b"{}").get("notes", "")
    except ValueError:
        return json_response(start_response, "400 Bad Request", {"status": "bad_request"})
    action_id = f"act_order_summary_{order_id}"
    try:
        reply = get_client().chat(prompt=f"Summarize order {order_id}: {notes}",
                                  idempotency_key=f"order-summary-{order_id}", action_id=action_id)
    except OutcomeUnknownError:
        return json_response(start_response, "409 Conflict", {"status": "in_progress", "action_id": action_id})
    except IdempotencyConflictError:  # the same order with other notes: a new intent needs a new key
        return json_response(start_response, "409 Conflict", {"status": "conflict"})
    except HermesError as err:
        log.warning("summary failed: %s", err)
        status = "outcome_unknown" if err.uncertain_outcome else "failed"
        return json_response(start_response, "502 Bad Gateway", {"status": status, "code": err.code,
                                                                 "action_id": action_id})
    if not reply.completed:
        return json_response(start_response, "502 Bad Gateway", {"status": "incomplete"})
    return json_response(start_response, "200 OK", {"status": "completed", "summary": reply.text})


def stream(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    prompt = parse_qs(environ.get("QUERY_STRING", "")).get("prompt", [""])[0]
    try:
        chat = get_client().chat_stream(prompt=prompt)
    except HermesError as err:  # nothing sent to the browser yet: a real status code
        log.warning("stream refused: %s", err)
        return json_response(start_response, "502 Bad Gateway", {"status": "failed", "code": err.code})
    start_response("200 OK", [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
    return events(chat)


def events(chat: Any) -> Iterator[bytes]:
    # The WSGI server calls close() on this generator when the client disconnects; GeneratorExit
    # then leaves the with-block, which closes (cancels) the stream.
    with chat:
        try:
            for piece in chat.text_deltas():
                yield sse("delta", {"text": piece})
            result = chat.result()
        except HermesError as err:
            log.warning("stream broke: %s", err)  # scrubbed; the browser gets the code only
            yield sse("error", {"code": err.code, "message": "the answer was interrupted"})
            return
        if result.status != "completed":
            yield sse("error", {"code": result.error.code if result.error else None,
                                "message": "the answer is incomplete"})
            return
        yield sse("done", {"status": "completed"})


def application(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    path, method = environ.get("PATH_INFO", "/"), environ.get("REQUEST_METHOD", "GET")
    match = SUMMARY.match(path)
    if match and method == "POST":
        return summarize(environ, start_response, match["order_id"])
    if path == "/stream" and method == "GET":
        return stream(environ, start_response)
    return json_response(start_response, "404 Not Found", {"status": "not_found"})


if __name__ == "__main__":
    import sys
    from wsgiref.simple_server import make_server

    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
    with make_server("127.0.0.1", port, application) as server:
        print(f"serving on http://127.0.0.1:{port}", flush=True)
        server.serve_forever()
