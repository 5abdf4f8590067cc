"""The one cattrs converter: provider JSON in, result types out; results to JSON for durable records."""

from __future__ import annotations

from collections import abc
from typing import Any, Mapping, Optional

import attrs
import cattrs

from ..errors import HermesError, InvalidResponseError
from .events import tool_event_from_json, tool_event_to_json
from .models import ActionResult, ChatCompletion, DeletionReceipt, Response, StreamEvent, StreamResult

converter = cattrs.Converter()
converter.register_unstructure_hook(HermesError, lambda e: e.to_dict())
converter.register_structure_hook(HermesError, lambda d, _: HermesError.from_dict(d))
# Response headers are kept as the transport gave them (case-insensitive), not copied.
converter.register_structure_hook_func(lambda t: t == Mapping[str, str], lambda value, _: value)


def _json_object(value: Any, _: Any) -> dict[str, Any]:
    # A shallow copy, as cattrs' own mapping hook makes, without structuring each key and value
    # again: JSON objects have string keys, and the values are Any.
    if type(value) is not dict and not isinstance(value, abc.Mapping):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    return dict(value)


converter.register_structure_hook_func(lambda t: t == dict[str, Any], _json_object)


def _optional_error(value: Any, _: Any) -> Optional[HermesError]:
    return None if value is None else HermesError.from_dict(value)


converter.register_structure_hook(Optional[HermesError], _optional_error)


def _object(data: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(data, abc.Mapping):  # the ABC: typing's alias checks about 2x slower
        raise InvalidResponseError(f"Hermes returned a {type(data).__name__} where a {what} object was expected")
    return data


def chat_completion(data: Any, session_id: Optional[str], action_id: Optional[str] = None,
                    replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> ChatCompletion:
    """A ChatCompletion from Hermes' JSON (InvalidResponseError if it is not one)."""
    obj = _object(data, "chat completion")
    if not isinstance(obj.get("choices"), list) or not isinstance(obj.get("id"), str):
        raise InvalidResponseError("malformed chat completion: no 'id' or 'choices'")
    try:
        return converter.structure(
            {
                "id": obj.get("id", ""), "model": obj.get("model"), "created": obj.get("created"),
                "choices": obj.get("choices") or [], "usage": obj.get("usage"), "hermes": obj.get("hermes"),
                "session_id": session_id, "raw": dict(obj), "action_id": action_id, "replayed": replayed,
                "headers": headers if headers is not None else {},
            },
            ChatCompletion,
        )
    except (cattrs.BaseValidationError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidResponseError(f"malformed chat completion: {type(exc).__name__}") from None


def response(data: Any, session_id: Optional[str], action_id: Optional[str] = None,
             replayed: bool = False, headers: Optional[Mapping[str, str]] = None) -> Response:
    """A Response from Hermes' JSON (InvalidResponseError if it is not one)."""
    obj = _object(data, "response")
    if not isinstance(obj.get("id"), str) or not isinstance(obj.get("output", []), list):
        raise InvalidResponseError("malformed response object: no 'id' or 'output'")
    try:
        return converter.structure(
            {
                "id": obj.get("id", ""), "status": obj.get("status"), "model": obj.get("model"),
                "created_at": obj.get("created_at"), "output": obj.get("output") or [],
                "usage": obj.get("usage"), "session_id": session_id, "raw": dict(obj),
                "action_id": action_id, "replayed": replayed, "headers": headers if headers is not None else {},
            },
            Response,
        )
    except (cattrs.BaseValidationError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidResponseError(f"malformed response object: {type(exc).__name__}") from None


def deletion_receipt(data: Any, action_id: Optional[str] = None, replayed: bool = False,
                     headers: Optional[Mapping[str, str]] = None) -> DeletionReceipt:
    """A DeletionReceipt from Hermes' JSON (InvalidResponseError unless it says ``deleted: true``)."""
    obj = _object(data, "deletion receipt")
    if not isinstance(obj.get("id"), str) or obj.get("deleted") is not True:
        raise InvalidResponseError("malformed deletion receipt")
    return DeletionReceipt(id=obj["id"], object=str(obj.get("object", "response")), deleted=True,
                           action_id=action_id, replayed=replayed, headers=headers or {})


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _json_copy(value: Any) -> Any:
    """What ``converter.unstructure`` returns for parsed JSON (a deep copy), without its dispatch."""
    kind = type(value)
    if kind is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                k = converter.unstructure(k)
            out[k] = v if type(v) in _LEAVES else _json_copy(v)
        return out
    if kind is list:
        return [v if type(v) in _LEAVES else _json_copy(v) for v in value]
    if kind in _LEAVES:
        return value
    return converter.unstructure(value)


def _event_json(event: StreamEvent) -> dict[str, Any]:
    return {"event": event.event, "id": event.id, "data": _json_copy(event.data), "raw_data": event.raw_data,
            "terminal": event.terminal}


def stream_result_to_json(result: StreamResult) -> dict[str, Any]:
    """A StreamResult as JSON: the output of a stream's ActionResult and its durable record."""
    # The events dominate (one per SSE event): unstructure them by hand, the rest with cattrs.
    events, tools = result.events, result.tools
    if tools:
        result = attrs.evolve(result, tools=[])
    if type(events) is not list or any(type(e) is not StreamEvent for e in events):
        out: dict[str, Any] = converter.unstructure(result)
    else:
        out = converter.unstructure(attrs.evolve(result, events=[]))
        out["events"] = [_event_json(e) for e in events]
    out["tools"] = [t if isinstance(t, dict) else tool_event_to_json(t) for t in tools]
    return out


def stream_result_from_json(data: Mapping[str, Any]) -> StreamResult:
    """Rebuild a StreamResult from its JSON (a replayed stream's record)."""
    fields = dict(data)
    tools = fields.pop("tools", None) or []
    result = converter.structure(fields, StreamResult)
    result.tools = [tool_event_from_json(t) if isinstance(t, abc.Mapping) else t for t in tools]
    return result


def action_result_to_json(result: ActionResult) -> dict[str, Any]:
    """An ActionResult as JSON, as the idempotency store keeps it (the error as its ``to_dict()``)."""
    out: dict[str, Any] = converter.unstructure(result)
    return out


def action_result_from_json(data: Mapping[str, Any]) -> ActionResult:
    """Rebuild an ActionResult from its JSON; the error comes back as its most specific HermesError class."""
    return converter.structure(dict(data), ActionResult)


def recorded_result(data: Any) -> ActionResult:
    """The ActionResult of a stored record: one that does not rebuild is a ``CorruptRecordError``
    (a typed error, never cattrs' own)."""
    from .idempotency import corrupt

    try:
        return action_result_from_json(data)
    except Exception as exc:  # cattrs' ClassValidationError, a TypeError, a KeyError...
        raise corrupt("idempotency", f"(its result does not rebuild: {type(exc).__name__})") from None


__all__ = ["converter", "chat_completion", "response", "deletion_receipt"]
