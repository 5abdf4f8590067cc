"""Discovery results: ``/health``, ``/v1/models``, ``/v1/capabilities`` and ``/v1/toolsets``."""

from __future__ import annotations

from typing import Any, Optional

import attrs

from .convert import many, one, shape


@shape("a health object")
@attrs.frozen
class Health:
    """``GET /health``: ``status`` is ``ok`` on a live server."""

    status: Optional[str]
    platform: Optional[str] = None
    version: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """Whether the server says ``ok``."""
        return self.status == "ok"


@shape("a model object")
@attrs.frozen
class ModelInfo:
    """One entry of ``GET /v1/models`` (Hermes lists one model, ``hermes-agent``)."""

    id: str
    owned_by: Optional[str] = None
    created: Optional[int] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)


@shape("a capabilities object")
@attrs.frozen
class ServerCapabilities:
    """``GET /v1/capabilities``: static feature flags and the endpoint map.

    It does not say whether tools or approvals are on: ask :meth:`HermesClient.toolsets`.
    """

    features: dict[str, Any]
    endpoints: dict[str, Any]
    platform: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    def supports(self, feature: str) -> bool:
        """Whether a feature flag (``run_submission``, ``approval_events``, ...) is true."""
        return self.features.get(feature) is True


@shape("a toolset object")
@attrs.frozen
class Toolset:
    """One toolset of ``GET /v1/toolsets``; ``enabled`` says whether the API server offers its tools."""

    name: str
    enabled: bool
    tools: tuple[str, ...] = ()
    label: Optional[str] = None
    description: Optional[str] = None
    configured: Optional[bool] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)


#: ``/health``.
health = one(Health)
#: ``/v1/models``.
models = many(ModelInfo, "data", "a models list", skip_non_objects=True)
#: ``/v1/capabilities``.
server_capabilities = one(ServerCapabilities)
#: ``/v1/toolsets``.
toolsets = many(Toolset, "data", "a toolsets list", skip_non_objects=True)


__all__ = ["Health", "ModelInfo", "ServerCapabilities", "Toolset"]
