"""Operations: input validation and request mapping (pure, no I/O) and one spec per operation."""

from __future__ import annotations

from typing import Any, Mapping

from . import catalog, runs  # noqa: E402,F401  (register the built-in specs)
from .common import ProviderRequest, RequestParts
from .spec import SPECS, OperationSpec, register, spec_for, unregister


def build_request(operation: str, input: Mapping[str, Any]) -> ProviderRequest:
    """Validate ``input`` for ``operation`` and map it; raises InvalidInputError before any I/O."""
    return SPECS[operation].request(input)


# The families of issue 16, registered after the seed and runs operations (capabilities() order).
from . import jobs, operator, sessions  # noqa: E402,F401

__all__ = ["OperationSpec", "ProviderRequest", "RequestParts", "SPECS", "build_request", "register",
           "spec_for", "unregister"]
