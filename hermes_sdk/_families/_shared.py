"""What several built-in families share: the input rule every builder applies, the one check of
unknown input fields, and the contract defaults of the sessions and jobs families."""

from __future__ import annotations

from typing import Any, Mapping

import attrs

from hermes_sdk._core.operations.common import encode_body, require_input
from hermes_sdk.plugin import Contract, invalid_input

#: Control fields every tool-like operation accepts besides its own (the key, the AIP envelope).
CONTROL_FIELDS = ("idempotency_key", "_aip")

_READ = ("read", "external_network")
_WRITE = ("read", "write", "external_network")
#: What a read of the sessions and jobs families returns, and what a write of them sends.
_INTERNAL = {"classification": "internal", "contains_pii": False, "redaction_required": True}
_WRITTEN = {"classification": "confidential", "contains_pii": True, "redaction_required": True}


def only_fields(data: Mapping[str, object], accepted: tuple[str, ...],
                control: tuple[str, ...] = CONTROL_FIELDS) -> Mapping[str, object]:
    """``data`` if it holds no field beyond ``accepted`` and ``control``; else an InvalidInputError
    naming the first unknown field (sorted) and listing ``accepted``."""
    extra = sorted(k for k in data if k not in accepted and k not in control)
    if extra:
        raise invalid_input(extra[0], f"unknown field {extra[0]!r}; accepted: {', '.join(accepted)}")
    return data


def contract(operation: str, method: str, path: str, *, read_only: bool, **overrides: Any) -> Contract:
    """A contract of the sessions and jobs families (spec section 9.1): read-only operations are
    low risk, retry-safe, key optional; the others unsafe, and key-required ones keep it 24 h."""
    base = Contract(
        operation=operation, method=method, path=path, risk="low" if read_only else "medium", stability="stable",
        requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=read_only,
        streaming=False, side_effects=_READ if read_only else _WRITE, kind="tool",
        data=dict(_INTERNAL if read_only else _WRITTEN), expected_latency_ms=5_000, timeout_ms=60_000)
    found = attrs.evolve(base, **overrides)
    return attrs.evolve(found, key_ttl_ms=86_400_000) if found.key_requirement == "required" else found


__all__ = ["CONTROL_FIELDS", "contract", "encode_body", "only_fields", "require_input"]
