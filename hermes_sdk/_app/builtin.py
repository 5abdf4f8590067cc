"""The built-in families, registered through the ``hermes_families`` hook like any plugin's (llm's model).

Order is ``capabilities()`` order (as published since 0.1): the seed page's six (chat, then
Responses), runs, discovery, sessions, cron jobs, server facts, the operator.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from .._core import capabilities
from .._core.families import Family, LazyFamily, Registry
from .._core.operations.common import ProviderRequest, split_key
from .._core.view import ClientView
from ..hookspecs import hookimpl

if TYPE_CHECKING:
    from .._core.operations.spec import OperationSpec

_CLI = "hermes_sdk._app._cli_families:"
_F = "hermes_sdk._families."

#: Declared, not imported: a client imports a family when it is first used (its operation called or
#: listed, its resource asked for); tests/core/test_family_layout.py loads each and compares.
FAMILIES: tuple[LazyFamily, ...] = (
    LazyFamily("chat", _F + "chat:FAMILY", ("chat", "chat_stream"), ("/v1/chat/completions",),
               resource=_F + "chat.resource:Chat"),
    LazyFamily("responses", _F + "responses:FAMILY",
               ("responses", "responses_stream", "response_get", "response_delete"),
               ("/v1/responses", "/v1/responses/{response_id}"), resource=_F + "responses.resource:Responses"),
    LazyFamily("runs", _F + "runs:FAMILY",
               ("run_start", "run_get", "run_events", "run_approval", "run_steer", "run_stop"),
               ("/v1/runs", "/v1/runs/{run_id}", "/v1/runs/{run_id}/events", "/v1/runs/{run_id}/approval",
                "/v1/runs/{run_id}/steer", "/v1/runs/{run_id}/stop"), resource=_F + "runs.resource:Runs"),
    LazyFamily("discovery", _F + "discovery:FAMILY", ("health", "models", "server_capabilities", "toolsets"),
               ("/health", "/v1/models", "/v1/capabilities", "/v1/toolsets")),
    LazyFamily("sessions", _F + "sessions:FAMILY",
               ("sessions_list", "session_create", "session_get", "session_patch", "session_delete",
                "session_messages", "session_fork", "session_chat", "session_chat_stream"),
               ("/api/sessions", "/api/sessions/{session_id}", "/api/sessions/{session_id}/messages",
                "/api/sessions/{session_id}/fork", "/api/sessions/{session_id}/chat",
                "/api/sessions/{session_id}/chat/stream"),
               resource=_F + "sessions.resource:Sessions", commands=_CLI + "add_sessions_commands"),
    LazyFamily("jobs", _F + "jobs:FAMILY",
               ("jobs_list", "job_create", "job_get", "job_update", "job_delete", "job_pause", "job_resume", "job_run"),
               ("/api/jobs", "/api/jobs/{job_id}", "/api/jobs/{job_id}/pause", "/api/jobs/{job_id}/resume",
                "/api/jobs/{job_id}/run"), resource=_F + "jobs.resource:Jobs", commands=_CLI + "add_jobs_commands"),
    LazyFamily("server", _F + "discovery:SERVER_FAMILY", ("health_detailed", "skills", "model_options"),
               ("/health/detailed", "/v1/skills", "/api/model/options")),
    LazyFamily("operator", _F + "operator:FAMILY", ("operator",), ("/v1/runs",)),
)
#: The built-in families, outside any client: what ``parse_capability_id`` and ``build_request`` know
#: (registering them here also scrubs their ids from log lines before any client exists).
_BUILTINS = Registry(FAMILIES, owners={f.name: "hermes_sdk" for f in FAMILIES}, builtin=[f.name for f in FAMILIES])
_NAMES = {"CHAT": "chat", "RESPONSES": "responses", "RUNS": "runs", "DISCOVERY": "discovery", "SESSIONS": "sessions",
          "JOBS": "jobs", "SERVER": "server", "OPERATOR": "operator"}


def __getattr__(name: str) -> object:
    """``CHAT``... (a loaded built-in :class:`Family`) and ``BUILTIN_SPECS`` (every built-in
    operation's spec by name), imported when asked for."""
    if name in _NAMES:
        return _BUILTINS.family(_NAMES[name])
    if name == "BUILTIN_SPECS":
        return _BUILTINS.specs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    CHAT: Family[object]
    RESPONSES: Family[object]
    RUNS: Family[object]
    DISCOVERY: Family[object]
    SESSIONS: Family[object]
    JOBS: Family[object]
    SERVER: Family[object]
    OPERATOR: Family[object]
    BUILTIN_SPECS: dict[str, OperationSpec[object]]


class BuiltinFamilies:
    """The default plugin that registers the built-in families (``hermes-sdk plugins`` lists it)."""

    @hookimpl(tryfirst=True)
    def hermes_families(self, client: ClientView) -> tuple[LazyFamily, ...]:
        return FAMILIES


def parse_capability_id(value: str) -> tuple[str, str]:
    """Split ``cap:hermes_agent:<endpoint_id>:<operation>``; the operation must be a built-in one
    (a client's ``invoke()`` also accepts its plugins' families)."""
    return capabilities.parse_capability_id(value, _BUILTINS.operations)


def build_request(operation: str, input: Mapping[str, object]) -> ProviderRequest:
    """Validate ``input`` for a built-in ``operation`` and map it; raises InvalidInputError before any I/O.
    Its ``idempotency_key`` is checked and taken off as a call's is (:func:`split_key`), never sent in the body."""
    return _BUILTINS.spec(operation).request(split_key(input, None)[1])
