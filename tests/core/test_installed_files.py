"""What is tested is what ships: the installed packages hold every file of their source tree.

tox installs the core from its wheel (``package = wheel``) and the plugins from theirs
(tools/plugin_wheels.py), and sets ``HERMES_SDK_REQUIRE_WHEELS=1``: there, a module or package-data
file that the wheel leaves out fails this test (a test importing it would pass from a checkout). A
run from the checkout (``PYTHONPATH``, an editable install) skips the comparison: nothing was built.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"hermes-sdk": ROOT / "hermes_sdk",
            **{p.name: p / p.name.replace("-", "_") for p in sorted((ROOT / "plugins").glob("hermes-sdk-*"))}}


def shipped_files(package: Path) -> set[str]:
    """The files a package's wheel must hold: its modules and package data, relative to the package."""
    return {str(p.relative_to(package)) for p in package.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix not in (".pyc", ".pyo")}


def left_out(installed: Path, source: Path) -> list[str]:
    """Source files missing from the installed package, and installed files that differ from the source."""
    have = shipped_files(installed)
    missing = sorted(shipped_files(source) - have)
    changed = sorted(f for f in shipped_files(source) & have
                     if (installed / f).read_bytes() != (source / f).read_bytes())
    return [f"missing: {f}" for f in missing] + [f"differs: {f}" for f in changed]


def installed_package(distribution: str, source: Path) -> Path | None:
    """Where the import system finds the package, or None when the distribution is not installed."""
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    spec = importlib.util.find_spec(source.name)
    assert spec is not None and spec.origin is not None, source.name
    return Path(spec.origin).resolve().parent


@pytest.mark.parametrize("distribution", PACKAGES)
def test_the_installed_wheel_holds_every_source_file(distribution: str) -> None:
    source = PACKAGES[distribution]
    installed = installed_package(distribution, source)
    required = os.environ.get("HERMES_SDK_REQUIRE_WHEELS") == "1"
    if installed is None:
        if required and distribution in ("hermes-sdk",):
            pytest.fail("the core is not installed")
        pytest.skip(f"{distribution} is not installed in this environment")
    if installed == source.resolve():
        if required:
            pytest.fail(f"{distribution} is imported from the checkout ({installed}), not from its wheel")
        pytest.skip(f"{distribution} runs from the checkout: no wheel to compare")
    assert left_out(installed, source) == []


def test_a_file_left_out_of_the_wheel_is_found(tmp_path: Path) -> None:
    source = PACKAGES["hermes-sdk"]
    installed = tmp_path / "site-packages" / "hermes_sdk"
    shutil.copytree(source, installed, ignore=shutil.ignore_patterns("__pycache__"))
    assert left_out(installed, source) == []
    (installed / "_core" / "transport.py").unlink()
    (installed / "py.typed").unlink()
    (installed / "testing" / "__init__.py").write_text("# an older copy\n")
    assert left_out(installed, source) == ["missing: _core/transport.py", "missing: py.typed",
                                           "differs: testing/__init__.py"]
