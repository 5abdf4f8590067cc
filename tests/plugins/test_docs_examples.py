"""Every runnable example in docs/plugins.md runs (each against its own emulator)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
BLOCKS = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S) if "HermesEmulator() as" in b]


@pytest.mark.parametrize("block", BLOCKS, ids=[f"example{i}" for i in range(len(BLOCKS))])
def test_example_runs(block: str) -> None:
    result = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "HERMES_SDK_PLUGINS": ""})
    assert result.returncode == 0, result.stderr
