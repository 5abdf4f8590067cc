"""ProcessClient: one HermesClient per process, for web apps and workers that fork."""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any, Optional

from .client import HermesClient


class ProcessClient:
    """This process's :class:`HermesClient`, made on first use and shared by the process's threads.

    A web app or a task module makes one at import time (``hermes = ProcessClient()``) and calls
    ``hermes.get()`` where it needs the client. The client is made on the first ``get()`` in each
    process, so one made before a fork (gunicorn ``--preload``, uWSGI without ``lazy-apps``,
    Celery's prefork pool) is never used by the forked child: the child makes its own, and leaves the
    parent's connections alone. ``close()`` closes this process's client; it is registered with
    :mod:`atexit`, and a worker's exit hook (gunicorn's ``worker_exit``, Celery's
    ``worker_process_shutdown``) or a test may call it too. A ``get()`` after ``close()`` makes a
    new client.

    Args:
        **options: the :class:`HermesClient` arguments, given to each client made; none: the
            environment (``HERMES_BASE_URL``, ``HERMES_API_KEY``, ``HERMES_SDK_IDEMPOTENCY_STORE``).
    """

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._lock = threading.Lock()
        self._client: Optional[HermesClient] = None
        self._pid = 0
        atexit.register(self.close)

    def get(self) -> HermesClient:
        """This process's client (made now if this process has none)."""
        client, pid = self._client, os.getpid()
        if client is not None and self._pid == pid:
            return client
        with self._lock:
            if self._client is None or self._pid != pid:
                # A client inherited from the parent is dropped, not closed: its sockets are the parent's.
                self._client, self._pid = HermesClient(**self._options), pid
            return self._client

    def close(self) -> None:
        """Close this process's client, if it made one (an inherited one is only dropped)."""
        with self._lock:
            client, self._client = self._client, None
            if client is not None and self._pid == os.getpid():
                client.close()

    def __repr__(self) -> str:
        made = self._client is not None and self._pid == os.getpid()
        return f"ProcessClient(pid={os.getpid()}, {'made' if made else 'not made yet'})"


__all__ = ["ProcessClient"]
