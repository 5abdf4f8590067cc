"""The private openai hooks the facade uses, checked on the installed openai release (tox runs this
on every release of the matrix: the day one moves, this fails, not an application)."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

openai = pytest.importorskip("openai")

from openai_support import user  # noqa: E402

from hermes_sdk.openai import OpenAI, _hooks  # noqa: E402
from hermes_sdk.openai._transport import HermesHttpClient, httpx  # noqa: E402


def test_every_private_hook_is_where_the_facade_expects_it() -> None:
    assert _hooks.check_hooks() == []
    assert {name for name, _ in _hooks.HOOKS} == {"openai.OpenAI.request", "FinalRequestOptions.method",
                                                  "FinalRequestOptions.max_retries"}


def test_the_request_hook_is_in_place_on_the_facade() -> None:
    assert OpenAI.request is not openai.OpenAI.request
    assert OpenAI.request.__code__ is _hooks.request_hook(openai.OpenAI.request).__code__


def test_a_post_reaches_openais_loop_with_retries_off_and_a_get_unchanged(facade: Any, emu: Any) -> None:
    seen: list[tuple[str, Any]] = []
    original = openai.OpenAI.request

    def spy(self: Any, cast_to: Any, options: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append((str(options.method).lower(), options.max_retries))
        return original(self, cast_to, options, *args, **kwargs)

    hooked = _hooks.request_hook(spy)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(OpenAI, "request", hooked)
        facade.with_options(max_retries=5).chat.completions.create(model="hermes-agent", messages=user("x"))
        facade.models.list()
    assert seen[0] == ("post", 0)
    assert seen[1][0] == "get" and seen[1][1] != 0


def test_the_public_extension_points_the_facade_uses() -> None:
    assert "http_client" in inspect.signature(openai.OpenAI.__init__).parameters
    assert "http_client" in inspect.signature(openai.OpenAI.copy).parameters
    assert issubclass(HermesHttpClient, httpx.Client) and issubclass(openai.DefaultHttpxClient, httpx.Client)
    assert hasattr(httpx, "BaseTransport") and hasattr(httpx, "SyncByteStream")


def test_openais_loop_honours_x_should_retry_false(facade: Any, emu: Any) -> None:
    # The second guard against re-sending: every reply to a POST says x-should-retry: false.
    raw = facade.chat.completions.with_raw_response.create(model="hermes-agent", messages=user("hdr"))
    assert raw.headers["x-should-retry"] == "false"
    assert facade._should_retry(raw.http_response) is False  # openai's own decision on that reply
