"""Stage 6, observe: the redacted final result to the observers and the stream-settled callbacks."""

from __future__ import annotations

from typing import Optional

import attrs

from .. import convert
from .._plugin_manager import notify, observed
from ..call import Call
from ..models import ActionResult, StreamResult
from ..view import settle


def observe(call: Call, result: ActionResult, stream_result: Optional[StreamResult] = None) -> None:
    """Tell observers how the call ended; build the redacted copy only when someone will read it."""
    rt = call.runtime
    streaming = call.spec.streaming
    watched = streaming and call.view.settle_watched
    if not watched and not observed(rt.pm, "hermes_call_result"):
        if streaming:
            settle(call.view, {})
        return
    if stream_result is not None:
        # Observers and tracers see the stream's outcome, not its events (each would redact anyway).
        summary = convert.stream_result_to_json(attrs.evolve(stream_result, events=[]))
        result = attrs.evolve(result, output=summary)
    redacted = rt.redactor.redact(convert.action_result_to_json(result))
    if streaming:
        settle(call.view, redacted)
    notify(rt.pm, "hermes_call_result", call=call.view, result=redacted)
