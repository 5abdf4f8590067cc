"""Test helpers: a Hermes 0.19.0-compatible emulator and a pytest plugin.

The names below are imported on first use (PEP 562), so the pytest plugin, which pytest loads at
every start wherever hermes-sdk is installed, costs little until a fixture is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .cassette import Cassette, CassetteMiss, use_cassette
    from .emulator import TOOLSETS, HermesEmulator, main, serve
    from .faults import FAULTS, Fault, FaultRequest, FaultServer
    from .model import AgentResult, Reply, RequestInfo
    from .state import SeenRequest

#: Where each exported name lives (the imports above, for type checkers, name the same).
_EXPORTS: dict[str, tuple[str, ...]] = {
    "cassette": ("Cassette", "CassetteMiss", "use_cassette"),
    "emulator": ("TOOLSETS", "HermesEmulator", "main", "serve"),
    "faults": ("FAULTS", "Fault", "FaultRequest", "FaultServer"),
    "model": ("AgentResult", "Reply", "RequestInfo"),
    "state": ("SeenRequest",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "FAULTS",
    "TOOLSETS",
    "AgentResult",
    "Cassette",
    "CassetteMiss",
    "Fault",
    "FaultRequest",
    "FaultServer",
    "HermesEmulator",
    "Reply",
    "RequestInfo",
    "SeenRequest",
    "main",
    "serve",
    "use_cassette",
]


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # imported once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
