"""Operations: input validation and request mapping (pure, no I/O) and one spec per operation.

Each module holds one family's specs; ``hermes_sdk/_core/builtin.py`` groups them into the built-in families.
"""

from __future__ import annotations

from .common import ProviderRequest, RequestParts
from .spec import OperationSpec

__all__ = ["OperationSpec", "ProviderRequest", "RequestParts"]
