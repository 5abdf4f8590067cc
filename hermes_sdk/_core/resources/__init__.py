"""Resource families on the client (``client.runs``, ``client.records``, ...): one module each.

A resource is a thin typed facade over the client's :class:`~hermes_sdk._core.executor.Executor`: it
maps keyword arguments to a capability input and calls ``executor.request(spec, input, options)``.
Families outside the core register theirs with :func:`register_resource` and reach it as
``client.<name>``.
"""

from __future__ import annotations

from typing import Any, Callable

#: Extra resources by attribute name: ``factory(executor)`` builds one per client.
RESOURCES: dict[str, Callable[[Any], Any]] = {}


def register_resource(name: str, factory: Callable[[Any], Any]) -> None:
    """Make ``client.<name>`` a resource built by ``factory(executor)`` (once per client)."""
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"resource name {name!r} must be a public identifier")
    RESOURCES[name] = factory


def unregister_resource(name: str) -> None:
    """Remove a registered resource (tests and plugins that add their own)."""
    RESOURCES.pop(name, None)
