"""The plugin manager: built-ins first, then installed entry points, then the client's own plugins.

(Formerly ``hermes_sdk.plugins``, one letter from :mod:`hermes_sdk.plugin`, the plugin author's API.)

Environment switches (the escape hatch when an installed plugin breaks):

* ``HERMES_SDK_PLUGINS=a,b`` loads only those entry points (empty: none);
* ``HERMES_SDK_DISABLE_PLUGINS=a,b`` blocks plugins by name, built-ins included.

Run ``hermes-sdk plugins`` (or ``python -m hermes_sdk plugins``) to print what loads, as JSON.
"""

from __future__ import annotations

import contextvars
import functools
import importlib.metadata
import json
import logging
import os
import sys
import time
import traceback
from importlib.metadata import Distribution, EntryPoint
from types import CodeType
from typing import Callable, Generator, Iterable, Mapping, Optional, Protocol, TypeVar, cast

import pluggy

from .. import hookspecs
from ..errors import HermesError, PluginError
from ..hookspecs import hookimpl
from ._deprecation import deprecated
from ._detach import detach
from .exchange import Attempt
from .idempotency import IdempotencyStore, store_from_url
from .recorders import raised_by_test_double
from .view import CallView

log = logging.getLogger("hermes_sdk")


class Plugin(Protocol):
    """A plugin: any object or module whose ``hermes_*`` attributes are ``@hookimpl``-marked hook
    implementations (pluggy finds them by their mark, not by a base class, so any object has this type).

    Registration checks the rest: an object given to ``HermesClient(plugins=[...])`` or named by an
    entry point that implements no hook, a ``hermes_*`` name that is no hook of :mod:`hermes_sdk.hookspecs`,
    an unmarked one or a signature that does not fit its hook is a :class:`~hermes_sdk.PluginError` at
    construction.
    """


#: What an around-hook wrapper is (``@hookimpl(wrapper=True)``): a generator that yields once and is sent the result.
Wrapper = Generator[None, object, object]
ENTRY_POINT_GROUP = "hermes_sdk"
HOOK_PREFIX = "hermes_"
#: The around-hooks and the name of their one argument.
AROUND_HOOKS = {"hermes_call": "call", "hermes_http_attempt": "attempt"}
#: Observers: each implementation is guarded (a failure is logged and the next observer runs).
OBSERVER_HOOKS = ("hermes_stream_event", "hermes_call_result")
#: Former hook and argument names -> current ones: implementations under them still work, with a
#: DeprecationWarning when the plugin is registered.
RENAMED_HOOKS = {"hermes_invocation": "hermes_call", "hermes_action_result": "hermes_call_result"}
RENAMED_ARGS = {"invocation": "call"}
R = TypeVar("R")


class CorePlugin:
    """The innermost implementations: actually execute invocations and attempts; built-in stores."""

    @hookimpl(trylast=True)
    def hermes_call(self, call: CallView) -> object:
        """Execute the call, or return its recorded outcome: the innermost implementation."""
        return _proceed(call)

    @hookimpl(trylast=True)
    def hermes_http_attempt(self, attempt: Attempt) -> object:
        """Send the attempt: the innermost implementation (the core checks it got its own reply back)."""
        return _proceed(attempt)

    @hookimpl(trylast=True)
    def hermes_idempotency_store(self, url: str) -> Optional[IdempotencyStore]:
        """The built-in stores for ``memory:`` and ``sqlite:///path``; None for other schemes."""
        return store_from_url(url)


class LoggingPlugin:
    """One redacted DEBUG line per HTTP attempt and per action result on the ``hermes_sdk`` logger."""

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Attempt) -> Wrapper:
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
    def hermes_call_result(self, call: CallView, result: Mapping[str, object]) -> None:
        """Log the call's attributes, status, error code and duration at DEBUG."""
        if log.isEnabledFor(logging.DEBUG):
            error = result.get("error")
            log.debug("hermes_sdk.action %s", json.dumps({
                **call.attributes, "status": result.get("status"), "replayed": result.get("replayed"),
                "code": error.get("code") if isinstance(error, Mapping) else None,
                "http_status": result.get("http_status"),
                "duration_ms": round((time.time() - call.started_at) * 1000, 3)}))


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


BUILTINS = (("hermes_sdk.core", CorePlugin), ("hermes_sdk.logging", LoggingPlugin))
_BUILTIN_TYPES = (CorePlugin, LoggingPlugin)
#: Every built-in plugin class, the default families plugin too (loaded by name, it marks itself):
#: none reads what hooks are given, so none makes a call build what only an outsider reads.
_builtin_types: set[type] = set(_BUILTIN_TYPES)


def mark_builtin(kind: type) -> None:
    """Count plugins of class ``kind`` as built-in (the kernel loads the default plugin by name)."""
    _builtin_types.add(kind)


def _names(var: str) -> Optional[set[str]]:
    value = os.environ.get(var)
    if value is None:
        return None
    return {n.strip() for n in value.split(",") if n.strip()}


@functools.lru_cache(maxsize=1)
def _entry_points() -> tuple[tuple[EntryPoint, Distribution], ...]:
    """(entry point, distribution) pairs, discovered once per process: scanning is slow.

    Walks distributions rather than ``entry_points()`` because Python 3.9's entry points do not
    know their distribution; the first distribution on sys.path wins a duplicated name.
    """
    found: list[tuple[EntryPoint, Distribution]] = []
    seen: set[str] = set()
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group == ENTRY_POINT_GROUP and ep.name not in seen:
                seen.add(ep.name)
                found.append((ep, dist))
    return tuple(found)


_loaded: dict[str, object] = {}


def _load(ep: EntryPoint) -> object:
    if ep.name not in _loaded:
        try:
            _loaded[ep.name] = ep.load()
        except Exception as exc:
            raise PluginError(f"plugin {ep.name!r} failed to load: {type(exc).__name__}: {exc}",
                              details={"plugin": ep.name}) from exc
    return _loaded[ep.name]


def build_manager(plugins: Iterable[Plugin] = (), load_entrypoints: bool = True) -> pluggy.PluginManager:
    """A plugin manager for one client. A misspelt hook or bad signature fails here, naming the plugin."""
    pm = _Manager("hermes_sdk")
    pm.add_hookspecs(hookspecs)
    blocked = _names("HERMES_SDK_DISABLE_PLUGINS") or set()
    for name in blocked:
        pm.set_blocked(name)
    candidates: list[tuple[str, object]] = [(name, klass()) for name, klass in BUILTINS]
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
    known = {n for n in dir(hookspecs) if n.startswith(HOOK_PREFIX)} | set(RENAMED_HOOKS)
    for index, (name, plugin) in enumerate(candidates):
        if pm.is_blocked(name):
            continue
        if not _check_names(name, plugin, known) and index >= len(BUILTINS):  # an entry point's or the client's
            raise PluginError(f"plugin {name!r} implements no hook: a plugin is an object or module with "
                              "@hookimpl-marked hermes_* methods (see hermes_sdk.hookspecs)",
                              details={"plugin": name})
        try:
            pm.register(plugin, name=name)
        except (pluggy.PluginValidationError, ValueError) as exc:
            raise PluginError(f"plugin {name!r} is invalid: {exc}", details={"plugin": name}) from exc
    _refuse_wrappers(pm, "hermes_redaction_filters")
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        plugin_name = pm.get_name(exc.plugin) if exc.plugin is not None else "unknown"
        raise PluginError(f"plugin {plugin_name!r} implements an unknown hook: {exc}",
                          details={"plugin": plugin_name}) from exc
    return pm


class _Companion:
    """Registered beside a plugin, under ``"<name> (adapted)"``: its observers, each guarded so that
    one failing observer cannot stop the others, and its hooks under former names or argument names.
    pluggy calls these in its own order (``tryfirst`` first), with its tracing and monitoring."""

    def __init__(self, owner_name: str, owner: object) -> None:
        self.owner_name = owner_name
        self.owner = owner
        self.codes: list[Optional[CodeType]] = []  # the adapted functions' code, so a failure still names the owner


class _Manager(pluggy.PluginManager):
    """pluggy's manager, with observers and renamed hooks registered through a :class:`_Companion`."""

    def __init__(self, project_name: str) -> None:
        super().__init__(project_name)
        self._companions: dict[str, _Companion] = {}

    def parse_hookimpl_opts(self, plugin: object, name: str) -> Optional[pluggy.HookimplOpts]:
        opts = super().parse_hookimpl_opts(plugin, name)
        if opts is None or isinstance(plugin, _Companion) or not _adapted(self, plugin, name, opts):
            return opts
        return None  # registered through the plugin's companion instead

    def register(self, plugin: object, name: Optional[str] = None) -> Optional[str]:
        plugin_name = super().register(plugin, name)
        if plugin_name is None or isinstance(plugin, _Companion):
            return plugin_name
        try:
            companion = _companion_for(self, plugin, plugin_name)
            if companion is not None:
                super().register(companion, name=f"{plugin_name} (adapted)")
        except BaseException:  # all or nothing: the plugin is not left half registered
            super().unregister(plugin)
            raise
        if companion is not None:
            self._companions[plugin_name] = companion
        return plugin_name

    def unregister(self, plugin: Optional[object] = None, name: Optional[str] = None) -> object:
        removed = super().unregister(plugin, name)
        for key, companion in list(self._companions.items()):
            if companion.owner is removed:
                super().unregister(companion)
                del self._companions[key]
        return removed


def _adapted(pm: pluggy.PluginManager, plugin: object, name: str, opts: pluggy.HookimplOpts) -> bool:
    """Whether this implementation is registered through the companion: an observer, or a former
    hook or argument name (only ``hermes_call`` and the observers had one)."""
    if name in OBSERVER_HOOKS or name in RENAMED_HOOKS:
        return True
    return name == "hermes_call" and bool(set(_argnames(plugin, name, opts)) & set(RENAMED_ARGS))


def _argnames(plugin: object, name: str, opts: pluggy.HookimplOpts) -> tuple[str, ...]:
    return tuple(pluggy.HookImpl(plugin, "", getattr(plugin, name), opts).argnames)


def _companion_for(pm: _Manager, plugin: object, plugin_name: str) -> Optional[_Companion]:
    companion = _Companion(plugin_name, plugin)
    for attr in dir(plugin):
        if not attr.startswith(HOOK_PREFIX):
            continue
        opts = pluggy.PluginManager.parse_hookimpl_opts(pm, plugin, attr)
        if opts is None or not _adapted(pm, plugin, attr, opts):
            continue
        hook = RENAMED_HOOKS.get(attr, attr)
        args = _argnames(plugin, attr, opts)
        renamed = tuple(RENAMED_ARGS.get(a, a) for a in args)
        if hook != attr or renamed != args:
            deprecated(f"plugin {plugin_name!r}: {attr}({', '.join(args)}) is deprecated; implement "
                               f"{hook}({', '.join(renamed)})", stacklevel=4)
        spec = getattr(pm.hook, hook).spec
        unknown = set(renamed) - set(spec.argnames if spec is not None else ())
        if unknown:
            raise PluginError(f"plugin {plugin_name!r} is invalid: {attr} asks for {sorted(unknown)}, which the "
                              f"hook does not give", details={"plugin": plugin_name, "hook": hook})
        if hook in OBSERVER_HOOKS and (opts.get("wrapper") or opts.get("hookwrapper")):
            raise PluginError(f"plugin {plugin_name!r} implements observer hook {hook!r} as a wrapper; "
                              "observers are plain implementations", details={"plugin": plugin_name, "hook": hook})
        if hook in vars(companion):
            raise PluginError(f"plugin {plugin_name!r} implements {hook} twice (under its former name too)",
                              details={"plugin": plugin_name, "hook": hook})
        function = getattr(plugin, attr)
        companion.codes.append(getattr(function, "__code__", None))
        setattr(companion, hook, _adapter(function, renamed, opts, plugin_name, hook))
    return companion if companion.codes else None


def _adapter(function: Callable[..., object], args: tuple[str, ...], opts: pluggy.HookimplOpts, owner: str,
             hook: str) -> Callable[..., object]:
    """``function`` under the hook's current argument names (pluggy reads them from the code, so one
    adapter per hook); an observer's failure is logged and swallowed."""
    names = ("call", "result" if hook == "hermes_call_result" else "event")
    picks = tuple(names.index(a) for a in args)

    def observe(call: CallView, second: object) -> None:
        try:
            if picks == (0, 1):  # the usual shape: no reordering on the per-event path
                function(call, second)
            else:
                values = (call, second)
                function(*[values[i] for i in picks])
        except Exception as exc:
            log.warning("hermes_sdk plugin %r failed in %s: %s", owner, hook, type(exc).__name__)

    adapter: Callable[..., object]
    if hook == "hermes_stream_event":
        def adapter(call: CallView, event: object) -> None:
            observe(call, event)
    elif hook == "hermes_call_result":
        def adapter(call: CallView, result: object) -> None:
            observe(call, result)
    elif opts.get("wrapper") or opts.get("hookwrapper"):
        wrapper = cast("Callable[..., Wrapper]", function)  # marked a wrapper: a generator function

        def adapter(call: CallView) -> Wrapper:
            return (yield from wrapper(*[call for _ in picks]))
    else:
        def adapter(call: CallView) -> object:
            return function(*[call for _ in picks])
    adapter.__dict__["hermes_sdk_impl"] = dict(opts)  # the marker pluggy looks for
    return adapter


def _owner(plugin: object) -> object:
    return plugin.owner if isinstance(plugin, _Companion) else plugin


def _refuse_wrappers(pm: pluggy.PluginManager, hook: str) -> None:
    """A wrapper on an every-result hook would wrap nothing useful: refused rather than ignored."""
    for impl in getattr(pm.hook, hook).get_hookimpls():
        if impl.hookwrapper or getattr(impl, "wrapper", False):
            raise PluginError(f"plugin {impl.plugin_name!r} implements {hook!r} as a wrapper; it takes plain "
                              "implementations", details={"plugin": impl.plugin_name, "hook": hook})


def _plugin_name(plugin: object) -> str:
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


def _check_names(name: str, plugin: object, known: set[str]) -> int:
    """Fail loudly on a ``hermes_*`` attribute that is not a hook, or a hook left unmarked; return how
    many hooks the plugin implements.

    pluggy only sees marked functions, so a misspelt or unmarked implementation would otherwise
    be silently ignored (a tracer that never traces, a store that is never asked).
    """
    implemented = 0
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
        implemented += 1
    return implemented


def plugin_name_for(pm: pluggy.PluginManager, exc: BaseException) -> str:
    """Find which plugin's code raised, from the traceback (only on the failure path).

    By identity: code objects compare by value, so two plugins whose hooks read alike (the same
    source in two packages) have equal ones; a frame is matched to the very code object of a hook,
    and when several plugins share it (two instances of one class), to the one its ``self`` is.
    """
    codes: dict[int, list[tuple[object, str]]] = {}  # id(code) -> (plugin, name) of every hook using it
    for name, plugin in pm.list_name_plugin():
        if isinstance(plugin, _Companion):
            for code in plugin.codes:
                codes.setdefault(id(code), []).append((plugin.owner, plugin.owner_name))
            continue
        for hook_caller in pm.get_hookcallers(plugin) or ():
            for impl in hook_caller.get_hookimpls():
                if impl.plugin is plugin:
                    codes.setdefault(id(getattr(impl.function, "__code__", None)), []).append((plugin, name))
    for frame, _ in reversed(list(traceback.walk_tb(exc.__traceback__))):
        owners = codes.get(id(frame.f_code))
        if owners:
            if len(owners) == 1:
                return owners[0][1]
            this = frame.f_locals.get("self")
            return next((name for plugin, name in owners if plugin is this), owners[0][1])
    return "unknown"


def _unsent() -> bool:
    return False


def call_pipeline(pm: pluggy.PluginManager, hook: str, sent: Callable[[], bool] = _unsent,
                  **kwargs: object) -> object:
    """Call a pipeline hook; a plugin's own failure becomes a PluginError that names it.

    ``sent()`` tells, from the SDK's own record (never from what hooks were given), whether the
    request may have left: then the failure's outcome is uncertain and the idempotency record stays.
    """
    try:
        return getattr(pm.hook, hook)(**kwargs)
    except HermesError:
        raise
    except Exception as exc:
        if raised_by_test_double(exc):  # a replay miss, an unmatched mock: reaches the test as raised
            raise
        name = plugin_name_for(pm, exc)
        raise PluginError(f"plugin {name!r} failed in {hook}: {type(exc).__name__}",
                          details={"plugin": name, "hook": hook, "exception": type(exc).__name__},
                          uncertain_outcome=sent()) from exc


class _Step:
    """The innermost step of one around-hook call: runs once, for the object it was made for."""

    __slots__ = ("value", "run", "ran")

    def __init__(self, value: object, run: Callable[[], object]) -> None:
        self.value = value
        self.run = run
        self.ran = False


#: The innermost step of the around-hook call in flight in this thread or task. The hook argument
#: holds no way to it (so no way to the call, its credential or its input).
_STEP: "contextvars.ContextVar[Optional[_Step]]" = contextvars.ContextVar("hermes_sdk_innermost", default=None)


def _proceed(value: object) -> object:
    """Run the innermost step of the around-hook ``value`` was given to (the core plugin calls this),
    once: a wrapper that calls it again, or outside its call, is refused."""
    step = _STEP.get()
    if step is None or step.value is not value:
        raise PluginError("the innermost hook step was called outside its call", details={"plugin": "hermes_sdk.core"})
    if step.ran:
        raise PluginError("the innermost hook step already ran: a call is sent once",
                          details={"plugin": "hermes_sdk.core"})
    step.ran = True
    # This frame is the top of the traceback the wrappers outside are handed: it must hold no way
    # to the step (its closure holds the Call and the endpoint's key) when the error leaves it.
    run = step.run
    step = None
    try:
        return run()
    except Exception as exc:
        del run
        # The wrappers outside see neither the frames below (they hold the Call, its headers and
        # the PreparedRequest) nor a chained requests exception.
        raise detach(exc)  # noqa: B904 (the same error again: its own cause stays)


def _only_builtins(pm: pluggy.PluginManager, hook: str) -> bool:
    """Whether only the built-ins implement ``hook`` and would act (the logging wrapper: at DEBUG)."""
    impls = getattr(pm.hook, hook).get_hookimpls()
    return len(impls) <= 2 and all(type(i.plugin) in _BUILTIN_TYPES for i in impls) \
        and not log.isEnabledFor(logging.DEBUG)


def around(pm: pluggy.PluginManager, hook: str, value: object, inner: Callable[[], R],
           sent: Callable[[], bool], present: Optional[Callable[[R], object]] = None) -> object:
    """Call around-hook ``hook`` with ``value`` (its one argument) whose innermost step is ``inner()``,
    run at most once; skip pluggy when only built-ins would act. ``sent()`` is the SDK's own record of
    whether the request may have left (a failure's ``uncertain_outcome``); hooks get ``present(result)``
    instead of what ``inner()`` returned (a sealed view), and pluggy's answer is returned."""
    if _only_builtins(pm, hook):
        try:
            return inner()
        except HermesError:
            raise
        except Exception as exc:  # a bug in the core: typed like any plugin failure, never raw
            if raised_by_test_double(exc):
                raise
            raise PluginError(f"plugin 'hermes_sdk.core' failed in {hook}: {type(exc).__name__}",
                              details={"plugin": "hermes_sdk.core", "hook": hook,
                                       "exception": type(exc).__name__},
                              uncertain_outcome=sent()) from detach(exc)
    step = inner if present is None else (lambda: present(inner()))
    token = _STEP.set(_Step(value, step))
    try:
        return call_pipeline(pm, hook, sent, **{AROUND_HOOKS[hook]: value})
    finally:
        _STEP.reset(token)


def observed(pm: pluggy.PluginManager, hook: str) -> bool:
    """Whether calling observer ``hook`` could have any effect, so its redacted payload is worth building.

    False only when its sole implementations are the built-in logging plugin's and DEBUG is off
    (those implementations do nothing then).
    """
    for impl in getattr(pm.hook, hook).get_hookimpls():
        if type(_owner(impl.plugin)) is not LoggingPlugin or log.isEnabledFor(logging.DEBUG):
            return True
    return False


def outsiders(pm: pluggy.PluginManager) -> bool:
    """Whether a plugin other than the built-ins is registered (someone may read what hooks are given)."""
    return any(plugin is not None and type(_owner(plugin)) not in _builtin_types
               for _, plugin in pm.list_name_plugin())


def notify(pm: pluggy.PluginManager, hook: str, **kwargs: object) -> None:
    """Call an observer hook through pluggy, in its order; each observer is guarded (its failure is
    logged and the next one runs: see :class:`_Companion`)."""
    try:
        getattr(pm.hook, hook)(**kwargs)
    except Exception as exc:  # registered around build_manager's checks: still never fails the call
        log.warning("hermes_sdk plugin %r failed in %s: %s", plugin_name_for(pm, exc), hook, type(exc).__name__)


def describe(pm: pluggy.PluginManager) -> list[dict[str, object]]:
    """The loaded plugins and their hooks, for ``hermes-sdk plugins``."""
    dists = {id(plugin): dist for plugin, dist in pm.list_plugin_distinfo()}
    adapted: dict[str, set[str]] = {}
    for _, plugin in pm.list_name_plugin():
        if isinstance(plugin, _Companion):
            adapted.setdefault(plugin.owner_name, set()).update(h.name for h in pm.get_hookcallers(plugin) or ())
    ep_names = {ep.name: (ep, ep_dist) for ep, ep_dist in _entry_points()}
    out = []
    for name, plugin in pm.list_name_plugin():
        if plugin is None or isinstance(plugin, _Companion):
            continue
        hooks = sorted({h.name for h in pm.get_hookcallers(plugin) or ()} | adapted.get(name, set()))
        entry: dict[str, object] = {"name": name, "hooks": hooks}
        dist = dists.get(id(plugin))
        if dist is not None:
            entry["distribution"] = getattr(dist, "project_name", None)
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
    """Print the loaded plugins and their hooks as JSON (``hermes-sdk plugins``); return 0."""
    pm = build_manager()
    json.dump(describe(pm), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0
