"""``HERMES_SDK_LOG=debug|info``: the SDK's (redacted) log lines on stderr, like ``OPENAI_LOG``.

The SDK logs on the ``hermes_sdk`` logger (one DEBUG line per HTTP attempt and per action result,
warnings for failing observers) and leaves handlers to the application, as a library should. This
switch is for the moment you want to see them without touching logging configuration::

    HERMES_SDK_LOG=debug python my_app.py

``debug`` shows the SDK's own lines only: urllib3 logs every new connection and every request at
DEBUG, which repeats the SDK's attempt lines in a noisier form. Add ``urllib3`` to see them too::

    HERMES_SDK_LOG=debug,urllib3 python my_app.py

Every record passes the SDK's redacting filter first: ids, keys and credentials are scrubbed and
prompts and outputs never reach these loggers.

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
URLLIB3 = "urllib3.connectionpool"
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_lock = threading.Lock()


def _new_lock_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # a forked child must not wait on a lock its parent's thread held


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_after_fork)
_handler: Optional[logging.Handler] = None
_warned: set[str] = set()
_saved_levels: dict[str, int] = {}  # a logger's own level before this module lowered it


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the *current* ``sys.stderr`` (so redirections and test capture see the lines)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def configure_from_env(environ: Optional[dict[str, str]] = None) -> Optional[int]:
    """Turn on the SDK's logging to stderr when ``HERMES_SDK_LOG`` is ``debug`` or ``info``.

    ``debug,urllib3`` adds urllib3's connection-pool lines (which plain ``debug`` leaves out).
    Returns the level set, or ``None`` when the variable is unset or empty (nothing is changed then,
    and a handler installed by an earlier call stays). An unknown value is reported once on stderr
    and ignored. Idempotent: one handler at most, whose level follows the latest value.
    """
    global _handler
    env = os.environ if environ is None else environ
    value = (env.get(ENV_VAR) or "").strip().lower()
    if not value:
        return None
    words = [w.strip() for w in value.split(",") if w.strip()]
    level = LEVELS.get(words[0]) if words else None
    extras = set(words[1:])
    if level is None or not extras <= {"urllib3"}:
        if value not in _warned:
            _warned.add(value)
            sys.stderr.write(f"hermes_sdk: ignoring {ENV_VAR}={value!r}: use 'debug' or 'info' "
                             f"(or 'debug,urllib3' to add urllib3's connection lines)\n")
        return None
    from .redaction import install_log_filters

    install_log_filters()  # the redacting filters are in place before any line can be written
    with _lock:
        if _handler is None:
            _handler = _StderrHandler()
            _handler.setFormatter(logging.Formatter(FORMAT))
        _handler.setLevel(level)
        names = ["hermes_sdk"] + ([URLLIB3] if "urllib3" in extras else [])
        for name in ("hermes_sdk", URLLIB3):
            logger = logging.getLogger(name)
            if name in names:
                if _handler not in logger.handlers:
                    logger.addHandler(_handler)
                if logger.level == logging.NOTSET or logger.level > level:
                    _saved_levels.setdefault(name, logger.level)
                    logger.setLevel(level)
            elif _handler in logger.handlers:
                logger.removeHandler(_handler)
                if name in _saved_levels:  # no longer asked for: its lines go back to where they were
                    logger.setLevel(_saved_levels.pop(name))
    return level
