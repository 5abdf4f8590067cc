"""Declared input schemas: one table per operation, applied by the kernel before the builder and
published by ``capabilities()`` as JSON Schema (issue 40).

A family declares what each operation takes with a small vocabulary (exported through
:mod:`hermes_sdk.plugin`): a :class:`Field` of a kind (:class:`Text`, :class:`Int`, :class:`Number`,
:class:`Bool`, :class:`ListOf`, :class:`Object`, :class:`PathId`, :class:`Header`, :class:`Message`,
:class:`OneOf`, :class:`AllOf`, :class:`Anything`, :class:`Never`),
required or not, grouped by ``exactly_one`` / ``at_least_one``, with provider fields passed through
(``extra="provider"``, JSON-checked) and named :class:`Rule` s for what a kind cannot say. The kernel
calls :meth:`Input.check` in :meth:`OperationSpec.request`, so ``invoke()``, the resources, the CLI
and ``build_request`` refuse alike, each refusal an InvalidInputError naming its field; the builder
then only maps the input to path, headers and body.

Messages are the project's own, as templates: ``{field}`` is the field's path (``{key}`` its last
part: ``store`` of ``body.store``; ``{limit}``,
``{minimum}``, ``{maximum}`` a kind's bound); a kind's ``message`` replaces its default wording.
"""

from __future__ import annotations

import re
from typing import Callable, Literal, Mapping, Optional, Protocol, Sequence, Union

import attrs

from ._constants import MAX_SAFE_INTEGER, MAX_SESSION_VALUE_CHARS
from .operations.common import bad, check_message, is_number, path_id, require_input, session_value

#: Control fields every operation accepts besides its own: the idempotency key (taken off the
#: input before the builder) and the AIP envelope.
CONTROL = ("idempotency_key", "_aip")
_CONTROL_SCHEMA: dict[str, dict[str, object]] = {
    "idempotency_key": {"type": "string", "description": "the call's idempotency key (sent as Idempotency-Key)"},
    "_aip": {"type": "object", "description": "the AIP envelope (set by the SDK's governed lifecycle)"},
}


class Kind(Protocol):
    """What a field's value must be: ``check`` refuses a wrong one, ``schema`` publishes the rule."""

    def check(self, field: str, value: object) -> None: ...

    def schema(self) -> dict[str, object]: ...


def _say(template: str, field: str, **values: object) -> str:
    """``template`` with ``{field}`` and the named ``values`` filled in (any other brace is literal:
    a message may quote a pattern such as ``^[a-f0-9]{12}$``)."""
    out = template.replace("{field}", field).replace("{key}", field.rsplit(".", 1)[-1])
    for name, value in values.items():
        out = out.replace("{" + name + "}", str(value))
    return out


@attrs.frozen
class Text:
    """A string: ``non_empty`` (not blank), at most ``max_len`` characters (of the stripped text
    with ``strip_for_length``), none of ``forbid``, one of ``one_of`` when given."""

    max_len: Optional[int] = None
    non_empty: bool = False
    strip_for_length: bool = False
    forbid: str = ""
    #: At least this many characters (blanks count: ``non_empty`` is about visible ones).
    min_len: int = 0
    one_of: tuple[str, ...] = ()
    #: Said for a non-string, a blank, a forbidden character or a value not in ``one_of``.
    message: Optional[str] = None
    #: Said for a value over ``max_len`` (default: "'{field}' is longer than {limit} characters",
    #: with ``details["limit"]``).
    too_long: Optional[str] = None
    #: A value not in ``one_of`` is echoed in ``details[field]`` (its first 32 characters).
    echo: bool = False

    def check(self, field: str, value: object) -> None:
        if self.one_of:
            self._check_choice(field, value)
            return
        if not isinstance(value, str):
            raise bad(field, _say(self.message or "'{field}' must be a string", field))
        if (self.non_empty and not value.strip()) or len(value) < self.min_len:
            raise bad(field, _say(self.message or "'{field}' must not be empty", field))
        if self.forbid and any(c in value for c in self.forbid):
            raise bad(field, _say(self.message or "'{field}' holds a character it may not hold", field))
        if self.max_len is not None and len(value.strip() if self.strip_for_length else value) > self.max_len:
            if self.too_long is not None:
                raise bad(field, _say(self.too_long, field, limit=self.max_len))
            raise bad(field, f"'{field}' is longer than {self.max_len} characters", limit=self.max_len)

    def _check_choice(self, field: str, value: object) -> None:
        if value not in self.one_of:
            echoed = {field: str(value)[:32]} if self.echo else {}
            raise bad(field, _say(self.message or "'{field}' must be one of {choices}", field,
                                  choices=", ".join(self.one_of)), **echoed)

    def schema(self) -> dict[str, object]:
        if self.one_of:
            return {"type": "string", "enum": list(self.one_of)}
        out: dict[str, object] = {"type": "string"}
        if self.non_empty or self.min_len:
            out["minLength"] = max(1 if self.non_empty else 0, self.min_len)
        if self.non_empty:
            out["pattern"] = r"\S"
        if self.forbid:
            out["pattern"] = "^[^" + "".join(f"\\x{ord(c):02x}" for c in self.forbid) + "]*$"
        if self.max_len is not None:
            out["maxLength"] = self.max_len
        return out


@attrs.frozen
class Int:
    """An integer (never a bool) from ``minimum`` to ``maximum`` (each optional)."""

    minimum: Optional[int] = None
    maximum: Optional[int] = None
    message: Optional[str] = None

    def check(self, field: str, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or (
                self.minimum is not None and value < self.minimum) or (
                self.maximum is not None and value > self.maximum):
            raise bad(field, _say(self.message or self._default(), field, minimum=self.minimum,
                                  maximum=self.maximum))

    def _default(self) -> str:
        if self.minimum is not None and self.maximum is not None:
            return "'{field}' must be an integer from {minimum} to {maximum}"
        if self.minimum is not None:
            return "'{field}' must be an integer of at least {minimum}"
        return "'{field}' must be an integer"

    def schema(self) -> dict[str, object]:
        out: dict[str, object] = {"type": "integer"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out


@attrs.frozen
class Number:
    """A finite JSON number (an integer or a float, never a bool) of at most 2**53 in size."""

    message: Optional[str] = None

    def check(self, field: str, value: object) -> None:
        if not is_number(value):
            raise bad(field, _say(self.message or "'{field}' must be a finite number", field))

    def schema(self) -> dict[str, object]:
        return {"type": "number", "minimum": -MAX_SAFE_INTEGER, "maximum": MAX_SAFE_INTEGER}


@attrs.frozen
class Bool:
    """``true`` or ``false``."""

    message: Optional[str] = None

    def check(self, field: str, value: object) -> None:
        if not isinstance(value, bool):
            raise bad(field, _say(self.message or "'{field}' must be a boolean", field))

    def schema(self) -> dict[str, object]:
        return {"type": "boolean"}


@attrs.frozen
class Object:
    """A JSON object (its members are the provider's: checked as JSON, not one by one)."""

    message: Optional[str] = None
    #: The object's own fields, published (and checked where the operation says: ``Input.check(prefix=)``).
    input: Optional["Input"] = None

    def check(self, field: str, value: object) -> None:
        if not isinstance(value, Mapping):
            raise bad(field, _say(self.message or "'{field}' must be an object", field))

    def schema(self) -> dict[str, object]:
        return self.input.json_schema() if self.input is not None else {"type": "object"}


@attrs.frozen
class Anything:
    """Any JSON value (the whole input is JSON-checked before any field)."""

    def check(self, field: str, value: object) -> None:
        return None

    def schema(self) -> dict[str, object]:
        return {}


@attrs.frozen
class PathId:
    """An id that becomes one path segment (the one rule of every path id: non-blank, valid
    Unicode, at most 512 bytes, no control character, not a dot segment), and matching
    ``pattern`` (a family's id format) when given, else ``message``."""

    pattern: Optional[str] = None
    message: Optional[str] = None

    def check(self, field: str, value: object) -> None:
        path_id(field, value)
        if self.pattern is not None and re.fullmatch(self.pattern, str(value)) is None:
            raise bad(field, _say(self.message or "'{field}' must match ^{pattern}$", field, pattern=self.pattern))

    def schema(self) -> dict[str, object]:
        if self.pattern is not None:
            return {"type": "string", "minLength": 1, "maxLength": 512, "pattern": f"^{self.pattern}$"}
        # what path_id() refuses: blank, a control character, a dot segment
        return {"type": "string", "minLength": 1, "maxLength": 512,
                "pattern": r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
                "not": {"pattern": r"^\.\.?$"}}


@attrs.frozen
class Header:
    """A value sent as a Hermes session header (``session_id``, ``session_key``): at most 256
    latin-1 characters, no control character (but tab) and no surrounding whitespace."""

    def check(self, field: str, value: object) -> None:
        session_value(field, value)

    def schema(self) -> dict[str, object]:
        return {"type": "string", "minLength": 1, "maxLength": MAX_SESSION_VALUE_CHARS,
                "pattern": r"^[\x21-\x7e\xa1-\xff](?:[\x09\x20-\x7e\xa0-\xff]*[\x21-\x7e\xa1-\xff])?$"}


@attrs.frozen
class Never:
    """A field this operation refuses whenever it is given (``max_events`` of a call that does not
    stream): ``message`` says why."""

    message: str

    def check(self, field: str, value: object) -> None:
        raise bad(field, _say(self.message, field))

    def schema(self) -> dict[str, object]:
        return {"not": {}}


@attrs.frozen
class Message:
    """A chat message: an object with a non-empty string ``role`` and a ``content`` (a string, a
    list of content parts, or null)."""

    def check(self, field: str, value: object) -> None:
        check_message(field, value)

    def schema(self) -> dict[str, object]:
        return {"type": "object", "required": ["role", "content"],
                "properties": {"role": {"type": "string", "minLength": 1},
                               "content": {"type": ["string", "array", "null"]}}}


@attrs.frozen
class ListOf:
    """A list of items of one kind: at most ``max_items``, at least one with ``non_empty``.
    ``message`` is said for a non-list or a wrong size; ``item_message`` (``{field}`` is
    ``name[i]``) for a wrong item, else the item kind's own."""

    item: Kind
    max_items: Optional[int] = None
    non_empty: bool = False
    message: Optional[str] = None
    item_message: Optional[str] = None

    def check(self, field: str, value: object) -> None:
        if not isinstance(value, list) or (self.non_empty and not value) or (
                self.max_items is not None and len(value) > self.max_items):
            raise bad(field, _say(self.message or "'{field}' must be a list", field, limit=self.max_items))
        for i, item in enumerate(value):
            name = f"{field}[{i}]"
            if self.item_message is None:
                self.item.check(name, item)
                continue
            try:
                self.item.check(name, item)
            except Exception:
                raise bad(name, _say(self.item_message, name)) from None

    def schema(self) -> dict[str, object]:
        out: dict[str, object] = {"type": "array", "items": self.item.schema()}
        if self.non_empty:
            out["minItems"] = 1
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        return out


@attrs.frozen
class OneOf:
    """A value of any of ``kinds`` (``stop``: a string or a list of strings); ``message`` says so."""

    kinds: tuple[Kind, ...]
    message: str
    #: A value of a JSON type one of the kinds takes is refused with that kind's own message
    #: (``input``: a blank string "must not be empty"); the ``message`` is for other types.
    by_type: bool = False

    def check(self, field: str, value: object) -> None:
        if self.by_type:
            for kind in self.kinds:
                if _takes_type(kind, value):
                    kind.check(field, value)
                    return
        for kind in self.kinds:
            try:
                kind.check(field, value)
            except Exception:
                continue
            return
        raise bad(field, _say(self.message, field))

    def schema(self) -> dict[str, object]:
        return {"anyOf": [kind.schema() for kind in self.kinds]}


@attrs.frozen
class AllOf:
    """A value every one of ``kinds`` accepts, checked in order (the first refusal is said)."""

    kinds: tuple[Kind, ...]

    def check(self, field: str, value: object) -> None:
        for kind in self.kinds:
            kind.check(field, value)

    def schema(self) -> dict[str, object]:
        return {"allOf": [kind.schema() for kind in self.kinds]}


def _takes_type(kind: Kind, value: object) -> bool:
    """Whether ``kind`` is about values of ``value``'s JSON type (a string, a list, an object)."""
    if isinstance(kind, Text):
        return isinstance(value, str)
    if isinstance(kind, ListOf):
        return isinstance(value, list)
    if isinstance(kind, (Object, Message)):
        return isinstance(value, Mapping)
    return False


AnyKind = Union[Text, Int, Number, Bool, Object, Anything, PathId, Header, Never, Message, ListOf, OneOf, AllOf,
                Kind]


@attrs.frozen
class Field:
    """One input field: its name, kind, whether it is required, and its description.

    ``null`` says what a JSON ``null`` means: ``"absent"`` (as if not given, the default),
    ``"value"`` (a valid value, sent: ``title`` null clears a title) or ``"checked"`` (given: the
    kind refuses it; a required field's absence is checked the same way, with the kind's message).
    """

    name: str
    kind: AnyKind
    required: bool = False
    doc: str = ""
    null: Literal["absent", "value", "checked"] = "absent"
    #: Said when a required field is missing (default "'{field}' is required").
    missing: Optional[str] = None
    #: Another name for the field ``alias_of``: checked (and used) only when that one is not given.
    alias_of: Optional[str] = None


@attrs.frozen
class Rule:
    """A named domain rule for what a kind cannot say (``last_message_is_users``): ``check(input)``
    raises an InvalidInputError naming its field; ``doc`` is published in the schema."""

    name: str
    check: Callable[[Mapping[str, object]], None]
    doc: str = ""
    #: The fields whose values the rule constrains beyond their kinds (published with it).
    fields: tuple[str, ...] = ()


@attrs.frozen
class Input:
    """The fields an operation takes, checked in order: the whole input is a JSON object
    (:func:`require_input`), no unknown field (unless ``extra="provider"``), the ``first`` rules, the
    ``exactly_one`` groups, each field's kind, the ``at_least_one`` groups, provider fields' numbers,
    then the ``rules``.

    ``unknown`` is said for an unknown field (``{name}`` quoted, ``{accepted}``); ``control`` are the
    fields accepted beside the declared ones without a check here (the key, the AIP envelope).
    """

    fields: tuple[Field, ...] = ()
    exactly_one: tuple[tuple[str, ...], ...] = ()
    at_least_one: tuple[tuple[str, ...], ...] = ()
    extra: Literal["refuse", "provider"] = "refuse"
    rules: tuple[Rule, ...] = ()
    #: Rules checked before the fields (two fields that exclude each other, said before either's kind).
    first: tuple[Rule, ...] = ()
    control: tuple[str, ...] = CONTROL
    unknown: str = "unknown field {name}; accepted: {accepted}"
    #: The names listed after "accepted:" (default: every declared field, in order).
    accepted: Optional[tuple[str, ...]] = None
    #: Said when no field of an ``at_least_one`` group is given (``{names}``), naming ``none_given_field``.
    none_given: str = "give at least one of {names}"
    none_given_field: str = "input"
    #: Provider fields' numbers (``extra="provider"``) are checked, except these names.
    numbers_skip: tuple[str, ...] = ()
    #: Whether provider fields' numbers are checked (False where the provider fields are another
    #: object's, checked there: the Responses body).
    numbers: bool = True
    doc: str = ""
    #: The declared names and those the provider-number check skips, computed once (not per call).
    _names: frozenset[str] = attrs.field(init=False, repr=False, eq=False)
    _not_numbers: frozenset[str] = attrs.field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        names = frozenset(f.name for f in self.fields)
        object.__setattr__(self, "_names", names)
        object.__setattr__(self, "_not_numbers", names | set(self.numbers_skip) | set(self.control))

    def check(self, raw: object, prefix: str = "") -> Mapping[str, object]:
        """``raw`` if it is a valid input; else an InvalidInputError naming the first bad field.
        ``prefix`` roots the field paths (``body.``: an object inside the input)."""
        data = require_input(raw) if not prefix else raw
        assert isinstance(data, Mapping)
        if self.extra == "refuse":
            self._refuse_unknown(data, prefix)
        for rule in self.first:
            rule.check(data)
        for group in self.exactly_one:
            given = [name for name in group if data.get(name) is not None]
            if len(given) != 1:
                raise bad("input", f"give exactly one of {_listed(group)}", given=given)
        for field in self.fields:
            if field.name in data or field.required:  # (most declared fields are not given)
                self._check_field(field, data, prefix)
        for group in self.at_least_one:
            if not any(data.get(name) is not None for name in group):
                raise bad(self.none_given_field, _say(self.none_given, self.none_given_field, names=", ".join(group)))
        if self.extra == "provider" and self.numbers:
            self._check_provider_numbers(data, prefix)
        for rule in self.rules:
            rule.check(data)
        return data

    def _refuse_unknown(self, data: Mapping[str, object], prefix: str) -> None:
        names = self._names
        extra = sorted(k for k in data if k not in names and k not in self.control)
        if extra:
            accepted = self.accepted if self.accepted is not None else tuple(f.name for f in self.fields)
            raise bad(prefix + extra[0], _say(self.unknown, prefix + extra[0], name=repr(extra[0]),
                                              accepted=", ".join(accepted)))

    @staticmethod
    def _check_field(field: Field, data: Mapping[str, object], prefix: str) -> None:
        if field.alias_of is not None and data.get(field.alias_of) is not None:
            return  # the field it names is given and used; this one is not
        path = prefix + field.name
        if field.null == "checked" and field.required:  # absent is null, and the kind refuses it
            field.kind.check(path, data.get(field.name))
            return
        if field.name not in data or (data[field.name] is None and field.null != "checked"):
            if field.required:
                raise bad(path, _say(field.missing or "'{field}' is required", path))
            return
        field.kind.check(path, data[field.name])

    def _check_provider_numbers(self, data: Mapping[str, object], prefix: str) -> None:
        # The provider fields not declared here (declared ones were checked by their kind).
        skip = self._not_numbers
        for name, value in data.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and not is_number(value) \
                    and name not in skip:
                raise bad(prefix + name, f"'{name}' must be a finite number of at most 2**53 in size")

    def json_schema(self) -> dict[str, object]:
        """The input as JSON Schema (draft 2020-12), as ``capabilities()`` publishes it."""
        properties = {f.name: _property(f) for f in self.fields}
        for name in self.control:
            properties.setdefault(name, dict(_CONTROL_SCHEMA.get(name, {})))
        out: dict[str, object] = {"type": "object", "properties": properties,
                                  "additionalProperties": self.extra == "provider"}
        required = [f.name for f in self.fields if f.required]
        if required:
            out["required"] = required
        out.update(self._groups())
        notes = [self.doc] if self.doc else []
        rules = self.first + self.rules
        notes += [f"{rule.name}: {rule.doc}" if rule.doc else rule.name for rule in rules]
        if notes:
            out["description"] = "; ".join(notes)
        if rules:  # what the kinds above cannot say, by name (and the fields it binds)
            out["x-rules"] = [{"name": rule.name, "fields": list(rule.fields)} for rule in rules]
        return out

    def _groups(self) -> dict[str, object]:
        groups: list[dict[str, object]] = [
            {"oneOf": [{"required": [name]} for name in group]} for group in self.exactly_one]
        groups += [{"anyOf": [{"required": [name]} for name in group]} for group in self.at_least_one]
        if len(groups) == 1:
            return groups[0]
        return {"allOf": groups} if groups else {}


def _property(f: Field) -> dict[str, object]:
    """One field's published schema: its kind's, null where it is a value, and its description."""
    prop = dict(f.kind.schema())
    if f.null == "value":
        prop = {"anyOf": [prop, {"type": "null"}]} if prop else {}
    doc = f.doc
    if f.alias_of is not None:
        doc = f"{doc} (another name for {f.alias_of!r}, used when it is not given)".strip()
        prop["x-alias-of"] = f.alias_of
    if doc:
        prop["description"] = doc
    return prop


def _listed(names: Sequence[str]) -> str:
    quoted = [f"'{n}'" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


#: What a capability without a declared input publishes: any JSON object.
ANY_OBJECT: dict[str, object] = {"type": "object"}


def input_schema(spec_input: Optional[Input]) -> dict[str, object]:
    """The published ``input_schema`` of an operation (any object when it declares none)."""
    return spec_input.json_schema() if spec_input is not None else dict(ANY_OBJECT)


__all__ = ["ANY_OBJECT", "AllOf", "Anything", "Bool", "CONTROL", "Field", "Header", "Input", "Int", "Kind", "ListOf",
           "Message", "Never", "Number", "Object", "OneOf", "PathId", "Rule", "Text", "input_schema"]
