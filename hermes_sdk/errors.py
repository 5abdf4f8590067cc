"""The typed failure model: one root, the connector's codes, and the SDK's own.

Applications branch on ``code`` and the protocol fields, never on message text.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from .redaction import scrub

P = "connector.hermes_agent."
AUTHENTICATION = P + "authentication"
TENANT_MISMATCH = P + "tenant_mismatch"
REMOTE_REJECTED = P + "remote_rejected"
REMOTE_TEMPORARY = P + "remote_temporary"
TRANSPORT = P + "transport"
INVALID_RESPONSE = P + "invalid_response"
DEADLINE_EXCEEDED = P + "deadline_exceeded"
CANCELLED = P + "cancelled"
CONFIGURATION_OR_INPUT = P + "configuration_or_input"
MISSING_CREDENTIAL = P + "missing_credential"
STREAM_TRUNCATED = P + "stream_truncated"
STREAM_INCOMPLETE = P + "stream_incomplete"
STREAM_FAILED = P + "stream_failed"
APPROVAL_REQUIRED = "hermes_sdk.approval_required"
APPROVAL_DENIED = "hermes_sdk.approval_denied"
OUTCOME_UNKNOWN = "hermes_sdk.outcome_unknown"
IDEMPOTENCY_CONFLICT = "hermes_sdk.idempotency_conflict"
PLUGIN_FAILED = "hermes_sdk.plugin_failed"
RUN_STOPPED = "hermes_sdk.run_stopped"


class HermesError(Exception):
    """Root of every SDK failure; carries the AIP ProtocolError fields."""

    default_code = P + "error"
    default_category = "connector"

    def __init__(
        self,
        message: str,
        *,
        code: Optional[str] = None,
        category: Optional[str] = None,
        retryable: bool = False,
        retry_after_ms: Optional[int] = None,
        uncertain_outcome: bool = False,
        http_status: Optional[int] = None,
        details: Optional[Mapping[str, Any]] = None,
        action_id: Optional[str] = None,
        capability_id: Optional[str] = None,
    ) -> None:
        super().__init__(scrub(message))  # args reach tracebacks and error trackers
        self.message = message
        self.code = code or self.default_code
        self.category = category or self.default_category
        self.retryable = retryable
        self.retry_after_ms = retry_after_ms
        self.uncertain_outcome = uncertain_outcome
        self.http_status = http_status
        self.details: dict[str, Any] = dict(details or {})
        self.action_id = action_id
        self.capability_id = capability_id

    # str() and repr() reach logs, tracebacks and tracers: provider text in them is scrubbed of ids
    # and credentials. ``message`` keeps the text as Hermes sent it, for code that asks on purpose.
    def __str__(self) -> str:
        return f"{self.code}: {scrub(self.message)}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(code={self.code!r}, message={scrub(self.message)!r}, "
                f"http_status={self.http_status!r})")

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.to_dict()))

    def to_dict(self) -> dict[str, Any]:
        """The ProtocolError shape, plus the SDK's bookkeeping fields."""
        return {
            "code": self.code,
            "message": self.message,
            "category": self.category,
            "retryable": self.retryable,
            "retry_after_ms": self.retry_after_ms,
            "uncertain_outcome": self.uncertain_outcome,
            "http_status": self.http_status,
            "details": self.details,
            "action_id": self.action_id,
            "capability_id": self.capability_id,
            "type": type(self).__name__,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "HermesError":
        """Rebuild the most specific subclass recorded in ``data`` (for replayed results)."""
        klass = _BY_NAME.get(str(data.get("type")), None) or _BY_CODE.get(str(data.get("code")), HermesError)
        fields = {k: data.get(k) for k in ("code", "category", "retry_after_ms", "http_status", "details",
                                            "action_id", "capability_id")}
        return klass(
            str(data.get("message", "")),
            retryable=bool(data.get("retryable")),
            uncertain_outcome=bool(data.get("uncertain_outcome")),
            **fields,
        )


def _rebuild(klass: type, data: Mapping[str, Any]) -> HermesError:
    return HermesError.from_dict({**data, "type": klass.__name__})


class InvalidInputError(HermesError, ValueError):
    """The input or configuration is invalid; nothing was sent."""

    default_code = CONFIGURATION_OR_INPUT
    default_category = "permanent"


class MissingCredentialError(InvalidInputError):
    default_code = MISSING_CREDENTIAL
    default_category = "auth"


class AuthenticationError(HermesError):
    default_code = AUTHENTICATION
    default_category = "auth"


class TenantMismatchError(HermesError):
    default_code = TENANT_MISMATCH
    default_category = "auth"


class RemoteRejectedError(HermesError):
    """Hermes refused the request (4xx other than auth): correct it, do not retry unchanged."""

    default_code = REMOTE_REJECTED
    default_category = "permanent"


class BadRequestError(RemoteRejectedError):
    pass


class NotFoundError(RemoteRejectedError):
    pass


class PayloadTooLargeError(RemoteRejectedError):
    pass


class RemoteTemporaryError(HermesError):
    default_code = REMOTE_TEMPORARY
    default_category = "temporary"


class RateLimitedError(RemoteTemporaryError):
    pass


class ServerError(RemoteTemporaryError):
    pass


class AgentIncompleteError(ServerError):
    """HTTP 502 ``agent_incomplete``: no usable text; tool and model outcome uncertain."""

    @property
    def hermes(self) -> Optional[dict[str, Any]]:
        value = self.details.get("hermes")
        return value if isinstance(value, dict) else None


class TransportError(HermesError):
    default_code = TRANSPORT
    default_category = "transport"


class InvalidResponseError(HermesError):
    default_code = INVALID_RESPONSE
    default_category = "connector"


class DeadlineExceededError(HermesError):
    default_code = DEADLINE_EXCEEDED
    default_category = "temporary"


class CancelledError(HermesError):
    default_code = CANCELLED
    default_category = "temporary"


class StreamError(HermesError):
    """A stream ended without a clean terminal event (truncated, incomplete or failed)."""

    default_code = STREAM_FAILED
    default_category = "connector"


class ApprovalRequiredError(HermesError):
    default_code = APPROVAL_REQUIRED
    default_category = "policy"


class ApprovalDeniedError(HermesError):
    default_code = APPROVAL_DENIED
    default_category = "policy"


class OutcomeUnknownError(HermesError):
    """An earlier call with this key never recorded an outcome; it is not executed again."""

    default_code = OUTCOME_UNKNOWN
    default_category = "temporary"


class IdempotencyConflictError(HermesError):
    default_code = IDEMPOTENCY_CONFLICT
    default_category = "permanent"


class PluginError(HermesError):
    default_code = PLUGIN_FAILED
    default_category = "connector"


class RunNotFoundError(NotFoundError):
    """HTTP 404 ``run_not_found``: an unknown run, a finished run's ``/stop``, or a spent events route."""


class InvalidApprovalChoiceError(BadRequestError):
    """HTTP 400 ``invalid_approval_choice``: the choice is not once, session, always or deny."""


class ApprovalNotActiveError(RemoteRejectedError):
    """HTTP 409 ``approval_not_active``: the run finished or its approval session closed (also after a stop)."""


class ApprovalNotPendingError(RemoteRejectedError):
    """HTTP 409 ``approval_not_pending``: the run is live but no approval is waiting for an answer."""


class RunStoppedError(HermesError):
    """Refused locally: this client stopped the run, and an approval sent now could still execute the
    command (Hermes ran a command approved right after ``/stop``). Nothing was sent."""

    default_code = RUN_STOPPED
    default_category = "policy"


_ALL = [HermesError, InvalidInputError, MissingCredentialError, AuthenticationError, TenantMismatchError,
        RemoteRejectedError, BadRequestError, NotFoundError, PayloadTooLargeError, RemoteTemporaryError,
        RateLimitedError, ServerError, AgentIncompleteError, TransportError, InvalidResponseError,
        DeadlineExceededError, CancelledError, StreamError, ApprovalRequiredError, ApprovalDeniedError,
        OutcomeUnknownError, IdempotencyConflictError, PluginError, RunNotFoundError, InvalidApprovalChoiceError,
        ApprovalNotActiveError, ApprovalNotPendingError, RunStoppedError]
_BY_NAME = {k.__name__: k for k in _ALL}
_BY_CODE = {k.default_code: k for k in reversed(_ALL)}
