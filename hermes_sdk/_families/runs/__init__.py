"""The runs family (``/v1/runs``): durable agent runs, ``client.runs``; its per-client state is
:class:`RunsState` (the runs this client stopped, the handles following a run's events)."""

from __future__ import annotations

from hermes_sdk.plugin import Family

from .operations import RUN_SPECS
from .resource import RunInput, Runs
from .run import Run
from .state import RunsState
from .stream_approvals import answer_approvals

FAMILY: Family[Runs] = Family("runs", RUN_SPECS, Runs, state=RunsState)

__all__ = ["FAMILY", "Run", "RunInput", "Runs", "RunsState", "answer_approvals"]
