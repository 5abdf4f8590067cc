"""Client-declared tools, which Hermes silently ignores, are refused by default (nothing sent);
``client_tools="ignore"`` sends them as plain openai does."""

from __future__ import annotations

from typing import Any

import pytest

openai = pytest.importorskip("openai")

from openai_support import user  # noqa: E402

from hermes_sdk import errors as he  # noqa: E402

TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}


@pytest.mark.parametrize("declared", [
    {"tools": [TOOL]},
    {"tools": [TOOL], "tool_choice": "auto"},
    {"tools": []},
    {"tool_choice": "none"},
])
def test_declared_tools_are_refused_before_sending(facade: Any, emu: Any, declared: dict[str, Any]) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        facade.chat.completions.create(model="hermes-agent", messages=user("weather?"), **declared)
    error = caught.value
    assert isinstance(error, he.UnsupportedByServerError) and error.details["feature"] == "client_tools"
    assert error.code == "client_tools_unsupported" and "client_tools='ignore'" in error.message
    assert [r.path for r in emu.requests_seen if r.method == "POST"] == []


def test_a_tool_result_message_is_refused_too(facade: Any, emu: Any) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    messages = [{"role": "user", "content": "weather?"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                {"role": "user", "content": "and so?"}]
    with pytest.raises(openai.BadRequestError):
        facade.chat.completions.create(model="hermes-agent", messages=messages)
    assert not [r for r in emu.requests_seen if r.method == "POST"]


def test_the_opt_out_sends_them_as_plain_openai_does(make_facade: Any, emu: Any) -> None:
    client = make_facade(client_tools="ignore")
    reply = client.chat.completions.create(model="hermes-agent", messages=user("weather?"), tools=[TOOL])
    assert reply.choices[0].message.content == "ECHO: weather?" and reply.choices[0].message.tool_calls is None
    assert emu.requests_seen[-1].body["tools"] == [TOOL]
    copy = make_facade().with_options(client_tools="ignore")
    assert copy.chat.completions.create(model="hermes-agent", messages=user("x"), tools=[TOOL]).choices


def test_the_server_is_asked_once_per_client(facade: Any, emu: Any) -> None:
    for _ in range(3):
        with pytest.raises(openai.BadRequestError):
            facade.chat.completions.create(model="hermes-agent", messages=user("w"), tools=[TOOL])
    assert [r.path for r in emu.requests_seen] == ["/v1/capabilities"]


def test_a_call_without_tools_costs_no_capabilities_request(facade: Any, emu: Any) -> None:
    facade.chat.completions.create(model="hermes-agent", messages=user("plain"))
    assert [r.path for r in emu.requests_seen] == ["/v1/chat/completions"]
