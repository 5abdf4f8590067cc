"""The typed failure model: one root, the connector's codes, and the SDK's own.

Applications branch on ``code`` and the protocol fields, never on message text.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from ._core.redaction import scrub

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
STORE_UNAVAILABLE = "hermes_sdk.store_unavailable"
RUN_STOPPED = "hermes_sdk.run_stopped"
OPERATOR_RUN = "hermes_sdk.operator_run"


class HermesError(Exception):
    """Root of every SDK failure; carries the AIP ProtocolError fields.

    Catch it for any SDK failure, then branch on ``code`` and the flags below, never on the message.
    Errors pickle, and replayed results rebuild the same subclass (:meth:`from_dict`).

    Attributes:
        code: the stable error code, e.g. ``connector.hermes_agent.transport``.
        message: the text as Hermes or the SDK wrote it (``str()`` and ``repr()`` show it scrubbed).
        category: ``permanent``, ``temporary``, ``auth``, ``transport``, ``policy`` or ``connector``.
        retryable: whether the same call may simply be sent again (only ``response_get``'s failures).
        retry_after_ms: Hermes' ``Retry-After`` in milliseconds, or None.
        uncertain_outcome: True when the request may have reached Hermes and had effects: do not
            resubmit blindly; read :meth:`~hermes_sdk.HermesClient.action_result` first.
        http_status: Hermes' HTTP status, or None when no response arrived.
        details: structured facts (``field`` for input errors, ``operation``, ``sent``, ...).
        action_id: the AIP action of the failed call.
        capability_id: the capability of the failed call.
    """

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
        details: Optional[Mapping[str, object]] = None,
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

    def __reduce__(self) -> tuple[object, ...]:
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


def _rebuild(klass: type, data: Mapping[str, object]) -> HermesError:
    return HermesError.from_dict({**data, "type": klass.__name__})


class InvalidInputError(HermesError, ValueError):
    """The input or configuration is invalid; nothing was sent.

    Raised before any I/O, at construction or at the call; ``details["field"]`` names the offending
    field. Code ``connector.hermes_agent.configuration_or_input``, category ``permanent``;
    ``retryable`` and ``uncertain_outcome`` are False. Correct the input. Also a :class:`ValueError`.
    """

    default_code = CONFIGURATION_OR_INPUT
    default_category = "permanent"


class MissingCredentialError(InvalidInputError):
    """The endpoint has no API key; nothing was sent.

    Code ``connector.hermes_agent.missing_credential``, category ``auth``; ``retryable`` and
    ``uncertain_outcome`` are False. Set ``HERMES_API_KEY`` or give the endpoint an ``api_key``.
    """

    default_code = MISSING_CREDENTIAL
    default_category = "auth"


class AuthenticationError(HermesError):
    """Hermes refused the API key (HTTP 401 or 403).

    Code ``connector.hermes_agent.authentication``, category ``auth``; ``retryable`` and
    ``uncertain_outcome`` are False: Hermes refused before any work. Fix the endpoint's key; a retry
    with the same key fails the same way (and with the same idempotency key is replayed).
    """

    default_code = AUTHENTICATION
    default_category = "auth"


class TenantMismatchError(HermesError):
    """The call's context names another tenant than the one that owns the endpoint; nothing was sent.

    Raised before sending when the endpoint has a ``tenant_id`` and the call's
    :class:`~hermes_sdk.ExecutionContext` does not carry the same one. Code
    ``connector.hermes_agent.tenant_mismatch``, category ``auth``; ``retryable`` and
    ``uncertain_outcome`` are False. Call with the right ``context=`` or the tenant's own endpoint.
    """

    default_code = TENANT_MISMATCH
    default_category = "auth"


class RemoteRejectedError(HermesError):
    """Hermes refused the request (4xx other than auth): correct it, do not retry unchanged.

    Also raised for a redirect, which the SDK never follows (``details["redirect_not_followed"]``).
    Code ``connector.hermes_agent.remote_rejected``, category ``permanent``; ``retryable`` and
    ``uncertain_outcome`` are False. ``details["provider_error"]`` keeps Hermes' error fields.
    """

    default_code = REMOTE_REJECTED
    default_category = "permanent"


class BadRequestError(RemoteRejectedError):
    """Hermes refused the request as malformed (HTTP 400).

    Code ``connector.hermes_agent.remote_rejected``; ``retryable`` and ``uncertain_outcome`` are False.
    ``details["provider_error"]`` keeps Hermes' ``type``, ``code`` and ``param``. Correct the input.
    """
    pass


class NotFoundError(RemoteRejectedError):
    """Hermes has no such object (HTTP 404): an unknown, expired or deleted response id.

    Code ``connector.hermes_agent.remote_rejected``; ``retryable`` and ``uncertain_outcome`` are False.
    For ``response_delete`` it means the response is gone already.
    """
    pass


class PayloadTooLargeError(RemoteRejectedError):
    """The request body is too large: Hermes answered HTTP 413, or the SDK refused it before sending.

    From Hermes, the code is ``connector.hermes_agent.remote_rejected``. A body over Hermes' limit of
    10,000,000 bytes is refused locally with code ``connector.hermes_agent.configuration_or_input``
    and ``details["sent"]`` False. ``retryable`` and ``uncertain_outcome`` are False: shorten the input.
    """
    pass


class RemoteTemporaryError(HermesError):
    """Hermes failed or was busy (HTTP 429 or 5xx); the base of :class:`RateLimitedError` and :class:`ServerError`.

    Code ``connector.hermes_agent.remote_temporary``, category ``temporary``. For ``response_get``,
    ``retryable`` is True and the SDK has already retried (honouring ``retry_after_ms``). For a model
    call or a deletion, ``retryable`` is False and ``uncertain_outcome`` True: the work may have run,
    so follow the recovery rule instead of resubmitting.
    """

    default_code = REMOTE_TEMPORARY
    default_category = "temporary"


class RateLimitedError(RemoteTemporaryError):
    """Hermes is at capacity (HTTP 429); ``retry_after_ms`` holds its ``Retry-After``.

    Code ``connector.hermes_agent.remote_temporary``. Hermes answers 429 before any agent work
    (``details["before_agent_work"]`` is True), yet a model call keeps the connector's conservative
    flags: ``retryable`` False, ``uncertain_outcome`` True. Nothing ran, so no result is kept under
    the idempotency key: after ``retry_after_ms`` the same key runs the call.
    """
    pass


class ServerError(RemoteTemporaryError):
    """Hermes failed (HTTP 5xx), or is draining (503 ``gateway_draining``, before any agent work).

    Code ``connector.hermes_agent.remote_temporary``. ``retryable`` only for ``response_get`` (already
    retried by the SDK); ``uncertain_outcome`` True for every other call: the agent may have acted.
    """
    pass


class AgentIncompleteError(ServerError):
    """HTTP 502 ``agent_incomplete``: no usable text; tool and model outcome uncertain.

    The agent ran but did not finish; :attr:`hermes` holds its partial/failed state. Code
    ``connector.hermes_agent.remote_temporary``; ``retryable`` False, ``uncertain_outcome`` True:
    tools may have acted. Inspect ``hermes`` before deciding to run the turn again.
    """

    @property
    def hermes(self) -> Optional[dict[str, Any]]:
        """Hermes' partial/failed state object from the error body (``details["hermes"]``), or None."""
        value = self.details.get("hermes")
        return value if isinstance(value, dict) else None


class TransportError(HermesError):
    """No usable HTTP response: connection refused, reset, timed out, or a stream that broke.

    Code ``connector.hermes_agent.transport``, category ``transport``. ``retryable`` only for
    ``response_get``; ``uncertain_outcome`` True for every other call, even a refused connection, as
    the connector marks them. ``details["sent"]`` is False when the connection was never made: then
    the idempotency key is given back and the call may be made again.
    """

    default_code = TRANSPORT
    default_category = "transport"


class InvalidResponseError(HermesError):
    """Hermes' reply could not be used: not JSON or UTF-8, not the expected object, or over a size limit.

    Code ``connector.hermes_agent.invalid_response``, category ``connector``; ``retryable`` False.
    ``uncertain_outcome`` is True for every call but ``response_get``: Hermes answered, so the work ran.
    """

    default_code = INVALID_RESPONSE
    default_category = "connector"


class DeadlineExceededError(HermesError):
    """The call's deadline passed: before sending, while waiting for Hermes, or during a stream.

    Code ``connector.hermes_agent.deadline_exceeded``, category ``temporary``; ``retryable`` False.
    Before sending, ``details["sent"]`` is False, ``uncertain_outcome`` False and the idempotency key
    is given back; once a model call was sent, ``uncertain_outcome`` is True: follow the recovery rule.
    """

    default_code = DEADLINE_EXCEEDED
    default_category = "temporary"


class StreamCancelledError(HermesError):
    """A stream was closed (or dropped) before its terminal event; the error of a ``cancelled`` result.

    Reported as :attr:`StreamResult.error <hermes_sdk.StreamResult>`, not raised. Code
    ``connector.hermes_agent.cancelled``, category ``temporary``; ``uncertain_outcome`` True: dropping
    the connection interrupts the agent, which may already have acted.
    """

    default_code = CANCELLED
    default_category = "temporary"


class StreamError(HermesError):
    """A stream ended without a clean terminal event (truncated, incomplete or failed).

    Reported as :attr:`StreamResult.error <hermes_sdk.StreamResult>` (and an ActionResult's
    ``error``), not raised. The code says how: ``connector.hermes_agent.stream_failed`` (a failure
    event, or a chat finish reason ``error`` or ``length``), ``connector.hermes_agent.stream_truncated``
    (``max_events`` reached first) or ``connector.hermes_agent.stream_incomplete`` (the connection
    closed first). ``retryable`` False, ``uncertain_outcome`` True: the partial ``text`` and ``events``
    are kept; do not resubmit blindly.
    """

    default_code = STREAM_FAILED
    default_category = "connector"


class ApprovalRequiredError(HermesError):
    """An approval-gated call (``response_delete``) has no decision; nothing was sent.

    Code ``hermes_sdk.approval_required``, category ``policy``; ``retryable`` and ``uncertain_outcome``
    are False. ``details`` carry the ``input_hash`` and ``approval_request_id``. Obtain a decision
    (:meth:`~hermes_sdk.HermesClient.approval_request`, then approve it) and pass it as ``approval=``,
    or configure an approval provider. :meth:`~hermes_sdk.HermesClient.invoke` returns
    ``status="pending_approval"`` instead of raising.
    """

    default_code = APPROVAL_REQUIRED
    default_category = "policy"


class ApprovalDeniedError(HermesError):
    """The approval decision does not allow this call; nothing was sent.

    Raised when the decision is denied, expired or revoked, approves a different input, lacks evidence
    (reason, policy decision, approver) or is dated in the future; ``details["reason"]`` or
    ``details["missing"]`` say which. Code ``hermes_sdk.approval_denied``, category ``policy``;
    ``retryable`` and ``uncertain_outcome`` are False. Obtain a new decision for this exact input.
    """

    default_code = APPROVAL_DENIED
    default_category = "policy"


class OutcomeUnknownError(HermesError):
    """An earlier call with this key never recorded an outcome; it is not executed again.

    The key's record is pending: another caller is running it, or a process died mid-call. This
    call sent nothing. Code ``hermes_sdk.outcome_unknown``, category ``temporary``; ``retryable`` and
    ``uncertain_outcome`` are False. ``details["original_action_id"]`` names the earlier action:
    read :meth:`~hermes_sdk.HermesClient.action_result`, reconcile, then
    :meth:`~hermes_sdk.HermesClient.resolve_pending` or
    :meth:`~hermes_sdk.HermesClient.forget_idempotency_key`.
    """

    default_code = OUTCOME_UNKNOWN
    default_category = "temporary"


class IdempotencyConflictError(HermesError):
    """The idempotency key was used before for a different input (the default; ``strict_idempotency=False`` replays).

    Nothing was sent. Code ``hermes_sdk.idempotency_conflict``, category ``permanent``; ``retryable``
    and ``uncertain_outcome`` are False. Use one key per exact intent: a new key for a new input.
    """

    default_code = IDEMPOTENCY_CONFLICT
    default_category = "permanent"


class PluginError(HermesError):
    """A plugin failed: at load or registration, or inside a hook, approval provider or store.

    Code ``hermes_sdk.plugin_failed``, category ``connector``; ``retryable`` False. ``details`` name the
    ``plugin`` and ``hook``. ``uncertain_outcome`` is True when the call had already reached the
    transport (its idempotency record is kept): follow the recovery rule. Fix or disable the plugin
    (``HERMES_SDK_DISABLE_PLUGINS``).
    """

    default_code = PLUGIN_FAILED
    default_category = "connector"


class StoreUnavailableError(PluginError):
    """The idempotency store could not be reached (refused, reset, restarting, timed out on its own
    bound) before anything was sent.

    Code ``hermes_sdk.store_unavailable``, category ``temporary``; ``retryable`` True,
    ``uncertain_outcome`` False, ``details["sent"]`` False: the key was not reserved, so the same call
    with the same key may be made again once the store is back. A store's other failures (a bug in
    it) stay a plain :class:`PluginError` with ``retryable`` False.
    """

    default_code = STORE_UNAVAILABLE
    default_category = "temporary"


class RunNotFoundError(NotFoundError):
    """HTTP 404 ``run_not_found``: an unknown run, a finished run's ``/stop``, or a spent events route."""


class InvalidApprovalChoiceError(BadRequestError):
    """HTTP 400 ``invalid_approval_choice``: the choice is not once, session, always or deny."""


class ApprovalNotActiveError(RemoteRejectedError):
    """HTTP 409 ``approval_not_active``: the run finished or its approval session closed (also after a stop)."""


class ApprovalNotPendingError(RemoteRejectedError):
    """HTTP 409 ``approval_not_pending``: the run is live but no approval is waiting for an answer."""


class StaleApprovalError(ApprovalNotPendingError):
    """HTTP 409 ``approval_not_pending`` for an answer that named a request (Hermes 0.21+ resolves
    exactly the ``request_id`` it is given): that request is no longer pending (answered elsewhere,
    timed out, or the run moved on). Nothing was approved; ``request_id`` (also in
    ``details["request_id"]``) names the stale request."""

    @property
    def request_id(self) -> Optional[str]:
        """The request the answer named."""
        value = self.details.get("request_id")
        return value if isinstance(value, str) else None


class SteerNotAcceptedError(RemoteRejectedError):
    """HTTP 409 ``run_not_accepting_steer`` / ``steer_not_accepted``: the run cannot take a steer
    message now (it is not running, or its agent refused it). Nothing was steered."""


class UnsupportedByServerError(RemoteRejectedError):
    """The server does not offer this operation (its ``/v1/capabilities`` does not list it, e.g.
    ``run_steer`` before Hermes 0.20); nothing was sent. ``details["feature"]`` names the feature."""


class RunStoppedError(HermesError):
    """Refused locally: this client stopped the run, and an approval sent now could still execute the
    command (Hermes ran a command approved right after ``/stop``). Nothing was sent."""

    default_code = RUN_STOPPED
    default_category = "policy"


class OperatorRunError(HermesError):
    """Refused locally: ``client.operate`` started this run, so its commands are answered only
    through the operator's approval gate (``operate(resume=..., choice=..., approval=...)``), never
    by ``runs.approve`` or ``invoke(...run_approval)``. Nothing was sent."""

    default_code = OPERATOR_RUN
    default_category = "policy"


_ALL = [HermesError, InvalidInputError, MissingCredentialError, AuthenticationError, TenantMismatchError,
        RemoteRejectedError, BadRequestError, NotFoundError, PayloadTooLargeError, RemoteTemporaryError,
        RateLimitedError, ServerError, AgentIncompleteError, TransportError, InvalidResponseError,
        DeadlineExceededError, StreamCancelledError, StreamError, ApprovalRequiredError, ApprovalDeniedError,
        OutcomeUnknownError, IdempotencyConflictError, PluginError, StoreUnavailableError, RunNotFoundError,
        InvalidApprovalChoiceError,
        ApprovalNotActiveError, ApprovalNotPendingError, StaleApprovalError, SteerNotAcceptedError,
        UnsupportedByServerError, RunStoppedError, OperatorRunError]
_BY_NAME = {k.__name__: k for k in _ALL}
_BY_NAME["CancelledError"] = StreamCancelledError  # records written before the rename

#: The error class per HTTP status Hermes answers with (openai's ``_make_status_error``, as a table).
#: A status not listed is a :class:`ServerError` from 500 and a :class:`RemoteRejectedError` below
#: (redirects included: they are never followed).
STATUS_ERRORS: Mapping[int, type[HermesError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: AuthenticationError,
    404: NotFoundError,
    413: PayloadTooLargeError,
    429: RateLimitedError,
}


def status_error_class(status: int, provider_code: object = None) -> type[HermesError]:
    """The class of a non-2xx reply: the status table, then the one refinement by the provider's
    ``error.code`` (``agent_incomplete``: the agent stopped before it finished)."""
    klass = STATUS_ERRORS.get(status) or (ServerError if status >= 500 else RemoteRejectedError)
    if klass is ServerError and provider_code == "agent_incomplete":
        return AgentIncompleteError
    return klass
_BY_CODE = {k.default_code: k for k in reversed(_ALL)}


def __getattr__(name: str) -> object:
    if name == "CancelledError":  # renamed: asyncio and concurrent.futures have a CancelledError

        from ._core import _deprecation as _compat

        _compat.deprecated("hermes_sdk.errors.CancelledError is now StreamCancelledError")
        return StreamCancelledError
    raise AttributeError(f"module 'hermes_sdk.errors' has no attribute {name!r}")
