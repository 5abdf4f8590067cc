"""A Flask application that uses hermes-sdk: one client per process, a summary endpoint that never
runs the model twice, a status endpoint for the safe recovery rule, and a streaming endpoint that
ends cleanly when the stream fails after the headers were sent.

Run it against the bundled emulator (``hermes-sdk emulator`` prints the two variables)::

    export HERMES_BASE_URL=... HERMES_API_KEY=...
    export FLASK_APP=examples/flask_app/app.py   # Flask 2.0 and 2.1 have no --app option
    flask run

Under gunicorn (``gunicorn 'app:create_app()'``), ``--preload`` included: the client is created lazily,
in the worker process that first uses it, never in the master before the fork.
Guide: docs/frameworks/flask.md. Tests: tests/examples/test_flask_app.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from flask import Flask, Response, jsonify, request

from hermes_sdk import HermesError, IdempotencyConflictError, OutcomeUnknownError, ProcessClient

log = logging.getLogger(__name__)


def summary_key(order_id: str) -> str:
    """One idempotency key per business intent: a double click or a retried request replays."""
    return f"order-summary-{order_id}"


def summary_action(order_id: str) -> str:
    """A stable action id, so the status endpoint can find the recorded result again."""
    return f"act_order_summary_{order_id}"


def sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def create_app(**client_options: Any) -> Flask:
    app = Flask(__name__)
    hermes = ProcessClient(**client_options)  # HERMES_BASE_URL, HERMES_API_KEY, HERMES_SDK_IDEMPOTENCY_STORE
    app.extensions["hermes"] = hermes

    @app.post("/orders/<order_id>/summary")
    def summarize(order_id: str) -> Any:
        notes = (request.get_json(silent=True) or {}).get("notes", "")
        action_id = summary_action(order_id)
        try:
            reply = hermes.get().chat(prompt=f"Summarize order {order_id}: {notes}",
                                      idempotency_key=summary_key(order_id), action_id=action_id)
        except OutcomeUnknownError:
            # An earlier request with this key is still running (or its process died mid-call).
            # Nothing was sent now; never retry blindly: the caller polls the status endpoint.
            return jsonify(status="in_progress", action_id=action_id), 409
        except IdempotencyConflictError:
            return jsonify(status="conflict", error="this order was summarized from other notes"), 409
        except HermesError as err:
            log.warning("summary failed: %s", err)  # str(err) is scrubbed of ids and credentials
            if err.uncertain_outcome:
                # The model may have run. Do not resubmit: the result (if any) is reconciled from
                # the record, see GET /orders/<id>/summary and docs/errors.md.
                return jsonify(status="outcome_unknown", action_id=action_id, code=err.code), 502
            return jsonify(status="failed", code=err.code), 502
        if not reply.completed:
            return jsonify(status="incomplete", finish_reason=reply.finish_reason), 502
        return jsonify(status="completed", summary=reply.text, replayed=reply.replayed)

    @app.get("/orders/<order_id>/summary")
    def summary_status(order_id: str) -> Any:
        # The first step of the safe recovery rule: read the durable record, do not call the model.
        result = hermes.get().action_result(summary_action(order_id))
        if result is None:
            return jsonify(status="unknown"), 404
        body: dict[str, Any] = {"status": result.status, "action_id": result.action_id}
        if result.status == "completed":
            body["summary"] = result.output["choices"][0]["message"]["content"]  # the recorded chat JSON
        elif result.error is not None:
            body.update(code=result.error.code, uncertain_outcome=result.error.uncertain_outcome)
        return jsonify(body)

    @app.get("/stream")
    def stream() -> Any:
        prompt = request.args.get("prompt", "")
        try:
            # Opening the stream sends the request and reads the status: failures here still get
            # a real HTTP status, because no header has been sent yet.
            chat = hermes.get().chat_stream(prompt=prompt)
        except HermesError as err:
            log.warning("stream refused: %s", err)
            return jsonify(status="failed", code=err.code), 502

        def events() -> Iterator[str]:
            # From here on the 200 and the headers are out: a failure can only be told in the body.
            # The with-block closes the stream on every exit, also when the browser goes away
            # (the WSGI server closes this generator, GeneratorExit ends the with-block).
            with chat:
                try:
                    for piece in chat.text_deltas():
                        yield sse("delta", {"text": piece})
                    result = chat.result()
                except HermesError as err:
                    log.warning("stream broke: %s", err)
                    yield sse("error", {"code": err.code, "message": "the answer was interrupted"})
                    return
                if result.status != "completed":
                    code = result.error.code if result.error else None
                    yield sse("error", {"code": code, "message": "the answer is incomplete"})
                    return
                yield sse("done", {"status": "completed"})

        return Response(events(), mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return app
