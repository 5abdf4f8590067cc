"""The chat family (``POST /v1/chat/completions``): ``client.chat()`` and ``client.chat_stream()``,
whose bodies are the :class:`Chat` resource's (``client.resource(Chat)``)."""

from __future__ import annotations

from hermes_sdk.plugin import Family

from .operations import SPECS
from .resource import Chat
from .types import ChatCompletion, ChatMessage, ChatStream, Choice

FAMILY: Family[Chat] = Family("chat", SPECS, Chat)

__all__ = ["FAMILY", "Chat", "ChatCompletion", "ChatMessage", "ChatStream", "Choice"]
