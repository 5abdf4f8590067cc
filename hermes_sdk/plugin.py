"""What plugin authors use: the hook marker, the objects hooks receive, and the store protocol.

Applications import from :mod:`hermes_sdk`; plugins (stores, approval providers, redaction
filters, tracers) import from here. Every hook is documented in :mod:`hermes_sdk.hookspecs`.
Hooks receive read-only views: a :class:`CallView` (never the internal call, its credential or its
input), an :class:`Attempt` and the sealed :class:`HttpReply`.

(Formerly also reachable one letter away, as ``hermes_sdk.plugins``: that is the internal plugin
manager now, and the old path imports with a DeprecationWarning.)
"""

from __future__ import annotations

from .aggregate import Accumulator
from .capabilities import CONTRACTS, Contract, descriptor
from .exchange import Attempt, HttpReply
from .hookspecs import hookimpl, hookspec
from .idempotency import COMPLETED, PENDING, IdempotencyRecord, IdempotencyStore, store_from_url
from .models import ActionResult
from .operations import OperationSpec, ProviderRequest, RequestParts, register, unregister
from .options import CallOptions
from .redaction import Redactor
from .resources import register_resource, unregister_resource
from .view import CallView, ClientView

__all__ = [
    "Accumulator", "ActionResult", "Attempt", "COMPLETED", "CONTRACTS", "CallOptions", "CallView", "ClientView",
    "Contract", "HttpReply", "IdempotencyRecord", "IdempotencyStore", "OperationSpec", "PENDING",
    "ProviderRequest", "Redactor", "RequestParts", "descriptor", "hookimpl", "hookspec", "register",
    "register_resource", "store_from_url", "unregister", "unregister_resource",
]

# The internal call and runtime were exported here before 0.2; hooks no longer receive them.
_INTERNAL = {"Call": ("hermes_sdk.call", "Call"), "Runtime": ("hermes_sdk.runtime", "Runtime")}


def __getattr__(name: str) -> object:
    if name == "Invocation":  # the hook object's former name
        import warnings

        warnings.warn("hermes_sdk.plugin.Invocation is deprecated: hooks receive a CallView", DeprecationWarning,
                      stacklevel=2)
        return CallView
    if name in _INTERNAL:
        import importlib
        import warnings

        module, attr = _INTERNAL[name]
        warnings.warn(f"hermes_sdk.plugin.{name} is internal and no longer given to hooks (they receive "
                      "CallView); it will be removed", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'hermes_sdk.plugin' has no attribute {name!r}")
