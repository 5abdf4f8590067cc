"""Discovery results: ``/health``, ``/v1/models``, ``/v1/capabilities`` and ``/v1/toolsets``."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import attrs

from ..errors import InvalidResponseError

JSONDict = dict[str, Any]


def _object(data: Any, what: str) -> JSONDict:
    if not isinstance(data, dict):
        raise InvalidResponseError(f"Hermes returned a {type(data).__name__} where a {what} object was expected")
    return data


def _opt_str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _items(data: Any, what: str) -> list[JSONDict]:
    items = _object(data, what).get("data")
    if not isinstance(items, list):
        raise InvalidResponseError(f"the {what} list has no 'data' array")
    return [item for item in items if isinstance(item, dict)]


@attrs.frozen
class Health:
    """``GET /health``: ``status`` is ``ok`` on a live server."""

    status: Optional[str]
    platform: Optional[str] = None
    version: Optional[str] = None
    raw: JSONDict = attrs.field(factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        """Whether the server says ``ok``."""
        return self.status == "ok"


@attrs.frozen
class ModelInfo:
    """One entry of ``GET /v1/models`` (Hermes lists one model, ``hermes-agent``)."""

    id: str
    owned_by: Optional[str] = None
    created: Optional[int] = None
    raw: JSONDict = attrs.field(factory=dict, repr=False)


@attrs.frozen
class ServerCapabilities:
    """``GET /v1/capabilities``: static feature flags and the endpoint map.

    It does not say whether tools or approvals are on: ask :meth:`HermesClient.toolsets`.
    """

    features: JSONDict
    endpoints: JSONDict
    platform: Optional[str] = None
    raw: JSONDict = attrs.field(factory=dict, repr=False)

    def supports(self, feature: str) -> bool:
        """Whether a feature flag (``run_submission``, ``approval_events``, ...) is true."""
        return self.features.get(feature) is True


@attrs.frozen
class Toolset:
    """One toolset of ``GET /v1/toolsets``; ``enabled`` says whether the API server offers its tools."""

    name: str
    enabled: bool
    tools: tuple[str, ...] = ()
    label: Optional[str] = None
    description: Optional[str] = None
    configured: Optional[bool] = None
    raw: JSONDict = attrs.field(factory=dict, repr=False)


def health(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
           replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> Health:
    """Decode ``/health``."""
    obj = _object(data, "health")
    return Health(status=_opt_str(obj.get("status")), platform=_opt_str(obj.get("platform")),
                  version=_opt_str(obj.get("version")), raw=obj)


def models(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
           replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> list[ModelInfo]:
    """Decode ``/v1/models``."""
    out = []
    for item in _items(data, "models"):
        created = item.get("created")
        out.append(ModelInfo(id=str(item.get("id", "")), owned_by=_opt_str(item.get("owned_by")),
                             created=created if isinstance(created, int) and not isinstance(created, bool) else None,
                             raw=item))
    return out


def server_capabilities(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
                        replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> ServerCapabilities:
    """Decode ``/v1/capabilities``."""
    obj = _object(data, "capabilities")
    features, endpoints = obj.get("features"), obj.get("endpoints")
    return ServerCapabilities(features=features if isinstance(features, dict) else {},
                              endpoints=endpoints if isinstance(endpoints, dict) else {},
                              platform=_opt_str(obj.get("platform")), raw=obj)


def toolsets(data: Any, session_id: Optional[str] = None, action_id: Optional[str] = None,
             replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> list[Toolset]:
    """Decode ``/v1/toolsets``."""
    out = []
    for item in _items(data, "toolsets"):
        tools = item.get("tools")
        configured = item.get("configured")
        out.append(Toolset(name=str(item.get("name", "")), enabled=item.get("enabled") is True,
                           tools=tuple(t for t in tools if isinstance(t, str)) if isinstance(tools, list) else (),
                           label=_opt_str(item.get("label")), description=_opt_str(item.get("description")),
                           configured=configured if isinstance(configured, bool) else None, raw=item))
    return out


__all__ = ["Health", "ModelInfo", "ServerCapabilities", "Toolset"]
