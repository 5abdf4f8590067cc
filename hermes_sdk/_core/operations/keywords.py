"""The typed methods' own keywords, for the unknown-keyword hint (a misspelling's close match).

Each family packs its methods' keywords into its capability's input; a keyword a method does not
model is refused before anything is sent, with the close match (``_families/_shared.check_known``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Optional

import attrs

from ..options import CallOptions

#: The typed methods' own keywords, for the close-match hint: the per-call ones as CallOptions
#: declares them (approval and reason only delete takes), and the methods' inputs.
CALL_KEYWORDS = tuple(f.name for f in attrs.fields(CallOptions) if f.name not in ("approval", "reason")) + (
    "session_key", "session_id", "extra_body", "max_events", "model", "prompt", "query", "messages", "body")


def close_match(name: str, known: Iterable[str]) -> Optional[str]:
    """The known name ``name`` is most likely a misspelling of, or None."""
    import difflib  # only a misspelt keyword needs it

    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return found[0] if found else None
