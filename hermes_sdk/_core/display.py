"""Text shown to a person: control, escape, bidi and invisible characters made visible, never interpreted.

An agent's command, Hermes' description of it, a tool preview or an error message can carry
``ESC[2K ESC[1G`` (erase the line a terminal shows, then print something else), ``U+202E``
(display the rest right to left), zero-width characters (two texts that look the same) or a
lookalike space. Every place that shows such text to a person (the CLI's prompts and lines, the
approval inbox's page and list, an ``ApprovalRequest`` handed to a provider) renders it through
:func:`visible`: what the person reads is every character there is.
"""

from __future__ import annotations

import re

# Printable by str.isprintable() but drawn as nothing (or as blank): fillers, joiners and selectors.
_INVISIBLE = re.compile("[\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
                        "\U000e0100-\U000e01ef]")


def _shown(ch: str) -> str:
    code = ord(ch)
    if code < 0x20 or 0x7F <= code <= 0x9F:
        return f"\\x{code:02x}"  # C0, DEL and C1 controls, ESC among them: \x1b
    return f"<U+{code:04X}>"


def visible(text: str, keep: str = "") -> str:
    """``text`` with every character that is not drawn as itself written out visibly.

    Controls become ``\\x1b``-style escapes; format characters (bidi overrides and isolates,
    zero-width spaces and joiners, the BOM), line and paragraph separators, every space but
    U+0020, unassigned and private-use code points, lone surrogates and invisible fillers become
    ``<U+202E>``-style names. Characters in ``keep`` (e.g. ``"\\n\\t"`` for a multi-line text) are
    left as they are. Printable text is returned unchanged.

    Raises TypeError for a value that is not a ``str``.
    """
    if not isinstance(text, str):
        raise TypeError(f"visible() takes a str, not {type(text).__name__}")
    if text.isprintable() and _INVISIBLE.search(text) is None:
        return text
    return "".join(ch if ch in keep or (ch.isprintable() and _INVISIBLE.match(ch) is None) else _shown(ch)
                   for ch in text)


def visible_value(value: object, keep: str = "") -> object:
    """A copy of a JSON-like value (dicts, lists, strings) with every string, keys too, :func:`visible`."""
    if isinstance(value, str):
        return visible(value, keep)
    if isinstance(value, dict):
        return {visible(str(k), keep): visible_value(v, keep) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [visible_value(v, keep) for v in value]
    return value


__all__ = ["visible", "visible_value"]
