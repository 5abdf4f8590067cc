"""The emulator's families, one module each: its ``ROUTES`` and, if it keeps state, its ``reset(state)``.

A family module imports the shared modules (``exchange``, ``routes``, ``state``, ``sse``, ``wire``,
``model``, ``runmachine``, ``cron``, ...), never another family. Adding a family is one module here
and one line in :data:`FAMILY_MODULES`; the server builds its route table from the list.
"""

from __future__ import annotations

from types import ModuleType

from . import chat, discovery, jobs, responses, runs, sessions

#: The families an emulator serves, read when it is constructed.
FAMILY_MODULES: list[ModuleType] = [discovery, chat, responses, runs, sessions, jobs]

__all__ = ["FAMILY_MODULES"]
