"""The facade's non-streaming chat and Responses calls: hermes-sdk's executor, without its typed reply.

openai parses every reply into its own types, so the SDK's typed reader (ChatCompletion, and the
cattrs structuring of a Response) would be work nobody reads. These specs are the SDK's own
(the same contract, capability id, request builder and its input checks, so keys, approvals,
deadlines, redaction, tracing and plugins see the same call) with one difference: the reply
stays the JSON Hermes sent, checked for the fields openai needs, parsed once. A replay under an
idempotency key returns the recorded JSON the same way (the record is the reply's JSON).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import attrs

from hermes_sdk._core.convert import DecodeContext
from hermes_sdk._core.family_loading import load
from hermes_sdk._core.options import CallOptions
from hermes_sdk.errors import InvalidResponseError

__all__ = ["JsonReply", "chat", "responses"]


class JsonReply:
    """A reply's JSON and what the transport tells openai about the call (its headers)."""

    __slots__ = ("raw", "session_id", "action_id", "replayed", "headers")

    def __init__(self, raw: dict[str, Any], ctx: DecodeContext) -> None:
        self.raw = raw
        self.session_id = ctx.session_id
        self.action_id = ctx.action_id
        self.replayed = bool(ctx.replayed)
        self.headers = ctx.headers


def _chat_reply(data: object, ctx: DecodeContext) -> JsonReply:
    # The checks the SDK's ChatCompletion reader makes of the wire, without building its types.
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list) or not isinstance(data.get("id"), str):
        raise InvalidResponseError("malformed chat completion: no 'id' or 'choices'")
    return JsonReply(data, ctx)


def _responses_reply(data: object, ctx: DecodeContext) -> JsonReply:
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) \
            or not isinstance(data.get("output", []), list):
        raise InvalidResponseError("malformed response object: no 'id' or 'output'")
    return JsonReply(data, ctx)


_LOADED: dict[str, Any] = {}
_READERS = {"CHAT": _chat_reply, "RESPONSES": _responses_reply}


def _loaded(target: str) -> Any:
    """``module:NAME`` loaded under the family import lock, once per process; a spec in ``_READERS``
    with its typed reply replaced by the JSON."""
    found = _LOADED.get(target)
    if found is None:
        loaded: Any = load(target)
        reader = _READERS.get(target.rpartition(":")[2])
        found = attrs.evolve(loaded, decode=reader, from_record=reader) if reader is not None else loaded
        _LOADED[target] = found
    return found


def chat(hermes: Any, fields: dict[str, Any]) -> JsonReply:
    """``hermes.chat(**fields)`` with the reply as JSON (``fields``: chat()'s keywords)."""
    resource = hermes._chat()  # the family loaded under its lock, and this client's executor for it
    chat_input = _loaded("hermes_sdk._families.chat.operations:chat_input")
    data = chat_input(None, None, fields["messages"], fields["model"], fields["session_id"], fields["session_key"],
                      {}, fields["extra_body"])
    options = CallOptions(None, fields["idempotency_key"], fields["action_id"], fields["context"],
                          fields["deadline"], fields["timeout"])
    reply: JsonReply = resource._executor.request(_loaded("hermes_sdk._families.chat.operations:CHAT"), data, options)
    return reply


def responses(hermes: Any, body: Mapping[str, Any], session_key: Optional[str], call: dict[str, Any]) -> JsonReply:
    """``hermes.responses(body, session_key=..., **call)`` with the reply as JSON."""
    resource = hermes._responses()
    responses_input = _loaded("hermes_sdk._families.responses.operations:responses_input")
    data = responses_input(body, session_key, {}, None)
    options = CallOptions(None, call["idempotency_key"], call["action_id"], call["context"], call["deadline"],
                          call["timeout"])
    reply: JsonReply = resource._executor.request(
        _loaded("hermes_sdk._families.responses.operations:RESPONSES"), data, options)
    return reply
