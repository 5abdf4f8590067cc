"""Small private files in the CLI's state directory: JSON read leniently, written 0600 atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ._cli_support import private_state_dir


def read_json(path: Path) -> dict[str, object]:
    """The JSON object in ``path``; an absent or unreadable file is empty."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_private_json(path: Path, data: dict[str, object]) -> None:
    """Replace ``path`` with ``data``: the file 0600 from its creation (never readable by others for a
    moment), the directory 0700; a crash leaves the old file or the new one, never half of one."""
    private_state_dir()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=2, sort_keys=True)
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)
