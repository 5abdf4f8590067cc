"""One way to deprecate: every shim warns through :func:`deprecated`, which names the removing release."""

from __future__ import annotations

import warnings

#: The release that removes every deprecated path, name and protocol (the CHANGELOG lists them).
REMOVED_IN = "0.3.0"


def deprecated(message: str, stacklevel: int = 2) -> None:
    """Warn that something is deprecated, naming the release that removes it."""
    warnings.warn(f"{message} (removed in hermes-sdk {REMOVED_IN})", DeprecationWarning, stacklevel=stacklevel + 1)
