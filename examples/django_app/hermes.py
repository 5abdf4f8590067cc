"""This process's HermesClient: created on first use, shared by every thread, closed at exit.

A forked worker (gunicorn ``--preload``, uWSGI without ``lazy-apps``) never uses a client made in
its parent: the process id is checked, and a child makes its own.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Optional

from hermes_sdk import HermesClient

_lock = threading.Lock()
_client: Optional[HermesClient] = None
_pid = 0


def get_client() -> HermesClient:
    global _client, _pid
    client, pid = _client, os.getpid()
    if client is not None and _pid == pid:
        return client
    with _lock:
        if _client is None or _pid != pid:
            _client, _pid = HermesClient(), pid  # an inherited client is dropped, not closed
        return _client


def close_client() -> None:
    global _client
    with _lock:
        client, _client = _client, None
        if client is not None and _pid == os.getpid():
            client.close()


atexit.register(close_client)
