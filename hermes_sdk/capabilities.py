"""The six capabilities and their published AIP contracts, as data.

The operations differ only here and in their request mapping; nothing else branches on them.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import attrs

from ._constants import CAPABILITY_PREFIX
from .errors import InvalidInputError

OPERATIONS = ("chat", "chat_stream", "responses", "responses_stream", "response_get", "response_delete")
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
    data: dict[str, Any]
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

    @property
    def read_only(self) -> bool:
        return self.retry_safe


def _model(operation: str, path: str, streaming: bool) -> Contract:
    return Contract(
        operation=operation, method="POST", path=path, risk="medium", stability="stable",
        requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=False,
        streaming=streaming, side_effects=MODEL_SIDE_EFFECTS, data=dict(CONFIDENTIAL),
        expected_latency_ms=30_000 if streaming else 5_000, timeout_ms=300_000 if streaming else 60_000,
        supports_async=streaming, supports_cancel=streaming,
    )


CONTRACTS: dict[str, Contract] = {
    "chat": _model("chat", "/v1/chat/completions", False),
    "chat_stream": _model("chat_stream", "/v1/chat/completions", True),
    "responses": _model("responses", "/v1/responses", False),
    "responses_stream": _model("responses_stream", "/v1/responses", True),
    # The generated contract calls response_get "internal" and PII-free; the seed page says that is too
    # weak for stored model and tool output, so it is published here as confidential.
    "response_get": Contract(
        operation="response_get", method="GET", path="/v1/responses/{response_id}", risk="low",
        stability="experimental", requires_approval=False, key_requirement="optional", key_ttl_ms=None,
        retry_safe=True, streaming=False, side_effects=("read", "external_network"), data=dict(CONFIDENTIAL),
        expected_latency_ms=5_000, timeout_ms=60_000,
    ),
    "response_delete": Contract(
        operation="response_delete", method="DELETE", path="/v1/responses/{response_id}", risk="high",
        stability="experimental", requires_approval=True, key_requirement="required", key_ttl_ms=86_400_000,
        retry_safe=False, streaming=False, side_effects=("read", "delete", "external_network"),
        data={"classification": "restricted", "contains_pii": True, "redaction_required": True},
        expected_latency_ms=5_000, timeout_ms=60_000,
    ),
}


def capability_id(endpoint_id: str, operation: str) -> str:
    return f"{CAPABILITY_PREFIX}{endpoint_id}:{operation}"


def parse_capability_id(value: str) -> Tuple[str, str]:
    """Split ``cap:hermes_agent:<endpoint_id>:<operation>`` (operation after the last colon)."""
    if not isinstance(value, str) or not value.startswith(CAPABILITY_PREFIX):
        raise InvalidInputError(f"not a Hermes capability id: {value!r}", details={"field": "capability_id"})
    endpoint_id, sep, operation = value[len(CAPABILITY_PREFIX):].rpartition(":")
    if not sep or not endpoint_id:
        raise InvalidInputError("capability id has no endpoint id", details={"field": "capability_id"})
    if operation not in CONTRACTS:
        raise InvalidInputError(f"unsupported Hermes operation {operation!r}",
                                details={"field": "capability_id", "operation": operation})
    return endpoint_id, operation


def descriptor(endpoint_id: str, contract: Contract) -> dict[str, Any]:
    """The capability descriptor published by ``client.capabilities()``."""
    c = contract
    return {
        "capability_id": capability_id(endpoint_id, c.operation),
        "endpoint_id": endpoint_id,
        "operation": c.operation,
        "kind": "agent",
        "provider_request": {"method": c.method, "path": c.path, "streaming": c.streaming},
        "auth": {"scheme": "bearer", "source": "endpoint.api_key"},
        "risk": c.risk,
        "stability": c.stability,
        "side_effects": list(c.side_effects),
        "data": dict(c.data),
        "approval": {
            "required": c.requires_approval,
            **({"approver_selector": {"type": "tenant_policy"}, "ttl_ms": 900_000,
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
    }
