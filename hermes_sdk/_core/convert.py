"""Provider JSON in, result types out; results to JSON for durable records.

Every family's results are read here: a result class declares its :func:`shape` once (what it is
called in an error, the fields it cannot do without, JSON keys that differ from its field names),
and its reader takes each field by its type with the lenient rules below (a non-string where an
optional string is expected becomes None...), keeping the JSON object as received in ``raw``.
Decoders are :data:`Decoder` functions ``(json, DecodeContext) -> T``. The cattrs converter
(``converter``, in ``cattrs_converter``) is built when first used: records and Responses use it.
"""

from __future__ import annotations

import threading
import typing
from collections import abc
from typing import TYPE_CHECKING, Any, Callable, Generic, Mapping, Optional, TypeVar

import attrs

from ..errors import InvalidResponseError
from .lenient import opt_bool, opt_float, opt_int, opt_list, opt_object, opt_str, strings
from .models import ActionResult, StreamEvent, StreamResult

T = TypeVar("T")


@attrs.frozen
class DecodeContext:
    """What a decoder knows of a reply besides its JSON: the operation, the ``X-Hermes-Session-Id``
    header, the AIP action, whether the value is rebuilt from a durable record, and the headers
    (case-insensitive; empty when replayed)."""

    operation: str = ""
    session_id: Optional[str] = None
    action_id: Optional[str] = None
    replayed: bool = False
    headers: Mapping[str, str] = attrs.field(factory=dict)


NO_CONTEXT = DecodeContext()
#: How an operation's 2xx JSON (or its durable record) becomes its typed value.
Decoder = Callable[[object, DecodeContext], T]

if TYPE_CHECKING:
    import cattrs

    converter: cattrs.Converter
_converter: "Optional[cattrs.Converter]" = None
_converter_lock = threading.Lock()


def __getattr__(name: str) -> object:
    # ``converter`` is built when first asked for, never by a chat (see cattrs_converter).
    if name == "converter":
        return _cattrs()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _cattrs() -> "cattrs.Converter":
    global _converter
    if _converter is None:
        with _converter_lock:
            if _converter is None:
                from .cattrs_converter import make_converter

                _converter = make_converter(lambda t: isinstance(t, type) and t in _SHAPES, reader, object_copy)
    return _converter


def structure(data: object, cls: type[T]) -> T:
    """``data`` read into the attrs class ``cls`` by the SDK's cattrs converter (built on first use:
    a process that only chats never imports cattrs)."""
    return _cattrs().structure(data, cls)


def object_copy(value: object) -> dict[str, object]:
    """A JSON object's shallow copy, as cattrs' mapping hook makes for ``dict[str, Any]`` (without
    structuring each key and value again: JSON objects have string keys, and the values are Any)."""
    if type(value) is not dict and not isinstance(value, abc.Mapping):
        raise TypeError(f"expected a JSON object, got {type(value).__name__}")
    return dict(value)

# ------------------------------------------------------------------ the families' results


def _as_sent(value: object) -> object:
    return value


Rule = Callable[[object], object]

#: The lenient rule of each field type: the value Hermes sent when it has the type, else None.
_RULES: dict[object, Rule] = {
    Optional[str]: opt_str, Optional[float]: opt_float, Optional[int]: opt_int, Optional[bool]: opt_bool,
    Optional[dict[str, Any]]: opt_object, Optional[list[Any]]: opt_list, tuple[str, ...]: strings,
    Any: _as_sent,
}
#: Field types whose value, when Hermes sent another type (or an empty string), is the field's
#: default: the check, and the default of a field without one.
_DEFAULTED: dict[object, tuple[Callable[[object], bool], Callable[[], object]]] = {
    str: (lambda v: isinstance(v, str) and v != "", str),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), int),
    bool: (lambda v: isinstance(v, bool), bool),
    dict[str, Any]: (lambda v: isinstance(v, dict), dict),
    list[Any]: (lambda v: isinstance(v, list), list),
}
#: The fields a result takes from the DecodeContext, not from the JSON.
_CONTEXT_FIELDS = ("action_id", "replayed", "headers")


@attrs.frozen
class Shape:
    """How a result class is read from a JSON object (declared once, with :func:`shape`)."""

    #: What it is, in the error for a reply that is not a JSON object (``"a session object"``).
    what: str
    #: The error's message when a ``required`` field is missing or of another type.
    malformed: str = ""
    #: Fields without which the reply is malformed (``id``): they must have their JSON type.
    required: tuple[str, ...] = ()
    #: JSON keys (a dotted path into nested objects) of the fields named otherwise.
    keys: Mapping[str, str] = attrs.field(factory=dict)
    #: Rules of fields that read differently from their type's.
    rules: Mapping[str, Rule] = attrs.field(factory=dict)
    #: Fields never read from the JSON: the decoder gives them, or they keep their default.
    given: tuple[str, ...] = ()


_SHAPES: dict[type, Shape] = {}
_READERS: dict[type, object] = {}


def shape(what: str, *, malformed: str = "", required: tuple[str, ...] = (),
          keys: Optional[Mapping[str, str]] = None, rules: Optional[Mapping[str, Rule]] = None,
          given: tuple[str, ...] = ()) -> Callable[[type[T]], type[T]]:
    """Declare how the decorated result class is read from Hermes' JSON (see :class:`Shape`)."""
    declared = Shape(what, malformed, required, dict(keys or {}), dict(rules or {}), given)

    def register(cls: type[T]) -> type[T]:
        _SHAPES[cls] = declared
        return cls
    return register


def _dig(obj: Mapping[str, object], path: tuple[str, ...]) -> object:
    found: object = obj
    for part in path:
        found = found.get(part) if isinstance(found, abc.Mapping) else None
    return found


class _Reader(Generic[T]):
    """One result class's structure hook: each field by its rule, ``raw`` the object as received."""

    def __init__(self, cls: type[T], declared: Shape) -> None:
        self.make: Callable[..., T] = cls
        self.shape = declared
        if not attrs.has(cls):
            raise TypeError(f"{cls.__name__} is not an attrs class")
        hints = typing.get_type_hints(cls)
        self.plan: list[tuple[str, str, Optional[tuple[str, ...]], Rule]] = []
        self.checks: list[tuple[str, type]] = []
        fields = [f for f in attrs.fields(cls) if f.init]
        names = [f.name for f in fields]
        self.raw = "raw" in names
        self.context = tuple(n for n in _CONTEXT_FIELDS if n in names)
        for field in fields:
            name = field.name
            if name == "raw" or name in self.context or name in declared.given:
                continue
            key = declared.keys.get(name, name)
            path = tuple(key.split(".")) if "." in key else None
            self.plan.append((name, key, path, declared.rules.get(name) or _rule(cls, field, hints[name])))
            if name in declared.required:
                self.checks.append((key, list if typing.get_origin(hints[name]) is list else str))

    def __call__(self, data: object, _: object = None) -> T:
        return self.read(data, NO_CONTEXT, {})

    def read(self, data: object, ctx: DecodeContext, given: Mapping[str, object]) -> T:
        obj = json_object(data, self.shape.what)
        for key, kind in self.checks:
            if not isinstance(obj.get(key), kind):
                raise InvalidResponseError(self.shape.malformed)
        fields = {name: rule(obj.get(key) if path is None else _dig(obj, path))
                  for name, key, path, rule in self.plan}
        if self.raw:
            fields["raw"] = dict(obj)
        for name in self.context:
            fields[name] = getattr(ctx, name)
        fields.update(given)
        return self.make(**fields)


def _rule(cls: type, field: "attrs.Attribute[object]", kind: object) -> Rule:
    """The lenient rule of a field of type ``kind``."""
    found = _RULES.get(kind)
    if found is not None:
        return found
    if kind in _DEFAULTED:
        check, make = _DEFAULTED[kind]
        default = field.default
        factory = getattr(default, "factory", None)  # an attrs.Factory
        if callable(factory):
            make = factory
        elif default is not attrs.NOTHING:
            make = lambda: default  # noqa: E731 (an immutable default: a str, an int, a bool)
        return lambda v: v if check(v) else make()
    args = typing.get_args(kind)
    if typing.get_origin(kind) is list and args and args[0] in _SHAPES:
        rows = reader(args[0])
        return lambda v: [rows(row) for row in v] if isinstance(v, list) else []
    raise TypeError(f"{cls.__name__}.{field.name}: no decoding rule for {kind!r}")


def reader(cls: type[T]) -> _Reader[T]:
    """The structure hook of a shaped result class (built once, at its first use)."""
    found = _READERS.get(cls)
    if not isinstance(found, _Reader):
        found = _READERS[cls] = _Reader(cls, _SHAPES[cls])
    return typing.cast("_Reader[T]", found)


def read(cls: type[T], data: object, ctx: DecodeContext = NO_CONTEXT, **given: object) -> T:
    """A ``cls`` from its JSON object; ``given`` fields are the decoder's, not the JSON's."""
    return reader(cls).read(data, ctx, given)


def one(cls: type[T], envelope: Optional[str] = None, what: str = "") -> Decoder[T]:
    """The decoder of one ``cls``, sent as is or as ``{envelope: {...}}`` (``what`` names that envelope)."""
    def decode(data: object, ctx: DecodeContext = NO_CONTEXT) -> T:
        if envelope is not None:
            data = json_object(data, what).get(envelope)
        return reader(cls).read(data, ctx, {})
    decode.__qualname__ = f"one({cls.__name__})"
    return decode


def many(cls: type[T], key: str, what: str, *, skip_non_objects: bool = False) -> Decoder[list[T]]:
    """The decoder of ``{key: [...]}``, a list of ``cls`` (``what`` names the list object); with
    ``skip_non_objects`` an entry that is not a JSON object is left out, else it is malformed."""
    def decode(data: object, ctx: DecodeContext = NO_CONTEXT) -> list[T]:
        rows = json_object(data, what).get(key)
        if not isinstance(rows, list):
            raise InvalidResponseError(f"Hermes returned {what} without a {key!r} array")
        read_one = reader(cls).read
        return [read_one(row, ctx, {}) for row in rows if not skip_non_objects or isinstance(row, abc.Mapping)]
    decode.__qualname__ = f"many({cls.__name__})"
    return decode


def as_dict(data: object, what: str) -> dict[str, object]:
    """A JSON object as a dict (the one received when it is one)."""
    return data if type(data) is dict else dict(json_object(data, what))


def json_object(data: object, what: str) -> Mapping[str, object]:
    """``data`` if it is a JSON object, else InvalidResponseError naming ``what`` was expected."""
    if not isinstance(data, abc.Mapping):  # the ABC: typing's alias checks about 2x slower
        raise InvalidResponseError(f"Hermes returned a {type(data).__name__} where {what} was expected")
    return data


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _json_copy(value: object) -> object:
    """What ``converter.unstructure`` returns for parsed JSON (a deep copy), without its dispatch."""
    if type(value) is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                k = _cattrs().unstructure(k)
            out[k] = v if type(v) in _LEAVES else _json_copy(v)
        return out
    if type(value) is list:
        return [v if type(v) in _LEAVES else _json_copy(v) for v in value]
    if type(value) in _LEAVES:
        return value
    return _cattrs().unstructure(value)


def _event_json(event: StreamEvent) -> dict[str, object]:
    return {"event": event.event, "id": event.id, "data": _json_copy(event.data), "raw_data": event.raw_data,
            "terminal": event.terminal}


def stream_result_to_json(result: StreamResult) -> dict[str, object]:
    """A StreamResult as JSON: the output of a stream's ActionResult and its durable record."""
    # The events dominate (one per SSE event): unstructure them by hand, the rest with cattrs.
    from .events import tool_event_to_json  # loaded with the first stream's events

    events, tools = result.events, result.tools
    if tools:
        result = attrs.evolve(result, tools=[])
    if type(events) is not list or any(type(e) is not StreamEvent for e in events):
        out: dict[str, object] = _cattrs().unstructure(result)
    else:
        out = _cattrs().unstructure(attrs.evolve(result, events=[]))
        out["events"] = [_event_json(e) for e in events]
    out["tools"] = [t if isinstance(t, dict) else tool_event_to_json(t) for t in tools]
    return out


def stream_result_from_json(data: Mapping[str, object]) -> StreamResult:
    """Rebuild a StreamResult from its JSON (a replayed stream's record)."""
    from .events import tool_event_from_json  # loaded with the first stream's events

    fields = dict(data)
    tools = fields.pop("tools", None)
    result = _cattrs().structure(fields, StreamResult)
    result.tools = [tool_event_from_json(t) if isinstance(t, abc.Mapping) else t
                    for t in (tools if isinstance(tools, list) else ())]
    return result


_RESULT_FIELDS = tuple(a.name for a in attrs.fields(ActionResult))


def action_result_to_json(result: ActionResult) -> dict[str, object]:
    """An ActionResult as JSON, as the idempotency store keeps it (the error as its ``to_dict()``)."""
    if type(result) is not ActionResult or result.error is not None:
        out: dict[str, object] = _cattrs().unstructure(result)
        return out
    # Every keyed call records its result: a completed one is copied by hand, what cattrs'
    # runtime dispatch over each JSON node (the output, the approval) would return.
    out = {name: getattr(result, name) for name in _RESULT_FIELDS}
    out["output"] = _json_copy(result.output)
    if result.approval is not None:
        out["approval"] = _json_copy(result.approval)
    return out


def action_result_from_json(data: Mapping[str, object]) -> ActionResult:
    """Rebuild an ActionResult from its JSON; the error comes back as its most specific HermesError class."""
    return _cattrs().structure(dict(data), ActionResult)


def recorded_result(data: object) -> ActionResult:
    """The ActionResult of a stored record: one that does not rebuild is a ``CorruptRecordError``
    (a typed error, never cattrs' own)."""
    from .idempotency import corrupt

    try:
        if not isinstance(data, abc.Mapping):
            raise TypeError(f"a record is a JSON object, not a {type(data).__name__}")
        return action_result_from_json(data)
    except Exception as exc:  # cattrs' ClassValidationError, a TypeError, a KeyError...
        raise corrupt("idempotency", f"(its result does not rebuild: {type(exc).__name__})") from None


__all__ = ["converter"]
