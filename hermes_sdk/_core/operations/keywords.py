"""The typed methods' keyword arguments, packed into each capability's published input.

A keyword a method does not model is refused before anything is sent (with the close match);
provider fields the SDK does not model travel in ``extra_body=``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Optional

import attrs

from ...errors import InvalidInputError
from ..options import CallOptions

#: The provider fields each typed method models; anything else goes through ``extra_body=``.
CHAT_FIELDS = frozenset({"temperature", "top_p", "max_tokens", "stop", "tools", "tool_choice", "response_format",
                         "user", "metadata", "stream_options", "n", "seed", "presence_penalty", "frequency_penalty",
                         "logprobs", "top_logprobs", "logit_bias", "parallel_tool_calls", "max_completion_tokens"})
RESPONSES_FIELDS = frozenset({"input", "instructions", "model", "previous_response_id", "conversation",
                              "conversation_history", "store", "truncation", "tools", "tool_choice", "metadata",
                              "temperature", "top_p", "max_output_tokens", "user", "parallel_tool_calls",
                              "reasoning", "text"})
#: The typed methods' own keywords, for the close-match hint: the per-call ones as CallOptions
#: declares them (approval and reason only delete takes), and the methods' inputs.
CALL_KEYWORDS = tuple(f.name for f in attrs.fields(CallOptions) if f.name not in ("approval", "reason")) + (
    "session_key", "session_id", "extra_body", "max_events", "model", "prompt", "query", "messages", "body")


def close_match(name: str, known: Iterable[str]) -> Optional[str]:
    """The known name ``name`` is most likely a misspelling of, or None."""
    found = difflib.get_close_matches(name, list(known), n=1, cutoff=0.75)
    return found[0] if found else None


def check_known(fields: Mapping[str, object], known: frozenset[str], method: str) -> None:
    """Refuse a keyword the method does not model, before anything is sent, suggesting the close match."""
    for name in fields:
        if name in known:
            continue
        close = close_match(name, sorted(known) + list(CALL_KEYWORDS))
        hint = f" (did you mean {close!r}?)" if close else ""
        raise InvalidInputError(
            f"{method}() got an unknown keyword argument {name!r}{hint}. Provider fields the SDK does not "
            "model go through extra_body={...}",
            details={"field": name, **({"suggestion": close} if close else {})})


def merge_extra(fields: dict[str, object], extra_body: Optional[Mapping[str, object]]) -> dict[str, object]:
    """``fields`` over ``extra_body``; a field given in both with different values is refused."""
    if extra_body is None:
        return fields
    if not isinstance(extra_body, Mapping):
        raise InvalidInputError("extra_body must be a JSON object", details={"field": "extra_body"})
    clash = sorted(k for k in extra_body if k in fields and fields[k] != extra_body[k])
    if clash:
        raise InvalidInputError(f"{clash[0]!r} is given as a keyword and in extra_body with different values",
                                details={"field": clash[0]})
    return {**extra_body, **fields}


def chat_input(prompt: Optional[str], query: Optional[str], messages: Optional[Sequence[object]], model: str,
                session_id: Optional[str], session_key: Optional[str], provider_fields: Mapping[str, object],
                extra_body: Optional[Mapping[str, object]] = None) -> dict[str, object]:
    """The chat capability input from ``chat()``'s keywords."""
    check_known(provider_fields, CHAT_FIELDS, "chat")
    data = merge_extra(dict(provider_fields), extra_body)
    for name, value in (("prompt", prompt), ("query", query), ("messages", messages), ("model", model),
                        ("session_id", session_id), ("session_key", session_key)):
        if value is not None:
            data[name] = value
    return data


def responses_input(body: Optional[Mapping[str, object]], session_key: Optional[str],
                     body_fields: Mapping[str, object],
                     extra_body: Optional[Mapping[str, object]] = None) -> dict[str, object]:
    """The responses capability input: ``body`` and the body keywords merged, under ``body``."""
    if isinstance(body, str):  # the openai habit, client.responses("hello")
        raise InvalidInputError('the first argument of responses() is the request body (a dict), not the text: '
                                'pass the text as input=, e.g. client.responses(input="hello")',
                                details={"field": "body", "suggestion": "input"})
    if body is not None and not isinstance(body, Mapping):
        raise InvalidInputError("body must be a JSON object", details={"field": "body"})
    check_known(body_fields, RESPONSES_FIELDS, "responses")
    clash = sorted(k for k in body_fields if body and k in body and body[k] != body_fields[k])
    if clash:
        # Neither value may be dropped silently: the caller says which one is meant.
        raise InvalidInputError(f"{clash[0]!r} is given in body and as a keyword with different values",
                                details={"field": clash[0]})
    merged = merge_extra({**(body or {}), **body_fields}, extra_body)
    data: dict[str, object] = {"body": merged}
    if session_key is not None:
        data["session_key"] = session_key
    return data


def stored_input(response_id: str, session_key: Optional[str]) -> dict[str, object]:
    """The response_get / response_delete capability input."""
    data: dict[str, object] = {"response_id": response_id}
    if session_key is not None:
        data["session_key"] = session_key
    return data
