"""Discovery results: ``/health``, ``/v1/models``, ``/v1/capabilities``, ``/v1/toolsets``, ``/v1/skills``,
``/health/detailed`` and ``/api/model/options``."""

from __future__ import annotations

from typing import Any, Optional

import attrs

from hermes_sdk.errors import InvalidResponseError
from hermes_sdk.plugin import NO_CONTEXT, DecodeContext, as_dict, many, one, shape


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


@shape("a skill object")
@attrs.frozen
class Skill:
    """One entry of ``GET /v1/skills`` (``category`` is None for a skill directly under ``skills/``)."""

    name: str
    description: Optional[str] = None
    category: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)


#: ``/health``.
health = one(Health)
#: ``/v1/models``.
models = many(ModelInfo, "data", "a models list", skip_non_objects=True)
#: ``/v1/capabilities``.
server_capabilities = one(ServerCapabilities)
#: ``/v1/toolsets``.
toolsets = many(Toolset, "data", "a toolsets list", skip_non_objects=True)
#: ``{"object": "list", "data": [{name, description, category}...]}``.
skills = many(Skill, "data", "a skill list", skip_non_objects=True)


def health_detailed(data: object, ctx: DecodeContext = NO_CONTEXT) -> dict[str, object]:
    """``GET /health/detailed`` as Hermes sends it (a dict: readiness checks, gateway state, pid...)."""
    return as_dict(data, "a health object")


def model_options(data: object, ctx: DecodeContext = NO_CONTEXT) -> dict[str, object]:
    """``GET /api/model/options`` as Hermes sends it (``providers``: each with ``slug``, ``models``,
    ``is_current``...)."""
    found = as_dict(data, "a model options object")
    if not isinstance(found.get("providers"), list):
        raise InvalidResponseError("the model options have no 'providers' array")
    return found


__all__ = ["Health", "ModelInfo", "ServerCapabilities", "Skill", "Toolset"]
