"""Each first-party plugin imports only what it declares, and never another plugin's package.

Imports are read with ``ast`` from the plugin's source: module level, inside functions and under
``if TYPE_CHECKING`` alike (a late import still needs its distribution at run time). A name is
declared when its distribution is in the plugin's ``install_requires`` or one of its extras.
"""

from __future__ import annotations

import ast
import configparser
import importlib.util
import re
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGINS = sorted(p for p in (REPO / "plugins").glob("*/hermes_sdk_*") if p.is_dir() and p.suffix != ".egg-info")

#: The distribution each third-party import name comes from (a new import must be added here, and declared).
DISTRIBUTION_OF = {
    "hermes_sdk": "hermes-sdk", "attrs": "attrs", "flask": "flask", "itsdangerous": "itsdangerous",
    "werkzeug": "werkzeug", "redis": "redis", "sqlalchemy": "sqlalchemy", "opentelemetry": "opentelemetry-api",
    "psycopg": "psycopg", "pymysql": "pymysql", "waitress": "waitress",
}


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def is_stdlib(name: str) -> bool:
    names = getattr(sys, "stdlib_module_names", None)  # Python 3.10+
    if names is not None:
        return name in names
    spec = importlib.util.find_spec(name)
    origin = (spec.origin or "") if spec is not None else ""
    return spec is not None and (origin in ("built-in", "frozen") or (
        origin.startswith(sysconfig.get_paths()["stdlib"]) and "site-packages" not in origin))


def imported_names(package: Path) -> dict[str, set[str]]:
    """``{top-level module: {file:line, ...}}`` of every absolute import in the package's source."""
    found: dict[str, set[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            where = f"{path.relative_to(package.parent.parent)}:{node.lineno}"
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(where)
    return found


def declared(project: Path) -> set[str]:
    """The distributions ``setup.cfg`` names in ``install_requires`` and every extra."""
    config = configparser.ConfigParser()
    config.read(project / "setup.cfg")
    lines = config.get("options", "install_requires", fallback="").splitlines()
    if config.has_section("options.extras_require"):
        for _, value in config.items("options.extras_require"):
            lines += value.splitlines()
    names = (re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", line.strip()) for line in lines if line.strip())
    return {normalized(match.group(0)) for match in names if match}


def problems(package: Path) -> list[str]:
    own = package.name
    wanted = declared(package.parent)
    out = []
    for name, where in sorted(imported_names(package).items()):
        places = ", ".join(sorted(where))
        if name == own or is_stdlib(name):
            continue
        if name.startswith("hermes_sdk_"):
            out.append(f"{own} imports the plugin package {name} ({places})")
        elif name not in DISTRIBUTION_OF:
            out.append(f"{own} imports {name} ({places}): unknown here; declare its distribution and add it "
                       "to DISTRIBUTION_OF")
        elif normalized(DISTRIBUTION_OF[name]) not in wanted:
            out.append(f"{own} imports {name} ({places}) but setup.cfg does not declare {DISTRIBUTION_OF[name]}")
    return out


@pytest.mark.parametrize("package", PLUGINS, ids=[path.name for path in PLUGINS])
def test_a_plugin_imports_only_declared_distributions_and_no_other_plugin(package: Path) -> None:
    assert problems(package) == []


def test_the_check_finds_a_late_import_of_another_plugin_and_an_undeclared_one(tmp_path: Path) -> None:
    project = tmp_path / "hermes-sdk-demo"
    package = project / "hermes_sdk_demo"
    package.mkdir(parents=True)
    (project / "setup.cfg").write_text("[options]\ninstall_requires =\n    hermes-sdk>=0.2,<0.3\n")
    (package / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nimport hermes_sdk\nif TYPE_CHECKING:\n    import redis\n"
        "def late():\n    from hermes_sdk_inbox.queue import exact_pages\n    return exact_pages\n")
    found = problems(package)
    assert len(found) == 2, found
    assert "imports the plugin package hermes_sdk_inbox" in found[0] and "__init__.py:6" in found[0]
    assert "does not declare redis" in found[1] and "__init__.py:4" in found[1]


def test_every_plugin_is_checked() -> None:
    assert [path.name for path in PLUGINS] == ["hermes_sdk_inbox", "hermes_sdk_opentelemetry", "hermes_sdk_redis",
                                              "hermes_sdk_sql"]
