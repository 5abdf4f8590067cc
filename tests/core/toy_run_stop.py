"""``run_stop`` written again as a third party writes a family (issue 40): public imports only
(``hermes_sdk.errors``, ``hermes_sdk.plugin``, ``hermes_sdk.types``), typed under ``mypy --strict``.

It is the built-in's behaviour, rule by rule: the run id becomes one path segment, no other field
is taken, the family's per-client state marks the run stopped before ``/stop`` is sent (an
``admit`` rule), the 200 is read into the public :class:`~hermes_sdk.types.RunStatus`, a 404 is a
:class:`~hermes_sdk.errors.RunNotFoundError`; the resource takes the typed keywords the built-in
methods take. ``test_family_api.py`` holds it against ``client.runs.stop``.
"""

from __future__ import annotations

from typing import Mapping, Optional

import attrs

from hermes_sdk.errors import HermesError, RunNotFoundError
from hermes_sdk.plugin import (
    CONFIDENTIAL,
    AdmitContext,
    CallOptions,
    ClientView,
    Contract,
    Deadline,
    ExecutionContext,
    Family,
    FamilyExecutor,
    OperationSpec,
    RequestParts,
    TimeoutLike,
    hookimpl,
    invalid_input,
    one,
    path_id,
    require_input,
)
from hermes_sdk.types import RunStatus


@attrs.define
class Stopped:
    """The family's per-client state: the runs this client asked to stop."""

    runs: set[str] = attrs.field(factory=set)


def _run_id(data: Mapping[str, object]) -> str:
    return path_id("run_id", data.get("run_id"))


def build_stop(operation: str, raw: object) -> RequestParts:
    data = require_input(raw)
    extra = sorted(k for k in data if k not in ("run_id", "_aip"))
    if extra:
        raise invalid_input(extra[0], f"unknown field {extra[0]!r}; accepted: run_id")
    return RequestParts({}, None, path_params={"run_id": _run_id(data)})


def admit_stop(ctx: AdmitContext[Stopped]) -> None:
    ctx.state.runs.add(_run_id(ctx.input))


def refine(error: HermesError) -> HermesError:
    if error.http_status != 404:
        return error
    return RunNotFoundError(error.message, code=error.code, category=error.category, retryable=error.retryable,
                            retry_after_ms=error.retry_after_ms, http_status=error.http_status,
                            details=error.details, uncertain_outcome=error.uncertain_outcome)


TOY_RUN_STOP: OperationSpec[RunStatus] = OperationSpec(
    Contract(operation="toy_run_stop", method="POST", path="/v1/runs/{run_id}/stop", risk="medium",
             stability="experimental", requires_approval=False, key_requirement="optional", key_ttl_ms=None,
             retry_safe=False, streaming=False, side_effects=("write", "external_network"),
             data=dict(CONFIDENTIAL), expected_latency_ms=1_000, timeout_ms=30_000),
    build_stop, decode=one(RunStatus), admit=admit_stop, refine_error=refine, reply_id="run_id")


class ToyRuns:
    """``stop`` as ``client.runs.stop`` has it, and whether this client stopped a run."""

    def __init__(self, executor: FamilyExecutor) -> None:
        self._executor = executor

    def stop(self, run_id: str, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
             context: Optional[ExecutionContext] = None, deadline: Deadline = None,
             timeout: TimeoutLike = None) -> RunStatus:
        return self._executor.request(TOY_RUN_STOP, {"run_id": run_id}, CallOptions(
            endpoint=endpoint, action_id=action_id, context=context, deadline=deadline, timeout=timeout))

    def stopped(self, run_id: str) -> bool:
        return run_id in self._executor.state(Stopped).runs

    def steers(self, endpoint: Optional[str] = None) -> bool:
        """What the built-ins read from the kernel before issue 40: a server feature flag."""
        return self._executor.server_features(endpoint).run_steer


FAMILY: Family[ToyRuns] = Family("toyruns", (TOY_RUN_STOP,), ToyRuns, state=Stopped)


class ToyRunsPlugin:
    @hookimpl
    def hermes_families(self, client: ClientView) -> tuple[Family[ToyRuns]]:
        return (FAMILY,)
