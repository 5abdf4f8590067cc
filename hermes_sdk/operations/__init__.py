"""Input validation and request mapping for each operation: pure functions, no I/O."""

from __future__ import annotations

from typing import Callable

from . import chat, responses, stored
from .common import ProviderRequest

BUILDERS: dict[str, Callable[[str, object], ProviderRequest]] = {
    "chat": chat.build,
    "chat_stream": chat.build,
    "responses": responses.build,
    "responses_stream": responses.build,
    "response_get": stored.build,
    "response_delete": stored.build,
}


def build_request(operation: str, input: object) -> ProviderRequest:
    """Validate ``input`` for ``operation`` and map it; raises InvalidInputError before any I/O."""
    return BUILDERS[operation](operation, input)


__all__ = ["ProviderRequest", "build_request"]
