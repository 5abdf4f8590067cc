"""Per-call extras that openai's signatures have no room for, carried in a context variable.

``with call_options(idempotency_key=..., deadline=...):`` reaches every facade call made inside the
block, including calls that frameworks (instructor, LangChain) make on the application's behalf.
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any, Callable, Iterator, Optional

import attrs

from hermes_sdk._core.approval import ApprovalDecision
from hermes_sdk._core.endpoints import ExecutionContext

__all__ = ["CallExtras", "call_options", "current", "retries_for_call"]


@attrs.frozen
class CallExtras:
    """What ``call_options`` set for the calls inside its block (None: not set)."""

    idempotency_key: Optional[str] = None
    deadline: Any = None  # epoch seconds or a datetime, as hermes-sdk's ``deadline=``
    approval: Optional[ApprovalDecision] = None
    reason: Optional[str] = None
    action_id: Optional[str] = None
    context: Optional[ExecutionContext] = None
    on_hermes_event: Optional[Callable[[Any], None]] = None


_EXTRAS: contextvars.ContextVar[Optional[CallExtras]] = contextvars.ContextVar("hermes_openai_extras", default=None)
#: The application's max_retries for the POST in flight (set by the client's request hook).
_RETRIES: contextvars.ContextVar[Optional[int]] = contextvars.ContextVar("hermes_openai_retries", default=None)


def current() -> CallExtras:
    return _EXTRAS.get() or CallExtras()


@contextlib.contextmanager
def call_options(*, idempotency_key: Optional[str] = None, deadline: Any = None,
                 approval: Optional[ApprovalDecision] = None, reason: Optional[str] = None,
                 action_id: Optional[str] = None, context: Optional[ExecutionContext] = None,
                 on_hermes_event: Optional[Callable[[Any], None]] = None) -> Iterator[CallExtras]:
    """Give the facade calls made inside the block hermes-sdk's extras.

    ``idempotency_key``: one execution per key (the same as ``extra_headers={"Idempotency-Key": k}``;
    both given and different is an error, nothing sent). ``deadline``: an absolute wall-clock bound
    (epoch seconds or a datetime) over each whole call, streams included. ``approval``/``reason``:
    the decision for an approval-gated call (``responses.delete``). ``on_hermes_event``: called with
    each Hermes-only stream event (tool progress, approvals) that the chunk loop never sees.
    """
    extras = CallExtras(idempotency_key, deadline, approval, reason, action_id, context, on_hermes_event)
    token = _EXTRAS.set(extras)
    try:
        yield extras
    finally:
        _EXTRAS.reset(token)


@contextlib.contextmanager
def retries_for_call(max_retries: Optional[int]) -> Iterator[None]:
    token = _RETRIES.set(max_retries)
    try:
        yield
    finally:
        _RETRIES.reset(token)


def call_retries() -> Optional[int]:
    return _RETRIES.get()
