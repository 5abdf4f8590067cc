"""The public names come from one table (``hermes_sdk._TABLE``, issue 31): ``__all__``, the lazy map,
the imports type checkers read and ``hermes_sdk.types`` are all derived from it, and the top level
keeps what most programs name (the client, its configuration, errors, results)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import hermes_sdk
import hermes_sdk.types

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import exports  # noqa: E402


def test_the_written_imports_agree_with_the_table() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "exports.py"), "--check"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_name_added_to_the_table_alone_is_drift(monkeypatch: pytest.MonkeyPatch) -> None:
    table = hermes_sdk._TABLE + (("hermes_sdk._core.retry", "client", ("RetryPolicy",)),)
    monkeypatch.setattr(hermes_sdk, "_TABLE", table)
    stale = [path for path, text in exports.written().items() if path.read_text() != text]
    assert stale == [ROOT / "hermes_sdk" / "__init__.py"]


def test_each_name_is_listed_once_and_is_what_its_module_defines() -> None:
    names = [name for _module, _place, group in hermes_sdk._TABLE for name in group]
    assert [n for n, count in Counter(names).items() if count > 1] == []
    for module, place, group in hermes_sdk._TABLE:
        assert place in ("top", "client", "types"), place
        for name in group:
            value = getattr(importlib.import_module(module), name)
            if place != "types":
                assert getattr(hermes_sdk, name) is value, name
            if place != "client":
                assert getattr(hermes_sdk.types, name) is value, name


def test_all_is_the_tables_top_and_types_all_its_values() -> None:
    top = {n for _m, place, group in hermes_sdk._TABLE if place in ("top", "client") for n in group}
    values = {n for _m, place, group in hermes_sdk._TABLE if place in ("top", "types") for n in group}
    assert hermes_sdk.__all__ == sorted(top)
    assert hermes_sdk.types.__all__ == sorted(values)
    assert set(hermes_sdk.__all__) <= set(dir(hermes_sdk))


def test_the_top_keeps_the_client_configuration_errors_and_results() -> None:
    import hermes_sdk.errors

    top = set(hermes_sdk.__all__)
    assert {"HermesClient", "Endpoint", "ExecutionContext", "CallTimeout", "MemoryStore", "SQLiteStore",
            "ChatCompletion", "HermesResponse", "Run", "RunResult", "HermesSession", "StreamResult",
            "ActionResult", "DeletionReceipt"} <= top
    errors = {n for n in vars(hermes_sdk.errors) if n.endswith("Error") and not n.startswith("_")}
    assert errors - {"CancelledError"} <= top  # every error class
    events = (hermes_sdk.types.RunEvent, hermes_sdk.types.SessionEvent)
    assert [n for n in top if isinstance(getattr(hermes_sdk, n), type) and issubclass(getattr(hermes_sdk, n),
                                                                                       events)] == []
    assert len(top) < 118  # what 0.2.0.dev0 listed


@pytest.mark.parametrize("name", sorted(hermes_sdk._LEFT_THE_TOP))
def test_a_name_that_left_the_top_still_answers_there_with_its_removal_release(name: str) -> None:
    assert name not in hermes_sdk.__all__ and name in hermes_sdk.types.__all__
    pattern = rf"hermes_sdk\.{name} is in hermes_sdk\.types .*removed in hermes-sdk 0\.3\.0"
    with pytest.warns(DeprecationWarning, match=pattern):
        value = getattr(hermes_sdk, name)
    assert value is getattr(hermes_sdk.types, name)
    assert value.__module__ == "hermes_sdk.types"


def test_every_deprecation_goes_through_the_one_helper_that_names_the_removing_release() -> None:
    import ast

    found = []
    for path in (ROOT / "hermes_sdk").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name) and node.id == "DeprecationWarning":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == [f"hermes_sdk/_core/_deprecation.py:{_line_of_the_helper()}"]


def _line_of_the_helper() -> int:
    import inspect

    from hermes_sdk._core import _deprecation as _compat

    source, start = inspect.getsourcelines(_compat.deprecated)
    return start + next(i for i, line in enumerate(source) if "DeprecationWarning" in line)


def _old_hook(pm_name: str) -> None:
    from hermes_sdk import HermesClient, hookimpl

    class Old:
        @hookimpl
        def hermes_invocation(self, invocation: object) -> None:
            return None

    HermesClient("http://127.0.0.1:9", "k", plugins=[Old()], load_entrypoints=False).close()


SHIMS = {
    "old module path": lambda: importlib.import_module("hermes_sdk.transport"),
    "event at the top": lambda: hermes_sdk.RunCompleted,  # type: ignore[attr-defined]
    "plugin type at the top": lambda: hermes_sdk.Contract,  # type: ignore[attr-defined]
    "renamed": lambda: hermes_sdk.Timeout,  # type: ignore[attr-defined]
    "renamed error": lambda: importlib.import_module("hermes_sdk.errors").CancelledError,
    "CONTRACTS": lambda: importlib.import_module("hermes_sdk.plugin").CONTRACTS,
    "Invocation": lambda: importlib.import_module("hermes_sdk.plugin").Invocation,
    "internal Call": lambda: importlib.import_module("hermes_sdk.plugin").Call,
    "old hook": lambda: _old_hook("old"),
}


@pytest.mark.parametrize("shim", sorted(SHIMS))
def test_each_shim_names_the_release_that_removes_it(shim: str) -> None:
    for name in ("hermes_sdk.transport",):
        sys.modules.pop(name, None)
    with pytest.warns(DeprecationWarning, match=r"removed in hermes-sdk 0\.3\.0"):
        SHIMS[shim]()
