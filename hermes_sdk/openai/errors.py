"""The facade's exceptions: each is one of openai's classes and one of hermes-sdk's at once.

``except openai.RateLimitError`` and ``except hermes_sdk.RateLimitedError`` both catch the same
object. Where the two name the same attribute (``message``, ``code``), openai's meaning wins, so
existing openai handlers keep working; Hermes' connector code is ``e.hermes_code`` and the whole
hermes-sdk error ``e.hermes_error``. The protocol fields that do not clash (``uncertain_outcome``,
``action_id``, ``retry_after_ms``, ``details``, ...) keep their hermes-sdk meaning.
"""

from __future__ import annotations

from typing import Any, Optional

import openai

from hermes_sdk import errors as he
from hermes_sdk._core.redaction import scrub

__all__ = ["DualError", "dual_class", "from_hermes", "from_openai_status", "openai_class_of"]

#: The hermes-sdk fields that do not clash with openai's, copied onto the dual error.
_HERMES_FIELDS = ("category", "retryable", "retry_after_ms", "uncertain_outcome", "http_status", "details",
                  "action_id", "capability_id")


class DualError:
    """Mixed into every dual class: scrubbed text, and the hermes-sdk error underneath."""

    hermes_error: he.HermesError  #: the complete hermes-sdk error (its own ``code``, ``to_dict()``)
    hermes_code: str  #: Hermes' connector code, e.g. ``connector.hermes_agent.authentication``

    def __str__(self) -> str:
        return scrub(str(getattr(self, "message", "")))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({scrub(str(getattr(self, 'message', '')))!r})"

    def __reduce__(self) -> Any:
        # openai's status errors do not pickle (their __init__ needs a response); the hermes error does.
        return (_unpickle, (self.hermes_error,))


def _unpickle(hermes: he.HermesError) -> he.HermesError:
    return hermes


_CACHE: dict[tuple[type, type], type] = {}


def dual_class(openai_class: type, hermes_class: type) -> type:
    """The class that is both ``openai_class`` and ``hermes_class`` (built once per pair)."""
    key = (openai_class, hermes_class)
    found = _CACHE.get(key)
    if found is None:
        found = type(openai_class.__name__, (DualError, openai_class, hermes_class),
                     {"__module__": __name__, "__qualname__": openai_class.__name__})
        _CACHE[key] = found
    return found


_BY_STATUS: dict[int, type] = {
    400: openai.BadRequestError, 401: openai.AuthenticationError, 403: openai.PermissionDeniedError,
    404: openai.NotFoundError, 409: openai.ConflictError, 422: openai.UnprocessableEntityError,
    429: openai.RateLimitError,
}


def status_class(status: int) -> type:
    """openai's class for an HTTP status, as openai's client picks it."""
    if status >= 500:
        return openai.InternalServerError
    return _BY_STATUS.get(status, openai.APIStatusError)


def local_status(error: he.HermesError) -> Optional[int]:
    """The HTTP status a local refusal (nothing sent) is reported with, or None (no response at all)."""
    if isinstance(error, he.MissingCredentialError):
        return 401
    if isinstance(error, (he.ApprovalRequiredError, he.ApprovalDeniedError, he.TenantMismatchError)):
        return 403
    if isinstance(error, (he.IdempotencyConflictError, he.OutcomeUnknownError)):
        return 409
    if isinstance(error, he.PayloadTooLargeError):
        return 413
    if isinstance(error, he.UnsupportedByServerError):
        return 404 if error.details.get("feature") == "route" else 400
    if isinstance(error, he.InvalidInputError):
        return 400
    return None


def openai_class_of(error: he.HermesError) -> type:
    """openai's class for a hermes-sdk error that has no HTTP response."""
    if isinstance(error, he.DeadlineExceededError):
        return openai.APITimeoutError
    if isinstance(error, (he.StreamError, he.StreamCancelledError)):
        return openai.APIError
    return openai.APIConnectionError


def _copy_hermes(target: Any, error: he.HermesError) -> None:
    for name in _HERMES_FIELDS:
        setattr(target, name, getattr(error, name))
    target.hermes_error = error
    target.hermes_code = error.code


def from_hermes(error: he.HermesError, request: Any, body: object = None) -> openai.APIError:
    """The dual error for a hermes-sdk error that has no HTTP response (connection, deadline, stream);
    ``body``: the error object a stream carried (openai reads ``code``, ``type``, ``param`` from it)."""
    klass = openai_class_of(error)
    dual: Any = dual_class(klass, type(error))
    made = dual.__new__(dual)
    text = scrub(error.message)
    if klass is openai.APITimeoutError:
        openai.APITimeoutError.__init__(made, request=request)
    elif klass is openai.APIConnectionError:
        openai.APIConnectionError.__init__(made, message=text, request=request)
    else:
        openai.APIError.__init__(made, text, request, body=body)
    _copy_hermes(made, error)
    made.__cause__ = error
    return made  # type: ignore[no-any-return]


def from_openai_status(original: openai.APIStatusError, error: he.HermesError) -> openai.APIStatusError:
    """The dual of a status error openai built from the transport's response: openai's fields as
    openai set them, hermes-sdk's beside them."""
    dual: Any = dual_class(type(original), type(error))
    made = dual.__new__(dual)
    type(original).__init__(made, original.message, response=original.response, body=original.body)
    _copy_hermes(made, error)
    made.__cause__ = error
    return made  # type: ignore[no-any-return]
