"""openai's own debug log (``OPENAI_LOG=debug``; openai 1.x/2.x log every request body) and
httpx's never carry a prompt, a key or an id through the facade."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from openai_support import user  # noqa: E402

SECRET = "sk-" + "live0a1b2c3d4e5f6a7b8c9d0e"
PROMPT = f"my password is hunter2 and token {SECRET}"


def test_debug_records_of_openai_and_httpx_carry_no_prompt_or_key(facade: Any, caplog: Any) -> None:
    caplog.set_level(logging.DEBUG)
    facade.chat.completions.create(model="hermes-agent", messages=user(PROMPT))
    text = caplog.text
    assert any(r.name.startswith("openai") for r in caplog.records)  # openai did log the call
    assert "hunter2" not in text and SECRET not in text


def test_openai_log_debug_in_a_fresh_process(emu: Any) -> None:
    code = (
        "from hermes_sdk.openai import OpenAI\n"
        f"c = OpenAI(base_url={emu.base_url + '/v1'!r}, api_key={emu.api_key!r}, load_entrypoints=False)\n"
        f"print(c.chat.completions.create(model='hermes-agent', messages=[{{'role': 'user', 'content': {PROMPT!r}}}])"
        ".choices[0].message.content is not None)\n"
    )
    env = {**os.environ, "OPENAI_LOG": "debug"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "True" in done.stdout and "openai" in done.stderr.lower()  # the debug log is on
    assert "hunter2" not in done.stderr and SECRET not in done.stderr
