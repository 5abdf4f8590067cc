"""Old import paths and names, kept until 0.3.0 with a ``DeprecationWarning`` that says so.

Before 0.2 every implementation module sat at the top of ``hermes_sdk`` (``hermes_sdk.transport``,
``hermes_sdk.runs``...). They now live in the private ``hermes_sdk._core``; an import of the old
path gets the same module object (so ``mock.patch("hermes_sdk.runs.X")`` patches the real one) and
a warning that names the public home. No shim files: one finder answers every old path.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import typing
from types import ModuleType
from typing import TYPE_CHECKING, Iterable, Optional, Sequence, cast

if TYPE_CHECKING:  # importlib.abc imports importlib.resources: a cost on every start for a base class
    import importlib.abc

from .._core._deprecation import REMOVED_IN as REMOVED_IN
from .._core._deprecation import deprecated as deprecated

#: The modules and packages that moved from ``hermes_sdk.<name>`` to ``hermes_sdk._core.<name>``.
MOVED_MODULES = frozenset({
    "aggregate", "approval", "call", "capabilities", "cli", "client", "config", "convert", "deadline",
    "discovery", "endpoints", "events", "exchange", "executor", "idempotency", "jobs", "models", "operations",
    "operator", "options", "redaction", "resources", "retry", "runs", "runtime", "sessions", "sse", "stages",
    "streaming", "transport", "view",
})

#: Old paths whose module has since moved out of ``hermes_sdk._core`` (into a family's package).
RELOCATED = {
    "hermes_sdk.cli": "hermes_sdk._app.cli",
    "hermes_sdk.client": "hermes_sdk._app.client",
    "hermes_sdk.discovery": "hermes_sdk._families.discovery.types",
    "hermes_sdk.resources.discovery": "hermes_sdk._families.discovery.resource",
    "hermes_sdk.jobs": "hermes_sdk._families.jobs.types",
    "hermes_sdk.resources.jobs": "hermes_sdk._families.jobs.resource",
    "hermes_sdk.operations.jobs": "hermes_sdk._families.jobs.operations",
    "hermes_sdk.sessions": "hermes_sdk._families.sessions.types",
    "hermes_sdk.resources.sessions": "hermes_sdk._families.sessions.resource",
    "hermes_sdk.operations.sessions": "hermes_sdk._families.sessions.operations",
    "hermes_sdk.operations.chat": "hermes_sdk._families.chat.operations",
    "hermes_sdk.operations.responses": "hermes_sdk._families.responses.operations",
    "hermes_sdk.runs": "hermes_sdk._families.runs.types",
    "hermes_sdk.resources.runs": "hermes_sdk._families.runs.resource",
    "hermes_sdk.operations.runs": "hermes_sdk._families.runs.operations",
    "hermes_sdk.operator": "hermes_sdk._families.operator.types",
    "hermes_sdk.resources.operator": "hermes_sdk._families.operator.resource",
    "hermes_sdk.operations.operator": "hermes_sdk._families.operator.operations",
}

#: Public names (an old module's ``__all__``) that moved out of a module an old path still reaches:
#: set on the module when the old path is imported, so ``from hermes_sdk.jobs import Skill`` works.
_RUN_EVENTS = ("ApprovalResponded", "ReasoningAvailable", "RunCancelled", "RunCompleted", "RunEnded", "RunFailed",
               "RunInterrupted", "RunSteered", "SubagentEvent", "ToolCompleted", "ToolStarted", "parse_run_event")
RELOCATED_NAMES = {
    "hermes_sdk.jobs": {"Skill": "hermes_sdk._families.discovery.types"},
    "hermes_sdk.models": {
        **dict.fromkeys(("ChatCompletion", "ChatMessage", "Choice"), "hermes_sdk._families.chat.types"),
        **dict.fromkeys(("DeletionReceipt", "HermesResponse", "Response", "output_text"),
                        "hermes_sdk._families.responses.types"),
    },
    "hermes_sdk.convert": {"chat_completion": "hermes_sdk._families.chat.types",
                           "deletion_receipt": "hermes_sdk._families.responses.types",
                           "response": "hermes_sdk._families.responses.types"},
    "hermes_sdk.streaming": {"ChatStream": "hermes_sdk._families.chat.types",
                             "ResponseStream": "hermes_sdk._families.responses.types",
                             "RunEventStream": "hermes_sdk._families.runs.types"},
    "hermes_sdk.runs": {"Run": "hermes_sdk._families.runs.run", "choice_for": "hermes_sdk._families.runs.run"},
    "hermes_sdk.events": {name: "hermes_sdk._families.runs.events" for name in _RUN_EVENTS},
}

_HINT = "import from hermes_sdk, hermes_sdk.types, hermes_sdk.errors or hermes_sdk.plugin instead"
def new_home(old: str) -> str:
    """Where the module once at ``old`` (``hermes_sdk.runs``) lives now."""
    return RELOCATED.get(old, "hermes_sdk._core." + old[len("hermes_sdk."):])


def warn_moved(old: str) -> None:
    deprecated(f"{old} is private now (hermes_sdk._core); {_HINT}", stacklevel=3)


class _Alias:  # an importlib.abc.Loader
    _spec: Optional[importlib.machinery.ModuleSpec] = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warn_moved(spec.name)
        module = importlib.import_module(new_home(spec.name))
        for name, home in RELOCATED_NAMES.get(spec.name, {}).items():
            if not hasattr(module, name):
                setattr(module, name, getattr(importlib.import_module(home), name))
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The real module ran under its new name; importlib set the alias spec on it: put its own back.
        if self._spec is not None:
            module.__spec__ = self._spec
            module.__loader__ = self._spec.loader


class _MovedFinder:  # an importlib.abc.MetaPathFinder
    def find_spec(self, fullname: str, path: Optional[Sequence[str]],
                  target: Optional[ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if not fullname.startswith("hermes_sdk.") or fullname.split(".")[1] not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(fullname, cast("importlib.abc.Loader", _Alias()))


def install() -> None:
    if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
        sys.meta_path.append(_MovedFinder())  # last: the real paths are always found first


def moved_module(name: str) -> Optional[ModuleType]:
    """``hermes_sdk.<name>`` as an attribute (``import hermes_sdk; hermes_sdk.runs``)."""
    if name not in MOVED_MODULES:
        return None
    return importlib.import_module(f"hermes_sdk.{name}")


#: Where implementation lives (the kernel, the families, the application layer: the client, the CLI).
_PRIVATE = ("hermes_sdk._core", "hermes_sdk._families", "hermes_sdk._app")


def rehome(namespace: dict[str, object], names: Iterable[str], module: str) -> None:
    """Give exported classes and functions the public module as ``__module__`` (as httpx and openai do).

    A class's string annotations are resolved first, in its defining module, so
    ``typing.get_type_hints`` and cattrs keep working once ``__module__`` names the public home; a
    class whose annotations cannot be resolved at run time keeps its own module.
    """
    for name in names:
        obj = namespace.get(name)
        if not isinstance(obj, type) and not callable(obj):
            continue
        if not getattr(obj, "__module__", "").startswith(_PRIVATE):
            continue
        if isinstance(obj, type):
            try:
                hints = typing.get_type_hints(obj)
            except Exception:  # a TYPE_CHECKING-only name: a value class keeps its module, cattrs needs it
                import attrs  # here, not at the top: `import hermes_sdk` stays cheap

                if attrs.has(obj):
                    continue
                hints = {}
            own = obj.__dict__.get("__annotations__")
            if own:
                obj.__annotations__ = {k: hints.get(k, v) for k, v in own.items()}
        try:
            obj.__module__ = module
        except (AttributeError, TypeError):
            continue
