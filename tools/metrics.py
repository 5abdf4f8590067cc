"""The public-surface figures of issue 24, counted the way design-review.md counts them; CI prints them.

Run from the repository root: ``python tools/metrics.py`` (tox: ``tox -e metrics``). It prints

- the public modules at the top of ``hermes_sdk`` (a module or package directly under it whose name
  has no leading underscore), and every public module of the core for reference;
- ``Any`` per kLOC of the core (``hermes_sdk/`` without ``testing/``): ``Name``/``Attribute`` nodes
  named ``Any`` inside argument, return and ``AnnAssign`` annotations, quoted annotations included,
  over the core's physical lines (``wc -l``) / 1000; a module-level type alias holding ``Any``
  (``JSONDict = dict[str, Any]``) counts at every annotation that uses it, so an alias hides nothing;
- ``Any`` per kLOC of the emulator (``hermes_sdk/testing/``), counted the same way (the core's aliases
  count there too);
- radon's cyclomatic complexity: the worst function of the core and every one above grade D (30);
- the import rule: the project's plugins (``plugins/*``) and ``tests/thirdparty_plugin`` import
  only the modules in :data:`PUBLIC_MODULES`.

It exits 1 when a function of the core is above ``MAX_COMPLEXITY``, when ``Any`` per kLOC is above
``MAX_ANY_PER_KLOC`` (the emulator's above ``MAX_EMULATOR_ANY_PER_KLOC``) and, once
:data:`IMPORT_RULE_ENFORCED` is set, when the import rule is broken.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path
from typing import Iterable, Iterator, Mapping, NamedTuple, Optional

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "hermes_sdk"

#: The public modules: the only ones a plugin, a third-party family or a user imports by name
#: (issue 24: at most 10 at the top). Everything else in the package is implementation.
PUBLIC_MODULES = frozenset({
    "hermes_sdk",
    "hermes_sdk.types",
    "hermes_sdk.errors",
    "hermes_sdk.plugin",
    "hermes_sdk.hookspecs",
    "hermes_sdk.testing",
})
#: Fail on an import outside PUBLIC_MODULES (the project's plugins import hermes_sdk.plugin since 0.2).
IMPORT_RULE_ENFORCED = True
#: Where the import rule applies (relative to the repository root).
IMPORT_RULE_PATHS = ("plugins", "tests/thirdparty_plugin")
#: radon's grade D ends at 30: no function of the core may be above it.
MAX_COMPLEXITY = 30
#: Issue 24: at most 15 ``Any`` per kLOC of the core (openai's core counts 9.5, httpx 9.7, pluggy 8.6).
MAX_ANY_PER_KLOC = 15.0
#: Issue 24: the emulator is as typed as the SDK (every test runs against it).
MAX_EMULATOR_ANY_PER_KLOC = 8.0
EMULATOR = "testing"


def core_files(root: Path = ROOT) -> list[Path]:
    """The core's source files: ``hermes_sdk/`` without ``testing/``."""
    pkg = root / PACKAGE
    return sorted(p for p in pkg.rglob("*.py") if EMULATOR not in p.relative_to(pkg).parts[:1])


def emulator_files(root: Path = ROOT) -> list[Path]:
    """The emulator's source files: ``hermes_sdk/testing/``."""
    return sorted((root / PACKAGE / EMULATOR).rglob("*.py"))


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_public(module: str) -> bool:
    """No part of the dotted name starts with an underscore (``__init__`` is the package itself)."""
    return not any(part.startswith("_") for part in module.split("."))


def top_public_modules(root: Path = ROOT) -> list[str]:
    """Public modules and packages directly under ``hermes_sdk`` (``__main__`` is no module one imports)."""
    pkg = root / PACKAGE
    names = [p.stem for p in pkg.glob("*.py")] + [p.name for p in pkg.iterdir() if (p / "__init__.py").is_file()]
    return sorted(f"{PACKAGE}.{n}" for n in names if not n.startswith("_"))


# --- Any per kLOC -----------------------------------------------------------------------------------


def _any_in(node: Optional[ast.AST]) -> int:
    """``Any`` names and attributes in an annotation, strings parsed as the annotations they are
    (but not the strings of a ``Literal[...]``)."""
    if node is None:
        return 0
    if isinstance(node, ast.Name):
        return int(node.id == "Any")
    if isinstance(node, ast.Attribute):
        return int(node.attr == "Any") + _any_in(node.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _any_in(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return 0
    if isinstance(node, ast.Subscript) and getattr(node.value, "id", getattr(node.value, "attr", "")) == "Literal":
        return 0
    return sum(_any_in(child) for child in ast.iter_child_nodes(node))


def _alias_uses(node: Optional[ast.AST], aliases: Mapping[str, int]) -> int:
    """What the type aliases used in an annotation hide: ``JSONDict`` of ``JSONDict = dict[str, Any]``
    counts as the one ``Any`` it stands for, at every use."""
    if node is None or not aliases:
        return 0
    if isinstance(node, ast.Name):
        return aliases.get(node.id, 0)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return _alias_uses(ast.parse(node.value, mode="eval").body, aliases)
        except SyntaxError:
            return 0
    return sum(_alias_uses(child, aliases) for child in ast.iter_child_nodes(node))


def _in_annotation(node: Optional[ast.AST], aliases: Mapping[str, int]) -> int:
    return _any_in(node) + _alias_uses(node, aliases)


def type_aliases(sources: Iterable[str]) -> dict[str, int]:
    """Module-level aliases whose type expression holds ``Any`` (``X = dict[str, Any]``, ``Y = Callable[...,
    Any]``), by name, with the ``Any`` each stands for."""
    out: dict[str, int] = {}
    for source in sources:
        for node in ast.parse(source).body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and isinstance(node.value, (ast.Subscript, ast.Attribute, ast.Name, ast.BinOp)):
                n = _any_in(node.value)
                if n:
                    out[node.targets[0].id] = n
    return out


def count_any(source: str, aliases: Mapping[str, int] = {}) -> int:
    """``Any`` in the argument, return and ``AnnAssign`` annotations of a module's source, each use of an
    alias in ``aliases`` counted as the ``Any`` it stands for."""
    count = 0
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
            count += sum(_in_annotation(a.annotation, aliases) for a in every) + _in_annotation(node.returns, aliases)
        elif isinstance(node, ast.AnnAssign):
            count += _in_annotation(node.annotation, aliases)
    return count


class AnyFigure(NamedTuple):
    count: int
    lines: int

    @property
    def per_kloc(self) -> float:
        return 1000 * self.count / self.lines if self.lines else 0.0


def any_figure(files: list[Path], alias_files: Iterable[Path] = ()) -> AnyFigure:
    """``Any`` in ``files``; the aliases of ``alias_files`` (say, the core's, which the emulator
    may import) count at their uses in ``files`` too."""
    texts = [f.read_text(encoding="utf-8") for f in files]
    aliases = type_aliases(texts + [f.read_text(encoding="utf-8") for f in alias_files])
    return AnyFigure(sum(count_any(t, aliases) for t in texts), sum(len(t.splitlines()) for t in texts))


# --- complexity -------------------------------------------------------------------------------------


class Complexity(NamedTuple):
    complexity: int
    grade: str
    where: str


def complexities(files: list[Path], root: Path = ROOT) -> list[Complexity]:
    """Every function and method of ``files`` with radon's cyclomatic complexity, worst first."""
    from radon.complexity import cc_rank, cc_visit
    from radon.visitors import Class

    def blocks(items: list[object]) -> Iterator[object]:
        for block in items:
            if isinstance(block, Class):
                yield from blocks(block.methods)
            else:
                yield block
                yield from blocks(getattr(block, "closures", []))

    out = []
    for path in files:
        rel = path.relative_to(root)
        for b in blocks(cc_visit(path.read_text(encoding="utf-8"))):
            name = f"{b.classname}.{b.name}" if getattr(b, "classname", None) else b.name
            cc = b.complexity
            out.append(Complexity(cc, cc_rank(cc), f"{name} ({rel}:{b.lineno})"))
    return sorted(out, key=lambda c: -c.complexity)


# --- the import rule --------------------------------------------------------------------------------


class Violation(NamedTuple):
    where: str
    module: str


def _is_package_module(module: str, root: Path) -> bool:
    path = root.joinpath(*module.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported_modules(source: str, root: Path = ROOT) -> Iterator[tuple[int, str]]:
    """``(line, module)`` per ``hermes_sdk`` module a source imports; ``from a import b`` names
    ``a.b`` when ``b`` is a module of the package."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == PACKAGE:
            named = [f"{node.module}.{a.name}" for a in node.names]
            subs = [name for name in named if _is_package_module(name, root)]
            if len(subs) < len(node.names):  # some names are attributes of node.module itself
                yield node.lineno, node.module
            for sub in subs:
                yield node.lineno, sub


def import_violations(root: Path = ROOT) -> list[Violation]:
    out = []
    for base in IMPORT_RULE_PATHS:
        for path in sorted((root / base).rglob("*.py")):
            parts = path.relative_to(root).parts
            # a plugin's own tests and benchmarks are the project's, like tests/: the rule is for shipped code
            if any(part.startswith(".") or part.endswith(".egg-info") or part in ("tests", "benchmarks")
                   for part in parts[1:]):
                continue
            for line, module in imported_modules(path.read_text(encoding="utf-8"), root):
                if module not in PUBLIC_MODULES:
                    out.append(Violation(f"{path.relative_to(root)}:{line}", module))
    return out


# --- the report -------------------------------------------------------------------------------------


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/metrics.py", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository root (default: this checkout)")
    args = parser.parse_args(argv)
    root: Path = args.root
    files = core_files(root)
    failed = []

    top = top_public_modules(root)
    every = [m for m in (module_name(f, root) for f in files) if is_public(m)]
    print(f"public modules at the top of {PACKAGE}: {len(top)}")
    print("  " + " ".join(m.split(".", 1)[1] for m in top))
    print(f"public modules of the core, all levels: {len(every)} of {len(files)}")

    fig = any_figure(files)
    print(f"Any per kLOC of the core: {fig.per_kloc:.1f} ({fig.count} in {fig.lines} lines, {len(files)} files)")
    if fig.per_kloc > MAX_ANY_PER_KLOC:
        failed.append(f"Any per kLOC of the core is {fig.per_kloc:.1f}, above {MAX_ANY_PER_KLOC:g}")
    emu_files = emulator_files(root)
    emu = any_figure(emu_files, files)
    print(f"Any per kLOC of the emulator ({PACKAGE}/{EMULATOR}): {emu.per_kloc:.1f} "
          f"({emu.count} in {emu.lines} lines, {len(emu_files)} files)")
    if emu.per_kloc > MAX_EMULATOR_ANY_PER_KLOC:
        failed.append(f"Any per kLOC of the emulator is {emu.per_kloc:.1f}, above {MAX_EMULATOR_ANY_PER_KLOC:g}")

    ranked = complexities(files, root)
    worst = ranked[0]
    print(f"worst cyclomatic complexity of the core: {worst.grade} {worst.complexity} {worst.where}")
    above = [c for c in ranked if c.complexity > MAX_COMPLEXITY]
    print(f"functions above grade D ({MAX_COMPLEXITY}): {len(above)}")
    for c in above:
        print(f"  {c.grade} {c.complexity} {c.where}")
    if above:
        failed.append(f"{len(above)} function(s) of the core above complexity {MAX_COMPLEXITY}")

    bad = import_violations(root)
    rule = "enforced" if IMPORT_RULE_ENFORCED else "reported, not enforced yet"
    print(f"imports of non-public {PACKAGE} modules in {', '.join(IMPORT_RULE_PATHS)} ({rule}): {len(bad)}")
    for v in bad:
        print(f"  {v.where}: {v.module}")
    if bad and IMPORT_RULE_ENFORCED:
        failed.append(f"{len(bad)} import(s) of non-public modules")

    for reason in failed:
        print(f"FAILED: {reason}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
