"""hermes-sdk: a synchronous client for the Hermes Agent capabilities of AIP (chat, Responses, durable runs)."""

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
    StaleApprovalError,
    SteerNotAcceptedError,
    StreamError,
    TenantMismatchError,
    TransportError,
    UnsupportedByServerError,
)
from .events import (
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
from .runs import ApprovalAnswer, Run, RunResult, RunStarted, RunStatus, SteerAnswer
from .server_features import ServerFeatures
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

__version__ = "0.2.0.dev0"  # the one version string: setup.cfg reads it (attr:)

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
    # what a newer server adds (0.20+)
    "HermesStatus", "ReasoningDelta", "RunEnded", "RunInterrupted", "RunSteered", "ServerFeatures",
    "StaleApprovalError", "SteerAnswer", "SteerNotAcceptedError", "SubagentEvent", "UnsupportedByServerError",
]

# Plugin-author types live in hermes_sdk.plugin; the old top-level names keep working.
_MOVED = ("Attempt", "CONTRACTS", "Contract", "Invocation")


def __getattr__(name: str) -> object:
    if name in _MOVED:
        import warnings

        from . import plugin

        warnings.warn(f"hermes_sdk.{name} moved to hermes_sdk.plugin.{name}", DeprecationWarning, stacklevel=2)
        return getattr(plugin, name)
    raise AttributeError(f"module 'hermes_sdk' has no attribute {name!r}")
