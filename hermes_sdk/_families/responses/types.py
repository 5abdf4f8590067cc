"""The Responses family's results: a Responses object (``POST /v1/responses``, a stored one), a
deletion receipt, and the live stream."""

from __future__ import annotations

from typing import Any, Mapping, Optional

import attrs
import cattrs

from hermes_sdk.errors import InvalidResponseError
from hermes_sdk.plugin import NO_CONTEXT, DecodeContext, HermesStream, json_object, structure


@attrs.frozen
class HermesResponse:
    """A Responses object (``POST /v1/responses`` or a stored one from ``response_get``).

    Attributes:
        id: the response id (``resp_...``); continue with ``previous_response_id=`` or fetch it.
        status: Hermes' status (``completed``, ``failed``, ``incomplete``, ...).
        model: the model Hermes reports.
        created_at: creation time, epoch seconds.
        output: the output items (messages, function calls and their outputs) as JSON.
        usage: token usage as Hermes sent it, or None.
        session_id: the ``X-Hermes-Session-Id`` response header, or None.
        raw: the provider JSON as received, unknown fields included.
        action_id: the AIP action of this result (the original one when replayed).
        replayed: True when returned from the idempotency record instead of executing.
    """

    id: str
    status: Optional[str]
    model: Optional[str]
    created_at: Optional[int]
    output: list[dict[str, Any]]
    usage: Optional[dict[str, Any]]
    session_id: Optional[str] = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    # The AIP action this result belongs to (the original one when replayed), and whether it came
    # from the idempotency record instead of executing.
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)
    #: Hermes' response headers (case-insensitive); empty when replayed from a record.
    headers: Mapping[str, str] = attrs.field(factory=dict, kw_only=True, eq=False, repr=False)

    @property
    def output_text(self) -> str:
        """The text of every assistant message in ``output``, joined (empty when there is none)."""
        return output_text(self.output)

    @property
    def error(self) -> Optional[dict[str, Any]]:
        """The ``error`` object of a failed or incomplete response (from ``raw``), or None."""
        value = self.raw.get("error")
        return value if isinstance(value, dict) else None


Response = HermesResponse  # the former name (it collides with requests'); hermes_sdk.Response warns


def output_text(output: object) -> str:
    """Join the ``output_text`` parts of every assistant message item."""
    parts: list[str] = []
    for item in output if isinstance(output, list) else ():
        if isinstance(item, dict) and item.get("type") == "message":
            for part in item.get("content") or ():
                if isinstance(part, dict) and part.get("type") == "output_text":
                    parts.append(str(part.get("text", "")))
    return "".join(parts)


@attrs.frozen
class DeletionReceipt:
    """Hermes' confirmation that a stored response was deleted (``response_delete``).

    Attributes:
        id: the deleted response's id.
        object: the kind of object deleted (``response``).
        deleted: always True; any other receipt raises :class:`~hermes_sdk.InvalidResponseError`.
        action_id: the AIP action of the deletion (the original one when replayed).
        replayed: True when returned from the idempotency record: nothing was deleted this time.
    """

    id: str
    object: str
    deleted: bool
    # The AIP action this result belongs to (the original one when replayed), and whether it came
    # from the idempotency record instead of executing.
    action_id: Optional[str] = attrs.field(default=None, kw_only=True, eq=False)
    replayed: bool = attrs.field(default=False, kw_only=True, eq=False)
    #: Hermes' response headers (case-insensitive); empty when replayed from a record.
    headers: Mapping[str, str] = attrs.field(factory=dict, kw_only=True, eq=False, repr=False)


class ResponseStream(HermesStream):
    """The live stream of a :meth:`~hermes_sdk.HermesClient.responses_stream` call.

    Its events are Responses events; ``result().final`` is the terminal Responses envelope.
    """


def response(data: object, ctx: DecodeContext = NO_CONTEXT) -> Response:
    """A Response from Hermes' JSON (InvalidResponseError if it is not one)."""
    obj = json_object(data, "a response object")
    if not isinstance(obj.get("id"), str) or not isinstance(obj.get("output", []), list):
        raise InvalidResponseError("malformed response object: no 'id' or 'output'")
    try:
        return structure(
            {
                "id": obj.get("id", ""), "status": obj.get("status"), "model": obj.get("model"),
                "created_at": obj.get("created_at"), "output": obj.get("output") or [],
                "usage": obj.get("usage"), "session_id": ctx.session_id, "raw": dict(obj),
                "action_id": ctx.action_id, "replayed": ctx.replayed, "headers": ctx.headers,
            },
            Response,
        )
    except (cattrs.BaseValidationError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidResponseError(f"malformed response object: {type(exc).__name__}") from None


def deletion_receipt(data: object, ctx: DecodeContext = NO_CONTEXT) -> DeletionReceipt:
    """A DeletionReceipt from Hermes' JSON (InvalidResponseError unless it says ``deleted: true``)."""
    obj = json_object(data, "a deletion receipt object")
    if not isinstance(obj.get("id"), str) or obj.get("deleted") is not True:
        raise InvalidResponseError("malformed deletion receipt")
    return DeletionReceipt(id=str(obj["id"]), object=str(obj.get("object", "response")), deleted=True,
                           action_id=ctx.action_id, replayed=ctx.replayed, headers=ctx.headers)


__all__ = ["DeletionReceipt", "HermesResponse", "Response", "ResponseStream", "deletion_receipt", "output_text",
           "response"]
