"""What plugin authors use: the hook marker, the :class:`Plugin` type, the objects hooks receive, the
store and approval-provider protocols (:data:`ApprovalProvider`), and
everything a third-party family needs (:class:`Family`, :class:`OperationSpec`, :class:`Contract`,
:class:`DecodeContext`, :class:`HermesStream`, :class:`Accumulator` and the :class:`Aggregate` it folds into,
:func:`invalid_input`, :func:`path_id`), and what the built-in families use the same way: an
:class:`AdmitContext` for a spec's ``admit`` rule, per-client family state (``Family(state=...)``,
``FamilyExecutor.state``), a :class:`CompositeContext` for a composite operation and a read-only
:class:`RecordsView` of the idempotency store.

Applications import from :mod:`hermes_sdk`; plugins (stores, approval providers, redaction
filters, tracers, families) import from here. Every hook is documented in :mod:`hermes_sdk.hookspecs`.
Hooks receive read-only views: a :class:`CallView` (never the internal call, its credential or its
input), an :class:`Attempt` and the sealed :class:`HttpReply`. A plugin that shows agent- or
server-supplied text to a person renders it with :func:`visible` (control, escape, bidi and
invisible characters written out, never interpreted). An approval queue backend finds its stored
entries by an identifier with :func:`entry_identifiers`, :func:`holds_identifier`, :func:`like_identifier`
and :func:`exact_pages` (one rule for every backend, so no backend imports another's package).

(Formerly also reachable one letter away, as ``hermes_sdk.plugins``: that is the internal plugin
manager now, and the old path imports with a DeprecationWarning.)
"""

from __future__ import annotations

from ._core._plugin_manager import Plugin
from ._core.admission import AdmitContext, CompositeContext, RecordsView
from ._core.aggregate import Accumulator, Aggregate
from ._core.approval import ApprovalCallback, ApprovalProvider, HasRequestApproval, ProviderAnswer
from ._core.approval_entries import entry_identifiers, exact_pages, holds_identifier, like_identifier
from ._core.capabilities import Contract, descriptor
from ._core.convert import DecodeContext
from ._core.display import visible, visible_value
from ._core.exchange import Attempt, HttpReply
from ._core.families import (
    Family,
    FamilyExecutor,
    LazyFamily,
    register,
    register_resource,
    unregister,
    unregister_resource,
)
from ._core.idempotency import (
    COMPLETED,
    PENDING,
    CorruptRecordError,
    IdempotencyRecord,
    IdempotencyStore,
    load_record,
    store_from_url,
)
from ._core.models import ActionResult
from ._core.operations import OperationSpec, ProviderRequest, RequestParts
from ._core.operations.common import bad as invalid_input
from ._core.operations.stored import path_id_value as path_id
from ._core.options import CallOptions
from ._core.redaction import REDACTED, Redactor
from ._core.schema import (
    AllOf,
    Anything,
    Bool,
    Field,
    Header,
    Input,
    Int,
    ListOf,
    Message,
    Never,
    Number,
    Object,
    OneOf,
    PathId,
    Rule,
    Text,
)
from ._core.sqlite_files import SQLiteConnections, private_sqlite_files
from ._core.store_calls import store_deadline
from ._core.streaming import HermesStream
from ._core.view import CallView, ClientView
from .hookspecs import hookimpl, hookspec

__all__ = [
    "Accumulator", "ActionResult", "AdmitContext", "Aggregate", "ApprovalCallback", "ApprovalProvider", "Attempt",
    "CallOptions", "CallView", "ClientView", "COMPLETED", "CompositeContext", "Contract", "CorruptRecordError",
    "DecodeContext", "descriptor", "Family", "FamilyExecutor", "HasRequestApproval", "HermesStream", "hookimpl",
    "hookspec", "HttpReply", "IdempotencyRecord", "IdempotencyStore", "invalid_input", "LazyFamily", "load_record",
    "OperationSpec",
    "path_id", "PENDING", "Plugin", "private_sqlite_files", "ProviderAnswer", "ProviderRequest", "RecordsView",
    "REDACTED", "Redactor", "register", "register_resource", "RequestParts", "SQLiteConnections", "store_deadline",
    "store_from_url", "unregister", "unregister_resource", "visible", "visible_value",
]
__all__ += ["AllOf", "Anything", "Bool", "Field", "Header", "Input", "Int", "ListOf", "Message", "Never", "Number",
            "Object", "OneOf", "PathId", "Rule", "Text"]  # declared input schemas (issue 40)
__all__ += ["entry_identifiers", "exact_pages", "holds_identifier", "like_identifier"]  # approval queue backends

# The internal call and runtime were exported here before 0.2; hooks no longer receive them.
_INTERNAL = {"Call": ("hermes_sdk._core.call", "Call"), "Runtime": ("hermes_sdk._core.runtime", "Runtime")}


def __getattr__(name: str) -> object:
    from ._core import _deprecation as _compat

    if name == "CONTRACTS":  # a process-wide registry before 0.2: the built-in contracts, read-only
        import importlib
        import types

        # Through the kernel's loader of the default plugin: the built-in families import this module.
        families = importlib.import_module("hermes_sdk._core.config").builtin_plugin().hermes_families(client=None)
        specs = importlib.import_module("hermes_sdk._core.families").Registry(families).specs
        _compat.deprecated("hermes_sdk.plugin.CONTRACTS is deprecated: a client's contracts are "
                           "client.capabilities()")
        return types.MappingProxyType({name: spec.contract for name, spec in specs.items()})
    if name == "Invocation":  # the hook object's former name

        _compat.deprecated("hermes_sdk.plugin.Invocation is deprecated: hooks receive a CallView")
        return CallView
    if name in _INTERNAL:
        import importlib

        module, attr = _INTERNAL[name]
        _compat.deprecated(f"hermes_sdk.plugin.{name} is internal and no longer given to hooks (they receive "
                           "CallView)")
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'hermes_sdk.plugin' has no attribute {name!r}")
