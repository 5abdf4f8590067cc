"""Redaction for openai's and httpx's own log records (``OPENAI_LOG=debug``).

openai 1.x and 2.x log every request's options at debug level, prompts included ("Request
options: {... 'json_data': {'messages': ...}}"); hermes-sdk's rule is that nothing (prompts,
outputs, ids, keys) reaches a log unredacted. The filter drops request bodies from those records
and scrubs ids and credentials from every other one.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from hermes_sdk._core.redaction import scrub

__all__ = ["RedactingFilter", "install"]

_BODY_KEYS = ("json_data", "files", "content", "extra_json", "params")
_LOGGER_ROOTS = ("openai", "httpx", "httpx2", "httpcore", "httpcore2")


def _without_bodies(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: ("<redacted>" if k in _BODY_KEYS else _without_bodies(v)) for k, v in value.items()}
    return value


class RedactingFilter(logging.Filter):
    """Rewrites a record's message with bodies dropped and ids and credentials scrubbed."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "_hermes_redacted", False):
            return True
        args = record.args
        if isinstance(args, Mapping):
            args = _without_bodies(args)
        elif isinstance(args, tuple):
            args = tuple(_without_bodies(a) for a in args)
        try:
            text = str(record.msg) % args if args else str(record.msg)
        except (TypeError, ValueError):
            text = str(record.msg)
        record.msg = scrub(text)
        record.args = None
        setattr(record, "_hermes_redacted", True)  # noqa: B010 - an attribute LogRecord does not declare
        return True


_FILTER = RedactingFilter()


def install() -> None:
    """Attach the filter to openai's and httpx's loggers and to their handlers (idempotent).

    A logger's filters do not see records its children log, so every existing child logger
    (``openai._base_client``, ``httpx._client``) gets it too.
    """
    manager = logging.Logger.manager
    names = [n for n in list(manager.loggerDict) if n.split(".")[0] in _LOGGER_ROOTS]
    for name in {*names, *_LOGGER_ROOTS}:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
        for handler in logger.handlers:
            if _FILTER not in handler.filters:
                handler.addFilter(_FILTER)
