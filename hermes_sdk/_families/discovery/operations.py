"""The discovery operations, as specs: what the server is and offers. They take no input, read
only, are retried and need no idempotency key."""

from __future__ import annotations

from typing import Any, Mapping

import attrs

from hermes_sdk.plugin import Contract, Family, Input, OperationSpec, RequestParts

from . import types

#: What Hermes says here names no user and no conversation.
_PUBLIC = {"classification": "internal", "contains_pii": False, "redaction_required": False}


#: ``/health``, ``/v1/models``, ``/v1/capabilities`` and ``/v1/toolsets`` take no input.
NO_INPUT = Input((), control=("_aip",))
#: ``/health/detailed``, ``/v1/skills`` and ``/api/model/options`` take no input (but the control
#: fields, as the jobs routes do).
EMPTY_INPUT = Input(())


def build_discovery(operation: str, data: Mapping[str, object]) -> RequestParts:
    """No input: nothing to map."""
    return RequestParts({})


build_empty = build_discovery


def _contract(operation: str, path: str, **overrides: Any) -> Contract:
    base = Contract(
        operation=operation, method="GET", path=path, risk="low", stability="experimental",
        requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=True, streaming=False,
        side_effects=("read", "external_network"), data=dict(_PUBLIC), expected_latency_ms=1_000,
        timeout_ms=30_000,
    )
    return attrs.evolve(base, **overrides)


def _server_contract(operation: str, path: str, **overrides: Any) -> Contract:
    """The server-facts routes, published since 0.1 with the sessions and jobs families' defaults."""
    return _contract(operation, path, **{"stability": "stable", "kind": "tool", "expected_latency_ms": 5_000,
                                         "timeout_ms": 60_000, **overrides})


HEALTH: OperationSpec[types.Health] = OperationSpec(
    _contract("health", "/health"), build_discovery, decode=types.health, public=True, input=NO_INPUT)
MODELS: OperationSpec[list[types.ModelInfo]] = OperationSpec(
    _contract("models", "/v1/models"), build_discovery, decode=types.models, input=NO_INPUT)
SERVER_CAPABILITIES: OperationSpec[types.ServerCapabilities] = OperationSpec(
    _contract("server_capabilities", "/v1/capabilities"), build_discovery, decode=types.server_capabilities,
    input=NO_INPUT)
TOOLSETS: OperationSpec[list[types.Toolset]] = OperationSpec(
    _contract("toolsets", "/v1/toolsets"), build_discovery, decode=types.toolsets, input=NO_INPUT)

HEALTH_DETAILED: OperationSpec[dict[str, object]] = OperationSpec(
    _server_contract("health_detailed", "/health/detailed"), build_empty, decode=types.health_detailed,
    input=EMPTY_INPUT)
SKILLS: OperationSpec[list[types.Skill]] = OperationSpec(
    _server_contract("skills", "/v1/skills", stability="experimental"), build_empty, decode=types.skills,
    input=EMPTY_INPUT)
# Hermes 0.20+: the provider/model inventory; refused before sending on a server without it.
MODEL_OPTIONS: OperationSpec[dict[str, object]] = OperationSpec(
    _server_contract("model_options", "/api/model/options", stability="experimental"), build_empty,
    decode=types.model_options, server_feature="model_options", input=EMPTY_INPUT)

#: Published in capabilities() after the runs family (as since 0.1).
DISCOVERY_SPECS = (HEALTH, MODELS, SERVER_CAPABILITIES, TOOLSETS)
#: Published after the jobs family (as since 0.1), as the family ``server``.
SERVER_SPECS = (HEALTH_DETAILED, SKILLS, MODEL_OPTIONS)

FAMILY: Family[None] = Family("discovery", DISCOVERY_SPECS)
SERVER_FAMILY: Family[None] = Family("server", SERVER_SPECS)
