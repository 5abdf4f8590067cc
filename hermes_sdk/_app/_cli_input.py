"""One turn of the chat loop as typed: a line, a line continued by a trailing backslash, or a
``!multi`` ... ``!end`` block (``!multi TAG`` ends at ``!end TAG``), as in llm's chat."""

from __future__ import annotations

from typing import Callable

#: The prompt of a continuation line.
MORE = "... "


def read_turn(read: Callable[[str], str]) -> str:
    """The text of one turn; ``read(prompt)`` returns a line or raises EOFError (which ends a block)."""
    line = read("> ").rstrip("\r\n")
    words = line.strip().split(None, 1)
    if words and words[0] == "!multi":
        end = " ".join(["!end", *words[1:]])
        lines: list[str] = []
        while True:
            try:
                more = read(MORE).rstrip("\r\n")
            except EOFError:
                break
            if more.strip() == end:
                break
            lines.append(more)
        return "\n".join(lines)
    lines = []
    while line.endswith("\\"):
        lines.append(line[:-1])
        try:
            line = read(MORE).rstrip("\r\n")
        except EOFError:
            line = ""
    return "\n".join([*lines, line])
