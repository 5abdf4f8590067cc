"""hermes-sdk: a synchronous client for the Hermes Agent capabilities of AIP (chat, Responses, durable runs).

The names below are imported on first use (PEP 562): ``import hermes_sdk``, and the pytest plugin
that every pytest run in an environment with hermes-sdk loads, stay cheap until a name is used.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

__version__ = "0.2.0.dev0"  # the one version string: setup.cfg reads it (attr:)

if TYPE_CHECKING:
    from .approval import (
        ApprovalDecision,
        ApprovalRequest,
        CallbackProvider,
        DenyAll,
        PolicyRule,
        StaticPolicyProvider,
        input_hash,
    )
    from .capabilities import capability_id, parse_capability_id
    from .client import HermesClient
    from .deadline import Timeout
    from .discovery import Health, ModelInfo, ServerCapabilities, Toolset
    from .endpoints import Endpoint, ExecutionContext
    from .errors import (
        AgentIncompleteError,
        ApprovalDeniedError,
        ApprovalNotActiveError,
        ApprovalNotPendingError,
        ApprovalRequiredError,
        AuthenticationError,
        BadRequestError,
        CancelledError,
        DeadlineExceededError,
        HermesError,
        IdempotencyConflictError,
        InvalidApprovalChoiceError,
        InvalidInputError,
        InvalidResponseError,
        MissingCredentialError,
        NotFoundError,
        OutcomeUnknownError,
        PayloadTooLargeError,
        PluginError,
        RateLimitedError,
        RemoteRejectedError,
        RemoteTemporaryError,
        RunNotFoundError,
        RunStoppedError,
        ServerError,
        StreamError,
        TenantMismatchError,
        TransportError,
    )
    from .events import (
        ApprovalRequested,
        ApprovalResponded,
        FunctionCall,
        FunctionCallOutput,
        MessageDelta,
        ReasoningAvailable,
        RunCancelled,
        RunCompleted,
        RunEvent,
        RunFailed,
        ToolCompleted,
        ToolProgress,
        ToolStarted,
    )
    from .hookspecs import hookimpl
    from .idempotency import IdempotencyRecord, IdempotencyStore, MemoryStore, SQLiteStore
    from .jobs import Job, JobDeleted, Skill
    from .models import (
        ActionResult,
        ChatCompletion,
        ChatMessage,
        Choice,
        DeletionReceipt,
        Response,
        StreamEvent,
        StreamResult,
    )
    from .operator import OperatorResult
    from .redaction import Redactor
    from .runs import ApprovalAnswer, Run, RunResult, RunStarted, RunStatus
    from .sessions import (
        Session,
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
    from .streaming import ChatStream, ResponseStream, RunEventStream

#: Where each exported name lives (the imports above, for type checkers, name the same).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "approval": ("ApprovalDecision", "ApprovalRequest", "CallbackProvider", "DenyAll", "PolicyRule",
        "StaticPolicyProvider", "input_hash"),
    "capabilities": ("capability_id", "parse_capability_id"),
    "client": ("HermesClient",),
    "deadline": ("Timeout",),
    "discovery": ("Health", "ModelInfo", "ServerCapabilities", "Toolset"),
    "endpoints": ("Endpoint", "ExecutionContext"),
    "errors": ("AgentIncompleteError", "ApprovalDeniedError", "ApprovalNotActiveError", "ApprovalNotPendingError",
        "ApprovalRequiredError", "AuthenticationError", "BadRequestError", "CancelledError", "DeadlineExceededError",
        "HermesError", "IdempotencyConflictError", "InvalidApprovalChoiceError", "InvalidInputError",
        "InvalidResponseError", "MissingCredentialError", "NotFoundError", "OutcomeUnknownError",
        "PayloadTooLargeError", "PluginError", "RateLimitedError", "RemoteRejectedError", "RemoteTemporaryError",
        "RunNotFoundError", "RunStoppedError", "ServerError", "StreamError", "TenantMismatchError", "TransportError"),
    "events": ("ApprovalRequested", "ApprovalResponded", "FunctionCall", "FunctionCallOutput", "MessageDelta",
        "ReasoningAvailable", "RunCancelled", "RunCompleted", "RunEvent", "RunFailed", "ToolCompleted",
        "ToolProgress", "ToolStarted"),
    "hookspecs": ("hookimpl",),
    "idempotency": ("IdempotencyRecord", "IdempotencyStore", "MemoryStore", "SQLiteStore"),
    "jobs": ("Job", "JobDeleted", "Skill"),
    "models": ("ActionResult", "ChatCompletion", "ChatMessage", "Choice", "DeletionReceipt", "Response",
        "StreamEvent", "StreamResult"),
    "operator": ("OperatorResult",),
    "redaction": ("Redactor",),
    "runs": ("ApprovalAnswer", "Run", "RunResult", "RunStarted", "RunStatus"),
    "sessions": ("Session", "SessionAssistantCompleted", "SessionChatStream", "SessionDeleted", "SessionDelta",
        "SessionDone", "SessionEvent", "SessionMessage", "SessionMessageStarted", "SessionPage", "SessionReply",
        "SessionRunCompleted", "SessionRunStarted", "SessionStreamError", "SessionThinking", "SessionToolCompleted",
        "SessionToolEvent", "SessionToolFailed", "SessionToolStarted", "SessionTranscript"),
    "streaming": ("ChatStream", "ResponseStream", "RunEventStream"),
}

__all__ = [
    "ActionResult", "AgentIncompleteError", "ApprovalDecision", "ApprovalDeniedError", "ApprovalRequest",
    "ApprovalRequiredError", "AuthenticationError", "BadRequestError", "CallbackProvider",
    "CancelledError", "ChatCompletion", "ChatMessage", "ChatStream", "Choice", "DeadlineExceededError",
    "DeletionReceipt", "DenyAll", "Endpoint", "ExecutionContext", "HermesClient", "HermesError",
    "IdempotencyConflictError", "IdempotencyRecord", "IdempotencyStore", "InvalidInputError",
    "InvalidResponseError", "MemoryStore", "MissingCredentialError", "NotFoundError",
    "OutcomeUnknownError", "PayloadTooLargeError", "PluginError", "PolicyRule", "RateLimitedError", "Redactor",
    "RemoteRejectedError", "RemoteTemporaryError", "Response", "ResponseStream",
    "SQLiteStore", "ServerError", "StaticPolicyProvider", "StreamError", "StreamEvent", "StreamResult",
    "TenantMismatchError", "Timeout", "TransportError", "capability_id", "hookimpl", "input_hash",
    "parse_capability_id",
    # durable runs, typed events and discovery
    "ApprovalAnswer", "ApprovalNotActiveError", "ApprovalNotPendingError", "ApprovalRequested",
    "ApprovalResponded", "FunctionCall", "FunctionCallOutput", "Health", "InvalidApprovalChoiceError",
    "MessageDelta", "ModelInfo", "ReasoningAvailable", "Run", "RunCancelled", "RunCompleted", "RunEvent",
    "RunEventStream", "RunFailed", "RunNotFoundError", "RunResult", "RunStarted", "RunStatus", "RunStoppedError",
    "ServerCapabilities", "ToolCompleted", "ToolProgress", "ToolStarted", "Toolset",
    # sessions, cron jobs, skills and the operator
    "Job", "JobDeleted", "OperatorResult", "Session", "SessionAssistantCompleted", "SessionChatStream",
    "SessionDelta", "SessionDeleted", "SessionDone", "SessionEvent", "SessionMessage", "SessionMessageStarted",
    "SessionPage", "SessionReply", "SessionRunCompleted", "SessionRunStarted", "SessionStreamError",
    "SessionThinking", "SessionToolCompleted", "SessionToolEvent", "SessionToolFailed", "SessionToolStarted",
    "SessionTranscript", "Skill",
]

_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

# Plugin-author types live in hermes_sdk.plugin; the old top-level names keep working.
_MOVED = ("Attempt", "CONTRACTS", "Contract", "Invocation")


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        globals()[name] = value  # imported once: later lookups do not come here
        return value
    if name in _MOVED:
        import warnings

        from . import plugin

        warnings.warn(f"hermes_sdk.{name} moved to hermes_sdk.plugin.{name}", DeprecationWarning, stacklevel=2)
        return getattr(plugin, name)
    if not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")  # a submodule, as an eager package had it
    raise AttributeError(f"module 'hermes_sdk' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
