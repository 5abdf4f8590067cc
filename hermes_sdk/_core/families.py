"""Families: a family is one registered object (its operations and its resource), per client.

Built-in families are registered the way a third-party one is (llm's default plugins are the
model): the ``hermes_families`` hook of the client's plugins, the built-in plugin first. The client
owns the resulting :class:`Registry`; nothing is registered process-wide.
"""

from __future__ import annotations

import itertools
import logging
import sys
import weakref
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Generic,
    Iterable,
    KeysView,
    Mapping,
    Optional,
    TypeVar,
    Union,
    cast,
)

import attrs

from ..errors import HermesError, PluginError
from . import family_loading
from ._deprecation import deprecated
from ._detach import detach
from .admission import CompositeContext
from .approval import ApprovalProvider, ApprovalRequest
from .capabilities import Contract, capability_id
from .endpoints import ExecutionContext
from .operations.spec import OperationSpec, check_spec
from .options import CallOptions
from .redaction import CommandView, register_route
from .server_features import ServerFeatures

if TYPE_CHECKING:
    from .executor import Executor

log = logging.getLogger("hermes_sdk")
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")
#: A family's resource type: covariant, so a registry holds families of every resource as ``Family[object]``.
R_co = TypeVar("R_co", covariant=True)


#: The executors behind the facades, by a number only the facade holds: what a family's resource is
#: given has no attribute, referent or closure that leads to the client's endpoints (its API key).
_executors: dict[int, "Executor"] = {}
_numbers = itertools.count(1)
_DEFAULT_OPTIONS = CallOptions()


class FamilyExecutor:
    """What a family's resource and composite context are given, built-in and plugin families alike:
    typed calls through every stage, the family's per-client state, and the few client facts a family
    needs (server features, the approval provider, the redactor's view of a text, a record to forget);
    no endpoint, credential or runtime is reachable from it."""

    __slots__ = ("_number", "__weakref__")
    _number: int  # the key of its executor in _executors (set by family_executor)

    def __init__(self) -> None:
        raise TypeError("a client gives each family its FamilyExecutor (client.resource(...)); none is built by hand")

    def request(self, spec: OperationSpec[T], data: Mapping[str, object], options: CallOptions = _DEFAULT_OPTIONS) -> T:
        """Run one call of ``spec``: validation, policy, idempotency, approval, the HTTP exchange.

        A failure leaves from this frame, which holds no Call (see :mod:`hermes_sdk._core._detach`)."""
        try:  # Executor.request's own body, so a resource's call costs no frame more than it did
            return _executors[self._number]._request(spec, data, options)
        except HermesError as exc:
            raise detach(exc)  # noqa: B904 (the same error again: its own cause stays)

    def state(self, kind: Callable[[], S]) -> S:
        """This client's state of the family declared with ``Family(state=kind)`` (built once per client)."""
        return _executors[self._number].state(kind)

    @property
    def context(self) -> Optional[ExecutionContext]:
        """The client's default :class:`~hermes_sdk.ExecutionContext` (a call's own wins)."""
        return _executors[self._number].context

    @property
    def closed(self) -> bool:
        """Whether the client was closed (its connection pool is): a family tries nothing again."""
        return _executors[self._number].runtime.transport.closed

    @property
    def approval_provider(self) -> Optional[ApprovalProvider]:
        """The client's approval provider (None when it has none)."""
        return _executors[self._number].runtime.approval_provider

    @property
    def allow_permanent_approvals(self) -> bool:
        """Whether the client lets an approval be answered ``always``."""
        return _executors[self._number].runtime.allow_permanent_approvals

    def capability_id(self, operation: str, endpoint: Optional[str] = None) -> str:
        """The capability id of ``operation`` at ``endpoint`` (the only, else the default, one when None)."""
        return capability_id(_executors[self._number].endpoint(endpoint).id, operation)

    def server_features(self, endpoint: Optional[str] = None) -> ServerFeatures:
        """What the endpoint's server supports (``/v1/capabilities``, asked once per client and endpoint)."""
        executor = _executors[self._number]
        return executor.runtime.server_features.get(executor, endpoint)

    def forget(self, operation: str, key: str, endpoint: Optional[str] = None) -> None:
        """Drop the client's durable record of ``operation`` under ``key`` (a start the server itself
        dedupes is sent again with the same key)."""
        executor = _executors[self._number]
        executor.runtime.store.forget(capability_id(executor.endpoint(endpoint).id, operation), key)

    def redact(self, text: str, field: Optional[str] = None) -> str:
        """``text`` as the client's redaction policy shows it (secrets and, by policy, more hidden)."""
        return _executors[self._number].runtime.redactor.text(text, field)

    def command_view(self, command: str) -> CommandView:
        """A command as an approver sees it: every byte but secrets' values, and whether it is shown whole."""
        return _executors[self._number].runtime.redactor.command_view(command)

    def approval_request(self, operation: str, input: Mapping[str, object], reason: Optional[str], *,
                         endpoint: Optional[str] = None, context: Optional[ExecutionContext] = None,
                         identifiers: Optional[Mapping[str, str]] = None) -> ApprovalRequest:
        """The :class:`~hermes_sdk.ApprovalRequest` the approval stage builds for ``input`` (bound by its
        hash, the approver's view of it, the TTL); ``context`` defaults to the client's."""
        return _executors[self._number].approval_request(operation, input, reason=reason, endpoint=endpoint,
                                                         context=context, identifiers=identifiers)

    def composite(self, endpoint: Optional[str], input: Mapping[str, object],
                  options: CallOptions) -> CompositeContext:
        """The :class:`CompositeContext` ``invoke()`` gives a composite operation, over these calls."""
        return _executors[self._number].composite(endpoint, input, options, self)

    def __repr__(self) -> str:
        return "<FamilyExecutor>"


def family_executor(executor: "Executor") -> FamilyExecutor:
    """The :class:`FamilyExecutor` over ``executor``: it holds a number, the executor is in ``_executors``."""
    facade = object.__new__(FamilyExecutor)
    number = facade._number = next(_numbers)
    _executors[number] = executor
    weakref.finalize(facade, _executors.pop, number, None)  # the executor is let go with the facade
    return facade


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
    #: Takes a :class:`FamilyExecutor` (built-in and plugin families are given the same kind).
    resource: Optional[Callable[[Any], R_co]] = None
    #: ``"module:function"`` adding this family's ``hermes-sdk`` subcommands: ``function(subparsers,
    #: connection_parent, json_parent)``. Named, not imported, so the library never loads the CLI.
    commands: Optional[str] = None
    state: Optional[Callable[[], object]] = None

    def __attrs_post_init__(self) -> None:
        if not self.name.isidentifier():
            raise PluginError(f"family name {self.name!r} must be an identifier")
        for spec in self.specs:
            check_spec(spec)


@attrs.frozen
class LazyFamily:
    """A family imported when a client first uses it, not when the client is built (a CLI, a cron
    script or a forked worker pays only for the families it calls).

    ``target`` names the :class:`Family` (``"package.module:NAME"``); ``operations`` and ``paths``
    (its operations' path templates) are what it registers, declared so a client can list and route
    them without importing it, and checked against the family when it loads. ``resource`` names its
    resource class the same way, so ``client.resource(ResourceClass)`` loads only that family.
    ``commands`` replaces the family's own ``commands`` (the CLI's subcommands) when given.
    """

    name: str
    target: str
    operations: tuple[str, ...]
    paths: tuple[str, ...]
    resource: Optional[str] = None
    commands: Optional[str] = None

    def __attrs_post_init__(self) -> None:
        if not self.name.isidentifier():
            raise PluginError(f"family name {self.name!r} must be an identifier")
        if ":" not in self.target:
            raise PluginError(f"family {self.name!r}: target {self.target!r} is not 'package.module:NAME'")

    def load(self) -> "Family[object]":
        """Import the family and check it registers what was declared (a PluginError when not)."""
        family = family_loading.load(self.target)
        if not isinstance(family, Family) or family.name != self.name:
            raise PluginError(f"{self.target} is not the family {self.name!r}")
        if tuple(spec.name for spec in family.specs) != self.operations:
            raise PluginError(f"family {self.name!r} registers {[s.name for s in family.specs]}, "
                              f"not the declared {list(self.operations)}")
        if not {spec.contract.path for spec in family.specs} <= set(self.paths):
            raise PluginError(f"family {self.name!r} has paths it did not declare")
        if self.resource is not None and not _names(self.resource, family.resource):
            raise PluginError(f"family {self.name!r}: its resource is not {self.resource}")
        return family if self.commands is None else attrs.evolve(family, commands=self.commands)


def _again(error: PluginError) -> PluginError:
    """A fresh copy of a kept error (raising one object again would grow its traceback)."""
    return PluginError(error.message, details=dict(error.details))


def _names(dotted: str, obj: object) -> bool:
    """Whether ``"module:NAME"`` is ``obj``, looked up only if the module is imported already (a
    class a caller holds was imported with its module; its ``__module__`` may be a public alias)."""
    module, _, name = dotted.partition(":")
    found = sys.modules.get(module)
    return found is not None and getattr(found, name, None) is obj


class Registry:
    """The families one client knows: its operations by name, in registration order, and its resources.

    A :class:`LazyFamily` is imported on its first use (one of its operations called or listed, its
    resource or state asked for); what it declared stands in for it until then.
    """

    def __init__(self, families: Iterable[Union[Family[object], LazyFamily]], *,
                 owners: Optional[Mapping[str, str]] = None, builtin: Iterable[str] = ()) -> None:
        #: The plugin that gave each family (what a failure to load it names), and the built-in ones.
        self._owners = dict(owners or {})
        self._builtin = frozenset(builtin)
        #: Families whose module failed to import or check: left out of every listing.
        self._broken: dict[str, PluginError] = {}
        self._loaded: dict[str, Family[object]] = {}
        self._pending: dict[str, LazyFamily] = {}
        self._order: list[str] = []
        self._family_of_operation: dict[str, str] = {}  # every operation, in registration order
        self._paths: list[str] = []
        self._own_paths: list[str] = []  # the plugin families' paths (per client, see plugin_paths)
        self._specs: dict[str, OperationSpec[object]] = {}
        #: Each family's per-client state by its factory, and by operation name (what ``admit`` is given).
        self._states: dict[Callable[[], object], object] = {}
        self._state_owners: dict[Callable[[], object], str] = {}  # which family declared each state
        self._state_of_operation: dict[str, object] = {}
        for family in families:
            if not isinstance(family, (Family, LazyFamily)):
                raise PluginError(f"hermes_families returned {type(family).__name__}, not a hermes_sdk.plugin.Family")
            if family.name in self._loaded or family.name in self._pending:
                raise PluginError(f"two families are named {family.name!r}")
            names = family.operations if isinstance(family, LazyFamily) else tuple(s.name for s in family.specs)
            paths = family.paths if isinstance(family, LazyFamily) else tuple(s.contract.path for s in family.specs)
            for name in names:
                if name in self._family_of_operation:
                    raise PluginError(f"operation {name!r} of family {family.name!r} is already registered")
                self._family_of_operation[name] = family.name
            for path in paths:
                self._paths.append(path)
                if family.name in self._builtin:
                    register_route(path)  # every log line and trace, in every client, scrubs the SDK's own ids
                else:
                    self._own_paths.append(path)  # this client's redactor scrubs them: not another client's
            self._order.append(family.name)
            if isinstance(family, LazyFamily):
                self._pending[family.name] = family
            else:
                self._add(family)

    def _add(self, family: Family[object]) -> None:
        for spec in family.specs:
            self._specs[spec.name] = spec
        if family.state is not None:
            # (again for the same family in a child forked mid-add: its state is kept, not refused)
            if self._state_owners.setdefault(family.state, family.name) != family.name:
                raise PluginError(f"family {family.name!r} declares the state of another family")
            if family.state not in self._states:
                self._states[family.state] = family.state()
            built = self._states[family.state]
            self._state_of_operation.update((spec.name, built) for spec in family.specs)
        self._loaded[family.name] = family

    def _load(self, name: str, deadline: Optional[float] = None) -> Family[object]:
        # Under the process-wide family import lock: one load at a time, in every client (see family_loading).
        with family_loading.holding(f"the family {name!r}", deadline):
            family = self._loaded.get(name)
            if family is None:
                if name in self._broken:
                    raise _again(self._broken[name])
                try:
                    family = self._pending[name].load()
                except Exception as exc:
                    raise self._broke(name, exc) from exc
                self._add(family)
                del self._pending[name]
            return family

    def _broke(self, name: str, exc: Exception) -> PluginError:
        """A family that cannot be loaded: a PluginError naming its plugin, kept for this registry."""
        owner = self.owner(name)
        why = exc.message if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
        error = PluginError(f"plugin {owner!r}: its family {name!r} cannot be loaded: {why}",
                            details={"plugin": owner, "family": name, "exception": type(exc).__name__})
        self._broken[name] = error
        log.warning("hermes_sdk %s; its operations are left out of capabilities() and invoke() fails with "
                    "plugin_failed (fix or disable the plugin: HERMES_SDK_DISABLE_PLUGINS)", error.message)
        return error

    def _load_all(self) -> None:
        for name in list(self._order):
            if name in self._broken:
                continue
            try:
                self.family(name)
            except PluginError:
                if name not in self._broken:  # not a broken family (a wait for another thread's load ran out)
                    raise

    def owner(self, name: str) -> str:
        """The name of the plugin that registered the family ``name``."""
        return self._owners.get(name, "legacy" if name == "legacy" else "unknown")

    def family_of_operation(self, operation: str) -> str:
        """The name of the family that registered ``operation`` (KeyError when none)."""
        return self._family_of_operation[operation]

    def builtin(self, name: str) -> bool:
        """Whether the family ``name`` is one of the SDK's own (its routes are scrubbed in every client)."""
        return name in self._builtin

    @property
    def unavailable(self) -> dict[str, str]:
        """Families that failed to load, by name: why (each names its plugin)."""
        return {name: error.message for name, error in self._broken.items()}

    @property
    def families(self) -> dict[str, Family[object]]:
        """Every family, in registration order (imports those not loaded yet; not those that fail to)."""
        self._load_all()
        return {name: self._loaded[name] for name in self._order if name in self._loaded}

    @property
    def specs(self) -> dict[str, OperationSpec[object]]:
        """Every operation's spec, in registration order (imports the families not loaded yet; a
        family that fails to load is left out)."""
        self._load_all()
        return {name: self._specs[name] for name in self._family_of_operation if name in self._specs}

    @property
    def states(self) -> dict[Callable[[], object], object]:
        """Every family's per-client state by its factory (imports the families not loaded yet)."""
        self._load_all()
        return dict(self._states)

    @property
    def operations(self) -> KeysView[str]:
        """Every operation's name, in registration order, without importing a family."""
        return self._family_of_operation.keys()

    @property
    def paths(self) -> tuple[str, ...]:
        """Every operation's path template, without importing a family."""
        return tuple(self._paths)

    @property
    def plugin_paths(self) -> tuple[str, ...]:
        """The path templates of this registry's plugin families: routed and scrubbed by its client
        only (the built-in families' are the SDK's own, scrubbed in every client)."""
        return tuple(self._own_paths)

    @property
    def contracts(self) -> dict[str, Contract]:
        """Every operation's published contract, in registration order."""
        return {name: spec.contract for name, spec in self.specs.items()}

    def family(self, name: str) -> Family[object]:
        """The family named ``name``, imported if it was not yet (KeyError when none)."""
        family = self._loaded.get(name)
        return family if family is not None else self._load(name)

    def spec(self, operation: str, deadline: Optional[float] = None) -> OperationSpec[object]:
        """The spec of ``operation`` (KeyError when no family of this client has it); a wait for
        another thread's load of its family ends at ``deadline``."""
        spec = self._specs.get(operation)
        if spec is None:
            self._load(self._family_of_operation[operation], deadline)
            spec = self._specs[operation]
        return spec

    def state(self, kind: Callable[[], S]) -> S:
        """The state of the family declared with ``Family(state=kind)`` (KeyError when none)."""
        if kind not in self._states:
            self._load_all()
        return cast(S, self._states[kind])  # built by kind() in _add

    def state_of(self, operation: str) -> object:
        """The state of the family that registered ``operation`` (None when it has none)."""
        name = self._family_of_operation.get(operation)
        if name is not None and name in self._pending:
            self._load(name)
        return self._state_of_operation.get(operation)

    def family_of(self, resource: Callable[..., R]) -> Family[R]:
        """The family whose resource is ``resource``."""
        # Snapshots (list() copies without letting another thread in): a load may add a family meanwhile.
        for family in list(self._loaded.values()):
            if family.resource is resource:
                return cast("Family[R]", family)  # its resource is ``resource``, which makes an R
        pending = list(self._pending.items())
        named = [n for n, lazy in pending if lazy.resource and _names(lazy.resource, resource)]
        for name in named or [n for n, _ in pending if n not in self._broken]:
            try:
                family = self._load(name)
            except PluginError:
                if named or name not in self._broken:  # its own family failed: say so
                    raise
                continue  # another plugin's broken family: not this resource's
            if family.resource is resource:
                return cast("Family[R]", family)
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
