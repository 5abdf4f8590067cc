"""Issue 40: the declared input schemas refuse and map exactly as the hand-written checks did.

The golden corpus (``tests/core/golden/input_corpus.json``, recorded by ``input_corpus.py`` at the
commit before the schemas) holds the outcome of 20,000 inputs over every built-in operation: the
error class, ``details`` and message of a refusal, or the request (method, path, headers, body).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_SPEC = importlib.util.spec_from_file_location("input_corpus", Path(__file__).parent / "golden" / "input_corpus.py")
assert _SPEC is not None and _SPEC.loader is not None
corpus = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("input_corpus", corpus)
_SPEC.loader.exec_module(corpus)

#: Outcomes that changed on purpose, each listed in CHANGELOG.md: (operation key, case name) -> why.
CHANGED: dict[tuple[str, str], str] = {}


def test_every_builtin_operation_refuses_as_before() -> None:
    recorded = corpus.load()
    now = corpus.record()
    assert now.keys() == recorded.keys()
    differences = [(op, name, recorded[op][name], now[op][name]) for op in recorded for name in recorded[op]
                   if recorded[op][name] != now[op][name] and (op, name) not in CHANGED]
    assert not differences, f"{len(differences)} differences, the first: {differences[:5]}"
    stale = [key for key in CHANGED if recorded[key[0]][key[1]] == now[key[0]][key[1]]]
    assert not stale, f"listed as changed but unchanged: {stale}"
