"""Forked children (gunicorn ``--preload``, Celery's prefork pool, ``multiprocessing`` with fork).

A child inherits its parent's memory: the pooled sockets (still the parent's connections: a child
reading one steals the parent's reply), the locks another thread held at the fork (held forever in
the child, where that thread does not exist), SQLite connections (never to be used across a fork)
and the streams the parent had open. After a fork, every registered object drops that state in the
child without ending anything for the parent: no socket the parent still uses is shut down (a
``shutdown()`` acts on the connection, for both processes); the child only lets go of its copies of
the descriptors (closing a descriptor the parent also holds sends nothing), and keeps the parent's
SQLite connections referenced (see :func:`keep`).

Objects register with :func:`register`; their ``_after_fork()`` runs in the child, right after the
fork, from the ``os.register_at_fork`` hook (and the transport checks the pid on each send, for a
fork made without that hook, e.g. from C).
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Protocol

#: The pid of this process, updated in a forked child (compare it with the pid an object was made in).
PID = os.getpid()



class ForkAware(Protocol):
    """What :func:`register` takes: an object that drops its parent's state in a forked child."""

    def _after_fork(self) -> None: ...


_registry: "weakref.WeakSet[ForkAware]" = weakref.WeakSet()
_registry_lock = threading.Lock()
#: What a child let go of but must not close (the parent's SQLite connections): kept referenced so
#: the garbage collector does not close them in the child.
_inherited: list[object] = []


def register(obj: ForkAware) -> None:
    """Call ``obj._after_fork()`` in every forked child while ``obj`` lives."""
    with _registry_lock:
        _registry.add(obj)


def keep(obj: object) -> None:
    """Hold ``obj`` for the life of this process (a parent's object the child must not close)."""
    _inherited.append(obj)


def _after_fork_in_child() -> None:
    global PID, _registry_lock
    PID = os.getpid()
    _registry_lock = threading.Lock()  # another thread may have held it at the fork
    for obj in list(_registry):
        try:
            obj._after_fork()
        except Exception:  # one object's reset must not stop the others' (nor the child)
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
