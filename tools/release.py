"""Build the release, check it, and install it as a stranger would: ``python tools/release.py``.

``tox -e release`` runs it (then ``tests/release`` checks the files' metadata). Steps:

1. ``python -m build`` each of the five packages (the core and ``plugins/hermes-sdk-*``): its sdist,
   then its wheel built from that sdist (so a file the sdist forgets fails here): ten files in DIST.
2. ``twine check --strict`` on all ten (the long description renders on an index page).
3. The third-party requirements those wheels name are downloaded into a wheelhouse; then a clean
   venv gets ``pip install --no-index --find-links DIST --find-links WHEELHOUSE "hermes-sdk[redis]"``
   (the extra must bring hermes-sdk-redis from DIST) and the other plugins, and ``pip check``.
4. There: ``hermes-sdk --version`` must print the built version, and ``python -m hermes_sdk demo``
   must run (a streamed chat turn against the bundled emulator).
"""

from __future__ import annotations

import argparse
import email.parser
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = {"hermes-sdk": ROOT, **{p.name: p for p in sorted((ROOT / "plugins").glob("hermes-sdk-*"))}}


def run(*cmd: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, text=True, **kwargs)  # type: ignore[call-overload]


def skipped(project: Path, where: str, names: list[str]) -> set[str]:
    """Build output, caches and VCS files anywhere; at the core's root, the plugins (packages of their own)."""
    out = {n for n in names if n in (".git", ".tox", "build", "dist", "__pycache__", "_build", ".mypy_cache")
           or n.endswith(".egg-info")}
    return out | ({"plugins"} if Path(where) == project == ROOT else set())


def build(dist: Path) -> list[Path]:
    if dist.exists():
        shutil.rmtree(dist)
    for project in PROJECTS.values():
        # Built in a copy: the checkout gets no build/ or .egg-info from a release.
        with tempfile.TemporaryDirectory() as scratch:
            copy = Path(scratch) / project.name
            shutil.copytree(project, copy, ignore=functools.partial(skipped, project))
            run(sys.executable, "-m", "build", "--outdir", str(dist), str(copy))
    files = sorted(dist.iterdir())
    names = [f.name for f in files]
    assert len(files) == 10, f"expected an sdist and a wheel of each of {len(PROJECTS)} packages, got {names}"
    return files


def third_party_requirements(wheels: list[Path]) -> list[str]:
    """Every requirement the wheels name (extras included) that is not one of these five packages."""
    out: set[str] = set()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            (meta,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
            message = email.parser.Parser().parsestr(archive.read(meta).decode())
        for requirement in message.get_all("Requires-Dist") or []:
            spec = requirement.split(";")[0].strip()
            name = re.match(r"[A-Za-z0-9._-]+", spec).group(0)  # type: ignore[union-attr]
            if re.sub(r"[-_.]+", "-", name).lower() not in PROJECTS:
                out.add(spec)
    return sorted(out)


def install_and_run(dist: Path, venv: Path) -> None:
    wheels = sorted(dist.glob("*.whl"))
    wheelhouse = venv.parent / "wheelhouse"
    run(sys.executable, "-m", "pip", "download", "-q", "-d", str(wheelhouse), *third_party_requirements(wheels))
    if venv.exists():
        shutil.rmtree(venv)
    run(sys.executable, "-m", "venv", str(venv))
    bindir = venv / ("Scripts" if os.name == "nt" else "bin")
    python = str(bindir / "python")
    # --isolated: no pip configuration or PIP_* variable adds an index or a find-links of its own.
    offline = [python, "-m", "pip", "--isolated", "install", "-q", "--no-index",
               "--find-links", str(dist), "--find-links", str(wheelhouse)]
    run(*offline, "hermes-sdk[redis]")
    shown = run(python, "-m", "pip", "--isolated", "show", "hermes-sdk-redis", capture_output=True).stdout
    assert re.search(r"^Location: ", shown, re.M), shown
    run(*offline, "hermes-sdk-opentelemetry", "hermes-sdk-sql[postgresql]", "hermes-sdk-inbox[redis]")
    run(python, "-m", "pip", "--isolated", "check")
    version = run(python, "-c", "import hermes_sdk; print(hermes_sdk.__version__)", capture_output=True).stdout.strip()
    assert all(wheel.name.split("-")[1] == version for wheel in wheels), (version, [w.name for w in wheels])
    # Away from the checkout, so nothing is imported from the source tree.
    elsewhere = {"cwd": str(venv), "env": {**os.environ, "PYTHONPATH": "", "HERMES_SDK_PLUGINS": ""}}
    said = run(str(bindir / "hermes-sdk"), "--version", capture_output=True, **elsewhere).stdout.strip()
    assert said == f"hermes-sdk {version}", said
    demo = run(python, "-m", "hermes_sdk", "demo", capture_output=True, timeout=300, **elsewhere)
    print(demo.stdout[-2000:])
    located = run(python, "-c", "import hermes_sdk; print(hermes_sdk.__file__)", capture_output=True,
                  **elsewhere).stdout.strip()
    assert Path(located).resolve().is_relative_to(venv.resolve()), located


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the ten files go (emptied first)")
    parser.add_argument("--venv", type=Path, default=Path(tempfile.gettempdir()) / "hermes-sdk-release" / "venv",
                        help="the clean venv to install them into (made anew)")
    args = parser.parse_args()
    started = time.monotonic()
    files = build(args.dist.resolve())
    run(sys.executable, "-m", "twine", "check", "--strict", *map(str, files))
    install_and_run(args.dist.resolve(), args.venv.resolve())
    print(f"release: {len(files)} files built, checked, installed and run in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
