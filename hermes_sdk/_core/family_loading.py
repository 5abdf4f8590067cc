"""Family modules are imported under one process-wide re-entrant lock, taken before any of importlib's.

Two threads importing two families at once each hold importlib's lock of one module and may wait
for the other's (the operator imports the runs family; a resource module imports its package):
importlib breaks such a cycle by raising its ``_DeadlockError`` in one thread, or hands it a partly
initialised module. Every import of a family module by the SDK goes through :func:`import_module`
(or :func:`holding`), so only one thread at a time imports family code and no cycle can form.

A child forked while a parent thread imports a family inherits that thread's locks, held forever
by a thread the child does not have: the child gets a new lock and forgets the modules that thread
left half imported (they are imported again on first use). A wait for the lock is bounded by the
call's deadline (else :data:`LOAD_WAIT`) and ends in a typed error, never a hang.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator, Optional

from ..errors import DeadlineExceededError, PluginError

#: How long a call without a deadline waits for another thread's import of a family (seconds).
LOAD_WAIT = 60.0

_lock = threading.RLock()
#: Threads inside a family import (ident -> depth): in a forked child, those other than the forking
#: thread left what they were importing half done.
_importing: dict[int, int] = {}


@contextmanager
def holding(what: str, deadline: Optional[float] = None) -> Iterator[None]:
    """Hold the family import lock; wait for it until ``deadline`` (epoch seconds), else :data:`LOAD_WAIT`."""
    lock = _lock  # the one acquired is the one released (a forked child replaces the global)
    wait = LOAD_WAIT if deadline is None else max(0.0, deadline - time.time())
    if not lock.acquire(timeout=wait):
        if deadline is not None:
            raise DeadlineExceededError(f"the deadline passed while another thread was loading {what}",
                                        details={"family": what, "sent": False})
        raise PluginError(f"{what} is still being loaded by another thread after {LOAD_WAIT:g} s",
                          details={"family": what})
    ident = threading.get_ident()
    _importing[ident] = _importing.get(ident, 0) + 1
    try:
        yield
    finally:
        depth = _importing.pop(ident, 1) - 1
        if depth:
            _importing[ident] = depth
        lock.release()


def import_module(name: str, deadline: Optional[float] = None) -> ModuleType:
    """``importlib.import_module(name)`` under the family import lock (a no-op wait once imported)."""
    module = sys.modules.get(name)
    if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
        return module
    with holding(name, deadline):
        return importlib.import_module(name)


def load(target: str, deadline: Optional[float] = None) -> object:
    """The object a ``"package.module:NAME"`` target names, its module imported under the lock."""
    module, _, attr = target.partition(":")
    return getattr(import_module(module, deadline), attr)


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.RLock()
    gone = set(_importing) - {threading.get_ident()}
    _importing.clear()
    if gone:
        forget_half_imported(gone)


def forget_half_imported(threads: set[int]) -> None:
    """Drop from ``sys.modules`` (and importlib's lock table) what ``threads`` were importing: in a
    forked child their module locks are held by no one who will release them."""
    bootstrap = getattr(importlib, "_bootstrap", None)
    locks = getattr(bootstrap, "_module_locks", None)
    if not isinstance(locks, dict):
        return
    for name, module in list(sys.modules.items()):
        if not getattr(getattr(module, "__spec__", None), "_initializing", False):
            continue
        ref = locks.get(name)
        held = ref() if callable(ref) else None
        if getattr(held, "owner", None) in threads:
            sys.modules.pop(name, None)
            locks.pop(name, None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
