"""Routes as the families declare them, and the router the server builds from a list of families.

A family module (``families/<name>.py``) holds ``ROUTES``, a sequence of :class:`Route`, and, when it
keeps state of its own, ``reset(state)``; the server resolves a request against the routes of the
families it was given (moto keeps a ``urls.py`` per service the same way).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Union
from urllib.parse import unquote

if TYPE_CHECKING:
    from .state import EmulatorState

Handler = Callable[..., None]  # handler(exchange, *path parameters)


@dataclass(frozen=True)
class Route:
    """``methods`` on ``template`` (``{name}`` matches one non-empty path segment) go to ``handler``.

    ``auth=False``: answered without the Bearer key (``/health``); ``since``: the
    :class:`~hermes_sdk.testing.versions.Behaviour` switch a release needs to have the route (404
    without it, like any unknown path); ``decoded``: parameters are percent-decoded (``+`` literal).
    """

    methods: tuple[str, ...]
    template: str
    handler: Handler
    auth: bool = True
    since: str | None = None
    decoded: bool = False

    @property
    def segments(self) -> tuple[str, ...]:
        return tuple(self.template[1:].split("/"))

    def match(self, parts: Sequence[str]) -> tuple[str, ...] | None:
        """The path parameters if ``parts`` (the path's segments) fit the template, else None."""
        segments = self.segments
        if len(parts) != len(segments):
            return None
        params: list[str] = []
        for part, segment in zip(parts, segments):
            if segment.startswith("{"):
                if not part:
                    return None
                params.append(unquote(part) if self.decoded else part)
            elif part != segment:
                return None
        return tuple(params)


def family_routes(family: ModuleType) -> Sequence[Route]:
    routes = getattr(family, "ROUTES", None)
    if not isinstance(routes, (list, tuple)) or not all(isinstance(r, Route) for r in routes):
        raise TypeError(f"{family.__name__} has no ROUTES sequence of Route")
    return routes


def reset_families(families: Sequence[ModuleType], state: EmulatorState) -> None:
    """Call each family's ``reset(state)`` (a family without state of its own has none)."""
    for family in families:
        reset: Callable[[EmulatorState], None] | None = getattr(family, "reset", None)
        if reset is not None:
            reset(state)


Resolved = Union[tuple[Route, tuple[str, ...]], int]


class Router:
    """The route table of a list of family modules (later families cannot shadow earlier routes)."""

    def __init__(self, families: Sequence[ModuleType]) -> None:
        self.routes: tuple[Route, ...] = tuple(r for family in families for r in family_routes(family))

    def _matching(self, path: str) -> list[tuple[Route, tuple[str, ...]]]:
        parts = path[1:].split("/")  # "/v1/runs/" is ["v1", "runs", ""]: not "/v1/runs"
        found = []
        for route in self.routes:
            params = route.match(parts)
            if params is not None:
                found.append((route, params))
        return found

    def resolve(self, method: str, path: str) -> Resolved:
        """``(route, parameters)``, or 404 (no route has the path) or 405 (none takes the method)."""
        matching = self._matching(path)
        if not matching:
            return 404
        for route, params in matching:
            if method in route.methods:
                return route, params
        return 405

    def allowed(self, path: str) -> str:
        """The ``Allow`` header of a 405: every method some route takes on ``path``."""
        return ",".join(sorted({m for route, _params in self._matching(path) for m in route.methods}))


__all__ = ["Handler", "Route", "Router", "family_routes", "reset_families"]
