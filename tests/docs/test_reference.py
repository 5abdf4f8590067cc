"""The API reference (docs/reference/) is grouped by hand: every public name must be on one of its pages.

A name added to ``hermes_sdk.__all__`` or ``hermes_sdk.testing.__all__`` fails here until a page
documents it (``.. autoclass:: hermes_sdk.Name`` or another directive naming it), so the grouped
reference cannot silently lose what the old alphabetical ``automodule`` page listed.
"""

from __future__ import annotations

import re
from pathlib import Path

import hermes_sdk
import hermes_sdk.testing

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "reference"
DIRECTIVE = re.compile(r"^\.\. (?:auto|py:)?(?:class|function|data|exception|module)::\s+(\S+)", re.M)


def documented() -> set[str]:
    return {m.group(1) for page in REFERENCE.glob("*.md") for m in DIRECTIVE.finditer(page.read_text())}


def test_every_public_name_is_on_a_reference_page() -> None:
    names = documented()
    missing = [f"hermes_sdk.{n}" for n in hermes_sdk.__all__ if f"hermes_sdk.{n}" not in names]
    missing += [f"hermes_sdk.testing.{n}" for n in hermes_sdk.testing.__all__
                if f"hermes_sdk.testing.{n}" not in names]
    assert not missing, f"add these to a page of docs/reference/ (grouped by what a reader looks for): {missing}"


def test_no_page_documents_a_name_twice() -> None:
    seen: dict[str, str] = {}
    for page in sorted(REFERENCE.glob("*.md")):
        for m in DIRECTIVE.finditer(page.read_text()):
            name = m.group(1)
            assert name not in seen, f"{name} is on {seen[name]} and {page.name}"
            seen[name] = page.name


def test_the_reference_does_not_open_on_an_alphabetical_module_dump() -> None:
    assert not re.search(r"automodule::\s+hermes_sdk\s*$", "\n".join(
        p.read_text() for p in REFERENCE.glob("*.md")), re.M)
