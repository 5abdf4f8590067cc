"""Checked by mypy --strict (tox -e type, setup.cfg [mypy] files): what an application imports
type-checks, the names that left the top level (events, parts of results) included until 0.3.0."""

from __future__ import annotations

from hermes_sdk import ChatCompletion, HermesClient, RunCompleted, RunResult
from hermes_sdk.types import Runs, SessionDelta


def texts(client: HermesClient, result: RunResult, runs: Runs) -> list[str]:
    reply: ChatCompletion = client.chat(prompt="hello")
    done = [e.output for e in result.events if isinstance(e, RunCompleted)]
    deltas: list[SessionDelta] = []
    return [reply.text or "", *(d or "" for d in done), *(d.delta for d in deltas), type(runs).__name__]
