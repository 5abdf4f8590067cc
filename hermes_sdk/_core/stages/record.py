"""What the SDK itself knows about the innermost step of an around-hook, whatever the wrappers did.

Hooks are given read-only views; the core decides whether a request may have left, whether an
idempotency key is given back and whether an attempt is retried from this record alone.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, TypeVar

from ...errors import HermesError, PluginError

R = TypeVar("R")
S = TypeVar("S")


class StepRecord:
    """One innermost step: run at most once; its own result, the view hooks were shown, its own error."""

    __slots__ = ("ran", "result", "shown", "error", "uncertain")

    def __init__(self) -> None:
        self.ran = False
        self.result: Any = None
        self.shown: Any = None
        self.error: Optional[HermesError] = None
        self.uncertain = False

    def run(self, step: Callable[[], R]) -> R:
        """Run ``step`` (once: a second run is refused, however it was reached)."""
        if self.ran:
            raise PluginError("the innermost hook step already ran: a call is sent once",
                              details={"plugin": "hermes_sdk.core"})
        self.ran = True
        try:
            result = self.result = step()
        except HermesError as exc:
            self.error, self.uncertain = exc, exc.uncertain_outcome
            raise
        return result

    def show(self, present: Callable[[R], S]) -> Callable[[R], S]:
        """A ``present`` that remembers what it showed, so the core knows its own reply when it comes back."""
        def shown(result: R) -> S:
            self.shown = view = present(result)
            return view
        return shown

    def truthful(self, exc: HermesError, may_have_left: bool) -> HermesError:
        """``exc`` with a truthful ``uncertain_outcome``: the step's own error as it raised it; any other
        error (a wrapper's own, after the request may have left) uncertain."""
        if exc is self.error:
            exc.uncertain_outcome = self.uncertain
        elif may_have_left:
            exc.uncertain_outcome = True
        return exc

    def replaced(self, exc: HermesError) -> bool:
        """Whether ``exc`` is not the step's own failure although the step ran (a wrapper raised its own)."""
        return self.ran and exc is not self.error
