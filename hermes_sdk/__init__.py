"""hermes-sdk: a synchronous client for the Hermes Agent capabilities of AIP (chat, Responses, durable runs)."""

from ._core import _compat
from ._core.approval import (
    ApprovalDecision,
    ApprovalRequest,
    CallbackProvider,
    DenyAll,
    PolicyRule,
    StaticPolicyProvider,
    input_hash,
)
from ._core.builtin import parse_capability_id
from ._core.capabilities import capability_id
from ._core.client import HermesClient
from ._core.deadline import CallTimeout
from ._core.discovery import Health, ModelInfo, ServerCapabilities, Toolset
from ._core.endpoints import Endpoint, ExecutionContext
from ._core.events import (
    ApprovalRequested,
    ApprovalResponded,
    FunctionCall,
    FunctionCallOutput,
    HermesStatus,
    MessageDelta,
    ReasoningAvailable,
    ReasoningDelta,
    RunCancelled,
    RunCompleted,
    RunEnded,
    RunEvent,
    RunFailed,
    RunInterrupted,
    RunSteered,
    SubagentEvent,
    ToolCompleted,
    ToolProgress,
    ToolStarted,
)
from ._core.idempotency import CorruptRecordError, IdempotencyRecord, IdempotencyStore, MemoryStore, SQLiteStore
from ._core.jobs import Job, JobDeleted, Skill
from ._core.models import (
    ActionResult,
    ChatCompletion,
    ChatMessage,
    Choice,
    DeletionReceipt,
    HermesResponse,
    StreamEvent,
    StreamResult,
)
from ._core.operator import OperatorResult
from ._core.redaction import Redactor
from ._core.runs import ApprovalAnswer, Run, RunResult, RunStarted, RunStatus, SteerAnswer
from ._core.server_features import ServerFeatures
from ._core.sessions import (
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
from ._core.streaming import ChatStream, ResponseStream, RunEventStream
from .errors import (
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
    StreamCancelledError,
    StreamError,
    TenantMismatchError,
    TransportError,
    UnsupportedByServerError,
)
from .hookspecs import hookimpl

__version__ = "0.2.0.dev0"  # the one version string: setup.cfg reads it (attr:)

__all__ = [
    "ActionResult", "AgentIncompleteError", "ApprovalDecision", "ApprovalDeniedError", "ApprovalRequest",
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
]

_compat.install()
_compat.rehome(globals(), __all__, __name__)

# Plugin-author types live in hermes_sdk.plugin; the old top-level names keep working.
_MOVED = ("Attempt", "CONTRACTS", "Contract", "Invocation")  # CONTRACTS warns again there
# Names that collided with requests' and the stdlib's, renamed in 0.2.
_RENAMED = {"Response": "HermesResponse", "Session": "HermesSession", "Timeout": "CallTimeout",
            "CancelledError": "StreamCancelledError"}


def __getattr__(name: str) -> object:
    import warnings

    if name in _MOVED:
        from . import plugin

        warnings.warn(f"hermes_sdk.{name} moved to hermes_sdk.plugin.{name}", DeprecationWarning, stacklevel=2)
        return getattr(plugin, name)
    if name in _RENAMED:
        new = _RENAMED[name]
        warnings.warn(f"hermes_sdk.{name} is now hermes_sdk.{new} (the old name collides with requests' or "
                      "the standard library's)", DeprecationWarning, stacklevel=2)
        return globals()[new]
    module = _compat.moved_module(name)
    if module is not None:
        return module
    raise AttributeError(f"module 'hermes_sdk' has no attribute {name!r}")
