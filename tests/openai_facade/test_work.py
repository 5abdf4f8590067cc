"""What a facade call costs, counted in work rather than time (issue 39's benchmark targets).

openai parses every reply into its own types; hermes-sdk parses it once for its own checks and
its idempotency record. Nothing else reads it: the SDK's typed reader (ChatCompletion, the cattrs
Response) would be built for nobody, and a second ``json.loads`` of the same bytes is waste. A
first chat in a fresh process imports only what openai's own first chat imports plus the SDK's
kernel (requests, urllib3, pluggy, attrs).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

openai = pytest.importorskip("openai")

from openai_support import user  # noqa: E402

from hermes_sdk._families.chat import types as chat_types  # noqa: E402
from hermes_sdk._families.responses import types as responses_types  # noqa: E402
from hermes_sdk.openai import call_options  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _reply_parses(marker: bytes) -> tuple[list[object], Any]:
    """A ``json.loads`` that records each parse of a document containing ``marker`` (a reply's field)."""
    seen: list[object] = []
    real = json.loads

    def loads(data: Any, *args: Any, **kwargs: Any) -> Any:
        raw = data if isinstance(data, (bytes, bytearray)) else str(data).encode()
        if marker in raw:
            seen.append(data)
        return real(data, *args, **kwargs)

    return seen, mock.patch("json.loads", loads)


def test_a_chat_reply_is_parsed_once_and_never_into_the_sdks_own_types(facade: Any, emu: Any) -> None:
    facade.chat.completions.create(model="hermes-agent", messages=user("warm up"))  # families loaded
    parses, patch = _reply_parses(b'"choices"')
    with patch, mock.patch.object(chat_types.ChatCompletion, "__init__", autospec=True,
                                  side_effect=chat_types.ChatCompletion.__init__) as typed:
        completion = facade.chat.completions.create(model="hermes-agent", messages=user("hello"))
    assert completion.choices[0].message.content == "ECHO: hello"
    assert len(parses) == 1  # the SDK's parse (its checks, its record); openai reads that one
    assert typed.call_count == 0
    assert emu.executions == 2


def test_a_responses_reply_is_parsed_once_and_not_structured_by_cattrs(facade: Any, emu: Any) -> None:
    if not hasattr(facade, "responses"):
        pytest.skip(f"openai {openai.VERSION} has no client.responses")
    facade.responses.create(model="hermes-agent", input="warm up")
    parses, patch = _reply_parses(b'"output"')
    with patch, mock.patch.object(responses_types, "structure", mock.Mock(wraps=responses_types.structure)) as conv:
        response = facade.responses.create(model="hermes-agent", input="hello")
    assert response.output_text == "ECHO: hello"
    assert len(parses) == 1
    assert conv.call_count == 0  # the family's cattrs structuring (hermes_sdk.plugin.structure) never ran


def test_a_keyed_replay_returns_the_recorded_json_to_openai(facade: Any, emu: Any) -> None:
    with call_options(idempotency_key="work-replay-1"):
        first = facade.chat.completions.create(model="hermes-agent", messages=user("once"))
        raw = facade.chat.completions.with_raw_response.create(model="hermes-agent", messages=user("once"))
    again = raw.parse()
    assert emu.executions == 1
    assert raw.headers["x-hermes-sdk-replayed"] == "true"
    assert again.model_dump() == first.model_dump()
    assert json.loads(raw.text)["choices"][0]["message"]["content"] == "ECHO: once"


def test_a_reply_without_what_openai_reads_is_still_the_sdks_invalid_response() -> None:
    from hermes_sdk._core.convert import DecodeContext
    from hermes_sdk.errors import InvalidResponseError
    from hermes_sdk.openai._passthrough import _chat_reply, _responses_reply

    for reader, bad in ((_chat_reply, {"id": "x"}), (_chat_reply, []), (_responses_reply, {"output": []}),
                        (_responses_reply, {"id": "r", "output": {}})):
        with pytest.raises(InvalidResponseError):
            reader(bad, DecodeContext("x"))


_FIRST_CHAT = """
import json, sys
from hermes_sdk.testing import HermesEmulator
emu = HermesEmulator()
emu.start()
before = set(sys.modules)
if sys.argv[1] == "openai":
    import openai
    client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key=emu.api_key, max_retries=0)
else:
    from hermes_sdk.openai import OpenAI
    client = OpenAI(base_url=emu.base_url + "/v1", api_key=emu.api_key, max_retries=0, load_entrypoints=False)
client.chat.completions.create(model="hermes-agent", messages=[{"role": "user", "content": "hi"}])
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def _first_chat_imports(which: str) -> set[str]:
    done = subprocess.run([sys.executable, "-c", _FIRST_CHAT, which], capture_output=True, text=True, cwd=ROOT,
                          timeout=180, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def _stdlib(name: str) -> bool:
    """Part of the interpreter (Python 3.9 has no sys.stdlib_module_names): what a first chat costs is
    the dependencies it loads, and the standard library a dependency reaches differs by release."""
    import importlib.util
    import sysconfig

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    origin = (spec.origin or "") if spec else ""
    return origin in ("built-in", "frozen") or (origin.startswith(sysconfig.get_paths()["stdlib"])
                                                and "site-packages" not in origin)


def test_a_first_chat_imports_only_openais_modules_and_the_sdk_kernel() -> None:
    theirs = _first_chat_imports("openai")
    ours = _first_chat_imports("facade")
    extra = {m.split(".")[0] for m in ours - theirs}
    kernel = {"hermes_sdk", "requests", "urllib3", "charset_normalizer", "chardet", "idna", "certifi", "socks",
              "pluggy", "attr", "attrs", "http", "importlib", "importlib_metadata", "zipp", "cython_runtime",
              "typing_extensions"}
    extra = {m for m in extra if not m.startswith("_cython") and not _stdlib(m)}  # Cython runtimes; the stdlib
    assert extra - kernel == set(), f"a first chat through the facade imports more: {sorted(extra - kernel)}"
    # What a chat never needs: the cattrs structurers, SQLite, the streams' typed events.
    assert not {"cattrs", "sqlite3", "hermes_sdk._core.events", "hermes_sdk._families.responses"} & ours
