"""Capability ids and the published AIP contract shape, as data.

Each operation's contract lives in its spec (its family's ``operations.py``); this module knows how a
contract is named (``cap:hermes_agent:<endpoint_id>:<operation>``) and published.
"""

from __future__ import annotations

from typing import Any, Container, Mapping, Optional, Tuple

import attrs

from ..errors import InvalidInputError
from ._constants import APPROVAL_TTL_SECONDS, CAPABILITY_PREFIX

MODEL_SIDE_EFFECTS = ("read", "write", "send_message", "external_network")
CONFIDENTIAL = {"classification": "confidential", "contains_pii": True, "redaction_required": True}


@attrs.frozen
class Contract:
    """One capability's published contract (seed page, "Operations" and "Shared AIP contract")."""

    operation: str
    method: str
    path: str
    risk: str
    stability: str
    requires_approval: bool
    key_requirement: str  # "optional" | "required"
    key_ttl_ms: Optional[int]
    retry_safe: bool
    streaming: bool
    side_effects: Tuple[str, ...]
    data: dict[str, object]
    expected_latency_ms: int
    timeout_ms: int
    max_queue_delay_ms: int = 10_000
    availability_target: str = "99.9%"
    supports_sync: bool = True
    supports_async: bool = False
    supports_cancel: bool = False
    async_expected: bool = False
    collision_behavior: str = "return_original_result"
    key_scope: str = "capability"
    compensation: str = "rollback_not_supported"
    transaction: str = "none"
    #: The connector's action kind: ``agent`` (the model works) or ``tool`` (a plain route).
    kind: str = "agent"

    @property
    def read_only(self) -> bool:
        """Whether the operation only reads (``retry_safe``).

        A read-only call's transport and server failures are ``retryable`` and never leave an
        uncertain outcome; every other call's are not retried and are marked ``uncertain_outcome``.
        """
        return self.retry_safe


def capability_id(endpoint_id: str, operation: str) -> str:
    """The capability id of an operation on an endpoint: ``cap:hermes_agent:<endpoint_id>:<operation>``.

    ``endpoint_id`` is used as given: pass the normalised id (:attr:`hermes_sdk.Endpoint.id`).
    """
    return f"{CAPABILITY_PREFIX}{endpoint_id}:{operation}"


def parse_capability_id(value: str, operations: Container[str]) -> Tuple[str, str]:
    """Split ``cap:hermes_agent:<endpoint_id>:<operation>`` (operation after the last colon); the
    operation must be one of ``operations`` (a client's: its families')."""
    if not isinstance(value, str) or not value.startswith(CAPABILITY_PREFIX):
        raise InvalidInputError(f"not a Hermes capability id: {value!r}", details={"field": "capability_id"})
    endpoint_id, sep, operation = value[len(CAPABILITY_PREFIX):].rpartition(":")
    if not sep or not endpoint_id:
        raise InvalidInputError("capability id has no endpoint id", details={"field": "capability_id"})
    if operation not in operations:
        raise InvalidInputError(f"unsupported Hermes operation {operation!r}",
                                details={"field": "capability_id", "operation": operation})
    return endpoint_id, operation


def descriptor(endpoint_id: str, contract: Contract,
               input_schema: Optional[Mapping[str, object]] = None) -> dict[str, Any]:
    """The capability descriptor published by ``client.capabilities()``; ``input_schema`` is the
    operation's declared input as JSON Schema (any object when not given)."""
    c = contract
    return {
        "capability_id": capability_id(endpoint_id, c.operation),
        "endpoint_id": endpoint_id,
        "operation": c.operation,
        "kind": c.kind,
        "provider_request": {"method": c.method, "path": c.path, "streaming": c.streaming},
        "auth": {"scheme": "bearer", "source": "endpoint.api_key"},
        "risk": c.risk,
        "stability": c.stability,
        "side_effects": list(c.side_effects),
        "data": dict(c.data),
        "approval": {
            "required": c.requires_approval,
            **({"approver_selector": {"type": "tenant_policy"}, "ttl_ms": int(APPROVAL_TTL_SECONDS * 1000),
                "evidence_requirements": ["reason", "input_snapshot", "policy_decision"]}
               if c.requires_approval else {}),
        },
        "idempotency": {
            "requirement": c.key_requirement, "ttl_ms": c.key_ttl_ms,
            "key_scope": c.key_scope, "collision_behavior": c.collision_behavior,
        },
        "retry": {"safety": "safe" if c.retry_safe else "unsafe", "supports_retry": c.retry_safe},
        "execution": {
            "supports_sync": c.supports_sync, "supports_async": c.supports_async,
            "supports_streaming": c.streaming, "supports_cancel": c.supports_cancel,
            "async_expected": c.async_expected, "streaming_expected": c.streaming,
        },
        "compensation": {"kind": c.compensation, "requires_approval": c.requires_approval},
        "transaction": c.transaction,
        "sla": {
            "expected_latency_ms": c.expected_latency_ms, "timeout_ms": c.timeout_ms,
            "max_queue_delay_ms": c.max_queue_delay_ms, "availability_target": c.availability_target,
        },
        "input_schema": dict(input_schema) if input_schema is not None else {"type": "object"},
    }
