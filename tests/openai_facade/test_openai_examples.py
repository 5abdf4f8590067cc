"""openai-python's own examples (chat, streaming, raw response, parsing, Responses streaming), changed
only in their import line, run through the facade against the emulator."""

from __future__ import annotations

from typing import Any

import pytest

openai = pytest.importorskip("openai")
pytest.importorskip("rich")  # the parsing examples print with it

from examples_runner import EXAMPLES, MATH_REPLY, missing_api, run_example  # noqa: E402


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_example_runs_through_the_facade(example: str, facade: Any, emu: Any, tmp_path: Any) -> None:
    lacking = missing_api(example, facade)
    if lacking:
        pytest.skip(f"openai {openai.VERSION} has no {lacking}")
    if EXAMPLES[example][1]:
        emu.script(MATH_REPLY)
    done = run_example(example, tmp_path, emu.base_url + "/v1", emu.api_key)
    assert done.returncode == 0, done.stderr[-3000:]
    if example == "demo.py":
        assert "ECHO: Say this is a test" in done.stdout and "ECHO: How do I output" in done.stdout
    else:
        assert "-29/8" in done.stdout
    posts = [r for r in emu.requests_seen if r.method == "POST"]
    assert len(posts) == (3 if example == "demo.py" else 1) and emu.executions == len(posts)


def test_plain_openai_fails_the_responses_streaming_example(make_plain: Any, emu: Any, tmp_path: Any) -> None:
    client = make_plain()
    if missing_api("responses/streaming.py", client):
        pytest.skip(f"openai {openai.VERSION} has no responses.stream")
    emu.script(MATH_REPLY)
    done = run_example("responses/streaming.py", tmp_path, emu.base_url + "/v1", emu.api_key, facade=False)
    assert done.returncode != 0 and "IndexError" in done.stderr
