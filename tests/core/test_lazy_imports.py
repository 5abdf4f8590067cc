"""``import hermes_sdk`` and the pytest plugin import nothing until a name is used (issue 24).

pytest loads ``hermes_sdk.testing.pytest_plugin`` (the ``pytest11`` entry point) at every start
wherever hermes-sdk is installed: it used to import the whole SDK and emulator, about 0.3 s of CPU
per pytest run. The exported names are resolved on first use (PEP 562), from maps that must name
what the type checkers' imports name.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import hermes_sdk
import hermes_sdk.testing

ROOT = Path(__file__).resolve().parents[2]


def _loaded_after(code: str) -> set[str]:
    probe = (f"import sys\n{code}\nimport json\n"
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('hermes_sdk'))))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT,
                         timeout=120)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_the_pytest_plugin_loads_neither_the_sdk_nor_the_emulator() -> None:
    assert _loaded_after("import hermes_sdk.testing.pytest_plugin") == {
        "hermes_sdk", "hermes_sdk._version", "hermes_sdk._core", "hermes_sdk._core._deprecation", "hermes_sdk._app",
        "hermes_sdk._app._compat", "hermes_sdk.testing",
        "hermes_sdk.testing.pytest_plugin"}
    assert _loaded_after("import hermes_sdk") == {"hermes_sdk", "hermes_sdk._version", "hermes_sdk._core",
                                                  "hermes_sdk._core._deprecation", "hermes_sdk._app",
                                                  "hermes_sdk._app._compat"}


def test_a_name_is_imported_on_first_use() -> None:
    loaded = _loaded_after("from hermes_sdk import HermesClient")
    assert {"hermes_sdk._app.client", "hermes_sdk._core.transport"} <= loaded
    assert not any(m.startswith("hermes_sdk.testing") for m in loaded)
    assert "hermes_sdk._app.client" not in _loaded_after("from hermes_sdk.testing import FaultServer")


def _type_checking_imports(module: ModuleType) -> dict[str, tuple[str, ...]]:
    tree = ast.parse(Path(module.__file__ or "").read_text())
    guard = next(n for n in tree.body if isinstance(n, ast.If) and getattr(n.test, "id", "") == "TYPE_CHECKING")
    return {n.module or "": tuple(a.name for a in n.names) for n in guard.body if isinstance(n, ast.ImportFrom)}


@pytest.mark.parametrize("module", [hermes_sdk.testing], ids=lambda m: m.__name__)  # hermes_sdk: test_exports
def test_the_lazy_map_names_what_type_checkers_see(module: ModuleType) -> None:
    where = module._EXPORTS  # type: ignore[attr-defined]
    assert _type_checking_imports(module) == where
    assert sorted(module.__all__) == sorted(name for names in where.values() for name in names)
    for name in module.__all__:
        value = getattr(module, name)
        where_name = where_of(where, name)
        absolute = where_name if where_name.startswith("hermes_sdk") else f"{module.__name__}.{where_name}"
        assert value is getattr(importlib.import_module(absolute), name)
        assert name in dir(module)


def where_of(where: dict[str, tuple[str, ...]], name: str) -> str:
    return next(mod for mod, names in where.items() if name in names)


def test_submodules_and_unknown_names_behave_as_before() -> None:
    assert hermes_sdk.transport is importlib.import_module("hermes_sdk._core.transport")
    with pytest.raises(AttributeError, match="no attribute 'sesions'"):
        hermes_sdk.sesions  # noqa: B018
    with pytest.raises(AttributeError):
        hermes_sdk.testing.nothing  # noqa: B018
    with pytest.warns(DeprecationWarning, match="moved to hermes_sdk.plugin"):
        assert hermes_sdk.Contract is importlib.import_module("hermes_sdk.plugin").Contract


def test_the_emulator_client_is_a_hermes_client(hermes_emulator) -> None:  # type: ignore[no-untyped-def]
    with hermes_emulator.client(timeout=5) as client:
        assert isinstance(client, hermes_sdk.HermesClient)
        assert client.chat(prompt="hello").text
