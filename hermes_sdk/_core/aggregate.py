"""The stream aggregate (generic) and the Accumulator a family's stream spec names.

The aggregate counts events, keeps them (unless ``keep_events=False``), joins text and applies
``max_events``; how one family's events fold into text, tools and the final envelope, which
events end it and which of those mean failure is the family's :class:`Accumulator`. This module
knows no family.
"""

from __future__ import annotations

import json
from typing import ClassVar, Mapping, Optional

from ..errors import STREAM_FAILED, STREAM_INCOMPLETE, STREAM_TRUNCATED, HermesError, StreamCancelledError, StreamError
from .models import StreamEvent, StreamResult

_COMPACT_PARTS = 4096  # the aggregate joins its text pieces into one block at this many
_raw_decode = json.JSONDecoder().raw_decode  # json.loads' default decoder configuration


def event_name(event: Optional[str], data: object) -> Optional[str]:
    """An event's name: its SSE ``event:`` field, else the ``event`` key of its JSON data, else None."""
    if event:
        return event
    if isinstance(data, dict):
        name = data.get("event")
        if isinstance(name, str):
            return name
    return None


class Accumulator:
    """How one family's stream folds. Subclass it beside the family's specs; one instance per stream.

    ``terminal_names`` end the stream (``[DONE]`` always does); ``failed_names`` are terminal
    events that mean the work failed. ``fold`` returns the visible text an event adds (never
    reasoning) and may set the aggregate's ``finish_reason``, ``usage``, ``final`` and ``tools``;
    ``failure`` names a failure a terminal event hides (a chat that ended with ``finish_reason:
    error``); ``typed`` is what ``stream.typed()`` yields for an event.
    """

    terminal_names: ClassVar[frozenset[str]] = frozenset()
    failed_names: ClassVar[frozenset[str]] = frozenset()
    cancelled_names: ClassVar[frozenset[str]] = frozenset()
    #: Set by ``fold`` when an event cannot be believed (it is about another object than the one
    #: requested): the stream ends there, failed with this error, whatever came before.
    rejected: Optional[HermesError] = None

    def bind(self, input: Mapping[str, object]) -> None:
        """Learn the call's input (the object the stream is about) before the first event."""

    def fold(self, agg: "Aggregate", name: Optional[str], data: dict[str, object]) -> Optional[str]:
        """Fold one JSON-object event in; return the text it adds (or None)."""
        return None

    def failure(self, agg: "Aggregate") -> Optional[HermesError]:
        """A failure the stream's terminal event does not say by its name, or None."""
        return None

    def typed(self, event: StreamEvent, piece: Optional[str]) -> object:
        """The typed event ``stream.typed()`` yields for ``event`` (``piece``: its text), or None."""
        return None


def decode_event(name: str, event_id: Optional[str], raw_data: str,
                 terminal_names: frozenset[str] = frozenset()) -> StreamEvent:
    """Parse one event the connector's way: ``[DONE]``, blank → None, JSON, else the raw string.

    ``terminal_names`` are the stream family's terminal event names (``[DONE]`` is always terminal).
    """
    data: object
    if raw_data == "[DONE]":
        data = "[DONE]"
    elif not raw_data.strip():
        data = None
    else:
        try:
            if raw_data[0] == "{":  # json.loads without its two whitespace regex scans
                data, end = _raw_decode(raw_data)
                if end != len(raw_data):
                    data = json.loads(raw_data)  # trailing whitespace, or extra data (raises)
            else:
                data = json.loads(raw_data)
        except (ValueError, RecursionError):  # nested too deep for the decoder: kept as the raw string
            data = raw_data
    if name != "message":
        terminal = name in terminal_names or data == "[DONE]"
        return StreamEvent(name, event_id or None, data, raw_data, terminal)
    if type(data) is dict:  # event_name(), inline: this runs once per event
        named = data.get("event")
        terminal = isinstance(named, str) and named in terminal_names
    else:
        terminal = data == "[DONE]"
    return StreamEvent(None, event_id or None, data, raw_data, terminal)


class Aggregate:
    """The stream result being built, one event at a time, so iteration stays live."""

    def __init__(self, endpoint_id: str, operation: str, http_status: int, max_events: int,
                 session_id: Optional[str], keep_events: bool = True,
                 accumulator: Optional[Accumulator] = None) -> None:
        self.endpoint_id = endpoint_id
        self.operation = operation
        self.http_status = http_status
        self.max_events = max_events
        self.session_id = session_id
        self.keep_events = keep_events
        self.accumulator = accumulator if accumulator is not None else Accumulator()
        self.terminal_names = self.accumulator.terminal_names
        self.events: list[StreamEvent] = []
        self.count = 0
        self.parts: list[str] = []
        self._text = ""  # earlier parts, joined
        self.terminal = False
        self.truncated = False
        self.last_name: Optional[str] = None
        self.last_data: object = None
        self.finish_reason: Optional[str] = None
        self.usage: Optional[dict[str, object]] = None
        self.final: Optional[dict[str, object]] = None
        self.tools: list[object] = []  # typed tool events

    def add(self, event: StreamEvent) -> Optional[str]:
        """Fold one event in; return the text it adds (or None)."""
        self.count += 1
        if self.keep_events:
            self.events.append(event)
        data = event.data
        name = event.event
        piece = None
        if isinstance(data, dict):  # one check per event: event_name() and the fold, inline
            if name is None:
                named = data.get("event")
                name = named if isinstance(named, str) else None
            if name is not None:
                self.last_name = name
                self.last_data = data
            piece = self.accumulator.fold(self, name, data)
            if piece:
                parts = self.parts
                parts.append(piece)
                if len(parts) >= _COMPACT_PARTS:
                    # Thousands of tiny str objects cost ~60 bytes each; joined text costs only itself.
                    self._compact()
        elif name is not None:
            self.last_name = name
            self.last_data = data
        if self.accumulator.rejected is not None:
            pass  # done: neither a terminal event nor one more counted toward max_events
        elif event.terminal:
            self.terminal = True
        elif self.count >= self.max_events:
            # The seed page: max_events stops collection *before* a terminal event.
            self.truncated = True
        return piece

    def _compact(self) -> str:
        """Append the pending pieces to the text and return it.

        ``text += ...`` on a local with no other reference lets CPython grow the string in place,
        so the text is never held twice (a join of blocks would be, at the end of a long stream).
        """
        text = self._text
        self._text = ""
        text += "".join(self.parts)
        self.parts.clear()
        self._text = text
        return text

    @property
    def done(self) -> bool:
        """Whether collection has stopped (a terminal event arrived, ``max_events`` was reached, or the
        accumulator rejected an event)."""
        return self.terminal or self.truncated or self.accumulator.rejected is not None

    def result(self, error: Optional[HermesError] = None, cancelled: bool = False) -> StreamResult:
        """The StreamResult so far; ``error`` or ``cancelled`` say why a stream without a terminal event ended."""
        status, error = self._outcome(error, cancelled)
        return StreamResult(
            endpoint_id=self.endpoint_id, operation=self.operation, http_status=self.http_status,
            events=self.events, text=self._compact(), terminal=self.terminal,
            truncated=self.truncated,
            status=status, error=error, session_id=self.session_id, event_count=self.count,
            finish_reason=self.finish_reason, usage=self.usage, final=self.final, tools=list(self.tools),
        )

    def _outcome(self, error: Optional[HermesError], cancelled: bool) -> tuple[str, Optional[HermesError]]:
        op = {"operation": self.operation}
        acc = self.accumulator
        if acc.rejected is not None:
            return "failed", acc.rejected
        if self.terminal:
            if self.last_name in acc.cancelled_names:
                return "cancelled", None
            if self.last_name in acc.failed_names:
                return "failed", StreamError("the stream ended with a failure event", code=STREAM_FAILED,
                                             uncertain_outcome=True,
                                             details={**op, "event": self.last_name, "data": self.last_data})
            hidden = acc.failure(self)
            if hidden is not None:
                return "failed", hidden
            return "completed", None
        if cancelled:
            return "cancelled", StreamCancelledError("the stream was closed before its terminal event",
                                               uncertain_outcome=True, details=op)
        if error is not None:
            return "failed", error
        if self.truncated:
            return "failed", StreamError(f"the stream reached max_events={self.max_events} before a terminal event",
                                         code=STREAM_TRUNCATED, uncertain_outcome=True, details=op)
        return "failed", StreamError("the stream closed without a terminal event", code=STREAM_INCOMPLETE,
                                     uncertain_outcome=True,
                                     details={**op, "reason": "upstream_stream_closed_without_terminal_event"})
