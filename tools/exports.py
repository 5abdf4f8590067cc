"""Write the imports of ``hermes_sdk/__init__.py`` and ``hermes_sdk/types.py`` from ``hermes_sdk._TABLE``.

The table is the one place a public name is listed; ``__all__`` and the lazy map are computed from
it at import time, and the imports type checkers (and ``hermes_sdk.types``) read are written here.
``python tools/exports.py`` rewrites both files; ``--check`` exits 1 when either differs (the test
suite runs it).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import hermes_sdk  # noqa: E402

BEGIN = "# -- written by tools/exports.py from _TABLE: do not edit --"
END = "# -- end of the written imports --"
LINE = 120


def _key(name: str) -> tuple[int, str]:
    # ruff's isort order: constants, then classes, then functions
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name


def _grouped(places: tuple[str, ...], extra: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for module, place, names in hermes_sdk._TABLE:
        for name in names:
            if place in places or name in extra:
                found.setdefault(module, []).append(name)
    return {m: sorted(found[m], key=_key) for m in sorted(found)}


def _imports(grouped: dict[str, list[str]], indent: str, relative_to: str = "") -> list[str]:
    lines = []
    for module, names in grouped.items():
        source = module
        if relative_to and module.startswith(relative_to + "."):
            source = "." + module[len(relative_to) + 1:]
        one = f"{indent}from {source} import " + ", ".join(f"{n} as {n}" for n in names)
        if len(one) <= LINE:
            lines.append(one)
            continue
        lines.append(f"{indent}from {source} import (")
        lines.extend(f"{indent}    {n} as {n}," for n in names)
        lines.append(f"{indent})")
    return lines


def written() -> dict[Path, str]:
    """Each file's text with its written block as the table gives it."""
    top = _imports(_grouped(("top", "client"), hermes_sdk._LEFT_THE_TOP), "    ")
    types = _imports(_grouped(("top", "types")), "", relative_to="hermes_sdk")
    out = {}
    for path, block in ((ROOT / "hermes_sdk" / "__init__.py", top), (ROOT / "hermes_sdk" / "types.py", types)):
        text = path.read_text()
        head, _, rest = text.partition(BEGIN + "\n")
        _, _, tail = rest.partition(END + "\n")
        if not rest or not tail:
            raise SystemExit(f"{path}: the markers {BEGIN!r} and {END!r} are missing")
        indent = head[head.rfind("\n") + 1:]  # the markers' own indentation
        out[path] = head + BEGIN + "\n" + "\n".join(block) + "\n" + indent + END + "\n" + tail
    return out


def main(argv: list[str]) -> int:
    stale = []
    for path, text in written().items():
        if path.read_text() != text:
            stale.append(path)
            if "--check" not in argv:
                path.write_text(text)
    if stale and "--check" in argv:
        print("out of date with hermes_sdk._TABLE (run python tools/exports.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
