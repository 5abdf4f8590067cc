"""``HERMES_SDK_LOG=debug|info``: the SDK's (redacted) log lines on stderr, like ``OPENAI_LOG``.

The SDK logs on the ``hermes_sdk`` logger (one DEBUG line per HTTP attempt and per action result,
warnings for failing observers) and leaves handlers to the application, as a library should. This
switch is for the moment you want to see them without touching logging configuration::

    HERMES_SDK_LOG=debug python my_app.py

``debug`` also shows urllib3's connection-pool lines (new connections, each request's method, path
and status). Every record passes the SDK's redacting filter first: ids, keys and credentials are
scrubbed and prompts and outputs never reach these loggers.

The client calls :func:`configure_from_env` when it is built; calling it again is harmless.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Optional

ENV_VAR = "HERMES_SDK_LOG"
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_lock = threading.Lock()
_handler: Optional[logging.Handler] = None
_warned: set[str] = set()


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the *current* ``sys.stderr`` (so redirections and test capture see the lines)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def configure_from_env(environ: Optional[dict[str, str]] = None) -> Optional[int]:
    """Turn on the SDK's logging to stderr when ``HERMES_SDK_LOG`` is ``debug`` or ``info``.

    Returns the level set, or ``None`` when the variable is unset or empty (nothing is changed then,
    and a handler installed by an earlier call stays). An unknown value is reported once on stderr
    and ignored. Idempotent: one handler at most, whose level follows the latest value.
    """
    global _handler
    env = os.environ if environ is None else environ
    value = (env.get(ENV_VAR) or "").strip().lower()
    if not value:
        return None
    level = LEVELS.get(value)
    if level is None:
        if value not in _warned:
            _warned.add(value)
            sys.stderr.write(f"hermes_sdk: ignoring {ENV_VAR}={value!r}: use 'debug' or 'info'\n")
        return None
    from .redaction import install_log_filters

    install_log_filters()  # the redacting filters are in place before any line can be written
    with _lock:
        if _handler is None:
            _handler = _StderrHandler()
            _handler.setFormatter(logging.Formatter(FORMAT))
        _handler.setLevel(level)
        names = ["hermes_sdk"] + (["urllib3.connectionpool"] if level <= logging.DEBUG else [])
        for name in ("hermes_sdk", "urllib3.connectionpool"):
            logger = logging.getLogger(name)
            if name in names:
                if _handler not in logger.handlers:
                    logger.addHandler(_handler)
                if logger.level == logging.NOTSET or logger.level > level:
                    logger.setLevel(level)
            elif _handler in logger.handlers:
                logger.removeHandler(_handler)
    return level
