"""Fixtures for the openai facade's tests (``hermes_sdk.openai``), against the emulator on loopback.

Without the ``openai`` package only ``test_extra.py`` runs (it proves what ``import
hermes_sdk.openai`` says then); everything else needs openai and is not collected.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any, Callable

import pytest

HAVE_OPENAI = importlib.util.find_spec("openai") is not None
collect_ignore_glob = [] if HAVE_OPENAI else ["test_[!e]*.py", "test_e[!x]*.py"]


@pytest.fixture
def emu(hermes_emulator: Any) -> Any:
    return hermes_emulator


@pytest.fixture
def make_facade(emu: Any) -> Iterator[Callable[..., Any]]:
    """``make_facade(**options)``: a facade client on the emulator (closed after the test)."""
    from hermes_sdk.openai import OpenAI

    made: list[Any] = []

    def make(**options: Any) -> Any:
        options.setdefault("load_entrypoints", False)
        client = OpenAI(base_url=emu.base_url + "/v1", api_key=emu.api_key, **options)
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def facade(make_facade: Callable[..., Any]) -> Any:
    return make_facade()


@pytest.fixture
def make_plain(emu: Any) -> Iterator[Callable[..., Any]]:
    """``make_plain(**options)``: the official ``openai.OpenAI`` on the emulator, for comparisons.

    openai releases before 1.55.3 cannot be constructed beside httpx >= 0.28 (they pass httpx a
    ``proxies`` argument it dropped): there the comparison is skipped, which is what such an app sees.
    """
    import openai

    made: list[Any] = []

    def make(**options: Any) -> Any:
        try:
            client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key=emu.api_key, **options)
        except TypeError as exc:
            pytest.skip(f"plain openai {openai.VERSION} cannot be constructed here: {exc}")
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()
