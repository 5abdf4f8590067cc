"""Views that call Hermes: a summary that never runs the model twice, its status for recovery, and
a streamed answer that ends with an ``error`` event when the stream fails after the headers."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods

from hermes_sdk import ChatStream, HermesError, IdempotencyConflictError, OutcomeUnknownError

from .hermes import get_client

log = logging.getLogger(__name__)


def action_for(order_id: str) -> str:
    return f"act_order_summary_{order_id}"


@csrf_exempt  # an API endpoint for this example; keep CSRF protection for browser forms
@require_http_methods(["GET", "POST"])
def summary(request: HttpRequest, order_id: str) -> HttpResponse:
    if request.method == "GET":
        return summary_status(order_id)
    try:
        notes = json.loads(request.body or b"{}").get("notes", "")
    except ValueError:
        return JsonResponse({"status": "bad_request"}, status=400)
    action_id = action_for(order_id)
    try:
        reply = get_client().chat(prompt=f"Summarize order {order_id}: {notes}",
                                  idempotency_key=f"order-summary-{order_id}", action_id=action_id)
    except OutcomeUnknownError:
        # Another request with this key is running, or its worker died mid-call. Nothing was sent.
        return JsonResponse({"status": "in_progress", "action_id": action_id}, status=409)
    except IdempotencyConflictError:
        return JsonResponse({"status": "conflict"}, status=409)
    except HermesError as err:
        log.warning("summary failed: %s", err)  # scrubbed text; never the prompt
        status = "outcome_unknown" if err.uncertain_outcome else "failed"
        return JsonResponse({"status": status, "code": err.code, "action_id": action_id}, status=502)
    if not reply.completed:
        return JsonResponse({"status": "incomplete", "finish_reason": reply.finish_reason}, status=502)
    return JsonResponse({"status": "completed", "summary": reply.text, "replayed": reply.replayed})


def summary_status(order_id: str) -> HttpResponse:
    result = get_client().action_result(action_for(order_id))  # the record, not a model call
    if result is None:
        return JsonResponse({"status": "unknown"}, status=404)
    body: dict[str, Any] = {"status": result.status, "action_id": result.action_id}
    if result.status == "completed":
        body["summary"] = result.output["choices"][0]["message"]["content"]
    elif result.error is not None:
        body.update(code=result.error.code, uncertain_outcome=result.error.uncertain_outcome)
    return JsonResponse(body)


def sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def events(chat: ChatStream) -> Iterator[str]:
    # Django has sent the 200 and the headers before the first item: a failure from here on is an
    # event in the body. The with-block closes the stream on every exit (Django closes this
    # generator when the client goes away).
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
            yield sse("error", {"code": result.error.code if result.error else None,
                                "message": "the answer is incomplete"})
            return
        yield sse("done", {"status": "completed"})


@require_GET
def stream(request: HttpRequest) -> HttpResponse:
    try:
        chat = get_client().chat_stream(prompt=request.GET.get("prompt", ""))
    except HermesError as err:  # before any header: a real status code
        log.warning("stream refused: %s", err)
        return JsonResponse({"status": "failed", "code": err.code}, status=502)
    response = StreamingHttpResponse(events(chat), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
