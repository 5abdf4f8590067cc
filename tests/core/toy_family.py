"""A toy family, written the way a third-party Hermes family is added: everything it needs, in this one module,
from public modules only (``hermes_sdk`` and ``hermes_sdk.plugin``), typed under ``mypy --strict``.

Three operations: ``toy_get`` (``GET /toy/{toy_id}``, read-only, retried), ``toy_rename``
(``POST /toy/{toy_id}``) and ``toy_stream`` (``POST /toy/stream``, SSE). :class:`ToyPlugin` registers
the family (its specs and its resource) with a client that is given it; ``client.resource(Toys)``
reaches it. No other file of the SDK is touched, and no test that counts operations.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Optional

import attrs

from hermes_sdk import HermesError
from hermes_sdk.plugin import (
    Accumulator,
    Aggregate,
    CallOptions,
    ClientView,
    Contract,
    DecodeContext,
    Family,
    FamilyExecutor,
    Field,
    HermesStream,
    Input,
    OperationSpec,
    PathId,
    RequestParts,
    Text,
    hookimpl,
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

    def fold(self, agg: Aggregate, name: Optional[str], data: dict[str, Any]) -> Optional[str]:
        delta = data.get("delta")
        if name == "toy.delta" and isinstance(delta, str):
            return delta
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


#: Each operation's input, declared: the SDK checks it before the builder (naming the field) and
#: ``capabilities()`` publishes it as JSON Schema, as for a built-in family.
GET_INPUT = Input((Field("toy_id", PathId(), required=True, null="checked"),))
RENAME_INPUT = Input((Field("toy_id", PathId(), required=True, null="checked"),
                      Field("name", Text(non_empty=True, message="'{field}' must be a non-empty string"),
                            required=True, null="checked")))
STREAM_INPUT = Input((Field("topic", Text(non_empty=True, message="'{field}' must be a non-empty string"),
                            required=True, null="checked"),))


def build_get(operation: str, data: Mapping[str, Any]) -> RequestParts:
    return RequestParts({}, path_params={"toy_id": data["toy_id"]})


def build_rename(operation: str, data: Mapping[str, Any]) -> RequestParts:
    return RequestParts({"Content-Type": "application/json"}, json.dumps({"name": data["name"]}).encode(),
                        path_params={"toy_id": data["toy_id"]})


def build_stream(operation: str, data: Mapping[str, Any]) -> RequestParts:
    return RequestParts({"Content-Type": "application/json"}, json.dumps({"topic": data["topic"]}).encode(), 100)


def decode_toy(data: object, ctx: DecodeContext) -> Toy:
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise HermesError(f"{ctx.operation}: not a toy")
    return Toy(data["id"], str(data.get("name", "")), data)


TOY_GET: OperationSpec[Toy] = OperationSpec(_contract("toy_get", "GET", "/toy/{toy_id}", False), build_get,
                                            decode=decode_toy, input=GET_INPUT)
TOY_RENAME: OperationSpec[Toy] = OperationSpec(
    attrs.evolve(_contract("toy_rename", "POST", "/toy/{toy_id}", False), retry_safe=False,
                 side_effects=("write",)), build_rename, decode=decode_toy, input=RENAME_INPUT)
TOY_STREAM: OperationSpec[ToyStream] = OperationSpec(_contract("toy_stream", "POST", "/toy/stream", True),
                                                     build_stream, stream_class=ToyStream,
                                                     accumulator=ToyAccumulator, input=STREAM_INPUT)


class Toys:
    """``client.resource(Toys)``."""

    def __init__(self, executor: FamilyExecutor) -> None:
        self._executor = executor

    def get(self, toy_id: str, *, timeout: Optional[float] = None) -> Toy:
        return self._executor.request(TOY_GET, {"toy_id": toy_id}, CallOptions(timeout=timeout))

    def rename(self, toy_id: str, name: str, *, idempotency_key: Optional[str] = None) -> Toy:
        return self._executor.request(TOY_RENAME, {"toy_id": toy_id, "name": name},
                                      CallOptions(idempotency_key=idempotency_key))

    def stream(self, topic: str) -> ToyStream:
        return self._executor.request(TOY_STREAM, {"topic": topic}, CallOptions())


FAMILY: Family[Toys] = Family("toys", (TOY_GET, TOY_RENAME, TOY_STREAM), Toys)


class ToyPlugin:
    """The family's one registration: ``HermesClient(plugins=[ToyPlugin()])`` or an entry point."""

    @hookimpl
    def hermes_families(self, client: ClientView) -> tuple[Family[Toys]]:
        return (FAMILY,)
