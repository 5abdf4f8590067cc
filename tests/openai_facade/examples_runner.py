"""Runs openai-python's own examples (openai_python_examples/), changed only in their import line,
in a fresh interpreter against a Hermes at ``base_url`` (the emulator, or a real server)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent / "openai_python_examples"
SWITCH = ("from openai import OpenAI", "from hermes_sdk.openai import OpenAI")

#: What the parsing examples' MathResponse model reads: the reply a scripted model gives them.
MATH_REPLY = json.dumps({"steps": [{"explanation": "subtract 31", "output": "8x = -29"},
                                   {"explanation": "divide by 8", "output": "x = -29/8"}],
                         "final_answer": "x = -29/8"})

#: example -> (what the installed openai must have, whether the model must answer MATH_REPLY)
EXAMPLES = {
    "demo.py": ((), False),
    "parsing.py": (("chat.completions.parse",), True),
    "parsing_stream.py": (("chat.completions.stream",), True),
    "responses/streaming.py": (("responses.stream",), True),
}


def missing_api(example: str, client: Any) -> str:
    """The attribute path of the example's API this openai release lacks, or ''."""
    for path in EXAMPLES[example][0]:
        obj = client
        for part in path.split("."):
            if not hasattr(obj, part):
                return path
            obj = getattr(obj, part)
    return ""


def run_example(example: str, tmp_path: Path, base_url: str, api_key: str, *, facade: bool = True,
                timeout: float = 180) -> subprocess.CompletedProcess[str]:
    source = (HERE / f"{example}.txt").read_text()
    assert source.count(SWITCH[0]) == 1, f"{example}: expected one '{SWITCH[0]}' line"
    if facade:
        source = source.replace(*SWITCH)
    script = tmp_path / example.replace("/", "_")
    script.write_text(source)
    env = {**os.environ, "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": api_key, "PYTHONUNBUFFERED": "1"}
    env.pop("OPENAI_LOG", None)
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=str(tmp_path))
