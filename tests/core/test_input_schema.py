"""Issue 40: the declared input schemas refuse and map exactly as the hand-written checks did.

The golden corpus (``tests/core/golden/input_corpus.json``, recorded by ``input_corpus.py`` at the
commit before the schemas) holds the outcome of 20,000 inputs over every built-in operation: the
error class, ``details`` and message of a refusal, or the request (method, path, headers, body).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Callable

_SPEC = importlib.util.spec_from_file_location("input_corpus", Path(__file__).parent / "golden" / "input_corpus.py")
assert _SPEC is not None and _SPEC.loader is not None
corpus = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("input_corpus", corpus)
_SPEC.loader.exec_module(corpus)

Outcome = list[object]


def _declared_kind_first(op: str, name: str, was: Outcome, now: Outcome) -> bool:
    """chat: a NaN, infinity or over-2**53 number given for a declared field that is not a number
    (``stop``, ``tools``, ``tool_choice``, ``response_format``, ``metadata``, ``user``) is refused with
    that field's own message ("'user' must be a string"), not the provider-number one."""
    return (op in ("chat", "chat_stream") and was[0] == now[0] == "refused" and was[2] == now[2]
            and str(was[3]).endswith("must be a finite number of at most 2**53 in size")
            and name.split(":")[1].split("=")[0] in ("stop", "tools", "tool_choice", "response_format", "metadata",
                                                      "user"))


#: Outcomes that changed on purpose, each listed in CHANGELOG.md (Unreleased, "Input schemas").
CHANGES: tuple[Callable[[str, str, Outcome, Outcome], bool], ...] = (_declared_kind_first,)


def test_every_builtin_operation_refuses_as_before() -> None:
    recorded = corpus.load()
    now = corpus.record()
    assert now.keys() == recorded.keys()
    used: set[object] = set()
    differences = []
    for op in recorded:
        for name, was in recorded[op].items():
            if was == now[op][name]:
                continue
            listed = [change for change in CHANGES if change(op, name, was, now[op][name])]
            used.update(listed)
            if not listed:
                differences.append((op, name, was, now[op][name]))
    assert not differences, f"{len(differences)} differences, the first: {differences[:5]}"
    assert used == set(CHANGES), "a listed change no longer happens: drop it (and its CHANGELOG line)"
