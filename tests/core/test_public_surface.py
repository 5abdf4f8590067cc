"""The public surface: few public modules, exports at home, old paths and names kept one release."""

from __future__ import annotations

import ast
import importlib
import pickle
import subprocess
import sys
import typing
import warnings
from pathlib import Path

import pytest

import hermes_sdk
import hermes_sdk.types
from hermes_sdk._app import _compat

#: Where implementation lives; no exported name may say so in its __module__.
PRIVATE = ("hermes_sdk._core", "hermes_sdk._families", "hermes_sdk._app")

ROOT = Path(hermes_sdk.__file__).resolve().parent
#: What a user or a plugin imports by name; everything else is private (_core, or a leading underscore).
PUBLIC = {"hermes_sdk", "hermes_sdk.errors", "hermes_sdk.plugin", "hermes_sdk.hookspecs", "hermes_sdk.types",
          "hermes_sdk.testing", "hermes_sdk.plugins", "hermes_sdk.__main__",
          "hermes_sdk.openai"}  # the openai facade (issue 39): needs the openai extra


def top_level_modules() -> set[str]:
    names = {"hermes_sdk"}
    for path in ROOT.iterdir():
        if path.name.startswith("_") and path.name not in ("__main__.py",):
            continue
        if path.suffix == ".py" or (path / "__init__.py").exists():
            names.add("hermes_sdk." + path.name.removesuffix(".py"))
    return names


def test_few_public_modules_at_the_top() -> None:
    assert top_level_modules() <= PUBLIC
    assert len(top_level_modules()) <= 10


def test_the_project_plugins_import_only_public_modules() -> None:
    repo = ROOT.parent
    offenders = []
    for path in [*repo.glob("plugins/*/hermes_sdk_*/**/*.py"), *repo.glob("tests/thirdparty_plugin/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names
                                         if f"{node.module}.{a.name}" in _modules_under(node.module)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                if name.split(".")[0] == "hermes_sdk" and not _is_public(name):
                    offenders.append(f"{path.relative_to(repo)}: {name}")
    assert offenders == []


def _modules_under(module: str) -> set[str]:
    base = ROOT.parent.joinpath(*module.split("."))
    if not base.is_dir():
        return set()
    return {f"{module}.{p.stem}" for p in base.glob("*.py")} | {f"{module}.{p.name}" for p in base.iterdir()
                                                               if (p / "__init__.py").exists()}


def _is_public(name: str) -> bool:
    parts = name.split(".")
    return not any(p.startswith("_") and p != "__main__" for p in parts) and (
        ".".join(parts[:2]) in PUBLIC or name == "hermes_sdk")


def test_exports_are_at_home_and_keep_their_types() -> None:
    for name in hermes_sdk.__all__:
        obj = getattr(hermes_sdk, name)
        if isinstance(obj, type) or callable(obj):
            assert not obj.__module__.startswith(PRIVATE), name
    for name in hermes_sdk.types.__all__:
        assert not getattr(hermes_sdk.types, name).__module__.startswith(PRIVATE), name
    # cattrs and typing still see the annotations of a re-homed value class
    assert typing.get_type_hints(hermes_sdk.HermesResponse)["id"] is str
    run = hermes_sdk.RunStarted.__name__
    assert pickle.loads(pickle.dumps(hermes_sdk.CallTimeout(total=3))) == hermes_sdk.CallTimeout(total=3), run


@pytest.mark.parametrize("old", sorted(_compat.MOVED_MODULES))
def test_an_old_module_path_warns_and_is_the_same_module(old: str) -> None:
    sys.modules.pop(f"hermes_sdk.{old}", None)
    with pytest.warns(DeprecationWarning, match=f"hermes_sdk.{old} is private now"):
        module = importlib.import_module(f"hermes_sdk.{old}")
    home = _compat.new_home(f"hermes_sdk.{old}")
    assert module is importlib.import_module(home)
    assert module.__spec__ is not None and module.__spec__.name == home


@pytest.mark.parametrize("old", sorted(_compat.RELOCATED))
def test_an_old_path_of_a_module_now_in_a_family_package_is_that_module(old: str) -> None:
    with warnings.catch_warnings():  # its parent (hermes_sdk.resources ...) warns about itself
        warnings.simplefilter("ignore", DeprecationWarning)
        importlib.import_module(old.rsplit(".", 1)[0])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} is private now"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(_compat.RELOCATED[old])
    assert _compat.RELOCATED[old].startswith(("hermes_sdk._families.", "hermes_sdk._app."))


def test_old_spellings_of_moved_modules_work_from_import_statements() -> None:
    sys.modules.pop("hermes_sdk.runs", None)
    with pytest.warns(DeprecationWarning):
        from hermes_sdk.runs import Run  # type: ignore[import-not-found]  # the 0.1 path
    assert Run is hermes_sdk.Run
    sys.modules.pop("hermes_sdk.streaming", None)
    vars(hermes_sdk).pop("streaming", None)
    with pytest.warns(DeprecationWarning):
        assert hermes_sdk.streaming.ChatStream is hermes_sdk.ChatStream  # type: ignore[attr-defined]


@pytest.mark.parametrize("old,new", [("Response", "HermesResponse"), ("Session", "HermesSession"),
                                     ("Timeout", "CallTimeout"), ("CancelledError", "StreamCancelledError")])
def test_colliding_names_have_their_own_and_the_old_ones_warn(old: str, new: str) -> None:
    assert new in hermes_sdk.__all__ and old not in hermes_sdk.__all__
    with pytest.warns(DeprecationWarning, match=f"hermes_sdk.{old} is now hermes_sdk.{new}"):
        assert getattr(hermes_sdk, old) is getattr(hermes_sdk, new)


def test_the_renamed_error_keeps_reading_old_records() -> None:
    from hermes_sdk.errors import HermesError, StreamCancelledError

    error = HermesError.from_dict({"type": "CancelledError", "code": "connector.hermes_agent.cancelled",
                                   "message": "closed"})
    assert isinstance(error, StreamCancelledError)
    with pytest.warns(DeprecationWarning):
        from hermes_sdk.errors import CancelledError  # type: ignore[attr-defined]
    assert CancelledError is StreamCancelledError


def test_importing_the_package_itself_warns_about_nothing() -> None:
    code = "import warnings; warnings.simplefilter('error'); import hermes_sdk, hermes_sdk.types, hermes_sdk.plugin"
    import subprocess

    subprocess.run([sys.executable, "-c", code], check=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        importlib.reload(hermes_sdk.types)


def test_a_public_name_that_left_its_old_module_is_still_found_there() -> None:
    # hermes_sdk.jobs (0.1's public module, deprecated) listed Skill, which now lives with discovery.
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "try:\n    from hermes_sdk.jobs import Skill\nexcept DeprecationWarning: pass\n"
            "warnings.simplefilter('ignore')\n"
            "from hermes_sdk.jobs import Skill, Job\nimport hermes_sdk\n"
            "assert Skill is hermes_sdk.Skill and Job is hermes_sdk.Job\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("old", sorted(_compat.RELOCATED_NAMES))
def test_every_name_that_left_an_old_module_is_found_there_as_its_new_home_has_it(old: str) -> None:
    # e.g. hermes_sdk.models.ChatCompletion (0.1) now lives in the chat family's package
    code = ("import importlib, warnings\nwarnings.simplefilter('ignore')\n"
            "from hermes_sdk._app import _compat\n"
            f"old = importlib.import_module({old!r})\n"
            f"for name, home in _compat.RELOCATED_NAMES[{old!r}].items():\n"
            "    assert getattr(old, name) is getattr(importlib.import_module(home), name), name\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
