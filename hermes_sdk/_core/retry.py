"""RetryPolicy: the one place that decides which failures are retried, from the contract and the failure.

Errors are built without a retry opinion; the attempt loop asks the policy, which sets the
protocol field ``retryable`` and says whether the SDK sends the call again itself.
"""

from __future__ import annotations

import random
from typing import Optional

import attrs

from ..errors import DeadlineExceededError, HermesError, RemoteTemporaryError, TransportError
from ._constants import RETRY_AFTER_CAP, RETRY_BASE_DELAY, RETRY_MAX_ATTEMPTS, RETRY_MAX_DELAY
from .capabilities import Contract


@attrs.frozen
class RetryPolicy:
    """Only a retry-safe (read-only) operation is sent again, and only after a transient failure
    (a transport failure other than the deadline, a 429, a 5xx), with full-jitter backoff that never
    comes sooner than the server's ``Retry-After``. A model call or a deletion is never replayed.
    """

    max_attempts: int = RETRY_MAX_ATTEMPTS

    def retryable(self, contract: Contract, error: HermesError) -> bool:
        """Whether the same call may simply be sent again (the protocol field ``retryable``)."""
        if isinstance(error, DeadlineExceededError) or not isinstance(error, (TransportError, RemoteTemporaryError)):
            return False
        if contract.retry_safe:
            return True
        # Not retry-safe: only when Hermes refused before starting any work (a run start's 429).
        return error.details.get("started") is False

    def classify(self, contract: Contract, error: HermesError) -> HermesError:
        """Set ``error.retryable`` from this policy; returns the error."""
        error.retryable = self.retryable(contract, error)
        return error

    def delay(self, contract: Contract, error: HermesError, attempt: int) -> Optional[float]:
        """Seconds to wait before attempt ``attempt + 1``, or None when the SDK does not retry."""
        if not (contract.retry_safe and error.retryable) or attempt >= self.max_attempts:
            return None
        return backoff_delay(attempt, error)


def backoff_delay(attempt: int, error: HermesError) -> float:
    """Full-jitter exponential backoff, but never sooner than the server's Retry-After (capped)."""
    delay = random.uniform(0, min(RETRY_MAX_DELAY, RETRY_BASE_DELAY * (2 ** (attempt - 1))))
    if error.retry_after_ms is not None:
        delay = max(delay, min(error.retry_after_ms / 1000.0, RETRY_AFTER_CAP))
    return delay


#: The policy of a client built with the defaults; errors are classified by it where they are
#: built (so ``retryable`` is right wherever one is read), and again by the client's own policy.
DEFAULT_POLICY = RetryPolicy()
