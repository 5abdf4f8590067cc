"""A call's deadline is resolved apart from its input (executor.resolve_deadline, issue 24).

The earliest of ``deadline=`` (else the context's) and now plus the total timeout wins, and the
bound that won is named; with neither, the contract timeout ends the call and no deadline is sent.
"""

from __future__ import annotations

from typing import Optional

import pytest

from hermes_sdk import ExecutionContext
from hermes_sdk._app.builtin import BUILTIN_SPECS as SPECS
from hermes_sdk._core.deadline import Timeout, effective
from hermes_sdk._core.executor import resolve_deadline
from hermes_sdk._core.options import CallOptions
from hermes_sdk.errors import InvalidInputError

NOW = 1_800_000_000.0  # a point in time (2027)
SPEC = SPECS["chat"]


def resolve(options: CallOptions, ctx: Optional[ExecutionContext] = None,
            client: Optional[Timeout] = None) -> tuple[Optional[float], float, str]:
    own = Timeout(total=options.timeout) if isinstance(options.timeout, (int, float)) else None
    deadline, ends_at, bound = resolve_deadline(SPEC.name, SPEC.timeout, options, ctx, effective(own, client), NOW)
    return deadline, ends_at, bound[0]


def test_without_a_bound_the_contract_timeout_ends_the_call_and_no_deadline_is_sent() -> None:
    assert resolve(CallOptions()) == (None, NOW + SPEC.timeout, "default")


def test_the_earliest_bound_wins_and_is_named() -> None:
    assert resolve(CallOptions(deadline=NOW + 5)) == (NOW + 5, NOW + 5, "deadline")
    assert resolve(CallOptions(), ExecutionContext(deadline=NOW + 7)) == (NOW + 7, NOW + 7, "context")
    # The call's deadline= replaces the context's, even a later one.
    assert resolve(CallOptions(deadline=NOW + 9), ExecutionContext(deadline=NOW + 7))[2] == "deadline"
    assert resolve(CallOptions(timeout=3)) == (NOW + 3, NOW + 3, "timeout")
    assert resolve(CallOptions(timeout=30, deadline=NOW + 5))[2] == "deadline"
    assert resolve(CallOptions(timeout=3, deadline=NOW + 5))[2] == "timeout"
    assert resolve(CallOptions(), client=Timeout(total=4)) == (NOW + 4, NOW + 4, "client_timeout")
    assert resolve(CallOptions(), ExecutionContext(deadline=NOW + 2), Timeout(total=4))[2] == "context"


def test_a_bad_deadline_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        resolve(CallOptions(deadline="tomorrow"))  # type: ignore[arg-type]
