"""Runtime: what the stages need from a client, as one value (stages never reach into the client)."""

from __future__ import annotations

import weakref
from typing import Any, Optional

import attrs
import pluggy

from .idempotency import IdempotencyStore
from .redaction import Redactor
from .retry import RetryPolicy
from .transport import Transport


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
    approval_provider: Any = None
    retry: RetryPolicy = RetryPolicy()  #: what is retried, and how often
    strict_idempotency: bool = True  #: a key reused with a different input is refused
    key_retention: float = 86_400.0
    timeout: Optional[Any] = None  #: the client's default Timeout (None: each contract's own)
    #: Streams not yet settled; ``close()`` cancels them (shared with ``with_options`` copies).
    open_streams: "weakref.WeakSet[Any]" = attrs.field(factory=weakref.WeakSet, eq=False, repr=False)
    allow_permanent_approvals: bool = False  #: whether ``always`` may be sent to a run's approval
    #: Runs this client asked to stop: no approval is ever sent to them afterwards.
    stopped_runs: set[str] = attrs.field(factory=set, eq=False)

    @property
    def max_attempts(self) -> int:
        """Attempts of a retry-safe call."""
        return self.retry.max_attempts
