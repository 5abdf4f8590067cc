"""The built-in families, registered through the ``hermes_families`` hook like any plugin's (llm's model).

Order is ``capabilities()`` order (as published since 0.1): the seed page's six (chat, then
Responses), runs, discovery, sessions, cron jobs, server facts, the operator.
"""

from __future__ import annotations

from typing import Mapping

import attrs

from .._core import capabilities
from .._core.families import Family
from .._core.operations.common import ProviderRequest, split_key
from .._core.operations.spec import OperationSpec
from .._core.redaction import register_route
from .._core.view import ClientView
from .._families import chat, discovery, jobs, operator, responses, runs, sessions
from ..hookspecs import hookimpl

_CLI = "hermes_sdk._app._cli_families:"
CHAT: Family[chat.Chat] = chat.FAMILY
RESPONSES: Family[responses.Responses] = responses.FAMILY
RUNS: Family[runs.Runs] = runs.FAMILY
DISCOVERY: Family[None] = discovery.FAMILY
JOBS: Family[jobs.Jobs] = attrs.evolve(jobs.FAMILY, commands=_CLI + "add_jobs_commands")
SERVER: Family[None] = discovery.SERVER_FAMILY
OPERATOR: Family[None] = operator.FAMILY
SESSIONS: Family[sessions.Sessions] = attrs.evolve(sessions.FAMILY, commands=_CLI + "add_sessions_commands")

FAMILIES: tuple[Family[object], ...] = (CHAT, RESPONSES, RUNS, DISCOVERY, SESSIONS, JOBS, SERVER, OPERATOR)
#: The built-in operations by name (what ``parse_capability_id`` knows without a client).
BUILTIN_SPECS: dict[str, OperationSpec[object]] = {s.name: s for f in FAMILIES for s in f.specs}
for _spec in BUILTIN_SPECS.values():  # log lines are scrubbed of their ids before any client exists
    register_route(_spec.contract.path)


class BuiltinFamilies:
    """The default plugin that registers the built-in families (``hermes-sdk plugins`` lists it)."""

    @hookimpl(tryfirst=True)
    def hermes_families(self, client: ClientView) -> tuple[Family[object], ...]:
        return FAMILIES


def parse_capability_id(value: str) -> tuple[str, str]:
    """Split ``cap:hermes_agent:<endpoint_id>:<operation>``; the operation must be a built-in one
    (a client's ``invoke()`` also accepts its plugins' families)."""
    return capabilities.parse_capability_id(value, BUILTIN_SPECS)


def build_request(operation: str, input: Mapping[str, object]) -> ProviderRequest:
    """Validate ``input`` for a built-in ``operation`` and map it; raises InvalidInputError before any I/O.
    Its ``idempotency_key`` is checked and taken off as a call's is (:func:`split_key`), never sent in the body."""
    return BUILTIN_SPECS[operation].request(split_key(input, None)[1])
