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

The family kit: everything the built-in families import is here too (they import nothing private),
so a third-party family can do what they do: the typed keywords' types and defaults
(:data:`TimeoutLike`, :data:`Deadline`, :class:`ExecutionContext`, :data:`REQUIRED`, :data:`UNCHANGED`),
the decoders (:func:`shape`, :func:`one`, :func:`many`, :func:`read`) and lenient field readers
(``opt_*``), the stream events, the builders' input rules (:func:`require_input`, :func:`encode_body`,
:func:`control_headers`, ...), and a :class:`FamilyExecutor` with the client facts a family may need.

(Formerly also reachable one letter away, as ``hermes_sdk.plugins``: that is the internal plugin
manager now, and the old path imports with a DeprecationWarning.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._core._constants import (
    DEFAULT_MAX_EVENTS,
    DEFAULT_MODEL,
    DELETE_KEY_TTL_SECONDS,
    MAX_MAX_EVENTS,
    MAX_SAFE_INTEGER,
)
from ._core._fork import register as renew_after_fork
from ._core._plugin_manager import Plugin
from ._core._sentinels import REQUIRED, UNCHANGED
from ._core.admission import AdmitContext, CompositeContext, RecordsView
from ._core.aggregate import Accumulator, Aggregate
from ._core.approval import (
    ApprovalCallback,
    ApprovalDecision,
    ApprovalProvider,
    ApprovalRequest,
    HasRequestApproval,
    ProviderAnswer,
)
from ._core.approval import ask as ask_approval
from ._core.approval import check as check_decision
from ._core.approval_entries import entry_identifiers, exact_pages, holds_identifier, like_identifier
from ._core.capabilities import CONFIDENTIAL, MODEL_SIDE_EFFECTS, Contract, capability_id, descriptor
from ._core.convert import (
    NO_CONTEXT,
    DecodeContext,
    as_dict,
    json_object,
    many,
    object_copy,
    one,
    read,
    recorded_result,
    shape,
    structure,
)
from ._core.deadline import CallTimeout, TimeoutLike, as_timeout
from ._core.display import visible, visible_value
from ._core.endpoints import Deadline, ExecutionContext, deadline_epoch, seconds_value
from ._core.exchange import Attempt, HttpReply
from ._core.executor import new_action_id
from ._core.families import (
    Family,
    FamilyExecutor,
    LazyFamily,
    register,
    register_resource,
    unregister,
    unregister_resource,
)
from ._core.family_loading import import_module as import_family_module
from ._core.idempotency import (
    COMPLETED,
    PENDING,
    CorruptRecordError,
    IdempotencyRecord,
    IdempotencyStore,
    load_record,
    store_from_url,
)
from ._core.lenient import opt_bool, opt_float, opt_int, opt_object, opt_str
from ._core.lenient import text as opt_text
from ._core.models import ActionResult, StreamEvent
from ._core.operations import OperationSpec, ProviderRequest, RequestParts
from ._core.operations.common import bad as invalid_input
from ._core.operations.common import (
    check_message,
    check_numbers,
    control_headers,
    encode_body,
    is_number,
    max_events_value,
    require_input,
    session_value,
    visible_text,
)
from ._core.operations.keywords import CALL_KEYWORDS, close_match
from ._core.operations.stored import path_id_value as path_id
from ._core.options import CallOptions
from ._core.recorders import RECORDER_POLL, buffering_recorder, raised_by_test_double, replaying_recorder
from ._core.recorders import refusal as recorder_refusal
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
from ._core.server_features import ServerFeatures
from ._core.sqlite_files import SQLiteConnections, private_sqlite_files
from ._core.stages.approval import as_decision
from ._core.stages.approval import ask_provider as ask_approval_provider
from ._core.store_calls import store_deadline
from ._core.streaming import HermesStream
from ._core.view import CallView, ClientView
from .hookspecs import hookimpl, hookspec

if TYPE_CHECKING:  # at run time through __getattr__: a first chat does not load the stream events (9 ms)
    from ._core.events import (
        TOOL_EVENT_CLASSES,
        ApprovalRequested,
        EventFields,
        MessageDelta,
        RunEvent,
        approval_requested,
        event_fields,
        tool_event,
        typed_stream_event,
    )

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
# The family kit (issue 40): what the built-in families take, public, so a third party can write any of them.
__all__ += [  # keyword types, defaults and their rules; the approval helpers
    "ApprovalDecision", "ApprovalRequest", "ask_approval", "ask_approval_provider", "as_decision", "as_timeout",
    "CallTimeout", "capability_id", "check_decision", "CONFIDENTIAL", "Deadline", "deadline_epoch",
    "DEFAULT_MAX_EVENTS", "DEFAULT_MODEL", "DELETE_KEY_TTL_SECONDS", "ExecutionContext", "import_family_module",
    "MAX_MAX_EVENTS", "MAX_SAFE_INTEGER", "MODEL_SIDE_EFFECTS", "new_action_id", "renew_after_fork", "REQUIRED",
    "seconds_value", "ServerFeatures", "TimeoutLike", "UNCHANGED",
]
__all__ += [  # decoding: the result readers, the lenient field readers, the stream events
    "ApprovalRequested", "as_dict", "event_fields", "approval_requested", "EventFields", "json_object", "many",
    "MessageDelta", "NO_CONTEXT", "object_copy", "one", "opt_bool", "opt_float", "opt_int", "opt_object", "opt_str",
    "opt_text", "read", "recorded_result", "RunEvent", "shape", "StreamEvent", "structure",
    "TOOL_EVENT_CLASSES", "tool_event", "typed_stream_event",
]
__all__ += [  # the builders' input rules and body encoder; recorders (a run waiting for a person is refused)
    "CALL_KEYWORDS", "check_message", "check_numbers", "close_match", "control_headers", "encode_body", "is_number",
    "max_events_value", "require_input", "session_value", "visible_text", "RECORDER_POLL", "buffering_recorder",
    "raised_by_test_double", "recorder_refusal", "replaying_recorder",
]

# The internal call and runtime were exported here before 0.2; hooks no longer receive them.
_INTERNAL = {"Call": ("hermes_sdk._core.call", "Call"), "Runtime": ("hermes_sdk._core.runtime", "Runtime")}


_EVENTS = frozenset({"TOOL_EVENT_CLASSES", "ApprovalRequested", "EventFields", "MessageDelta", "RunEvent",
                     "approval_requested", "event_fields", "tool_event", "typed_stream_event"})


def __getattr__(name: str) -> object:
    if name in _EVENTS:
        import importlib

        return getattr(importlib.import_module("hermes_sdk._core.events"), name)
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
