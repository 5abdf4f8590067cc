"""What several built-in families share: the input rule every builder applies (their inputs are
declared tables, :mod:`hermes_sdk._core.schema`), the contract defaults of the sessions and jobs
families and of the chat and Responses model calls, and the typed methods' keyword rules (unknown
keywords, ``extra_body=``)."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any, Callable, Mapping, Optional

import attrs

from hermes_sdk.errors import InvalidInputError
from hermes_sdk.plugin import (
    CALL_KEYWORDS,
    CONFIDENTIAL,
    DEFAULT_MAX_EVENTS,
    DEFAULT_MODEL,
    MAX_MAX_EVENTS,
    MAX_SAFE_INTEGER,
    MODEL_SIDE_EFFECTS,
    Contract,
    check_message,
    check_numbers,
    close_match,
    control_headers,
    encode_body,
    is_number,
    max_events_value,
    require_input,
    visible_text,
)
from hermes_sdk.plugin import import_family_module as import_module  # family modules, under one lock

#: Control fields every tool-like operation accepts besides its own: the AIP envelope (the idempotency
#: key is taken off every input before a builder sees it: split_key).
CONTROL_FIELDS = ("_aip",)

_READ = ("read", "external_network")
_WRITE = ("read", "write", "external_network")
#: What a read of the sessions and jobs families returns, and what a write of them sends.
_INTERNAL = {"classification": "internal", "contains_pii": False, "redaction_required": True}
_WRITTEN = {"classification": "confidential", "contains_pii": True, "redaction_required": True}


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


def model_contract(operation: str, path: str, streaming: bool) -> Contract:
    """A contract of the chat and Responses model calls: medium risk, never retried, key optional;
    a stream may be cancelled and is given 300 s (a call 60 s)."""
    return Contract(
        operation=operation, method="POST", path=path, risk="medium", stability="stable",
        requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=False,
        streaming=streaming, side_effects=MODEL_SIDE_EFFECTS, data=dict(CONFIDENTIAL),
        expected_latency_ms=30_000 if streaming else 5_000, timeout_ms=300_000 if streaming else 60_000,
        supports_async=streaming, supports_cancel=streaming,
    )


_SAMPLING = ("max_tokens", "temperature", "top_p")


def described(fields: Mapping[str, object]) -> dict[str, object]:
    """The request model and sampling controls a caller gave: names and numbers only."""
    out: dict[str, object] = {"request.model": fields.get("model") or DEFAULT_MODEL}
    for name in _SAMPLING:
        value = fields.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"request.{name}"] = value
    return out


def check_known(fields: Mapping[str, object], known: frozenset[str], method: str) -> None:
    """Refuse a keyword the method does not model, before anything is sent, suggesting the close match."""
    for name in fields:
        if name in known:
            continue
        close = close_match(name, sorted(known) + list(CALL_KEYWORDS))
        hint = f" (did you mean {close!r}?)" if close else ""
        raise InvalidInputError(
            f"{method}() got an unknown keyword argument {name!r}{hint}. Provider fields the SDK does not "
            "model go through extra_body={...}",
            details={"field": name, **({"suggestion": close} if close else {})})


def merge_extra(fields: dict[str, object], extra_body: Optional[Mapping[str, object]]) -> dict[str, object]:
    """``fields`` over ``extra_body``; a field given in both with different values is refused."""
    if extra_body is None:
        return fields
    if not isinstance(extra_body, Mapping):
        raise InvalidInputError("extra_body must be a JSON object", details={"field": "extra_body"})
    clash = sorted(k for k in extra_body if k in fields and fields[k] != extra_body[k])
    if clash:
        raise InvalidInputError(f"{clash[0]!r} is given as a keyword and in extra_body with different values",
                                details={"field": clash[0]})
    return {**extra_body, **fields}


__all__ = ["CONFIDENTIAL", "CONTROL_FIELDS", "DEFAULT_MAX_EVENTS", "DEFAULT_MODEL", "MAX_MAX_EVENTS",
           "MAX_SAFE_INTEGER", "check_known", "check_message", "check_numbers", "contract", "control_headers",
           "described", "encode_body", "is_number", "max_events_value", "merge_extra", "model_contract",
           "require_input", "visible_text"]


def lazy_exports(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A family package's ``__getattr__``: ``where[name]`` is the submodule (``".types"``) defining
    ``name``, imported when the name is first asked for, so importing the package (for the client's
    mixin) loads none of the family's operations or types until one of its calls is made."""

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(importlib.util.resolve_name(module, package)), name)  # under the family lock
        setattr(sys.modules[package], name, value)  # asked again, it is a plain attribute
        return value

    return __getattr__
