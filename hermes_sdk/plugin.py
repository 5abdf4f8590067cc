"""What plugin authors use: the hook marker, the objects hooks receive, and the store protocol.

Applications import from :mod:`hermes_sdk`; plugins (stores, approval providers, redaction
filters, tracers) import from here. Every hook is documented in :mod:`hermes_sdk.hookspecs`.
Hooks receive a :class:`CallView` (never the internal call, its credential or its input) and an
:class:`Attempt`. A plugin that shows agent- or server-supplied text to a person renders it with
:func:`visible` (control, escape, bidi and invisible characters written out, never interpreted).
"""

from __future__ import annotations

from .aggregate import Accumulator
from .capabilities import CONTRACTS, Contract, descriptor
from .display import visible, visible_value
from .exchange import Attempt, HttpReply
from .hookspecs import hookimpl, hookspec
from .idempotency import COMPLETED, PENDING, IdempotencyRecord, IdempotencyStore, store_from_url
from .models import ActionResult
from .operations import OperationSpec, ProviderRequest, RequestParts, register, unregister
from .options import CallOptions
from .redaction import Redactor
from .resources import register_resource, unregister_resource
from .view import CallView, ClientView

#: The hook object's former names: hooks now receive a :class:`CallView`.
Invocation = CallView

__all__ = [
    "Accumulator", "ActionResult", "Attempt", "COMPLETED", "CONTRACTS", "CallOptions", "CallView", "ClientView",
    "Contract", "HttpReply", "IdempotencyRecord", "IdempotencyStore", "Invocation", "OperationSpec", "PENDING",
    "ProviderRequest", "Redactor", "RequestParts", "descriptor", "hookimpl", "hookspec", "register",
    "register_resource", "store_from_url", "unregister", "unregister_resource", "visible", "visible_value",
]

# The internal call and runtime were exported here before 0.2; hooks no longer receive them.
_INTERNAL = {"Call": ("hermes_sdk.call", "Call"), "Runtime": ("hermes_sdk.runtime", "Runtime")}


def __getattr__(name: str) -> object:
    if name in _INTERNAL:
        import importlib
        import warnings

        module, attr = _INTERNAL[name]
        warnings.warn(f"hermes_sdk.plugin.{name} is internal and no longer given to hooks (they receive "
                      "CallView); it will be removed", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'hermes_sdk.plugin' has no attribute {name!r}")
