"""How a live stream reports back: each event to observers, and its one settlement to stages 5 and 6."""

from __future__ import annotations

import time
from typing import Optional

import attrs

from .. import convert
from .._plugin_manager import notify
from ..call import Call
from ..models import ActionResult, StreamEvent, StreamResult
from . import idempotency, observe


class StreamSink:
    """What a stream calls: ``event()`` per event (only when observed), ``settled()`` once at its end."""

    __slots__ = ("call", "base", "observed", "redactor")

    def __init__(self, call: Call, base: ActionResult) -> None:
        self.call = call
        self.base = base
        self.observed = bool(call.runtime.pm.hook.hermes_stream_event.get_hookimpls())
        keys = call.spec.observed_keys
        self.redactor = call.runtime.redactor.allowing(keys) if keys and self.observed else call.runtime.redactor

    def event(self, event: StreamEvent) -> None:
        """Hand one event, redacted (names and numbers only, plus the spec's ``observed_keys``), to
        the ``hermes_stream_event`` observers."""
        redacted = self.redactor.redact(
            {"event": event.event, "terminal": event.terminal, "data": event.data})
        notify(self.call.runtime.pm, "hermes_stream_event", call=self.call.view, event=redacted)

    def settled(self, stream_result: StreamResult) -> ActionResult:
        """Record and observe the stream's outcome; return its ActionResult."""
        call = self.call
        if call.alarm is not None:
            call.alarm.cancel()
        call.runtime.open_streams.discard(call.value)
        # The record keeps the aggregate, not a copy of every event.
        output: Optional[dict[str, object]] = None
        if call.record_key is not None:
            output = convert.stream_result_to_json(attrs.evolve(stream_result, events=[]))
        error = stream_result.error
        if error is not None:
            call.bind(error)
        result = attrs.evolve(self.base, status=stream_result.status, output=output, error=error,
                              recorded_at=time.time())
        idempotency.finish(call, result)
        observe.observe(call, result, stream_result)
        return result
