"""What the Hermes server behind an endpoint supports, learned from the server itself.

One client talks to Hermes 0.19, 0.20 and 0.22 (``spec/hermes-next.md``) without a version flag:
``GET /v1/capabilities`` says which features are on (``run_steer``, ``runs_idempotency``...) and
``GET /health`` which version answers. Both are read once per endpoint, when a behaviour first
depends on them, and kept for the client's life (``HermesClient.server_features(refresh=True)``
reads them again, e.g. after the server was upgraded).

Behaviour that the wire itself shows is not looked up here: a stream's ``id:`` lines (resumable
run events), ``approval.request`` on a chat stream, ``pagination`` on a session's messages.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING, Mapping, Optional, Tuple

import attrs

from ..errors import HermesError, NotFoundError, UnsupportedByServerError

if TYPE_CHECKING:  # the executor imports this module
    from .call import Call
    from .executor import Executor

_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")
#: From 0.21 (upstream's September decomposition) ``POST /v1/runs/{id}/approval`` resolves exactly
#: the ``request_id`` it is given and refuses a stale one with 409; 0.20 ignores it (oldest first).
EXACT_APPROVALS_FROM = (0, 21, 0)
#: 0.19 and 0.20 answer a forked parent's messages with its newest child's; 0.21+ (measured on
#: 0.22.2) answer with the parent's own.
FORK_REDIRECT_UNTIL = (0, 21, 0)


def parse_version(value: Optional[str]) -> Optional[Tuple[int, int, int]]:
    """``"0.22.2.post1"`` → ``(0, 22, 2)``; None when the string is not a version."""
    found = _VERSION.match(value or "")
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)


@attrs.frozen
class ServerFeatures:
    """The server's version and feature flags, as it reported them.

    ``version`` is ``/health``'s (``0.19.0``, ``0.20.1``, ``0.22.2.post1``...), None when it did not
    say; ``features`` is ``/v1/capabilities``' ``features`` object (empty when the route is absent).
    """

    version: Optional[str] = None
    features: dict[str, object] = attrs.field(factory=dict)

    @property
    def version_tuple(self) -> Optional[Tuple[int, int, int]]:
        """``(major, minor, patch)`` of :attr:`version`, or None."""
        return parse_version(self.version)

    def supports(self, feature: str) -> bool:
        """Whether a feature flag is on (``true``, or an object with ``supported``/``enabled`` true)."""
        value = self.features.get(feature)
        if isinstance(value, dict):
            return value.get("supported") is True or value.get("enabled") is True
        return value is True

    @property
    def runs_idempotency(self) -> bool:
        """Whether ``POST /v1/runs`` honours ``Idempotency-Key`` (0.21+: a resent start is replayed)."""
        return self.supports("runs_idempotency")

    @property
    def run_steer(self) -> bool:
        """Whether ``POST /v1/runs/{id}/steer`` exists (0.20+)."""
        return self.supports("run_steer")

    @property
    def exact_approvals(self) -> bool:
        """Whether an approval answer resolves exactly its ``request_id`` (else the oldest request)."""
        version = self.version_tuple
        return version is not None and version >= EXACT_APPROVALS_FROM

    @property
    def fork_redirect(self) -> Optional[bool]:
        """Whether a forked parent's messages are its newest child's (0.19, 0.20); None when unknown."""
        version = self.version_tuple
        return None if version is None else version < FORK_REDIRECT_UNTIL


class FeatureCache:
    """The features of each endpoint, read once (shared by a client and its ``with_options`` copies)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_endpoint: dict[str, ServerFeatures] = {}

    def get(self, executor: Executor, endpoint: Optional[str] = None, *, refresh: bool = False) -> ServerFeatures:
        """The endpoint's features; asks the server on first use (or with ``refresh``)."""
        key = executor.endpoint(endpoint).id
        with self._lock:
            known = self._by_endpoint.get(key)
        if known is not None and not refresh:
            return known
        found = learn(executor, endpoint)
        with self._lock:
            self._by_endpoint[key] = found
        return found

    def known(self, executor: Executor, endpoint: Optional[str] = None) -> Optional[ServerFeatures]:
        """The endpoint's features if already read, without asking."""
        with self._lock:
            return self._by_endpoint.get(executor.endpoint(endpoint).id)


def require(executor: Executor, call: Call) -> None:
    """Refuse, before sending, a call whose operation the server does not list in ``/v1/capabilities``
    (``OperationSpec.server_feature``): UnsupportedByServerError, bound to the call."""
    feature = call.spec.server_feature
    if feature is None:
        return
    try:
        features = executor.runtime.server_features.get(executor, call.endpoint.id)
    except HermesError as exc:
        call.bind(exc)
        raise
    if not features.supports(feature):
        error = UnsupportedByServerError(
            f"the Hermes server ({features.version or 'version unknown'}) does not offer {call.spec.name}: "
            f"its /v1/capabilities does not list {feature!r} (Hermes 0.20+ does)",
            details={"feature": feature, "server_version": features.version, "sent": False})
        call.bind(error)
        raise error


def learn(executor: Executor, endpoint: Optional[str] = None) -> ServerFeatures:
    """Ask the server: ``/health`` for the version, ``/v1/capabilities`` for the features.

    A server without ``/v1/capabilities`` (404) has no features; any other failure raises.
    """
    from .options import CallOptions

    # The discovery family's operations, found by name in the client's registry: the kernel imports no family.
    specs = executor.runtime.registry
    options = CallOptions(endpoint=endpoint)
    version = getattr(executor.request(specs.spec("health"), {}, options), "version", None)
    try:
        found = getattr(executor.request(specs.spec("server_capabilities"), {}, options), "features", None)
        features = dict(found) if isinstance(found, Mapping) else {}
    except NotFoundError:
        features = {}
    except HermesError:
        raise
    return ServerFeatures(version=version if isinstance(version, str) else None, features=features)


__all__ = ["FeatureCache", "ServerFeatures", "parse_version", "require"]
