"""The plugin manager: built-ins first, then installed entry points, then the client's own plugins.

Environment switches (the escape hatch when an installed plugin breaks):

* ``HERMES_SDK_PLUGINS=a,b`` loads only those entry points (empty: none);
* ``HERMES_SDK_DISABLE_PLUGINS=a,b`` blocks plugins by name, built-ins included.

Run ``python -m hermes_sdk.plugins`` (or ``hermes-sdk plugins``) to print what loads, as JSON.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import logging
import os
import sys
import time
import traceback
from typing import Any, Callable, Iterable, Optional

import pluggy

from .. import hookspecs
from .._core.exchange import Attempt, HttpReply
from .._core.idempotency import IdempotencyStore, store_from_url
from .._core.view import CallView
from ..errors import HermesError, PluginError
from ..hookspecs import hookimpl

log = logging.getLogger("hermes_sdk")
ENTRY_POINT_GROUP = "hermes_sdk"
HOOK_PREFIX = "hermes_"


class CorePlugin:
    """The innermost implementations: actually execute invocations and attempts; built-in stores."""

    @hookimpl(trylast=True)
    def hermes_invocation(self, invocation: CallView) -> Any:
        """Execute the call, or return its recorded outcome: the innermost implementation."""
        return proceed(invocation)

    @hookimpl(trylast=True)
    def hermes_http_attempt(self, attempt: Attempt) -> HttpReply:
        """Send the attempt: the innermost implementation."""
        return proceed(attempt)  # type: ignore[no-any-return]

    @hookimpl(trylast=True)
    def hermes_idempotency_store(self, url: str) -> Optional[IdempotencyStore]:
        """The built-in stores for ``memory:`` and ``sqlite:///path``; None for other schemes."""
        return store_from_url(url)


class LoggingPlugin:
    """One redacted DEBUG line per HTTP attempt and per action result on the ``hermes_sdk`` logger."""

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Attempt) -> Any:
        """Log the attempt's attributes, outcome and duration at DEBUG (nothing when DEBUG is off)."""
        if not log.isEnabledFor(logging.DEBUG):
            return (yield)
        start = time.perf_counter()
        try:
            result = yield
        except HermesError as exc:
            log.debug("hermes_sdk.attempt %s", json.dumps({**attempt.attributes, "outcome": "error",
                                                           "code": exc.code, "http_status": exc.http_status,
                                                           "duration_ms": _ms(start)}))
            raise
        log.debug("hermes_sdk.attempt %s", json.dumps({**attempt.attributes, "outcome": "response",
                                                       "duration_ms": _ms(start)}))
        return result

    @hookimpl
    def hermes_action_result(self, invocation: CallView, result: dict[str, Any]) -> None:
        """Log the call's attributes, status, error code and duration at DEBUG."""
        if log.isEnabledFor(logging.DEBUG):
            error = result.get("error") or {}
            log.debug("hermes_sdk.action %s", json.dumps({
                **invocation.attributes, "status": result.get("status"), "replayed": result.get("replayed"),
                "code": error.get("code"), "http_status": result.get("http_status"),
                "duration_ms": round((time.time() - invocation.started_at) * 1000, 3)}))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


BUILTINS = (("hermes_sdk.core", CorePlugin), ("hermes_sdk.logging", LoggingPlugin))
_BUILTIN_TYPES = (CorePlugin, LoggingPlugin)


def _names(var: str) -> Optional[set[str]]:
    value = os.environ.get(var)
    if value is None:
        return None
    return {n.strip() for n in value.split(",") if n.strip()}


@functools.lru_cache(maxsize=1)
def _entry_points() -> tuple[tuple[Any, Any], ...]:
    """(entry point, distribution) pairs, discovered once per process: scanning is slow.

    Walks distributions rather than ``entry_points()`` because Python 3.9's entry points do not
    know their distribution; the first distribution on sys.path wins a duplicated name.
    """
    found: list[tuple[Any, Any]] = []
    seen: set[str] = set()
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group == ENTRY_POINT_GROUP and ep.name not in seen:
                seen.add(ep.name)
                found.append((ep, dist))
    return tuple(found)


_loaded: dict[str, Any] = {}


def _load(ep: Any) -> Any:
    if ep.name not in _loaded:
        try:
            _loaded[ep.name] = ep.load()
        except Exception as exc:
            raise PluginError(f"plugin {ep.name!r} failed to load: {type(exc).__name__}: {exc}",
                              details={"plugin": ep.name}) from exc
    return _loaded[ep.name]


def build_manager(plugins: Iterable[Any] = (), load_entrypoints: bool = True) -> pluggy.PluginManager:
    """A plugin manager for one client. A misspelt hook or bad signature fails here, naming the plugin."""
    pm = pluggy.PluginManager("hermes_sdk")
    pm.add_hookspecs(hookspecs)
    blocked = _names("HERMES_SDK_DISABLE_PLUGINS") or set()
    for name in blocked:
        pm.set_blocked(name)
    candidates: list[tuple[str, Any]] = [(name, klass()) for name, klass in BUILTINS]
    if load_entrypoints:
        only = _names("HERMES_SDK_PLUGINS")
        for ep, _ in _entry_points():
            if ep.name in blocked or (only is not None and ep.name not in only):
                continue
            obj = _load(ep)
            candidates.append((ep.name, obj() if isinstance(obj, type) else obj))
    taken = {name for name, _ in candidates}
    for plugin in plugins:
        candidates.append((_unique(_plugin_name(plugin), taken), plugin))
    known = {n for n in dir(hookspecs) if n.startswith(HOOK_PREFIX)}
    for name, plugin in candidates:
        if pm.is_blocked(name):
            continue
        _check_names(name, plugin, known)
        try:
            pm.register(plugin, name=name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            raise PluginError(f"plugin {name!r} is invalid: {exc}", details={"plugin": name}) from exc
    _refuse_observer_wrappers(pm)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        plugin_name = pm.get_name(exc.plugin) if exc.plugin is not None else "unknown"
        raise PluginError(f"plugin {plugin_name!r} implements an unknown hook: {exc}",
                          details={"plugin": plugin_name}) from exc
    return pm


OBSERVER_HOOKS = ("hermes_stream_event", "hermes_action_result", "hermes_redaction_filters")


def _refuse_observer_wrappers(pm: pluggy.PluginManager) -> None:
    """Observers are called one by one (so one failing observer cannot stop the others): a wrapper
    there would never run, so it is refused here rather than silently ignored."""
    for hook in OBSERVER_HOOKS:
        for impl in getattr(pm.hook, hook).get_hookimpls():
            if impl.hookwrapper or getattr(impl, "wrapper", False):
                raise PluginError(f"plugin {impl.plugin_name!r} implements observer hook {hook!r} as a wrapper; "
                                  "observers are plain implementations", details={"plugin": impl.plugin_name,
                                                                                  "hook": hook})


def _plugin_name(plugin: Any) -> str:
    """A client plugin's name: its ``name`` or ``__name__`` string, else its class name."""
    for attr in ("name", "__name__"):
        value = getattr(plugin, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(plugin).__name__


def _unique(name: str, taken: set[str]) -> str:
    """Two instances of one plugin class (two tracers, say) both register: the second is ``name-2``."""
    candidate, n = name, 2
    while candidate in taken:
        candidate, n = f"{name}-{n}", n + 1
    taken.add(candidate)
    return candidate


def _check_names(name: str, plugin: Any, known: set[str]) -> None:
    """Fail loudly on a ``hermes_*`` attribute that is not a hook, or a hook left unmarked.

    pluggy only sees marked functions, so a misspelt or unmarked implementation would otherwise
    be silently ignored (a tracer that never traces, a store that is never asked).
    """
    for attr in dir(plugin):
        if not attr.startswith(HOOK_PREFIX):
            continue
        try:
            value = getattr(plugin, attr)
        except Exception:
            continue
        if not callable(value):
            continue
        if attr not in known:
            raise PluginError(f"plugin {name!r} implements an unknown hook {attr!r}",
                              details={"plugin": name, "hook": attr})
        if not hasattr(value, "hermes_sdk_impl"):
            raise PluginError(f"plugin {name!r} defines {attr!r} without the hermes_sdk.hookimpl marker",
                              details={"plugin": name, "hook": attr})


def plugin_name_for(pm: pluggy.PluginManager, exc: BaseException) -> str:
    """Find which plugin's code raised, from the traceback (only on the failure path)."""
    codes = {}
    for name, plugin in pm.list_name_plugin():
        for hook_caller in pm.get_hookcallers(plugin) or ():
            for impl in hook_caller.get_hookimpls():
                if impl.plugin is plugin:
                    codes[getattr(impl.function, "__code__", None)] = name
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        if frame.f_code in codes:
            return codes[frame.f_code]
    return "unknown"


def call_pipeline(pm: pluggy.PluginManager, hook: str, **kwargs: Any) -> Any:
    """Call a pipeline hook; a plugin's own failure becomes a PluginError that names it."""
    try:
        return getattr(pm.hook, hook)(**kwargs)
    except HermesError:
        raise
    except Exception as exc:
        name = plugin_name_for(pm, exc)
        # If the call already reached the transport, a wrapper that failed afterwards must not make
        # the SDK forget the idempotency record: the remote work may have happened.
        sent = any(getattr(value, "executed", False) is True for value in kwargs.values())
        raise PluginError(f"plugin {name!r} failed in {hook}: {type(exc).__name__}",
                          details={"plugin": name, "hook": hook, "exception": type(exc).__name__},
                          uncertain_outcome=sent) from exc


#: The innermost step of each around-hook in flight, by the id of the object the hooks receive.
#: Kept here, not on that object, so a hook cannot reach the call (its credential, its input)
#: through what it is given.
_inner: dict[int, Callable[[], Any]] = {}


def proceed(value: Any) -> Any:
    """Run the innermost step of the around-hook ``value`` was given to (the core plugin calls this)."""
    step = _inner.get(id(value))
    if step is None:
        raise PluginError("the innermost hook step was called outside its call", details={"plugin": "hermes_sdk.core"})
    return step()


def around(pm: pluggy.PluginManager, hook: str, name: str, value: Any, inner: Callable[[], Any]) -> Any:
    """Call an around-hook with ``{name: value}`` whose innermost step is ``inner()``; skip pluggy
    when only built-ins would act (the logging wrapper acts only at DEBUG)."""
    impls = getattr(pm.hook, hook).get_hookimpls()
    if len(impls) <= 2 and all(type(i.plugin) in _BUILTIN_TYPES for i in impls) \
            and not log.isEnabledFor(logging.DEBUG):
        try:
            return inner()
        except HermesError:
            raise
        except Exception as exc:  # a bug in the core: typed like any plugin failure, never raw
            raise PluginError(f"plugin 'hermes_sdk.core' failed in {hook}: {type(exc).__name__}",
                              details={"plugin": "hermes_sdk.core", "hook": hook,
                                       "exception": type(exc).__name__},
                              uncertain_outcome=value.executed is True) from exc
    key = id(value)
    _inner[key] = inner
    try:
        return call_pipeline(pm, hook, **{name: value})
    finally:
        _inner.pop(key, None)


def observed(pm: pluggy.PluginManager, hook: str) -> bool:
    """Whether calling observer ``hook`` could have any effect, so its redacted payload is worth building.

    False only when its sole implementations are the built-in logging plugin's and DEBUG is off
    (those implementations do nothing then).
    """
    for impl in getattr(pm.hook, hook).get_hookimpls():
        if type(impl.plugin) is not LoggingPlugin or log.isEnabledFor(logging.DEBUG):
            return True
    return False


def notify(pm: pluggy.PluginManager, hook: str, **kwargs: Any) -> None:
    """Call an observer hook; each failing observer is logged and skipped."""
    for impl in getattr(pm.hook, hook).get_hookimpls():
        try:
            impl.function(**{k: kwargs[k] for k in impl.argnames})
        except Exception as exc:
            log.warning("hermes_sdk plugin %r failed in %s: %s", impl.plugin_name, hook, type(exc).__name__)


def describe(pm: pluggy.PluginManager) -> list[dict[str, Any]]:
    """The loaded plugins and their hooks, for ``hermes-sdk plugins``."""
    dists = {id(plugin): dist for plugin, dist in pm.list_plugin_distinfo()}
    out = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None:
            continue
        hooks = sorted(h.name for h in pm.get_hookcallers(plugin) or ())
        entry: dict[str, Any] = {"name": name, "hooks": hooks}
        dist = dists.get(id(plugin))
        if dist is not None:
            entry["distribution"] = getattr(dist, "project_name", None)
        ep_names = {ep.name: (ep, ep_dist) for ep, ep_dist in _entry_points()}
        if name in ep_names:
            ep, ep_dist = ep_names[name]
            entry["entry_point"] = ep.value
            if ep_dist is not None:
                entry["distribution"] = ep_dist.metadata["Name"]
                entry["version"] = ep_dist.version
            entry["builtin"] = False
        else:
            entry["builtin"] = name.startswith("hermes_sdk.")
        out.append(entry)
    return out


def main(argv: Optional[list[str]] = None) -> int:
    """``python -m hermes_sdk.plugins``: print the loaded plugins and their hooks as JSON; return 0."""
    pm = build_manager()
    json.dump(describe(pm), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
