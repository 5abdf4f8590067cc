"""Where each event of a run's subscriptions belongs: delivered once, gaps and doubts noted.

Hermes 0.21+ numbers a run's events from 0 (the SSE ``id: N``) and resumes a subscription after
``Last-Event-ID``; 0.19 and 0.20 send no ids and are never resumed. A server may still resend, skip
or renumber events, so a stream is believed only as far as it can be checked:

- an id already delivered is a repeat: skipped when its JSON is the same, else the ids were reused
  (they restarted) and the stream cannot be placed any more;
- an id past the next one expected is delivered, and the ids in between are noted as missing;
- an id below the last one delivered that was never delivered: the ids went backwards: not placed;
- an event without a numeric id, on a resumed stream, can only be a replay from the start: while
  it equals, in order, the events already delivered it is skipped; once all of them were matched,
  what follows is new (the whole log was replayed, as a 0.19 stream is sent: without ids). Anything
  else cannot be told apart from what was delivered: not placed;
- an event without a numeric id in a numbered run is delivered (as on 0.19, one connection cannot
  reorder), but no resume can name a position after it any more.

An event that cannot be placed ends the subscription (the run is then polled): delivering it could
deliver an event twice. ``notes`` says what the result lacks; empty means every event was delivered.
"""

from __future__ import annotations

from typing import Optional

#: An SSE ``id`` longer than this is no event number (``Last-Event-ID`` takes at most 20 digits).
MAX_ID_DIGITS = 20


class Unplaceable(Exception):
    """An event the SDK cannot place among those delivered; its message says why."""


def event_number(value: Optional[str]) -> Optional[int]:
    """An SSE ``id:`` as an event number (ASCII digits only), else None."""
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > MAX_ID_DIGITS or not value.isascii() or not value.isdigit():
        return None
    return int(value)


class EventOrder:
    """The events one run handed on, by number and in order, and what its subscriptions lacked."""

    def __init__(self) -> None:
        self.notes: list[str] = []
        self._delivered: list[object] = []  # each event's JSON, in delivery order
        self._by_number: dict[int, object] = {}
        self._last: Optional[int] = None  # the highest number delivered
        self._placed = True  # a resume can name the position (no unnumbered event since the numbers)
        self._replay: Optional[int] = None  # on a resumed stream: how many delivered events it replayed

    @property
    def resume_after(self) -> Optional[str]:
        """The ``Last-Event-ID`` to resume with, or None when no resume can name the position."""
        return str(self._last) if self._last is not None and self._placed else None

    def resumed(self) -> None:
        """A new subscription starts, after ``resume_after``."""
        self._replay = 0

    def place(self, event_id: Optional[str], data: object) -> bool:
        """Whether to deliver this event (False: a repeat of one delivered). Raises Unplaceable."""
        number = event_number(event_id)
        if number is None:
            deliver = self._place_unnumbered(data)
        else:
            self._replay = None  # a numbered event: the stream is placed by its numbers from here
            deliver = self._place_numbered(number, data)
        if deliver:
            self._delivered.append(data)
            if self._replay is not None:
                self._replay = len(self._delivered)
        return deliver

    def _place_numbered(self, number: int, data: object) -> bool:
        if number in self._by_number:
            if self._by_number[number] == data:
                return False
            raise self._doubt(f"the events stream sent id {number} again for another event (its ids restarted)")
        expected = 0 if self._last is None else self._last + 1
        if number < expected:
            raise self._doubt(f"the events stream's ids went backwards (id {number} after {self._last})")
        if number > expected:
            missing = str(expected) if number == expected + 1 else f"{expected}-{number - 1}"
            self.notes.append(f"events {missing} were never received (the ids jumped to {number})")
        self._by_number[number] = data
        self._last = number
        return True

    def _place_unnumbered(self, data: object) -> bool:
        if self._replay is not None and self._replay < len(self._delivered):
            if self._delivered[self._replay] != data:
                raise self._doubt("a resumed events stream sent events without ids that are not a replay of "
                                  "those delivered: old and new cannot be told apart")
            self._replay += 1
            return False
        if self._last is not None or self._replay is not None:
            self._placed = False  # a numbered run: no id names a position after this event
        return True

    def _doubt(self, why: str) -> Unplaceable:
        self.notes.append(why)
        return Unplaceable(why)


__all__ = ["EventOrder", "Unplaceable", "event_number"]
