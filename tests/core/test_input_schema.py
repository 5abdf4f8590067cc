"""Issue 40: the declared input schemas refuse and map exactly as the hand-written checks did.

The golden corpus (``tests/core/golden/input_corpus.json``, recorded by ``input_corpus.py`` at the
commit before the schemas) holds the outcome of 20,000 inputs over every built-in operation: the
error class, ``details`` and message of a refusal, or the request (method, path, headers, body).
"""

from __future__ import annotations

import importlib.util
import json
import re
import string
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

_SPEC = importlib.util.spec_from_file_location("input_corpus", Path(__file__).parent / "golden" / "input_corpus.py")
assert _SPEC is not None and _SPEC.loader is not None
corpus = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("input_corpus", corpus)
_SPEC.loader.exec_module(corpus)

Outcome = list[object]


def _declared_kind_first(op: str, name: str, was: Outcome, now: Outcome) -> bool:
    """chat: a NaN, infinity or over-2**53 number given for a declared field that is not a number
    (``stop``, ``tools``, ``tool_choice``, ``response_format``, ``metadata``, ``user``) is refused with
    that field's own message ("'user' must be a string"), not the provider-number one."""
    return (op in ("chat", "chat_stream") and was[0] == now[0] == "refused" and was[2] == now[2]
            and str(was[3]).endswith("must be a finite number of at most 2**53 in size")
            and name.split(":")[1].split("=")[0] in ("stop", "tools", "tool_choice", "response_format", "metadata",
                                                      "user"))


#: Outcomes that changed on purpose, each listed in CHANGELOG.md (Unreleased, "Input schemas").
CHANGES: tuple[Callable[[str, str, Outcome, Outcome], bool], ...] = (_declared_kind_first,)


def test_every_builtin_operation_refuses_as_before() -> None:
    recorded = corpus.load()
    now = corpus.record()
    assert now.keys() == recorded.keys()
    used: set[object] = set()
    differences = []
    for op in recorded:
        for name, was in recorded[op].items():
            if was == now[op][name]:
                continue
            listed = [change for change in CHANGES if change(op, name, was, now[op][name])]
            used.update(listed)
            if not listed:
                differences.append((op, name, was, now[op][name]))
    assert not differences, f"{len(differences)} differences, the first: {differences[:5]}"
    assert used == set(CHANGES), "a listed change no longer happens: drop it (and its CHANGELOG line)"


# ------------------------------------------------------------------ what capabilities() publishes

_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength",
    "maxLength", "minimum", "maximum", "pattern", "enum", "anyOf", "oneOf", "allOf", "not", "description",
    "x-rules", "x-alias-of",
}
_TYPES = {"object", "string", "integer", "number", "boolean", "array", "null"}


def meta_check(node: object, path: str = "#") -> None:
    """A JSON Schema (2020-12) meta-schema check of the keywords the SDK publishes: each keyword is
    known and its value of the kind the specification requires; sub-schemas are checked too."""
    assert isinstance(node, dict), f"{path}: a schema is an object"
    unknown = set(node) - _KEYWORDS
    assert not unknown, f"{path}: unknown keywords {unknown}"
    kinds = node.get("type", "object")
    assert set(kinds if isinstance(kinds, list) else [kinds]) <= _TYPES, f"{path}: type {kinds!r}"
    for key in ("minItems", "maxItems", "minLength", "maxLength"):
        if key in node:
            assert isinstance(node[key], int) and not isinstance(node[key], bool) and node[key] >= 0, f"{path}/{key}"
    for key in ("minimum", "maximum"):
        if key in node:
            assert isinstance(node[key], (int, float)) and not isinstance(node[key], bool), f"{path}/{key}"
    if "pattern" in node:
        re.compile(node["pattern"])  # ECMA-262 and Python agree on the classes used here
    if "enum" in node:
        assert isinstance(node["enum"], list) and node["enum"], f"{path}/enum"
    if "required" in node:
        required = node["required"]
        assert isinstance(required, list) and len(set(required)) == len(required), f"{path}/required"
        assert all(isinstance(name, str) for name in required)
    if "properties" in node:
        assert isinstance(node["properties"], dict)
        for name, sub in node["properties"].items():
            meta_check(sub, f"{path}/properties/{name}")
        assert set(node.get("required", ())) <= set(node["properties"]), f"{path}: required names a non-property"
    for key in ("items", "not"):
        if key in node:
            meta_check(node[key], f"{path}/{key}")
    if isinstance(node.get("additionalProperties"), dict):
        meta_check(node["additionalProperties"], f"{path}/additionalProperties")
    else:
        assert isinstance(node.get("additionalProperties", True), bool)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in node:
            assert isinstance(node[key], list) and node[key], f"{path}/{key}"
            for i, sub in enumerate(node[key]):
                meta_check(sub, f"{path}/{key}/{i}")
    for rule in node.get("x-rules", ()):
        assert isinstance(rule["name"], str) and set(rule["fields"]) <= set(node.get("properties", {}))


def _client() -> Any:
    import hermes_sdk

    return hermes_sdk.HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)


def _schemas() -> dict[str, dict[str, Any]]:
    client = _client()
    try:
        return {d["operation"]: d["input_schema"] for d in client.capabilities()}
    finally:
        client.close()


def test_every_descriptor_has_an_input_schema_of_valid_json_schema() -> None:
    client = _client()
    try:
        caps = client.capabilities()
    finally:
        client.close()
    assert len(caps) == 37
    assert all("input_schema" in cap for cap in caps)
    for cap in caps:
        meta_check(cap["input_schema"], cap["operation"])
        assert cap["input_schema"]["type"] == "object"


def test_a_broken_schema_fails_the_meta_check() -> None:
    for broken in ({"type": "text"}, {"minLength": -1}, {"pattern": "("}, {"properties": {"a": {"type": 1}}},
                   {"required": ["a"], "properties": {}}, {"anyOf": []}, {"maxlength": 3}):
        with pytest.raises((AssertionError, re.error)):
            meta_check(broken)


def test_chat_publishes_exactly_one_of_prompt_query_messages() -> None:
    schemas = _schemas()
    for op in ("chat", "chat_stream"):
        assert schemas[op]["oneOf"] == [{"required": ["prompt"]}, {"required": ["query"]}, {"required": ["messages"]}]
        assert schemas[op]["additionalProperties"] is True  # provider fields pass through
    assert schemas["chat"]["properties"]["max_events"] == {"not": {}}
    assert schemas["job_create"]["required"] == ["name", "schedule"]
    assert schemas["job_get"]["properties"]["job_id"]["pattern"] == "^[a-f0-9]{12}$"


def test_cli_capabilities_shows_the_schemas(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from hermes_sdk._app.cli import main

    for name in ("HERMES_BASE_URL", "HERMES_ENDPOINT_ID"):
        monkeypatch.delenv(name, raising=False)
    assert main(["capabilities", "--schema"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["cap:hermes_agent:default:chat"]["oneOf"][0] == {"required": ["prompt"]}
    assert main(["capabilities", "--json"]) == 0
    assert all("input_schema" in cap for cap in json.loads(capsys.readouterr().out))


# ------------------------------------------------------------------ inputs built from the schemas

_ALPHABET = string.ascii_letters + string.digits + " -_"
_CONTROL = {"idempotency_key", "_aip"}


def _text(node: dict[str, Any]) -> st.SearchStrategy[str]:
    low, high = node.get("minLength", 0), node.get("maxLength", 24)
    top = min(high, low + 24)
    pattern = node.get("pattern")
    if pattern:  # anchored: the whole value (ECMA's $ allows no trailing newline); else a value holding it
        # the whole BMP: hypothesis (6.141) refuses an alphabet missing any character a charset of the
        # pattern names, even a negated one's ([^\x00-\x1f] names \x00-\x1f); the pattern does the narrowing
        base = st.from_regex(pattern, alphabet=st.characters(max_codepoint=0xFFFF, codec="utf-8"),
                             fullmatch=pattern.startswith("^"))
    else:
        base = st.text(_ALPHABET, min_size=low, max_size=top)
    banned = node.get("not", {}).get("pattern")
    return base.filter(lambda s: low <= len(s) <= high and not (banned and re.search(banned, s)))


def value_of(node: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values the published schema ``node`` accepts."""
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "anyOf" in node:
        return st.one_of([value_of(sub) for sub in node["anyOf"]])
    if "allOf" in node:  # the ids: each part a string rule, all of them kept
        merged: dict[str, Any] = {}
        for sub in node["allOf"]:
            merged.update({k: v for k, v in sub.items() if k != "pattern"})
        return _text(merged).filter(lambda s: all(re.search(sub["pattern"], s) for sub in node["allOf"]
                                                   if "pattern" in sub))
    kind = node.get("type")
    if kind is None:
        return st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(_ALPHABET, max_size=5))
    if isinstance(kind, list):
        return st.one_of([value_of({**node, "type": k}) for k in kind])
    if kind == "string":
        return _text(node)
    if kind == "integer":
        return st.integers(node.get("minimum", -1000), min(node.get("maximum", 1000), node.get("minimum", 0) + 10**6))
    if kind == "number":
        return st.one_of(st.integers(-10**6, 10**6), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        items = value_of(node.get("items", {"type": "string"}))
        return st.lists(items, min_size=node.get("minItems", 0), max_size=min(node.get("maxItems", 3), 3))
    assert kind == "object"
    if "properties" in node:
        return st.fixed_dictionaries({k: value_of(v) for k, v in node["properties"].items()
                                      if k in node.get("required", ())})
    return st.dictionaries(st.text(_ALPHABET, min_size=1, max_size=5), st.integers(0, 5), max_size=2)


def _exactly_one(node: dict[str, Any]) -> set[str]:
    groups = [node] + list(node.get("allOf", ()))
    return {r["required"][0] for g in groups for r in g.get("oneOf", ())}


def _skipped(node: dict[str, Any]) -> set[str]:
    """Fields a generated input leaves as the known-good input has them: the control fields, those
    bound by a named rule (what a kind cannot say), aliases and fields the operation refuses."""
    bound = {name for rule in node.get("x-rules", ()) for name in rule["fields"]}
    props = node["properties"]
    return bound | _CONTROL | {k for k, v in props.items() if v == {"not": {}} or "x-alias-of" in v}


def draw_input(data: st.DataObject, node: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """An input built from the published ``node``: each field of the known-good ``base`` (which
    picked the exactly-one member) and, at random, each optional field, drawn from its schema."""
    out = dict(base)
    skipped = _skipped(node) | (_exactly_one(node) - set(base))
    for name, sub in node["properties"].items():
        if name in skipped:
            continue
        if name in base or name in node.get("required", ()) or data.draw(st.booleans(), label=f"give {name}"):
            if "properties" in sub and isinstance(base.get(name), dict):
                out[name] = draw_input(data, sub, base[name])  # an object with its own schema (a body)
            else:
                out[name] = data.draw(value_of(sub), label=name)
    return out


_OPERATIONS = sorted(op for op in corpus.CASES if "#" not in op)


@pytest.mark.parametrize("operation", _OPERATIONS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_inputs_built_from_the_schema_are_accepted(operation: str, data: st.DataObject) -> None:
    from hermes_sdk._app.builtin import build_request

    node = _SCHEMAS[operation]
    given_input = draw_input(data, node, corpus.CASES[operation][0][0])
    build_request(operation, given_input)  # accepted: no InvalidInputError


_WRONG: tuple[object, ...] = (12345, "x", True, {"a": 1}, [1])


def _accepts_type(node: dict[str, Any], value: object) -> bool:
    """Whether ``value``'s JSON type is one ``node`` takes (anyOf: any of them)."""
    if "anyOf" in node:
        return any(_accepts_type(sub, value) for sub in node["anyOf"])
    if "allOf" in node:
        return all(_accepts_type(sub, value) for sub in node["allOf"])
    if "enum" in node:
        return value in node["enum"]
    kinds = node.get("type")
    if kinds is None:
        return True
    names = {bool: "boolean", int: "integer", str: "string", dict: "object", list: "array"}
    found = names[type(value)]
    allowed = set(kinds if isinstance(kinds, list) else [kinds])
    return found in allowed or (found == "integer" and "number" in allowed)


@pytest.mark.parametrize("operation", _OPERATIONS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_one_field_broken_against_its_kind_is_refused_naming_it(operation: str, data: st.DataObject) -> None:
    from hermes_sdk._app.builtin import build_request
    from hermes_sdk.errors import InvalidInputError

    node = _SCHEMAS[operation]
    base = corpus.CASES[operation][0][0]
    bound = {name for rule in node.get("x-rules", ()) for name in rule["fields"]}
    fields = sorted(set(node["properties"]) - _CONTROL - ((_exactly_one(node) | bound) - set(base))
                    - {k for k, v in node["properties"].items()
                       if "x-alias-of" in v or not {"type", "anyOf", "allOf", "enum"} & set(v)})
    if not fields:
        return  # takes no input (discovery): nothing to break
    given_input = draw_input(data, node, base)
    name = data.draw(st.sampled_from(fields), label="broken field")
    wrong = next(v for v in _WRONG if not _accepts_type(node["properties"][name], v))
    with pytest.raises(InvalidInputError) as refused:
        build_request(operation, {**given_input, name: wrong})
    assert refused.value.details["field"] == name, (name, wrong, refused.value.message)


_SCHEMAS = _schemas()
