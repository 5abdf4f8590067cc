"""Every ```python example in docs/**/*.md and README.md runs, against the bundled emulator.

Each block runs alone, in a namespace of its own, as a reader pastes it: it imports and makes
what it uses (a walkthrough's later step finds what an earlier one left where a reader's next
process would: in a file, a queue, the server). The blocks of a page run in order in one fresh
interpreter, in one empty folder,
with ``HERMES_BASE_URL`` and ``HERMES_API_KEY`` pointing at an emulator of its own, so an example
written as ``HermesClient()`` talks to it. A block that defines
``test_*`` functions or ``Test*`` classes is a pytest example and runs under pytest (with the
``hermes_emulator`` fixture).

A block that cannot run here (it needs a real Redis, a path on your server, ...) says so in an HTML
comment on the line before its fence, which readers of the rendered page do not see::

    <!-- not-run: needs a Redis server -->
    ```python

A page whose examples need an emulator started with options says so once, anywhere on the page, in
the words of ``hermes-sdk emulator`` (``<!-- emulator: --tools -->``), as its reader would start it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts) + [ROOT / "README.md"]
FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[^\n]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S)
NOT_RUN = re.compile(r"<!--\s*not-run:\s*\S.*-->")
EMULATOR = re.compile(r"<!--\s*emulator:(?P<args>[^>]*)-->")

RUNNER = r"""
import json, sys, traceback
blocks = json.load(open(sys.argv[1]))
failed = 0
for block in blocks:
    namespace = {"__name__": "__main__"}  # each block alone, as a reader pastes it
    code = "\n" * (block["line"] - 1) + block["code"]  # tracebacks name the page's own line numbers
    try:
        exec(compile(code, block["page"], "exec"), namespace)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise
    except BaseException:
        sys.stderr.write(f"example at {block['page']}:{block['line']} failed:\n")
        traceback.print_exc()
        failed += 1
sys.exit(1 if failed else 0)
"""


def emulator_options(page: Path) -> dict[str, Any]:
    """The HermesEmulator options a page asks for, parsed as ``hermes-sdk emulator`` parses them."""
    import argparse
    import shlex

    from hermes_sdk.testing.emulator import add_options, options_from

    parser = argparse.ArgumentParser()
    add_options(parser)
    found = EMULATOR.search(page.read_text())
    options = options_from(parser.parse_args(shlex.split(found.group("args")) if found else []))
    return {k: v for k, v in options.items() if v != options_from(parser.parse_args([]))[k]}


def examples(page: Path) -> list[dict[str, Any]]:
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        before = text[:match.start()].rstrip().splitlines()
        if before and NOT_RUN.search(before[-1]):
            continue
        line = text.count("\n", 0, match.start("body")) + 1
        body = textwrap.dedent(match.group("body"))
        found.append({"page": str(page.relative_to(ROOT)), "line": line, "code": body,
                      "pytest": bool(re.search(r"^(?:def test_|class Test)", body, re.M))})
    return found


CASES = [(page, blocks) for page in PAGES if (blocks := examples(page))]


def test_examples_are_found() -> None:
    pages = {str(page.relative_to(ROOT)) for page, _ in CASES}
    hooks = {f"docs/hooks/{p.name}" for p in (ROOT / "docs" / "hooks").glob("hermes_*.md")}
    # every hook's page has a runnable example (hooks are counted by their pages, not by a number here)
    assert len(hooks) >= 7 and hooks | {"README.md", "docs/getting-started.md", "docs/streaming.md"} <= pages
    assert sum(len(blocks) for _, blocks in CASES) >= 20


@pytest.mark.parametrize("page,blocks", CASES, ids=[str(p.relative_to(ROOT)) for p, _ in CASES])
def test_page_examples_run(page: Path, blocks: list[dict[str, Any]], hermes_emulator_factory: Any,
                           tmp_path: Path) -> None:
    # Each page gets its own emulator: a run an example leaves behind (a deadline that gave up on a
    # slow reply) ends with it instead of holding a slot on the shared one.
    hermes_emulator = hermes_emulator_factory(**emulator_options(page))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HERMES_BASE_URL=hermes_emulator.base_url, HERMES_API_KEY=hermes_emulator.api_key,
               HERMES_SDK_PLUGINS="", PYTHONDONTWRITEBYTECODE="1")
    scripts = [b for b in blocks if not b["pytest"]]
    if scripts:
        (tmp_path / "blocks.json").write_text(json.dumps(scripts))
        (tmp_path / "runner.py").write_text(RUNNER)
        out = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "blocks.json")],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=110)
        assert out.returncode == 0, out.stderr[-4000:]
    for n, block in enumerate(b for b in blocks if b["pytest"]):
        test_file = tmp_path / f"test_example_{n}.py"
        test_file.write_text("\n" * (block["line"] - 1) + block["code"])
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=110)
        assert out.returncode == 0, f"{block['page']}:{block['line']}\n{out.stdout[-4000:]}"


def _requirements(distribution: str, extra: str = "") -> set[str]:
    """The names of what ``distribution`` installs with it (its requirements; with ``extra``, that
    extra's instead)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        found = requires(distribution) or []
    except PackageNotFoundError:
        return set()
    mark = f'extra == "{extra}"'
    names = {re.split(r"[^A-Za-z0-9_.-]", r, maxsplit=1)[0] for r in found
             if (mark in r if extra else "extra ==" not in r)}
    return {n.lower().replace("_", "-") for n in names}


@pytest.mark.parametrize("page,blocks", CASES, ids=[str(p.relative_to(ROOT)) for p, _ in CASES])
def test_what_a_page_imports_it_says_how_to_install(page: Path, blocks: list[dict[str, Any]]) -> None:
    """Each package a page's examples import comes with the SDK or a plugin the page uses, or the page
    has a ``pip install`` line naming it: a reader pasting the example has nothing to guess."""
    from importlib.metadata import packages_distributions

    text = page.read_text()
    words = [w.strip("\"'") for line in re.findall(r"pip install ([^\n#]*)", text) for w in line.split()]
    installs = {w.lower().replace("_", "-").split("[")[0] for w in words}
    for word in words:  # "hermes-sdk[openai]" brings the extra's requirements too
        name, _, extras = word.partition("[")
        for extra in filter(None, extras.rstrip("]").split(",")):
            installs |= _requirements(name, extra)
    owners = packages_distributions()
    imported = {m for b in blocks for m in re.findall(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", b["code"], re.M)}
    given = _requirements("hermes-sdk") | {"hermes-sdk"}
    for module in imported:
        if module.startswith("hermes_sdk"):
            name = module.replace("_", "-")
            given |= {name} | _requirements(name)
    missing = []
    for module in sorted(imported - set(sys.stdlib_module_names)):
        names = {d.lower().replace("_", "-") for d in owners.get(module, [module])}
        if not names & (given | installs):
            missing.append(module)
    assert missing == [], f"{page.relative_to(ROOT)} imports {missing} with no pip install line naming them"


def test_each_block_runs_alone(tmp_path: Path) -> None:
    """A block that uses a name made by the block before it fails, as it would pasted alone, whatever
    its first line says."""
    blocks = [{"page": "p.md", "line": 1, "code": "made = 1\n"},
              {"page": "p.md", "line": 3, "code": "# continues the example above\nassert made == 1\n"},
              {"page": "p.md", "line": 6, "code": "print(made)\n"}]
    (tmp_path / "blocks.json").write_text(json.dumps(blocks))
    (tmp_path / "runner.py").write_text(RUNNER)
    out = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "blocks.json")],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and out.stderr.count("failed:") == 2
    assert "example at p.md:3 failed" in out.stderr and "example at p.md:6 failed" in out.stderr


def test_the_landing_page_code_fits_the_page() -> None:
    """The landing page's code blocks are read on the rendered page (furo's column shows about 80
    characters) without scrolling sideways."""
    text = (ROOT / "docs" / "index.md").read_text()
    wide = [line for block in re.findall(r"^```\w*\n(.*?)^```", text, re.M | re.S)
            for line in block.splitlines() if len(line) > 79]
    assert wide == []
