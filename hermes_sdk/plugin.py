"""What plugin authors use: the hook marker, the objects hooks receive, and the store protocol.

Applications import from :mod:`hermes_sdk`; plugins (stores, approval providers, redaction
filters, tracers) import from here. Every hook is documented in :mod:`hermes_sdk.hookspecs`.
Hooks receive a :class:`CallView` (never the internal call, its credential or its input) and an
:class:`Attempt`. A plugin that shows agent- or server-supplied text to a person renders it with
:func:`visible` (control, escape, bidi and invisible characters written out, never interpreted).
"""

from __future__ import annotations

from ._core.aggregate import Accumulator
from ._core.capabilities import CONTRACTS, Contract, descriptor
from ._core.display import visible, visible_value
from ._core.exchange import Attempt, HttpReply
from ._core.idempotency import COMPLETED, PENDING, IdempotencyRecord, IdempotencyStore, store_from_url
from ._core.models import ActionResult
from ._core.operations import OperationSpec, ProviderRequest, RequestParts, register, unregister
from ._core.options import CallOptions
from ._core.redaction import REDACTED, Redactor
from ._core.resources import register_resource, unregister_resource
from ._core.sqlite_files import private_sqlite_files
from ._core.view import CallView, ClientView
from .hookspecs import hookimpl, hookspec

#: The hook object's former names: hooks now receive a :class:`CallView`.
Invocation = CallView

__all__ = [
    "Accumulator", "ActionResult", "Attempt", "COMPLETED", "CONTRACTS", "CallOptions", "CallView", "ClientView",
    "REDACTED",
    "Contract", "HttpReply", "IdempotencyRecord", "IdempotencyStore", "Invocation", "OperationSpec", "PENDING",
    "ProviderRequest", "Redactor", "RequestParts", "descriptor", "hookimpl", "hookspec", "register",
    "private_sqlite_files", "register_resource", "store_from_url", "unregister", "unregister_resource", "visible",
    "visible_value",
]

# The internal call and runtime were exported here before 0.2; hooks no longer receive them.
_INTERNAL = {"Call": ("hermes_sdk._core.call", "Call"), "Runtime": ("hermes_sdk._core.runtime", "Runtime")}


def __getattr__(name: str) -> object:
    if name in _INTERNAL:
        import importlib
        import warnings

        module, attr = _INTERNAL[name]
        warnings.warn(f"hermes_sdk.plugin.{name} is internal and no longer given to hooks (they receive "
                      "CallView); it will be removed", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'hermes_sdk.plugin' has no attribute {name!r}")
