"""Test helpers: a Hermes 0.19.0-compatible emulator and a pytest plugin.

Nothing here imports the rest of ``hermes_sdk`` at import time, so the
emulator can serve on its own (``python -m hermes_sdk.testing``).
"""

from .emulator import TOOLSETS, HermesEmulator, main, serve
from .faults import FAULTS, Fault, FaultRequest, FaultServer
from .model import AgentResult, Reply, RequestInfo
from .state import SeenRequest

__all__ = [
    "FAULTS",
    "TOOLSETS",
    "AgentResult",
    "Fault",
    "FaultRequest",
    "FaultServer",
    "HermesEmulator",
    "Reply",
    "RequestInfo",
    "SeenRequest",
    "main",
    "serve",
]
