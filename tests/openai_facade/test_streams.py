"""Streams through the facade: Hermes-only events never reach the chunk loop (they go to a side
channel), stream approvals reach the approval provider, ``responses.stream()`` works without
``response.content_part.added``, and closing a stream cancels the turn."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from openai_support import user  # noqa: E402

from hermes_sdk import HermesError  # noqa: E402
from hermes_sdk.openai import OpenAI, call_options  # noqa: E402
from hermes_sdk.testing import HermesEmulator  # noqa: E402
from hermes_sdk.testing.emulator import TOOLSETS  # noqa: E402

TOOL_PROMPT = "TOOL:terminal:echo hi"


def _text(stream: Any) -> str:
    return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)


def test_tool_progress_never_reaches_the_chunk_loop(facade: Any, emu: Any) -> None:
    emu.toolsets = TOOLSETS
    seen: list[Any] = []
    with call_options(on_hermes_event=seen.append):
        stream = facade.chat.completions.create(model="hermes-agent", messages=user(TOOL_PROMPT), stream=True)
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream)  # the usual loop: no TypeError
    assert '"output": "hi"' in text
    side = stream.response.extensions["hermes_events"]
    assert [e.event for e in side] == ["hermes.tool.progress", "hermes.tool.progress"] and side == seen
    assert side[0].data["tool"] == "terminal"


def test_plain_openai_breaks_on_the_same_stream(make_plain: Any, emu: Any) -> None:
    emu.toolsets = TOOLSETS
    stream = make_plain().chat.completions.create(model="hermes-agent", messages=user(TOOL_PROMPT), stream=True)
    with pytest.raises(TypeError):
        "".join(chunk.choices[0].delta.content or "" for chunk in stream)


def test_include_usage_reaches_the_last_chunk(facade: Any) -> None:
    chunks = list(facade.chat.completions.create(model="hermes-agent", messages=user("usage please"), stream=True,
                                                 stream_options={"include_usage": True}))
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0


def test_the_chat_stream_helper_gives_the_final_completion(facade: Any, emu: Any) -> None:
    emu.toolsets = TOOLSETS
    helper = getattr(facade.chat.completions, "stream", None)
    if helper is None and hasattr(facade.beta, "chat"):
        helper = facade.beta.chat.completions.stream
    if helper is None:
        pytest.skip(f"openai {openai.VERSION} has no chat stream helper")
    with helper(model="hermes-agent", messages=user("helper text")) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "ECHO: helper text"


def test_responses_stream_works_without_content_part_added(facade: Any, emu: Any) -> None:
    if not hasattr(facade, "responses"):
        pytest.skip(f"openai {openai.VERSION} has no Responses API")
    with facade.responses.stream(model="hermes-agent", input="stream me") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert final.output_text == "ECHO: stream me"
    assert kinds.index("response.content_part.added") < kinds.index("response.output_text.delta")
    assert kinds.index("response.content_part.done") < kinds.index("response.output_item.done")
    assert kinds.count("response.content_part.added") == 1


def test_plain_openai_responses_stream_breaks(make_plain: Any) -> None:
    client = make_plain()
    if not hasattr(client, "responses") or not hasattr(client.responses, "stream"):
        pytest.skip(f"openai {openai.VERSION} has no responses.stream")
    with pytest.raises(IndexError), client.responses.stream(model="hermes-agent", input="stream me") as stream:
        for _ in stream:
            pass


def test_responses_create_stream_passes_events_unchanged_but_for_the_inserted_parts(facade: Any) -> None:
    if not hasattr(facade, "responses"):
        pytest.skip(f"openai {openai.VERSION} has no Responses API")
    events = list(facade.responses.create(model="hermes-agent", input="raw events", stream=True))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert events[-1].response.output[0].content[0].text == "ECHO: raw events"


def test_closing_a_stream_cancels_the_turn(facade: Any, emu: Any) -> None:
    emu.token_delay = 0.2
    stream = facade.chat.completions.create(model="hermes-agent", messages=user("one two three four five six"),
                                            stream=True)
    next(iter(stream))
    stream.close()
    hs = stream.response.extensions["hermes_stream"]
    assert hs.closed and hs.result().status == "cancelled"


def test_a_deadline_cuts_a_stream_during_iteration(facade: Any, emu: Any) -> None:
    emu.token_delay = 0.5
    with call_options(deadline=time.time() + 1.0):
        stream = facade.chat.completions.create(model="hermes-agent", messages=user("a b c d e f g h i j"),
                                                stream=True)
        with pytest.raises(openai.APITimeoutError) as caught:
            for _ in stream:
                pass
    assert isinstance(caught.value, HermesError) and caught.value.uncertain_outcome is True


def test_a_broken_stream_is_an_openai_error_and_a_hermes_error(facade: Any, emu: Any) -> None:
    emu.drop_connection("mid_stream", after_events=2)
    stream = facade.chat.completions.create(model="hermes-agent", messages=user("w1 w2 w3 w4 w5"), stream=True)
    with pytest.raises(openai.APIError) as caught:
        for _ in stream:
            pass
    assert isinstance(caught.value, HermesError) and caught.value.uncertain_outcome is True


def test_a_keyed_stream_replays_its_text_without_running_again(facade: Any, emu: Any) -> None:
    key = {"Idempotency-Key": "stream-key-1"}
    first = _text(facade.chat.completions.create(model="hermes-agent", messages=user("streamed once"), stream=True,
                                                 extra_headers=key))
    again = facade.chat.completions.create(model="hermes-agent", messages=user("streamed once"), stream=True,
                                           extra_headers=key)
    assert _text(again) == first == "ECHO: streamed once"
    assert again.response.headers["x-hermes-sdk-replayed"] == "true" and emu.executions == 1


@pytest.fixture
def hermes_022() -> Iterator[HermesEmulator]:
    emu = HermesEmulator(server_version="0.22.2", toolsets=TOOLSETS, approval_timeout=10, tool_followup_delay=0.05)
    emu.start()
    emu.files["/scratch/victim/keep.txt"] = "precious"
    yield emu
    emu.stop()


def test_a_stream_approval_reaches_the_approval_provider(hermes_022: HermesEmulator) -> None:
    asked: list[Any] = []

    def deny(request: Any) -> Any:
        asked.append(request)
        return request.deny(approver="test", reason="not from a chat loop")

    with OpenAI(base_url=hermes_022.base_url + "/v1", api_key=hermes_022.api_key, approval_provider=deny,
                load_entrypoints=False) as client:
        stream = client.chat.completions.create(model="hermes-agent", stream=True,
                                                messages=user("TOOL:terminal:rm -rf /scratch/victim"))
        text = _text(stream)
    assert len(asked) == 1 and asked[0].input_snapshot["command"] == "rm -rf /scratch/victim"
    assert "BLOCKED" in text and "/scratch/victim/keep.txt" in hermes_022.files
    assert "approval.request" in [e.event for e in stream.response.extensions["hermes_events"]]
    assert [r.body for r in hermes_022.requests_seen if r.path.endswith("/approval")][0]["choice"] == "deny"


def test_a_keyed_responses_stream_replays_its_final_response(facade: Any, emu: Any) -> None:
    if not hasattr(facade, "responses") or not hasattr(facade.responses, "stream"):
        pytest.skip(f"openai {openai.VERSION} has no responses.stream")
    key = {"Idempotency-Key": "responses-stream-key-1"}
    with facade.responses.stream(model="hermes-agent", input="once only", extra_headers=key) as first:
        text = first.get_final_response().output_text
    with facade.responses.stream(model="hermes-agent", input="once only", extra_headers=key) as again:
        assert again.get_final_response().output_text == text == "ECHO: once only"
    assert emu.executions == 1


def test_a_failed_agent_run_in_a_stream_raises_where_openai_does_and_is_dual(facade: Any, emu: Any) -> None:
    key = {"Idempotency-Key": "failing-stream-1"}
    stream = facade.chat.completions.create(model="hermes-agent", messages=user("FAIL500 now"), stream=True,
                                            extra_headers=key)
    with pytest.raises(openai.APIError) as caught:
        for _ in stream:
            pass
    error = caught.value
    assert isinstance(error, HermesError) and error.uncertain_outcome is True
    assert "FAIL500" in error.message and error.details["provider_error"]
    recorded = facade.hermes.action_result(stream.response.headers["x-hermes-sdk-action-id"])
    assert recorded is not None and recorded.status == "failed"  # read to its end: failed, not cancelled
