"""A toy family, written the way a new Hermes family is added: everything it needs, in this one module.

Two operations: ``toy_get`` (``GET /toy/{toy_id}``, read-only, retried) and ``toy_stream``
(``POST /toy/stream``, SSE). It registers its specs and its resource (``client.toys``) and touches
no other file of the SDK.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

import attrs

from hermes_sdk import HermesError
from hermes_sdk._core.operations.common import bad
from hermes_sdk._core.operations.stored import path_id_value
from hermes_sdk._core.streaming import HermesStream
from hermes_sdk.plugin import (
    Accumulator,
    CallOptions,
    Contract,
    OperationSpec,
    RequestParts,
    register,
    register_resource,
    unregister,
    unregister_resource,
)


@attrs.frozen
class Toy:
    id: str
    name: str
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False, eq=False)


@attrs.frozen
class ToyDelta:
    delta: str


class ToyStream(HermesStream):
    """The live stream of ``client.toys.stream()``."""


class ToyAccumulator(Accumulator):
    terminal_names = frozenset({"toy.done"})
    failed_names = frozenset({"toy.error"})

    def fold(self, agg: Any, name: Optional[str], data: dict[str, Any]) -> Optional[str]:
        if name == "toy.delta" and isinstance(data.get("delta"), str):
            return data["delta"]
        if name == "toy.done":
            agg.final = data
        return None

    def typed(self, event: Any, piece: Optional[str]) -> Any:
        return ToyDelta(piece) if piece else None


def _contract(operation: str, method: str, path: str, streaming: bool) -> Contract:
    return Contract(operation=operation, method=method, path=path, risk="low", stability="experimental",
                    requires_approval=False, key_requirement="optional", key_ttl_ms=None,
                    retry_safe=not streaming, streaming=streaming, side_effects=("read",),
                    data={"classification": "internal"}, expected_latency_ms=100, timeout_ms=10_000)


def build_get(operation: str, data: Mapping[str, Any]) -> RequestParts:
    return RequestParts({}, path_params={"toy_id": path_id_value("toy_id", data.get("toy_id"))})


def build_stream(operation: str, data: Mapping[str, Any]) -> RequestParts:
    topic = data.get("topic")
    if not isinstance(topic, str) or not topic:
        raise bad("topic", "'topic' must be a non-empty string")
    return RequestParts({"Content-Type": "application/json"}, json.dumps({"topic": topic}).encode(), 100)


def decode_toy(data: Any, session_id: Any, action_id: Any = None, replayed: bool = False) -> Toy:
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise HermesError("not a toy")
    return Toy(data["id"], str(data.get("name", "")), data)


TOY_GET: OperationSpec[Toy] = OperationSpec(_contract("toy_get", "GET", "/toy/{toy_id}", False), build_get,
                                            decode=decode_toy)
TOY_STREAM: OperationSpec[ToyStream] = OperationSpec(_contract("toy_stream", "POST", "/toy/stream", True),
                                                     build_stream, stream_class=ToyStream,
                                                     accumulator=ToyAccumulator)


class Toys:
    """``client.toys``."""

    def __init__(self, executor: Any) -> None:
        self._executor = executor

    def get(self, toy_id: str, *, timeout: Optional[float] = None) -> Toy:
        return self._executor.request(TOY_GET, {"toy_id": toy_id}, CallOptions(timeout=timeout))

    def stream(self, topic: str) -> ToyStream:
        return self._executor.request(TOY_STREAM, {"topic": topic}, CallOptions())


def install() -> None:
    register(TOY_GET)
    register(TOY_STREAM)
    register_resource("toys", Toys)


def uninstall() -> None:
    unregister("toy_get")
    unregister("toy_stream")
    unregister_resource("toys")
