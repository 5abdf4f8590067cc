"""The openai facade (``hermes_sdk.openai``) against the REAL Hermes server (0.19.0; 0.20.1 and 0.22.2
with ``HERMES_PIP_SPEC``): openai-python's own demo example changed only in its import line, streams,
Responses streaming, and one execution after a read timeout. Needs ``HERMES_LIVE=1`` and openai."""

from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pytest

openai = pytest.importorskip("openai")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "openai_facade"))

from examples_runner import run_example  # noqa: E402

from hermes_sdk import HermesError  # noqa: E402
from hermes_sdk.openai import OpenAI  # noqa: E402

if TYPE_CHECKING:
    from hermes_server import HermesServer


@pytest.fixture
def client(hermes_live: HermesServer) -> Iterator[Any]:
    with OpenAI(base_url=hermes_live.base_url + "/v1", api_key=hermes_live.api_key, load_entrypoints=False) as made:
        yield made


def _user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def test_openais_demo_example_runs_unchanged_but_for_the_import(hermes_live: HermesServer, tmp_path: Path) -> None:
    mark = hermes_live.mark()
    done = run_example("demo.py", tmp_path, hermes_live.base_url + "/v1", hermes_live.api_key)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ECHO: Say this is a test" in done.stdout and "ECHO: How do I output" in done.stdout
    assert len(hermes_live.upstream_calls(since=mark)) == 3


def test_chat_and_its_stream_are_openai_types(client: Any, hermes_live: HermesServer) -> None:
    prompt = f"facade {uuid.uuid4().hex}"
    completion = client.chat.completions.create(model="hermes-agent", messages=_user(prompt))
    assert isinstance(completion, openai.types.chat.ChatCompletion)
    assert completion.choices[0].message.content == f"ECHO: {prompt}"
    stream = client.chat.completions.create(model="hermes-agent", messages=_user(prompt), stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == f"ECHO: {prompt}"


def test_responses_stream_gives_the_final_text(client: Any) -> None:
    if not hasattr(client, "responses") or not hasattr(client.responses, "stream"):
        pytest.skip(f"openai {openai.VERSION} has no responses.stream")
    prompt = f"responses {uuid.uuid4().hex}"
    with client.responses.stream(model="hermes-agent", input=prompt) as stream:
        for _ in stream:
            pass
        assert stream.get_final_response().output_text == f"ECHO: {prompt}"


def test_a_read_timeout_runs_the_turn_once(client: Any, hermes_live: HermesServer) -> None:
    mark = hermes_live.mark()
    with pytest.raises(openai.APITimeoutError) as caught:
        client.with_options(timeout=1.0, max_retries=5).chat.completions.create(
            model="hermes-agent", messages=_user(f"SLOW:3 {uuid.uuid4().hex}"))
    assert isinstance(caught.value, HermesError) and caught.value.uncertain_outcome is True
    ends = time.monotonic() + 10
    while time.monotonic() < ends and not hermes_live.upstream_calls(since=mark):
        time.sleep(0.1)  # the call reaches the fake LLM just after Hermes got it
    assert len(hermes_live.upstream_calls(since=mark)) == 1


def test_models_list(client: Any) -> None:
    assert "hermes-agent" in [m.id for m in client.models.list()]
