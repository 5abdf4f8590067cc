"""Deprecated: the plugin manager is internal now. Plugin authors import :mod:`hermes_sdk.plugin`
(one letter away: the reason for the move); ``hermes-sdk plugins`` prints what loads."""

from __future__ import annotations

from .._core import _deprecation as _compat
from .._core._plugin_manager import (  # noqa: F401  (the names this module had)
    BUILTINS,
    ENTRY_POINT_GROUP,
    HOOK_PREFIX,
    CorePlugin,
    LoggingPlugin,
    build_manager,
    call_pipeline,
    describe,
    main,
    notify,
    observed,
    plugin_name_for,
)

_PRIVATE = {"_proceed", "_STEP", "_Step"}  # the innermost step of a hook is nobody's to call


def __getattr__(name: str) -> object:
    from .._core import _plugin_manager

    if name in _PRIVATE or not hasattr(_plugin_manager, name):
        raise AttributeError(f"module 'hermes_sdk.plugins' has no attribute {name!r}")
    return getattr(_plugin_manager, name)


_compat.deprecated("hermes_sdk.plugins is deprecated: plugin authors use hermes_sdk.plugin; `hermes-sdk plugins` "
                   "prints what loads")
