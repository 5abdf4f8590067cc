"""hermes-sdk: a synchronous client for the Hermes Agent chat and Responses capabilities of AIP."""

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
from .endpoints import Endpoint, ExecutionContext
from .errors import (
    AgentIncompleteError,
    ApprovalDeniedError,
    ApprovalRequiredError,
    AuthenticationError,
    BadRequestError,
    CancelledError,
    DeadlineExceededError,
    HermesError,
    IdempotencyConflictError,
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
    ServerError,
    StreamError,
    TenantMismatchError,
    TransportError,
)
from .hookspecs import hookimpl
from .idempotency import IdempotencyRecord, IdempotencyStore, MemoryStore, SQLiteStore
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
from .redaction import Redactor
from .streaming import ChatStream, ResponseStream

__version__ = "0.1.0"

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
