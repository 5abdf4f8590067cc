"""tools/metrics.py counts what design-review.md counts (CI prints its figures: tox -e metrics)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _metrics() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hermes_metrics_tool", ROOT / "tools" / "metrics.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # NamedTuple classes need their module registered
    spec.loader.exec_module(module)
    return module


metrics = _metrics()


def test_any_is_counted_in_annotations_only() -> None:
    source = '''
import typing
from typing import Any, Optional, cast

def f(a: Any, *args: Any, b: "Optional[Any]" = None, **kw: typing.Any) -> dict[str, Any]:
    x: Any = cast(Any, a)        # the AnnAssign counts, the cast does not
    y = Any                      # not an annotation
    z: "list[Literal['Any']]" = []  # a string inside a quoted annotation is no name
    return {}

class C:
    field: Any
    other: int
'''
    # a, args, b (quoted), kw (attribute), the return, x, field
    assert metrics.count_any(source) == 7


def test_an_alias_holding_any_counts_at_every_use() -> None:
    aliases_source = """
from typing import Any, Callable, Mapping
JSONDict = dict[str, Any]
Hook = Callable[[Any], Any]
Plain = Mapping[str, object]   # no Any: not an alias that hides one
"""
    aliases = metrics.type_aliases([aliases_source])
    assert aliases == {"JSONDict": 1, "Hook": 2}
    source = """
def f(a: JSONDict, b: "Optional[Hook]", c: Plain) -> list[JSONDict]:
    x: JSONDict = {}
    return []
"""
    # a (1), b (2, quoted), the return (1), x (1); Plain hides nothing
    assert metrics.count_any(source, aliases) == 5
    assert metrics.count_any(source) == 0


def test_public_modules_are_counted_at_the_top_of_the_package(tmp_path: Path) -> None:
    pkg = tmp_path / "hermes_sdk"
    (pkg / "errors").mkdir(parents=True)
    (pkg / "_impl").mkdir()
    for name in ("__init__.py", "__main__.py", "client.py", "_private.py", "errors/__init__.py",
                 "_impl/__init__.py", "_impl/visible.py"):
        (pkg / name).write_text("")
    assert metrics.top_public_modules(tmp_path) == ["hermes_sdk.client", "hermes_sdk.errors"]
    assert not metrics.is_public("hermes_sdk._impl.visible")  # inside a private package
    assert metrics.is_public("hermes_sdk")


def test_imports_are_resolved_to_modules(tmp_path: Path) -> None:
    pkg = tmp_path / "hermes_sdk"
    (pkg / "plugins").mkdir(parents=True)
    for name in ("__init__.py", "plugins/__init__.py", "redaction.py", "plugin.py"):
        (pkg / name).write_text("")
    source = ("from hermes_sdk import HermesClient, plugins\nimport hermes_sdk.redaction\n"
              "from hermes_sdk.plugin import hookimpl\nimport os\nfrom . import local\n")
    found = sorted(metrics.imported_modules(source, tmp_path))
    assert found == [(1, "hermes_sdk"), (1, "hermes_sdk.plugins"), (2, "hermes_sdk.redaction"),
                     (3, "hermes_sdk.plugin")]



def test_the_core_has_no_function_above_grade_d() -> None:
    pytest.importorskip("radon")
    ranked = metrics.complexities(metrics.core_files())
    assert ranked and ranked[0].complexity >= ranked[-1].complexity
    above = [c for c in ranked if c.complexity > metrics.MAX_COMPLEXITY]
    assert not above, above


def test_the_core_holds_at_most_15_any_per_kloc() -> None:
    figure = metrics.any_figure(metrics.core_files())
    assert figure.lines > 10_000  # the core, not an empty glob
    assert figure.per_kloc <= metrics.MAX_ANY_PER_KLOC == 15.0, figure


def test_the_emulator_holds_at_most_8_any_per_kloc() -> None:
    files = metrics.emulator_files()
    assert any(f.name == "emulator.py" for f in files) and not set(files) & set(metrics.core_files())
    figure = metrics.any_figure(files, metrics.core_files())
    assert figure.lines > 5_000  # the emulator, not an empty glob
    assert figure.per_kloc <= metrics.MAX_EMULATOR_ANY_PER_KLOC == 8.0, figure


def test_the_gate_fails_on_too_many_any_in_the_emulator(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("radon")
    pkg = tmp_path / "hermes_sdk"
    (pkg / "testing").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from typing import Any\n\nJSON = dict[str, Any]\n\ndef g() -> None:\n    pass\n")
    (pkg / "testing" / "__init__.py").write_text("from hermes_sdk import JSON\n\ndef f(a: JSON) -> None:\n    pass\n")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "tests" / "thirdparty_plugin").mkdir(parents=True)
    assert metrics.main(["--root", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "Any per kLOC of the emulator (hermes_sdk/testing): 250.0 (1 in 4 lines, 1 files)" in out
    assert "Any per kLOC of the emulator is 250.0, above 8" in err
    assert "Any per kLOC of the core is" not in err  # the core's alias itself is no use of Any


def test_the_gate_fails_on_too_many_any(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("radon")
    pkg = tmp_path / "hermes_sdk"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from typing import Any\n\ndef f(a: Any) -> Any:\n    return a\n")
    (tmp_path / "plugins").mkdir()
    (tmp_path / "tests" / "thirdparty_plugin").mkdir(parents=True)
    assert metrics.main(["--root", str(tmp_path)]) == 1
    assert "Any per kLOC of the core is" in capsys.readouterr().err
