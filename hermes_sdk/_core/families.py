"""Families: a family is one registered object (its operations and its resource), per client.

Built-in families are registered the way a third-party one is (llm's default plugins are the
model): the ``hermes_families`` hook of the client's plugins, the built-in plugin first. The client
owns the resulting :class:`Registry`; nothing is registered process-wide.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Generic, Iterable, Mapping, Optional, Protocol, TypeVar, cast

import attrs

from ..errors import PluginError
from ._deprecation import deprecated
from .capabilities import Contract
from .operations.spec import OperationSpec, check_spec
from .options import CallOptions
from .redaction import register_route

if TYPE_CHECKING:
    from .executor import Executor

R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")
#: A family's resource type: covariant, so a registry holds families of every resource as ``Family[object]``.
R_co = TypeVar("R_co", covariant=True)


class FamilyExecutor(Protocol):
    """What a family's resource is given: one typed call per operation, through every stage."""

    def request(self, spec: OperationSpec[T], data: Mapping[str, object], options: CallOptions = ...) -> T:
        """Run one call of ``spec``: validation, policy, idempotency, approval, the HTTP exchange."""
        ...

    def state(self, kind: Callable[[], S]) -> S:
        """This client's state of the family declared with ``Family(state=kind)`` (built once per client)."""
        ...


@attrs.frozen
class Family(Generic[R_co]):
    """A family of operations: ``specs`` (invoke(), capabilities()) and a resource built once per client.

    ``resource`` is the resource class (or any factory ``(executor) -> R``); reach it with
    ``client.resource(ResourceClass)``. ``state`` is a factory (a class) of the family's per-client
    state: the registry builds it once per client (shared with its ``with_options`` copies); the
    resource reaches it with ``executor.state(StateClass)``, an ``admit`` rule as ``ctx.state``.
    """

    name: str
    specs: tuple[OperationSpec[object], ...]
    #: Takes the client's executor (a :class:`FamilyExecutor`: a resource written against that protocol fits).
    resource: Optional[Callable[["Executor"], R_co]] = None
    #: ``"module:function"`` adding this family's ``hermes-sdk`` subcommands: ``function(subparsers,
    #: connection_parent, json_parent)``. Named, not imported, so the library never loads the CLI.
    commands: Optional[str] = None
    state: Optional[Callable[[], object]] = None

    def __attrs_post_init__(self) -> None:
        if not self.name.isidentifier():
            raise PluginError(f"family name {self.name!r} must be an identifier")
        for spec in self.specs:
            check_spec(spec)


class Registry:
    """The families one client knows: its operations by name, in registration order, and its resources."""

    def __init__(self, families: Iterable[Family[object]]) -> None:
        self.families: dict[str, Family[object]] = {}
        self.specs: dict[str, OperationSpec[object]] = {}
        #: Each family's per-client state by its factory, and by operation name (what ``admit`` is given).
        self.states: dict[Callable[[], object], object] = {}
        self._state_of_operation: dict[str, object] = {}
        for family in families:
            if not isinstance(family, Family):
                raise PluginError(f"hermes_families returned {type(family).__name__}, not a hermes_sdk.plugin.Family")
            if family.name in self.families:
                raise PluginError(f"two families are named {family.name!r}")
            for spec in family.specs:
                if spec.name in self.specs:
                    raise PluginError(f"operation {spec.name!r} of family {family.name!r} is already registered")
                self.specs[spec.name] = spec
                register_route(spec.contract.path)  # log text never shows this operation's ids either
            self.families[family.name] = family
            if family.state is not None:
                if family.state in self.states:
                    raise PluginError(f"family {family.name!r} declares the state of another family")
                built = self.states[family.state] = family.state()
                self._state_of_operation.update((spec.name, built) for spec in family.specs)

    @property
    def contracts(self) -> dict[str, Contract]:
        """Every operation's published contract, in registration order."""
        return {name: spec.contract for name, spec in self.specs.items()}

    def spec(self, operation: str) -> OperationSpec[object]:
        """The spec of ``operation`` (KeyError when no family of this client has it)."""
        return self.specs[operation]

    def state(self, kind: Callable[[], S]) -> S:
        """The state of the family declared with ``Family(state=kind)`` (KeyError when none)."""
        return cast(S, self.states[kind])  # built by kind() in __init__

    def state_of(self, operation: str) -> object:
        """The state of the family that registered ``operation`` (None when it has none)."""
        return self._state_of_operation.get(operation)

    def family_of(self, resource: Callable[..., R]) -> Family[R]:
        """The family whose resource is ``resource``."""
        for family in self.families.values():
            if family.resource is resource:
                return cast("Family[R]", family)  # its resource is ``resource``, which makes an R
        raise KeyError(resource)


# Deprecated since 0.2: process-wide registration (hermes_sdk.plugin.register / register_resource). What
# is registered here joins every client built afterwards, as the family "legacy".
_LEGACY_SPECS: dict[str, OperationSpec[object]] = {}
_LEGACY_RESOURCES: dict[str, Callable[[FamilyExecutor], object]] = {}


def _warn(old: str) -> None:
    deprecated(f"hermes_sdk.plugin.{old} registers process-wide and is deprecated: return a "
                       "hermes_sdk.plugin.Family from the hermes_families hook instead", stacklevel=3)


def register(spec: OperationSpec[T]) -> OperationSpec[T]:
    """Deprecated: add an operation to every client built afterwards (use a :class:`Family`)."""
    _warn("register")
    check_spec(spec)
    _LEGACY_SPECS[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    """Deprecated: remove an operation added with :func:`register`."""
    _LEGACY_SPECS.pop(name, None)


def register_resource(name: str, factory: Callable[[FamilyExecutor], object]) -> None:
    """Deprecated: make ``client.<name>`` a resource on every client built afterwards (use a :class:`Family`)."""
    _warn("register_resource")
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"resource name {name!r} must be a public identifier")
    _LEGACY_RESOURCES[name] = factory


def unregister_resource(name: str) -> None:
    """Deprecated: remove a resource added with :func:`register_resource`."""
    _LEGACY_RESOURCES.pop(name, None)


def legacy_family() -> Optional[Family[object]]:
    """What the deprecated process-wide functions registered, as one family (None when nothing)."""
    if not _LEGACY_SPECS:
        return None
    return Family("legacy", tuple(_LEGACY_SPECS.values()))


def legacy_resources() -> Mapping[str, Callable[[FamilyExecutor], object]]:
    """Resources registered with the deprecated :func:`register_resource`, by attribute name."""
    return dict(_LEGACY_RESOURCES)
