"""tox's inline plugin for this project: find every pyenv interpreter, and say loudly which are missing.

tox looks for ``python3.9`` ... ``python3.13`` on ``PATH``; pyenv's shims only run the versions that
are active, so without help tox skips the others. Before any environment is created this plugin
links each installed pyenv version's ``python3.X`` (the newest patch release of each) into
``.tox/.interpreters`` and puts that directory first on ``PATH``. Only versioned names are linked, so
``python3`` and ``python`` stay what they were.

At the very end, after tox's own summary, it prints one ``MISSING`` line per environment whose
interpreter could not be found (tox only marks those ``SKIP``). ``python3 -m tox
--skip-missing-interpreters false`` (what ``.ci/run`` runs) turns a missing interpreter into a failure.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tox.plugin import impl

_MISSING: list[tuple[str, str]] = []


def _pyenv_root() -> Path | None:
    root = os.environ.get("PYENV_ROOT")
    if root:
        return Path(root)
    exe = shutil.which("pyenv")
    if exe:
        try:
            out = subprocess.run([exe, "root"], capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out:
            return Path(out)
    default = Path.home() / ".pyenv"
    return default if default.is_dir() else None


def _pyenv_interpreters() -> dict[str, Path]:
    """``{"python3.9": path, ...}``: the newest installed CPython patch release of each minor version."""
    root = _pyenv_root()
    versions = root / "versions" if root else None
    if versions is None or not versions.is_dir():
        return {}
    best: dict[str, tuple[tuple[int, ...], Path]] = {}
    for entry in versions.iterdir():
        match = re.fullmatch(r"(3)\.(\d+)\.(\d+)", entry.name)  # CPython releases only (no -dev, pypy)
        if not match:
            continue
        name = f"python3.{match.group(2)}"
        exe = entry / "bin" / name
        key = tuple(int(part) for part in match.groups())
        if exe.is_file() and os.access(exe, os.X_OK) and (name not in best or key > best[name][0]):
            best[name] = (key, exe)
    return {name: exe for name, (_, exe) in best.items()}


@impl
def tox_add_core_config(core_conf: Any, state: Any) -> None:
    found = _pyenv_interpreters()
    if not found:
        return
    links = Path(str(core_conf["work_dir"])) / ".interpreters"
    links.mkdir(parents=True, exist_ok=True)
    for name, exe in found.items():
        link = links / name
        if link.is_symlink() and os.readlink(link) == str(exe):
            continue
        # Atomic, so a tox already running from this directory never sees the link missing.
        temporary = links / f".{name}.{os.getpid()}"
        if temporary.is_symlink():
            temporary.unlink()
        temporary.symlink_to(exe)
        os.replace(temporary, link)
    os.environ["PATH"] = str(links) + os.pathsep + os.environ.get("PATH", "")


@impl
def tox_env_teardown(tox_env: Any) -> None:
    # tox's Python environments remember whether they searched for their interpreter and what they found.
    if getattr(tox_env, "_base_python_searched", False) and getattr(tox_env, "_base_python", True) is None:
        try:
            spec = ", ".join(tox_env.conf["base_python"])
        except Exception:  # noqa: BLE001 - the banner must never break tox
            spec = tox_env.name
        _MISSING.append((tox_env.name, spec))


def _banner() -> None:
    if not _MISSING:
        return
    lines = [f"MISSING interpreter for tox env {name!r} ({spec}): it was NOT tested" for name, spec in _MISSING]
    width = max(len(line) for line in lines)
    rule = "!" * width
    out = sys.stderr
    out.write("\n" + rule + "\n" + "\n".join(lines) + "\n")
    out.write("Install it (e.g. `pyenv install 3.X`) and run tox again; tox finds pyenv versions by itself.\n")
    out.write(rule + "\n")
    out.flush()


atexit.register(_banner)
