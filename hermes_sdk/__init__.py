"""hermes-sdk: a synchronous client for the Hermes Agent capabilities of AIP (chat, Responses, durable runs).

The names below are imported on first use (PEP 562): ``import hermes_sdk``, and the pytest plugin
that every pytest run in an environment with hermes-sdk loads, stay cheap until a name is used. The
implementation lives in the private ``hermes_sdk._core``; each name is re-homed here when first used.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from ._app import _compat
from ._version import __version__ as __version__

if TYPE_CHECKING:  # the names at the top, and those that left it (removed in 0.3.0)
    # -- written by tools/exports.py from _TABLE: do not edit --
    from hermes_sdk._app.builtin import parse_capability_id as parse_capability_id
    from hermes_sdk._app.client import HermesClient as HermesClient
    from hermes_sdk._app.process_client import ProcessClient as ProcessClient
    from hermes_sdk._core.approval import (
        ApprovalDecision as ApprovalDecision,
        ApprovalProvider as ApprovalProvider,
        ApprovalRequest as ApprovalRequest,
        CallbackProvider as CallbackProvider,
        DenyAll as DenyAll,
        PolicyRule as PolicyRule,
        StaticPolicyProvider as StaticPolicyProvider,
        input_hash as input_hash,
    )
    from hermes_sdk._core.capabilities import capability_id as capability_id
    from hermes_sdk._core.deadline import CallTimeout as CallTimeout
    from hermes_sdk._core.endpoints import Endpoint as Endpoint, ExecutionContext as ExecutionContext
    from hermes_sdk._core.events import (
        ApprovalRequested as ApprovalRequested,
        FunctionCall as FunctionCall,
        FunctionCallOutput as FunctionCallOutput,
        HermesStatus as HermesStatus,
        MessageDelta as MessageDelta,
        ReasoningDelta as ReasoningDelta,
        RunEvent as RunEvent,
        ToolProgress as ToolProgress,
    )
    from hermes_sdk._core.idempotency import (
        CorruptRecordError as CorruptRecordError,
        IdempotencyRecord as IdempotencyRecord,
        IdempotencyStore as IdempotencyStore,
        MemoryStore as MemoryStore,
        SQLiteStore as SQLiteStore,
    )
    from hermes_sdk._core.models import (
        ActionResult as ActionResult,
        StreamEvent as StreamEvent,
        StreamResult as StreamResult,
    )
    from hermes_sdk._core.redaction import Redactor as Redactor
    from hermes_sdk._core.server_features import ServerFeatures as ServerFeatures
    from hermes_sdk._families.chat.types import (
        ChatCompletion as ChatCompletion,
        ChatMessage as ChatMessage,
        ChatStream as ChatStream,
        Choice as Choice,
    )
    from hermes_sdk._families.discovery.types import (
        Health as Health,
        ModelInfo as ModelInfo,
        ServerCapabilities as ServerCapabilities,
        Skill as Skill,
        Toolset as Toolset,
    )
    from hermes_sdk._families.jobs.types import Job as Job, JobDeleted as JobDeleted
    from hermes_sdk._families.operator.types import OperatorResult as OperatorResult
    from hermes_sdk._families.responses.types import (
        DeletionReceipt as DeletionReceipt,
        HermesResponse as HermesResponse,
        ResponseStream as ResponseStream,
    )
    from hermes_sdk._families.runs.events import (
        ApprovalResponded as ApprovalResponded,
        ReasoningAvailable as ReasoningAvailable,
        RunCancelled as RunCancelled,
        RunCompleted as RunCompleted,
        RunEnded as RunEnded,
        RunFailed as RunFailed,
        RunInterrupted as RunInterrupted,
        RunSteered as RunSteered,
        SubagentEvent as SubagentEvent,
        ToolCompleted as ToolCompleted,
        ToolStarted as ToolStarted,
    )
    from hermes_sdk._families.runs.run import Run as Run
    from hermes_sdk._families.runs.types import (
        ApprovalAnswer as ApprovalAnswer,
        RunEventStream as RunEventStream,
        RunResult as RunResult,
        RunStarted as RunStarted,
        RunStatus as RunStatus,
        SteerAnswer as SteerAnswer,
    )
    from hermes_sdk._families.sessions.types import (
        HermesSession as HermesSession,
        SessionAssistantCompleted as SessionAssistantCompleted,
        SessionChatStream as SessionChatStream,
        SessionDeleted as SessionDeleted,
        SessionDelta as SessionDelta,
        SessionDone as SessionDone,
        SessionEvent as SessionEvent,
        SessionMessage as SessionMessage,
        SessionMessageStarted as SessionMessageStarted,
        SessionPage as SessionPage,
        SessionReply as SessionReply,
        SessionRunCompleted as SessionRunCompleted,
        SessionRunStarted as SessionRunStarted,
        SessionStreamError as SessionStreamError,
        SessionThinking as SessionThinking,
        SessionToolCompleted as SessionToolCompleted,
        SessionToolEvent as SessionToolEvent,
        SessionToolFailed as SessionToolFailed,
        SessionToolStarted as SessionToolStarted,
        SessionTranscript as SessionTranscript,
    )
    from hermes_sdk.errors import (
        AgentIncompleteError as AgentIncompleteError,
        ApprovalDeniedError as ApprovalDeniedError,
        ApprovalNotActiveError as ApprovalNotActiveError,
        ApprovalNotPendingError as ApprovalNotPendingError,
        ApprovalRequiredError as ApprovalRequiredError,
        AuthenticationError as AuthenticationError,
        BadRequestError as BadRequestError,
        DeadlineExceededError as DeadlineExceededError,
        HermesError as HermesError,
        IdempotencyConflictError as IdempotencyConflictError,
        InvalidApprovalChoiceError as InvalidApprovalChoiceError,
        InvalidInputError as InvalidInputError,
        InvalidResponseError as InvalidResponseError,
        MissingCredentialError as MissingCredentialError,
        NotFoundError as NotFoundError,
        OperatorRunError as OperatorRunError,
        OutcomeUnknownError as OutcomeUnknownError,
        PayloadTooLargeError as PayloadTooLargeError,
        PluginError as PluginError,
        RateLimitedError as RateLimitedError,
        RemoteRejectedError as RemoteRejectedError,
        RemoteTemporaryError as RemoteTemporaryError,
        RunNotFoundError as RunNotFoundError,
        RunStoppedError as RunStoppedError,
        ServerError as ServerError,
        StaleApprovalError as StaleApprovalError,
        SteerNotAcceptedError as SteerNotAcceptedError,
        StoreUnavailableError as StoreUnavailableError,
        StreamCancelledError as StreamCancelledError,
        StreamError as StreamError,
        TenantMismatchError as TenantMismatchError,
        TransportError as TransportError,
        UnsupportedByServerError as UnsupportedByServerError,
    )
    from hermes_sdk.hookspecs import hookimpl as hookimpl
    # -- end of the written imports --

#: The public names, in one table: (defining module, where, names). ``top``: hermes_sdk and
#: hermes_sdk.types; ``client``: hermes_sdk only (the client, its configuration, errors, helpers);
#: ``types``: hermes_sdk.types only (events, the parts of results, streams' bases, resources).
#: ``__all__``, the lazy map and the ``TYPE_CHECKING`` imports (written by ``tools/exports.py``) all
#: come from it; tests/core/test_exports.py fails when the written imports drift from it.
_TABLE: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("hermes_sdk._app.client", "client", ("HermesClient",)),
    ("hermes_sdk._app.process_client", "client", ("ProcessClient",)),
    ("hermes_sdk._core.endpoints", "client", ("Endpoint", "ExecutionContext")),
    ("hermes_sdk._core.deadline", "top", ("CallTimeout",)),
    ("hermes_sdk._core.approval", "top", ("ApprovalDecision", "ApprovalRequest")),
    ("hermes_sdk._core.approval", "client", ("ApprovalProvider", "CallbackProvider", "DenyAll", "PolicyRule",
                                             "StaticPolicyProvider", "input_hash")),
    ("hermes_sdk._core.idempotency", "client", ("CorruptRecordError", "IdempotencyRecord", "IdempotencyStore",
                                                "MemoryStore", "SQLiteStore")),
    ("hermes_sdk._core.redaction", "client", ("Redactor",)),
    ("hermes_sdk._core.capabilities", "client", ("capability_id",)),
    ("hermes_sdk._app.builtin", "client", ("parse_capability_id",)),
    ("hermes_sdk.hookspecs", "client", ("hookimpl",)),
    # results
    ("hermes_sdk._core.models", "top", ("ActionResult", "StreamResult")),
    ("hermes_sdk._core.models", "types", ("StreamEvent",)),
    ("hermes_sdk._families.chat.types", "top", ("ChatCompletion",)),
    ("hermes_sdk._families.chat.types", "types", ("ChatMessage", "Choice")),
    ("hermes_sdk._families.responses.types", "top", ("DeletionReceipt", "HermesResponse")),
    ("hermes_sdk._families.runs.run", "top", ("Run",)),
    ("hermes_sdk._families.runs.types", "top", ("ApprovalAnswer", "RunResult", "RunStarted", "RunStatus",
                                                "SteerAnswer")),
    ("hermes_sdk._families.operator.types", "top", ("OperatorResult",)),
    ("hermes_sdk._core.server_features", "top", ("ServerFeatures",)),
    ("hermes_sdk._families.discovery.types", "top", ("Health", "ModelInfo", "ServerCapabilities", "Skill",
                                                     "Toolset")),
    ("hermes_sdk._families.jobs.types", "top", ("Job", "JobDeleted")),
    ("hermes_sdk._families.sessions.types", "top", ("HermesSession", "SessionDeleted", "SessionPage",
                                                    "SessionReply", "SessionTranscript")),
    ("hermes_sdk._families.sessions.types", "types", ("SessionMessage",)),
    # live streams and the events they yield
    ("hermes_sdk._families.runs.types", "top", ("RunEventStream",)),
    ("hermes_sdk._families.chat.types", "top", ("ChatStream",)),
    ("hermes_sdk._families.responses.types", "top", ("ResponseStream",)),
    ("hermes_sdk._core.streaming", "types", ("HermesStream",)),
    ("hermes_sdk._families.sessions.types", "top", ("SessionChatStream",)),
    ("hermes_sdk._core.events", "types", ("ApprovalRequested", "FunctionCall", "FunctionCallOutput", "HermesStatus",
                                          "MessageDelta", "ReasoningDelta", "RunEvent", "ToolProgress")),
    ("hermes_sdk._families.runs.events", "types", ("ApprovalResponded", "ReasoningAvailable", "RunCancelled",
                                                   "RunCompleted", "RunEnded", "RunFailed", "RunInterrupted",
                                                   "RunSteered", "SubagentEvent", "ToolCompleted", "ToolStarted")),
    ("hermes_sdk._families.sessions.types", "types", ("SessionAssistantCompleted", "SessionDelta", "SessionDone",
                                                      "SessionEvent", "SessionMessageStarted", "SessionRunCompleted",
                                                      "SessionRunStarted", "SessionStreamError", "SessionThinking",
                                                      "SessionToolCompleted", "SessionToolEvent", "SessionToolFailed",
                                                      "SessionToolStarted")),
    # the resources: client.runs, client.sessions, client.jobs, client.records, client.operate
    ("hermes_sdk._families.runs", "types", ("Runs",)),
    ("hermes_sdk._families.chat", "types", ("Chat",)),
    ("hermes_sdk._families.responses", "types", ("Responses",)),
    ("hermes_sdk._families.sessions", "types", ("Sessions",)),
    ("hermes_sdk._families.jobs", "types", ("Jobs",)),
    ("hermes_sdk._core.resources.records", "types", ("Records",)),
    ("hermes_sdk._families.operator", "types", ("OperatorMethods",)),
    ("hermes_sdk.errors", "client", ("AgentIncompleteError", "ApprovalDeniedError", "ApprovalNotActiveError",
                                     "ApprovalNotPendingError", "ApprovalRequiredError", "AuthenticationError",
                                     "BadRequestError", "DeadlineExceededError", "HermesError",
                                     "IdempotencyConflictError", "InvalidApprovalChoiceError", "InvalidInputError",
                                     "InvalidResponseError", "MissingCredentialError", "NotFoundError",
                                     "OperatorRunError", "OutcomeUnknownError", "PayloadTooLargeError", "PluginError",
                                     "RateLimitedError", "RemoteRejectedError", "RemoteTemporaryError",
                                     "RunNotFoundError", "RunStoppedError", "ServerError", "StaleApprovalError",
                                     "SteerNotAcceptedError", "StoreUnavailableError", "StreamCancelledError",
                                     "StreamError", "TenantMismatchError", "TransportError",
                                     "UnsupportedByServerError")),
)


def _where(places: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for module, place, names in _TABLE:
        if place in places:
            found[module] = found.get(module, ()) + names
    return found


#: hermes_sdk's names by defining module (what ``__getattr__`` imports on first use).
_EXPORTS = _where(("top", "client"))
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)
#: At the top of hermes_sdk until 0.2, now in hermes_sdk.types only (they still answer here, with a
#: DeprecationWarning, until 0.3.0): the events and the parts of results.
_LEFT_THE_TOP = frozenset(
    {"ApprovalRequested", "ApprovalResponded", "ChatMessage", "Choice", "FunctionCall", "FunctionCallOutput",
     "HermesStatus", "MessageDelta", "ReasoningAvailable", "ReasoningDelta", "RunCancelled", "RunCompleted",
     "RunEnded", "RunEvent", "RunFailed", "RunInterrupted", "RunSteered", "SessionAssistantCompleted",
     "SessionDelta", "SessionDone", "SessionEvent", "SessionMessage", "SessionMessageStarted",
     "SessionRunCompleted", "SessionRunStarted", "SessionStreamError", "SessionThinking", "SessionToolCompleted",
     "SessionToolEvent", "SessionToolFailed", "SessionToolStarted", "StreamEvent", "SubagentEvent",
     "ToolCompleted", "ToolProgress", "ToolStarted"})

_compat.install()

# Plugin-author types live in hermes_sdk.plugin; the old top-level names keep working.
_MOVED = ("Attempt", "CONTRACTS", "Contract", "Invocation")  # CONTRACTS warns again there
# Names that collided with requests' and the stdlib's, renamed in 0.2.
_RENAMED = {"Response": "HermesResponse", "Session": "HermesSession", "Timeout": "CallTimeout",
            "CancelledError": "StreamCancelledError"}


def _import(module_name: str) -> object:
    if module_name.startswith("hermes_sdk._families.") or module_name == "hermes_sdk.types":  # imports families:
        # under the family import lock, so it races no other thread's family load
        from ._core.family_loading import import_module

        return import_module(module_name)
    return importlib.import_module(module_name)


def __getattr__(name: str) -> object:
    module_name = _WHERE.get(name)
    if module_name is not None:
        value = getattr(_import(module_name), name)
        _compat.rehome({name: value}, (name,), __name__)
        globals()[name] = value  # imported once: later lookups do not come here
        return value
    if name in _LEFT_THE_TOP:
        _compat.deprecated(f"hermes_sdk.{name} is in hermes_sdk.types now (the top level keeps the client, its "
                           "configuration, errors and results)")
        return getattr(_import("hermes_sdk.types"), name)
    if name in _MOVED:
        from . import plugin

        _compat.deprecated(f"hermes_sdk.{name} moved to hermes_sdk.plugin.{name}")
        return getattr(plugin, name)
    if name in _RENAMED:
        new = _RENAMED[name]
        _compat.deprecated(f"hermes_sdk.{name} is now hermes_sdk.{new} (the old name collides with requests' or "
                           "the standard library's)")
        return __getattr__(new) if new not in globals() else globals()[new]
    module = _compat.moved_module(name)
    if module is not None:
        return module
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule, as an eager package had it
    raise AttributeError(f"module 'hermes_sdk' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
