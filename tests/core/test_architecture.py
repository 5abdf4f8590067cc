"""The shape of the house: no import cycle among the core modules, a small client, no family branches.

Imports are read with ``ast`` (module-level and inside functions alike; ``if TYPE_CHECKING`` blocks
are not imports at run time), so a late import that closes a cycle is found too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import hermes_sdk

PACKAGE = Path(hermes_sdk.__file__).resolve().parent
OUTSIDE_CORE = ("hermes_sdk.testing", "hermes_sdk._app.cli", "hermes_sdk.__main__", "hermes_sdk.plugins",
                "hermes_sdk.plugins.__main__")


def modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path], *, type_checking: bool = False) -> set[str]:
    """The modules of ``known`` that ``name`` imports; ``type_checking=True`` counts ``if TYPE_CHECKING`` blocks."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_If(self, node: ast.If) -> None:
            test = node.test
            if not type_checking and ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                    isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")):
                for child in node.orelse:
                    self.visit(child)
                return
            self.generic_visit(node)

        def visit_Import(self, node: ast.Import) -> None:
            out.update(a.name for a in node.names if a.name in known)

        def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
            base = name.split(".") if is_package else name.split(".")[:-1]
            if node.level:
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                candidate = f"{target}.{alias.name}"
                out.add(candidate if candidate in known else target)

    Visitor().visit(ast.parse(path.read_text()))
    return {m for m in out if m in known and m != name}


def test_no_import_cycle_among_the_core_modules() -> None:
    known = modules()
    core = {m for m in known if not m.startswith(OUTSIDE_CORE)}
    graph = {m: imports(m, known[m], known) & core for m in core}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt):] + [nxt]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(core):
        if node not in state:
            visit(node)


def test_the_client_module_stays_small() -> None:
    assert len((PACKAGE / "_app" / "client.py").read_text().splitlines()) <= 320


FAMILY_WORDS = re.compile(r"""["'](chat|responses?|run[._a-z]*|session[._a-z]*|job[._a-z]*|message\.delta|"""
                          r"""response\.[a-z_.]+|hermes\.tool\.progress)["']""")


def test_streaming_the_aggregate_and_the_stages_have_no_family_branches() -> None:
    core = PACKAGE / "_core"
    generic = [core / "streaming.py", core / "aggregate.py", *sorted((core / "stages").glob("*.py"))]
    for path in generic:
        found = FAMILY_WORDS.findall(path.read_text())
        assert not found, f"{path.name} names family events or operations: {found}"
