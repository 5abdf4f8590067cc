"""Discovery: what the server is and offers. Flat methods on the client (``client.health()``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Optional, Protocol, TypeVar

from hermes_sdk.plugin import CallOptions, Deadline, ExecutionContext, OperationSpec, TimeoutLike
from hermes_sdk.plugin import import_family_module as import_module

if TYPE_CHECKING:
    from .types import Health, ModelInfo, ServerCapabilities, Skill, Toolset


T = TypeVar("T")


class _Requests(Protocol):
    def request(self, spec: OperationSpec[T], data: Mapping[str, object], options: CallOptions = ...) -> T: ...


def _operations() -> None:
    import_module("hermes_sdk._families.discovery.operations")  # then a bare import of it finds it loaded


class DiscoveryMethods:
    """Mixed into :class:`~hermes_sdk.HermesClient`: read-only, retried, no idempotency key."""

    if TYPE_CHECKING:  # read-only: the client's own executor satisfies it (these methods are the client's)
        @property
        def _executor(self) -> _Requests: ...

    def health(self, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> Health:
        """``GET /health``: Hermes serves it without authentication, so a client without an API key
        may call it (a readiness probe); a client with one sends it, as on every route."""
        _operations()
        from .operations import HEALTH  # imported by the family's first call, under the family import lock

        return self._executor.request(HEALTH, {}, CallOptions(endpoint, None, action_id, context, deadline,
                                      timeout))

    def models(self, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> list[ModelInfo]:
        """``GET /v1/models``."""
        _operations()
        from .operations import MODELS  # imported by the family's first call, under the family import lock

        return self._executor.request(MODELS, {}, CallOptions(endpoint, None, action_id, context, deadline,
                                      timeout))

    def server_capabilities(self, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                            context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                            timeout: TimeoutLike = None) -> ServerCapabilities:
        """``GET /v1/capabilities``: Hermes' static feature flags (not the SDK's ``capabilities()``)."""
        _operations()
        from .operations import SERVER_CAPABILITIES  # imported by the family's first call, under the family import lock

        return self._executor.request(SERVER_CAPABILITIES, {}, CallOptions(endpoint, None, action_id, context, deadline,
                                      timeout))

    def toolsets(self, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                 context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                 timeout: TimeoutLike = None) -> list[Toolset]:
        """``GET /v1/toolsets``: which toolsets the API server offers (``enabled``)."""
        _operations()
        from .operations import TOOLSETS  # imported by the family's first call, under the family import lock

        return self._executor.request(TOOLSETS, {}, CallOptions(endpoint, None, action_id, context, deadline,
                                      timeout))

    def health_detailed(self, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                        context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                        timeout: TimeoutLike = None) -> dict[str, object]:
        """``GET /health/detailed`` (authenticated, unlike ``/health``): readiness checks, gateway
        state, platforms, ``active_agents``, ``pid``..., as Hermes sends them.

        ``readiness.checks.background_queues.active_api_runs`` counts only ``/v1/runs`` runs: a
        running session chat is not counted.
        """
        _operations()
        from .operations import HEALTH_DETAILED  # imported by the family's first call, under the family import lock

        return self._executor.request(HEALTH_DETAILED, {}, CallOptions(endpoint, None, action_id, context, deadline,
                                      timeout))

    def model_options(self, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
                      context: Optional[ExecutionContext] = None, deadline: Deadline = None,
                      timeout: TimeoutLike = None) -> dict[str, object]:
        """``GET /api/model/options`` (Hermes 0.20+): the providers and models the server offers, as
        Hermes sends them. UnsupportedByServerError (nothing sent) on a server without it (0.19)."""
        _operations()
        from .operations import MODEL_OPTIONS  # imported by the family's first call, under the family import lock

        return self._executor.request(MODEL_OPTIONS, {}, CallOptions(endpoint, None, action_id, context, deadline,
                                      timeout))

    def skills(self, *, endpoint: Optional[str] = None, action_id: Optional[str] = None,
               context: Optional[ExecutionContext] = None, deadline: Deadline = None,
               timeout: TimeoutLike = None) -> list[Skill]:
        """``GET /v1/skills``: the installed skills, sorted by category then name (experimental)."""
        _operations()
        from .operations import SKILLS  # imported by the family's first call, under the family import lock

        return self._executor.request(SKILLS, {}, CallOptions(endpoint, None, action_id, context, deadline,
                                      timeout))
