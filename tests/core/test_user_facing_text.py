"""What the installed packages say at run time is written for a user who ran ``pip install``.

Such a user has no checkout: a message that sends them to ``docs/testing.md``, "README: Serving it",
``.tox/`` or an editable install points at nothing. Every string literal of the five packages'
sources that is not a docstring (the text their errors, warnings and pages are made of) names a
page by its title instead, the words to look for in the documentation.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "hermes_sdk", *sorted((ROOT / "plugins").glob("hermes-sdk-*/hermes_sdk_*"))]
CHECKOUT = re.compile(r"docs/[\w./-]*\.md|README|CHANGELOG\.md|\.tox/|pip install -e\b|\.\./")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the Constant nodes that are docstrings (a module's, a class's, a function's)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def checkout_paths_in(path: Path) -> list[str]:
    """``line: match in literal`` for each checkout path in a non-docstring string literal of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found += [f"{node.lineno}: {m.group(0)!r} in {node.value[:80]!r}" for m in CHECKOUT.finditer(node.value)]
    return found


def test_the_scan_finds_a_checkout_path_in_a_message_and_not_in_a_docstring(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""See docs/usage.md."""\n\n\ndef f():\n    """README: here."""\n'
                      '    raise ValueError("see docs/testing.md" + f"{1} (README: Serving it)")\n')
    assert checkout_paths_in(sample) == ["6: 'docs/testing.md' in 'see docs/testing.md'",
                                         "6: 'README' in ' (README: Serving it)'"]


def test_no_runtime_message_names_a_checkout_path() -> None:
    found = [f"{path.relative_to(ROOT)}:{hit}" for source in SOURCES for path in sorted(source.rglob("*.py"))
             for hit in checkout_paths_in(path)]
    assert found == [], "\n".join(found)
