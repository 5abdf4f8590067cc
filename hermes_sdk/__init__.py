"""hermes-sdk: a synchronous client for the Hermes Agent capabilities of AIP (chat, Responses, durable runs).

The names below are imported on first use (PEP 562): ``import hermes_sdk``, and the pytest plugin
that every pytest run in an environment with hermes-sdk loads, stay cheap until a name is used. The
implementation lives in the private ``hermes_sdk._core``; each name is re-homed here when first used.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

from ._core import _compat
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from hermes_sdk._core.approval import (
        ApprovalDecision,
        ApprovalProvider,
        ApprovalRequest,
        CallbackProvider,
        DenyAll,
        PolicyRule,
        StaticPolicyProvider,
        input_hash,
    )
    from hermes_sdk._core.builtin import parse_capability_id
    from hermes_sdk._core.capabilities import capability_id
    from hermes_sdk._core.client import HermesClient
    from hermes_sdk._core.deadline import CallTimeout
    from hermes_sdk._core.endpoints import (
        Endpoint,
        ExecutionContext,
    )
    from hermes_sdk._core.events import (
        ApprovalRequested,
        FunctionCall,
        FunctionCallOutput,
        HermesStatus,
        MessageDelta,
        ReasoningDelta,
        RunEvent,
        ToolProgress,
    )
    from hermes_sdk._core.idempotency import (
        CorruptRecordError,
        IdempotencyRecord,
        IdempotencyStore,
        MemoryStore,
        SQLiteStore,
    )
    from hermes_sdk._core.models import (
        ActionResult,
        ChatCompletion,
        ChatMessage,
        Choice,
        DeletionReceipt,
        HermesResponse,
        StreamEvent,
        StreamResult,
    )
    from hermes_sdk._core.redaction import Redactor
    from hermes_sdk._core.server_features import ServerFeatures
    from hermes_sdk._core.streaming import (
        ChatStream,
        ResponseStream,
    )
    from hermes_sdk._families.discovery.types import (
        Health,
        ModelInfo,
        ServerCapabilities,
        Skill,
        Toolset,
    )
    from hermes_sdk._families.jobs.types import (
        Job,
        JobDeleted,
    )
    from hermes_sdk._families.operator.types import OperatorResult
    from hermes_sdk._families.runs.events import (
        ApprovalResponded,
        ReasoningAvailable,
        RunCancelled,
        RunCompleted,
        RunEnded,
        RunFailed,
        RunInterrupted,
        RunSteered,
        SubagentEvent,
        ToolCompleted,
        ToolStarted,
    )
    from hermes_sdk._families.runs.run import Run
    from hermes_sdk._families.runs.types import (
        ApprovalAnswer,
        RunEventStream,
        RunResult,
        RunStarted,
        RunStatus,
        SteerAnswer,
    )
    from hermes_sdk._families.sessions.types import (
        HermesSession,
        SessionAssistantCompleted,
        SessionChatStream,
        SessionDeleted,
        SessionDelta,
        SessionDone,
        SessionEvent,
        SessionMessage,
        SessionMessageStarted,
        SessionPage,
        SessionReply,
        SessionRunCompleted,
        SessionRunStarted,
        SessionStreamError,
        SessionThinking,
        SessionToolCompleted,
        SessionToolEvent,
        SessionToolFailed,
        SessionToolStarted,
        SessionTranscript,
    )
    from hermes_sdk.errors import (
        AgentIncompleteError,
        ApprovalDeniedError,
        ApprovalNotActiveError,
        ApprovalNotPendingError,
        ApprovalRequiredError,
        AuthenticationError,
        BadRequestError,
        DeadlineExceededError,
        HermesError,
        IdempotencyConflictError,
        InvalidApprovalChoiceError,
        InvalidInputError,
        InvalidResponseError,
        MissingCredentialError,
        NotFoundError,
        OperatorRunError,
        OutcomeUnknownError,
        PayloadTooLargeError,
        PluginError,
        RateLimitedError,
        RemoteRejectedError,
        RemoteTemporaryError,
        RunNotFoundError,
        RunStoppedError,
        ServerError,
        StaleApprovalError,
        SteerNotAcceptedError,
        StoreUnavailableError,
        StreamCancelledError,
        StreamError,
        TenantMismatchError,
        TransportError,
        UnsupportedByServerError,
    )
    from hermes_sdk.hookspecs import hookimpl

#: Where each exported name lives (the imports above, for type checkers, name the same; absolute, because
#: sphinx-autodoc-typehints runs that block in the defining module's namespace for a re-homed name).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "hermes_sdk._core.approval": ("ApprovalDecision", "ApprovalProvider", "ApprovalRequest", "CallbackProvider",
        "DenyAll", "PolicyRule",
        "StaticPolicyProvider", "input_hash"),
    "hermes_sdk._core.builtin": ("parse_capability_id",),
    "hermes_sdk._core.capabilities": ("capability_id",),
    "hermes_sdk._core.client": ("HermesClient",),
    "hermes_sdk._core.deadline": ("CallTimeout",),
    "hermes_sdk._core.endpoints": ("Endpoint", "ExecutionContext"),
    "hermes_sdk._core.events": ("ApprovalRequested", "FunctionCall", "FunctionCallOutput", "HermesStatus",
        "MessageDelta", "ReasoningDelta", "RunEvent", "ToolProgress"),
    "hermes_sdk._core.idempotency": ("CorruptRecordError", "IdempotencyRecord", "IdempotencyStore", "MemoryStore",
        "SQLiteStore"),
    "hermes_sdk._core.models": ("ActionResult", "ChatCompletion", "ChatMessage", "Choice", "DeletionReceipt",
        "HermesResponse", "StreamEvent", "StreamResult"),
    "hermes_sdk._core.redaction": ("Redactor",),
    "hermes_sdk._core.server_features": ("ServerFeatures",),
    "hermes_sdk._core.streaming": ("ChatStream", "ResponseStream"),
    "hermes_sdk._families.discovery.types": ("Health", "ModelInfo", "ServerCapabilities", "Skill", "Toolset"),
    "hermes_sdk._families.jobs.types": ("Job", "JobDeleted"),
    "hermes_sdk._families.operator.types": ("OperatorResult",),
    "hermes_sdk._families.runs.events": ("ApprovalResponded", "ReasoningAvailable", "RunCancelled", "RunCompleted",
        "RunEnded", "RunFailed", "RunInterrupted", "RunSteered", "SubagentEvent", "ToolCompleted", "ToolStarted"),
    "hermes_sdk._families.runs.run": ("Run",),
    "hermes_sdk._families.runs.types": ("ApprovalAnswer", "RunEventStream", "RunResult", "RunStarted", "RunStatus",
        "SteerAnswer"),
    "hermes_sdk._families.sessions.types": ("HermesSession", "SessionAssistantCompleted", "SessionChatStream",
        "SessionDeleted", "SessionDelta", "SessionDone", "SessionEvent", "SessionMessage", "SessionMessageStarted",
        "SessionPage", "SessionReply", "SessionRunCompleted", "SessionRunStarted", "SessionStreamError",
        "SessionThinking", "SessionToolCompleted", "SessionToolEvent", "SessionToolFailed", "SessionToolStarted",
        "SessionTranscript"),
    "hermes_sdk.errors": ("AgentIncompleteError", "ApprovalDeniedError", "ApprovalNotActiveError",
        "ApprovalNotPendingError",
        "ApprovalRequiredError", "AuthenticationError", "BadRequestError", "DeadlineExceededError", "HermesError",
        "IdempotencyConflictError", "InvalidApprovalChoiceError", "InvalidInputError", "InvalidResponseError",
        "MissingCredentialError", "NotFoundError", "OperatorRunError", "OutcomeUnknownError",
        "PayloadTooLargeError", "PluginError", "RateLimitedError", "RemoteRejectedError", "RemoteTemporaryError",
        "RunNotFoundError", "RunStoppedError", "ServerError", "StaleApprovalError", "SteerNotAcceptedError",
        "StoreUnavailableError", "StreamCancelledError", "StreamError", "TenantMismatchError", "TransportError",
        "UnsupportedByServerError"),
    "hermes_sdk.hookspecs": ("hookimpl",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "ActionResult", "AgentIncompleteError", "ApprovalDecision", "ApprovalDeniedError", "ApprovalProvider",
    "ApprovalRequest",
    "ApprovalRequiredError", "AuthenticationError", "BadRequestError", "CallbackProvider",
    "ChatCompletion", "ChatMessage", "ChatStream", "Choice", "CorruptRecordError", "DeadlineExceededError",
    "DeletionReceipt", "DenyAll", "Endpoint", "ExecutionContext", "HermesClient", "HermesError",
    "IdempotencyConflictError", "IdempotencyRecord", "IdempotencyStore", "InvalidInputError",
    "InvalidResponseError", "MemoryStore", "MissingCredentialError", "NotFoundError",
    "OutcomeUnknownError", "PayloadTooLargeError", "PluginError", "PolicyRule", "RateLimitedError", "Redactor",
    "RemoteRejectedError", "RemoteTemporaryError", "HermesResponse", "ResponseStream",
    "SQLiteStore", "ServerError", "StaticPolicyProvider", "StreamCancelledError", "StreamError", "StreamEvent",
    "StreamResult",
    "TenantMismatchError", "CallTimeout", "TransportError", "capability_id", "hookimpl", "input_hash",
    "parse_capability_id",
    # durable runs, typed events and discovery
    "ApprovalAnswer", "ApprovalNotActiveError", "ApprovalNotPendingError", "ApprovalRequested",
    "ApprovalResponded", "FunctionCall", "FunctionCallOutput", "Health", "InvalidApprovalChoiceError",
    "MessageDelta", "ModelInfo", "ReasoningAvailable", "Run", "RunCancelled", "RunCompleted", "RunEvent",
    "RunEventStream", "RunFailed", "RunNotFoundError", "RunResult", "RunStarted", "RunStatus", "RunStoppedError",
    "OperatorRunError",
    "ServerCapabilities", "ToolCompleted", "ToolProgress", "ToolStarted", "Toolset",
    # sessions, cron jobs, skills and the operator
    "Job", "JobDeleted", "OperatorResult", "HermesSession", "SessionAssistantCompleted", "SessionChatStream",
    "SessionDelta", "SessionDeleted", "SessionDone", "SessionEvent", "SessionMessage", "SessionMessageStarted",
    "SessionPage", "SessionReply", "SessionRunCompleted", "SessionRunStarted", "SessionStreamError",
    "SessionThinking", "SessionToolCompleted", "SessionToolEvent", "SessionToolFailed", "SessionToolStarted",
    "SessionTranscript", "Skill",
    # what a newer server adds (0.20+)
    "HermesStatus", "ReasoningDelta", "RunEnded", "RunInterrupted", "RunSteered", "ServerFeatures",
    "StaleApprovalError", "SteerAnswer", "SteerNotAcceptedError", "SubagentEvent", "UnsupportedByServerError",
    # the idempotency store was out of reach (nothing sent)
    "StoreUnavailableError",
]


_compat.install()

# Plugin-author types live in hermes_sdk.plugin; the old top-level names keep working.
_MOVED = ("Attempt", "CONTRACTS", "Contract", "Invocation")  # CONTRACTS warns again there
# Names that collided with requests' and the stdlib's, renamed in 0.2.
_RENAMED = {"Response": "HermesResponse", "Session": "HermesSession", "Timeout": "CallTimeout",
            "CancelledError": "StreamCancelledError"}


def __getattr__(name: str) -> object:
    import warnings

    module_name = _WHERE.get(name)
    if module_name is not None:
        value = getattr(importlib.import_module(module_name), name)
        _compat.rehome({name: value}, (name,), __name__)
        globals()[name] = value  # imported once: later lookups do not come here
        return value
    if name in _MOVED:
        from . import plugin

        warnings.warn(f"hermes_sdk.{name} moved to hermes_sdk.plugin.{name}", DeprecationWarning, stacklevel=2)
        return getattr(plugin, name)
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(f"hermes_sdk.{name} is now hermes_sdk.{new} (the old name collides with requests' or "
                      "the standard library's)", DeprecationWarning, stacklevel=2)
        return __getattr__(new) if new not in globals() else globals()[new]
    module = _compat.moved_module(name)
    if module is not None:
        return module
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule, as an eager package had it
    raise AttributeError(f"module 'hermes_sdk' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
