"""The six chat and Responses operations of the seed page, as specs."""

from __future__ import annotations

from collections.abc import Mapping

from ..._families.chat.types import ChatCompletion, ChatStream, chat_completion
from ..._families.responses.types import DeletionReceipt, Response, ResponseStream, deletion_receipt, response
from .._constants import DEFAULT_MODEL
from ..capabilities import CONFIDENTIAL, MODEL_SIDE_EFFECTS, Contract
from . import chat, responses, stored
from .spec import OperationSpec


def _model_contract(operation: str, path: str, streaming: bool) -> Contract:
    return Contract(
        operation=operation, method="POST", path=path, risk="medium", stability="stable",
        requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=False,
        streaming=streaming, side_effects=MODEL_SIDE_EFFECTS, data=dict(CONFIDENTIAL),
        expected_latency_ms=30_000 if streaming else 5_000, timeout_ms=300_000 if streaming else 60_000,
        supports_async=streaming, supports_cancel=streaming,
    )


_SAMPLING = ("max_tokens", "temperature", "top_p")


def _describe_chat(input: Mapping[str, object]) -> dict[str, object]:
    return _described(input)


def _describe_responses(input: Mapping[str, object]) -> dict[str, object]:
    body = input.get("body")
    return _described(body if isinstance(body, Mapping) else {})


def _described(fields: Mapping[str, object]) -> dict[str, object]:
    """The request model and sampling controls a caller gave: names and numbers only."""
    out: dict[str, object] = {"request.model": fields.get("model") or DEFAULT_MODEL}
    for name in _SAMPLING:
        value = fields.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[f"request.{name}"] = value
    return out


CHAT: OperationSpec[ChatCompletion] = OperationSpec(
    _model_contract("chat", "/v1/chat/completions", False), chat.build,
    decode=chat_completion, describe=_describe_chat)

CHAT_STREAM: OperationSpec[ChatStream] = OperationSpec(
    _model_contract("chat_stream", "/v1/chat/completions", True), chat.build,
    stream_class=ChatStream, accumulator=chat.ChatAccumulator, describe=_describe_chat)

RESPONSES: OperationSpec[Response] = OperationSpec(
    _model_contract("responses", "/v1/responses", False), responses.build,
    decode=response, describe=_describe_responses)

RESPONSES_STREAM: OperationSpec[ResponseStream] = OperationSpec(
    _model_contract("responses_stream", "/v1/responses", True), responses.build,
    stream_class=ResponseStream, accumulator=responses.ResponsesAccumulator, describe=_describe_responses)

# The generated contract calls response_get "internal" and PII-free; the seed page says that is too
# weak for stored model and tool output, so it is published here as confidential.
RESPONSE_GET: OperationSpec[Response] = OperationSpec(
    Contract(
        operation="response_get", method="GET", path="/v1/responses/{response_id}", risk="low",
        stability="experimental", requires_approval=False, key_requirement="optional", key_ttl_ms=None,
        retry_safe=True, streaming=False, side_effects=("read", "external_network"), data=dict(CONFIDENTIAL),
        expected_latency_ms=5_000, timeout_ms=60_000,
    ),
    stored.build, decode=response, reply_id="id")

RESPONSE_DELETE: OperationSpec[DeletionReceipt] = OperationSpec(
    Contract(
        operation="response_delete", method="DELETE", path="/v1/responses/{response_id}", risk="high",
        stability="experimental", requires_approval=True, key_requirement="required", key_ttl_ms=86_400_000,
        retry_safe=False, streaming=False, side_effects=("read", "delete", "external_network"),
        data={"classification": "restricted", "contains_pii": True, "redaction_required": True},
        expected_latency_ms=5_000, timeout_ms=60_000,
    ),
    stored.build, decode=deletion_receipt, reply_id="id")

#: The seed page's six operations, in its order.
SPECS = (CHAT, CHAT_STREAM, RESPONSES, RESPONSES_STREAM, RESPONSE_GET, RESPONSE_DELETE)
