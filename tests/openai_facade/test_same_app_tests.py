"""One application's own tests (mocks of ``create``, the emulator fixture), run against plain openai
and against the facade: the application switches one import line and its tests pass unchanged."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator
from unittest import mock

import pytest

openai = pytest.importorskip("openai")

APP = Path(__file__).parent / "app" / "support_app.py"
SWITCH = ("from openai import OpenAI", "from hermes_sdk.openai import OpenAI")


def _load(flavour: str) -> ModuleType:
    source = APP.read_text()
    if flavour == "facade":
        assert source.count(SWITCH[0]) == 1
        source = source.replace(*SWITCH)
    module = ModuleType(f"support_app_{flavour}")
    module.__file__ = str(APP)
    sys.modules[module.__name__] = module
    exec(compile(source, str(APP), "exec"), module.__dict__)  # noqa: S102 - the app's own source
    return module


@pytest.fixture(params=["openai", "facade"])
def app(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    if request.param == "openai" and importlib.util.find_spec("httpx") is not None:
        import httpx

        def release(text: str) -> tuple[int, ...]:
            return tuple(int(p) for p in text.split(".")[:3] if p.isdigit())

        if release(openai.VERSION) < (1, 55, 3) and release(httpx.__version__) >= (0, 28):
            pytest.skip("this openai cannot be constructed beside httpx >= 0.28 (openai-python#1903)")
    module = _load(request.param)
    yield module
    sys.modules.pop(module.__name__, None)


@pytest.fixture
def client(app: ModuleType, hermes_emulator: Any) -> Iterator[Any]:
    made = app.make_client(hermes_emulator.base_url + "/v1", hermes_emulator.api_key)
    yield made
    made.close()


# ---- the application's tests, as it wrote them against openai ----


def test_answer_with_the_instance_mocked(app: ModuleType, client: Any) -> None:
    fake = mock.MagicMock()
    fake.choices[0].message.content = "mocked answer"
    with mock.patch.object(client.chat.completions, "create", return_value=fake) as create:
        assert app.answer(client, "what is 2+2?") == "mocked answer"
    assert create.call_args.kwargs["messages"][-1] == {"role": "user", "content": "what is 2+2?"}
    assert create.call_args.kwargs["temperature"] == 0.2


def test_answer_with_the_class_mocked(app: ModuleType, client: Any) -> None:
    fake = mock.MagicMock()
    fake.choices[0].message.content = "class mock"
    with mock.patch("openai.resources.chat.completions.Completions.create", return_value=fake):
        assert app.answer(client, "hello") == "class mock"


def test_answer_against_the_emulator(app: ModuleType, client: Any, hermes_emulator: Any) -> None:
    assert app.answer(client, "hello") == "ECHO: hello"
    assert hermes_emulator.requests_seen[-1].body["temperature"] == 0.2


def test_stream_answer_against_the_emulator(app: ModuleType, client: Any) -> None:
    assert app.stream_answer(client, "stream this") == "ECHO: stream this"


def test_a_refused_key_is_handled(app: ModuleType, hermes_emulator: Any) -> None:
    with app.make_client(hermes_emulator.base_url + "/v1", "not-the-key") as bad:
        assert app.answer(bad, "hi") == "the assistant's key was refused"


def test_an_unreachable_server_is_handled(app: ModuleType) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with app.make_client(f"http://127.0.0.1:{port}/v1", "k").with_options(max_retries=0) as gone:
        assert app.answer(gone, "hi") == "the assistant is unreachable; try again later"
