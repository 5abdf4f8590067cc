"""Runtime: what the stages need from a client, as one value (stages never reach into the client)."""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Optional

import attrs
import pluggy

from .endpoints import seconds_value
from .families import Registry
from .idempotency import IdempotencyStore
from .redaction import Redactor
from .retry import RetryPolicy
from .server_features import FeatureCache
from .transport import Transport

if TYPE_CHECKING:
    from .approval import ApprovalProvider
    from .deadline import CallTimeout
    from .streaming import HermesStream

log = logging.getLogger("hermes_sdk")


def _retention(value: object) -> float:
    return seconds_value(value, "key_retention")


@attrs.frozen
class Runtime:
    """The client's plugin manager, store, transport, redactor and call settings.

    ``HermesClient.with_options`` makes a copy with other settings over the same transport (and so
    the same connection pool), store and plugins.
    """

    pm: pluggy.PluginManager
    store: IdempotencyStore
    transport: Transport
    redactor: Redactor
    approval_provider: Optional[ApprovalProvider] = None
    #: The families this client knows (the ``hermes_families`` hook of its plugins).
    registry: Registry = attrs.field(kw_only=True, eq=False, repr=False)
    retry: RetryPolicy = RetryPolicy()  #: what is retried, and how often
    strict_idempotency: bool = True  #: a key reused with a different input is refused
    #: Seconds a keyed call's record is kept (a finite number >= 0: NaN would never expire).
    key_retention: float = attrs.field(default=86_400.0, converter=_retention)
    timeout: Optional[CallTimeout] = None  #: the client's default Timeout (None: each contract's own)
    #: Streams not yet settled; ``close()`` cancels them (shared with ``with_options`` copies).
    open_streams: "weakref.WeakSet[HermesStream]" = attrs.field(factory=weakref.WeakSet, eq=False, repr=False)
    allow_permanent_approvals: bool = False  #: whether ``always`` may be sent to a run's approval
    #: What each endpoint's server supports (read once from the server; shared with copies).
    server_features: FeatureCache = attrs.field(factory=FeatureCache, eq=False, repr=False)
    #: Whether the client built the store (from a URL or the environment): then closing the client closes it.
    owns_store: bool = attrs.field(default=False, kw_only=True, eq=False, repr=False)

    def close_owned_store(self) -> None:
        """Close the store if the client built it (a store object the caller passed in stays open)."""
        if not self.owns_store:
            return
        try:
            self.store.close()
        except Exception as exc:  # noqa: BLE001 - a plugin store's own error must not fail close()
            log.warning("hermes_sdk could not close its idempotency store (%s)", type(exc).__name__)

    @property
    def max_attempts(self) -> int:
        """Attempts of a retry-safe call."""
        return self.retry.max_attempts
