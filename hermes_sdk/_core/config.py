"""What ``HermesClient(...)`` resolves before its first call: endpoints, the store, retry settings."""

from __future__ import annotations

import importlib
import logging
import os
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, Union, cast

import pluggy
import requests

from ..errors import HermesError, InvalidInputError, PluginError
from ._constants import DEFAULT_ENDPOINT_ID
from ._logging import configure_from_env
from ._plugin_manager import Plugin, build_manager, call_pipeline, mark_builtin
from .approval import ApprovalProvider
from .deadline import TimeoutLike, as_timeout
from .endpoints import Endpoint
from .families import Family, LazyFamily, Registry, legacy_family
from .idempotency import IdempotencyStore
from .redaction import FilterFn, Redactor, install_log_filters, register_secret
from .retry import RetryPolicy
from .runtime import Runtime
from .server_features import ServerFeatures
from .transport import Transport
from .view import ClientView

log = logging.getLogger("hermes_sdk")

if TYPE_CHECKING:
    from .deadline import Timeout
    from .executor import Executor


def max_attempts_value(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError("max_attempts must be a positive integer", details={"field": "max_attempts"})
    return value


def build_endpoints(base_url: Optional[str], api_key: Optional[str], endpoint_id: Optional[str],
                     tenant_id: Optional[str], endpoints: Iterable[Endpoint]) -> dict[str, Endpoint]:
    out: dict[str, Endpoint] = {}
    for ep in endpoints:
        if not isinstance(ep, Endpoint):
            raise InvalidInputError("endpoints must be Endpoint objects", details={"field": "endpoints"})
        if ep.id in out:
            raise InvalidInputError(f"duplicate endpoint id {ep.id!r}", details={"field": "endpoints"})
        out[ep.id] = ep
    base_url = base_url if base_url is not None else (os.environ.get("HERMES_BASE_URL") if not out else None)
    if base_url is not None or not out:
        ep = Endpoint(
            id=endpoint_id or os.environ.get("HERMES_ENDPOINT_ID") or DEFAULT_ENDPOINT_ID,
            base_url=base_url,
            api_key=api_key if api_key is not None else os.environ.get("HERMES_API_KEY"),
            tenant_id=tenant_id,
            key_source="the api_key argument" if api_key is not None else "HERMES_API_KEY",
        )
        if ep.id in out:
            raise InvalidInputError(f"duplicate endpoint id {ep.id!r}", details={"field": "endpoint_id"})
        out[ep.id] = ep
    return out


_STORE_METHODS = ("reserve", "complete", "get", "get_by_action", "forget")


def resolve_store(pm: pluggy.PluginManager, client: ClientView,
                  value: Union[IdempotencyStore, str, None]) -> IdempotencyStore:
    """A store object as given, or the one a plugin (the built-ins included) makes for a URL."""
    if value is None:
        value = os.environ.get("HERMES_SDK_IDEMPOTENCY_STORE") or "memory:"
    if isinstance(value, str):
        store = call_pipeline(pm, "hermes_idempotency_store", url=value, client=client)
        if store is None:
            raise InvalidInputError(f"no plugin claims the idempotency store URL scheme of {value.split(':')[0]!r}",
                                    details={"field": "idempotency_store"})
        lacking = _lacking(store, _STORE_METHODS)
        if lacking:
            raise PluginError(f"hermes_idempotency_store returned a store that lacks {lacking}()",
                              details={"hook": "hermes_idempotency_store"})
        return cast(IdempotencyStore, store)  # it has every method a store needs
    lacking = _lacking(value, _STORE_METHODS)
    if lacking:
        raise InvalidInputError(f"idempotency_store lacks {lacking}()", details={"field": "idempotency_store"})
    return value


def _lacking(value: object, methods: Sequence[str]) -> Optional[str]:
    """The first of ``methods`` that ``value`` does not have as a callable, or None."""
    return next((m for m in methods if not callable(getattr(value, m, None))), None)


def plugin_filters(pm: pluggy.PluginManager, client: ClientView) -> list[FilterFn]:
    """Every plugin's redaction filters (a plugin answers one filter or a list of them)."""
    filters: list[FilterFn] = []
    for group in cast("list[object]", call_pipeline(pm, "hermes_redaction_filters", client=client) or []):
        for fn in group if isinstance(group, (list, tuple)) else [group]:
            if not callable(fn):  # refused now: it would otherwise redact every text it is given
                raise PluginError(f"hermes_redaction_filters returned {type(fn).__name__}, not a filter "
                                  "fn(key, text) -> text", details={"hook": "hermes_redaction_filters"})
            filters.append(fn)
    return filters


def plugin_provider(pm: pluggy.PluginManager, client: ClientView) -> Optional[ApprovalProvider]:
    """The approval provider the first plugin answering ``hermes_approval_provider`` gives, or None."""
    provider = call_pipeline(pm, "hermes_approval_provider", client=client)
    if provider is None or callable(provider):
        return provider
    if _lacking(provider, ("request_approval",)):
        raise PluginError(f"hermes_approval_provider returned {type(provider).__name__}: an approval provider is "
                          "a callable or has request_approval()", details={"hook": "hermes_approval_provider"})
    return cast(ApprovalProvider, provider)  # it has request_approval()


def build_runtime(found: dict[str, Endpoint], *, plugins: Sequence[Plugin], load_entrypoints: bool,
                  session: Optional[requests.Session], idempotency_store: Union[IdempotencyStore, str, None],
                  approval_provider: Optional[ApprovalProvider], strict_idempotency: bool, key_retention: float,
                  max_attempts: int,
                  redaction_patterns: Iterable[str], timeout: TimeoutLike,
                  allow_permanent_approvals: bool) -> Runtime:
    """Load the plugins and ask them for the redaction filters, the store and the approval provider;
    the construction hooks see a :class:`~hermes_sdk._core.view.ClientView`, never the client."""
    transport = Transport(session)  # a session that cannot keep deadlines is refused before anything opens
    pm = build_manager(plugins, load_entrypoints)
    install_log_filters()
    configure_from_env()  # HERMES_SDK_LOG=debug|info
    for ep in found.values():
        register_secret(ep.api_key)
        if not ep.api_key:  # said now, not first at the first call (which refuses with missing_credential)
            log.warning("hermes_sdk endpoint %r has no API key: set HERMES_API_KEY or pass api_key=; "
                        "calls will fail with missing_credential", ep.id)
    seen = ClientView(tuple(found), tuple(ep.base_url for ep in found.values()),
                      tuple(ep.tenant_id for ep in found.values()))
    registry = build_registry(pm, seen)
    transport.refuse_unbounded_adapters((ep.base_url for ep in found.values()), registry.paths)
    filters = plugin_filters(pm, seen)
    store = resolve_store(pm, seen, idempotency_store)
    try:
        provider = approval_provider if approval_provider is not None else plugin_provider(pm, seen)
    except BaseException:
        if store is not idempotency_store:  # the one it built is closed, not left to the GC
            store.close()
        raise
    runtime = Runtime(pm=pm, store=store, transport=transport, registry=registry,
                      redactor=Redactor(filters=filters, patterns=redaction_patterns, routes=registry.plugin_paths),
                      approval_provider=provider, retry=RetryPolicy(max_attempts_value(max_attempts)),
                      strict_idempotency=strict_idempotency, key_retention=key_retention,
                      timeout=as_timeout(timeout), allow_permanent_approvals=bool(allow_permanent_approvals),
                      owns_store=store is not idempotency_store)  # built from a URL: the client closes it
    return runtime


#: The default plugin that registers the built-in families, loaded by name as llm loads its default
#: plugins: the kernel imports no family (tests/core/test_family_layout.py).
BUILTIN_PLUGIN = "hermes_sdk._app.builtin:BuiltinFamilies"


def builtin_class() -> type:
    """The default plugin's class (loaded by name: the kernel imports no family)."""
    module, _, name = BUILTIN_PLUGIN.partition(":")
    found: type = getattr(importlib.import_module(module), name)
    mark_builtin(found)  # no outsider: its hooks read nothing a call is given (see outsiders())
    return found


def builtin_plugin() -> object:
    """The default plugin object (its ``hermes_families`` hook gives the built-in families)."""
    return builtin_class()()


def build_registry(pm: pluggy.PluginManager, client: ClientView) -> Registry:
    """The client's families: the built-in plugin's, then every other plugin's, then deprecated registrations.

    Each plugin's hook is called on its own, in pluggy's order, so every family is known by the
    plugin that gave it (a family that fails to load names it); the built-in plugin's are trusted.
    """
    if not pm.has_plugin(BUILTIN_PLUGIN):
        pm.register(builtin_plugin(), BUILTIN_PLUGIN)
    builtin = builtin_class()
    families: list[Union[Family[object], LazyFamily]] = []
    owners: dict[str, str] = {}
    trusted: set[str] = set()
    for impl in reversed(pm.hook.hermes_families.get_hookimpls()):  # pluggy's call order: tryfirst first
        if impl.hookwrapper or getattr(impl, "wrapper", False):
            raise PluginError(f"plugin {impl.plugin_name!r} implements 'hermes_families' as a wrapper; it takes "
                              "plain implementations", details={"plugin": impl.plugin_name, "hook": "hermes_families"})
        try:
            group = cast("Optional[Iterable[Union[Family[object], LazyFamily]]]",
                         impl.function(*[client for _ in impl.argnames]))  # as pluggy calls it
        except HermesError:
            raise
        except Exception as exc:
            raise PluginError(f"plugin {impl.plugin_name!r} failed in hermes_families: {type(exc).__name__}",
                              details={"plugin": impl.plugin_name, "hook": "hermes_families",
                                       "exception": type(exc).__name__}) from exc
        for family in group or ():
            families.append(family)
            name = getattr(family, "name", None)
            if isinstance(name, str):
                owners.setdefault(name, impl.plugin_name)
                if type(impl.plugin) is builtin:
                    trusted.add(name)
    legacy = legacy_family()
    return Registry([*families, *([legacy] if legacy is not None else [])], owners=owners, builtin=trusted)


class ClientSettings:
    """The settings a client was built with, read back (mixed into :class:`~hermes_sdk.HermesClient`)."""

    _executor: "Executor"

    @property
    def endpoints(self) -> tuple[Endpoint, ...]:
        """The configured endpoints."""
        return tuple(self._executor.endpoints.values())

    @property
    def idempotency_store(self) -> IdempotencyStore:
        """The idempotency store every keyed call of this client uses."""
        return self._executor.runtime.store

    @property
    def plugin_manager(self) -> pluggy.PluginManager:
        """This client's pluggy ``PluginManager``."""
        return self._executor.runtime.pm

    @property
    def redactor(self) -> Redactor:
        """The redactor applied to everything logged, traced or shown to an approver."""
        return self._executor.runtime.redactor

    @property
    def strict_idempotency(self) -> bool:
        """Whether a key reused with a different input is refused."""
        return self._executor.runtime.strict_idempotency

    @property
    def key_retention(self) -> float:
        """Seconds a keyed model call's record is kept."""
        return self._executor.runtime.key_retention

    @property
    def max_attempts(self) -> int:
        """Attempts of a retry-safe call."""
        return self._executor.runtime.retry.max_attempts

    @property
    def timeout(self) -> Optional[Timeout]:
        """The default time limits of every call (None: each capability's published timeout)."""
        return self._executor.runtime.timeout

    @property
    def allow_permanent_approvals(self) -> bool:
        """Whether the run approval choice ``always`` may be sent."""
        return self._executor.runtime.allow_permanent_approvals

    def server_features(self, *, endpoint: Optional[str] = None, refresh: bool = False) -> ServerFeatures:
        """What the endpoint's Hermes server supports (its version and ``/v1/capabilities``
        features), read from the server once and kept; ``refresh=True`` reads it again."""
        return self._executor.runtime.server_features.get(self._executor, endpoint, refresh=refresh)
