"""What an approver is shown of an input: the input itself, not its log redaction.

An approver approves what they read, so every value is shown (ids, names, a job's schedule and the
prompt an agent runs on every tick) with only a secret's value replaced, every character visible;
where the client's policy hides more (a word shaped like an API key, a redaction pattern or filter
of the client) or a value cannot be shown, the view says it is not fully shown, and what hides it.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Optional

from .display import visible
from .redaction import REDACTED, Redactor


class InputView(NamedTuple):
    """An input as an approver sees it; ``not_shown`` says what hides part of it when ``fully_shown`` is False."""

    snapshot: dict[str, object]
    fully_shown: bool = True
    not_shown: Optional[str] = None


def input_view(redactor: Redactor, input: Mapping[str, object]) -> InputView:
    """Every value of ``input`` as :meth:`Redactor.command_view` shows a command (each string under
    its own key), made visible; anything that is not JSON-like is not shown, and said so."""
    hidden: list[str] = []

    def show(value: object, key: str) -> object:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            view = redactor.command_view(value, key)
            if not view.fully_shown and view.not_shown not in hidden:
                hidden.append(str(view.not_shown))
            return visible(view.text)
        if isinstance(value, Mapping):
            return {visible(str(k)): show(v, str(k)) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [show(v, key) for v in value]
        hidden.append(f"the {visible(key)} is a {type(value).__name__}, which is not shown")
        return REDACTED

    snapshot = {visible(str(k)): show(v, str(k)) for k, v in input.items()}
    if hidden:
        return InputView(snapshot, False, "; ".join(hidden))
    return InputView(snapshot)
