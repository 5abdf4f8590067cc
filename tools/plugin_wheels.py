"""Install first-party plugins into the running Python from their wheels, each wheel built once.

``python tools/plugin_wheels.py CACHE redis opentelemetry sql[postgresql]`` builds the wheel of each
named ``plugins/hermes-sdk-NAME`` (``pip wheel``, isolated, as an installer would) into
``CACHE/<hash of the plugin's files>/`` unless a wheel of those very files is already there, then
installs the wheels (with the extras asked for). tox calls it in ``commands_pre``: every env tests
the plugins as they ship, and a run builds each plugin once, not once per env. The core is tox's own
wheel (``package = wheel``), installed before this runs; the plugins require it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {"__pycache__", "build", "dist", ".tox"}


def source_hash(project: Path) -> str:
    """A digest of the plugin's files (names and bytes), leaving out build output and caches."""
    digest = hashlib.sha256()
    for path in sorted(project.rglob("*")):
        relative = path.relative_to(project)
        if path.is_dir() or SKIP & set(relative.parts) or any(p.endswith(".egg-info") for p in relative.parts):
            continue
        digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def wheel_of(project: Path, cache: Path) -> Path:
    """The plugin's wheel, built into ``cache`` if this version of its files has none yet."""
    target = cache / f"{project.name}-{source_hash(project)}"
    if not target.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(dir=cache))
        # Built from a copy: setuptools writes its .egg-info beside the sources, which must stay clean.
        copy = scratch / "src" / project.name
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns(*SKIP, "*.egg-info"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(scratch), str(copy)],
                       check=True)
        shutil.rmtree(scratch / "src")
        try:
            os.replace(scratch, target)  # atomic: a concurrent run sees the whole directory or none
        except OSError:
            shutil.rmtree(scratch)  # another run got there first with the same files
    (wheel,) = target.glob("*.whl")
    return wheel


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    cache = Path(argv[0])
    wheels, specs = [], []
    for arg in argv[1:]:
        name, extras = re.fullmatch(r"([\w-]+)(\[[\w,-]+\])?", arg).groups()  # type: ignore[union-attr]
        wheels.append(str(wheel_of(ROOT / "plugins" / f"hermes-sdk-{name}", cache)))
        specs.append(wheels[-1] + (extras or ""))
    pip = [sys.executable, "-m", "pip", "install", "-q"]
    subprocess.run([*pip, *specs], check=True)
    # A reused env may hold an earlier build of the same version: these files replace it.
    subprocess.run([*pip, "--force-reinstall", "--no-deps", *wheels], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
