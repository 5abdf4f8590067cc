"""A golden corpus of inputs for every built-in operation, and what each one gives.

Run ``python tests/core/golden/input_corpus.py`` to (re)record ``input_corpus.json`` beside this file;
``tests/core/test_input_schema.py`` replays the same cases and compares. A case is a base input of an
operation with one field set to one of :data:`VALUES` (wrong and right types, sizes, blanks) or
removed; its outcome is the refusal (error class, ``details``, message) or the request (method, path,
headers, body; a body over 300 bytes as its length and SHA-256). Cases are named, not stored: the
tables below rebuild them, so the file holds outcomes only.

Recorded first at 0991d46, before the input schemas (issue 40), so the schemas are proved to refuse
and map exactly as the hand-written checks did.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "input_corpus.json"

MSG = {"role": "user", "content": "hi"}
#: Values every field is set to, in turn: index -> value (the index names the case).
VALUES: tuple[object, ...] = (
    None, "", " ", "x", "a" * 101, "a" * 201, "a" * 257, "a" * 513, "a" * 5001, "a" * 100_001, "   n   ",
    0, 1, -1, 2, 201, 501, 2 ** 53 + 1, True, False, 1.5, float("nan"), float("inf"),
    [], ["s"], [""], [" "], ["a" * 257], [1], ["s"] * 257, {}, {"a": 1},
    MSG, [MSG], [{"role": "assistant", "content": "hi"}], [{"role": "user", "content": " "}], ["hi"],
    [MSG, "hi"], [{"role": "system", "content": "s"}], [{"role": "user"}], [{"content": "hi"}],
    [{"role": "user", "content": 5}], [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
    [{"type": "input_text", "text": "hi"}], [{"type": "image_url"}],
    {"type": "function"}, "auto", ["auto"], [{"type": "function"}],
    "0123456789ab", "0123456789AB", "once", "always", "deny", "latest", "oldest", "12", "x\ny", "..", "a/b",
    "C:x", "\x00", "\ud800",
)

_RESUME = {"source_action_id": "act_1", "choice": "once"}

#: operation -> (base inputs, fields each base gets set to every value or removed). A dotted field
#: (``body.input``, ``resume.choice``) is set inside the base's object.
_CHAT_FIELDS = ("prompt", "query", "messages", "model", "temperature", "top_p", "max_tokens", "stop", "tools",
                "tool_choice", "response_format", "metadata", "user", "session_id", "session_key", "max_events",
                "stream", "seed", "n", "bogus", "_aip")
_RESPONSES_FIELDS = ("body", "body.input", "body.conversation", "body.previous_response_id", "body.instructions",
                     "body.model", "body.truncation", "body.conversation_history", "body.store", "body.temperature",
                     "body.max_output_tokens", "body.tools", "body.bogus", "session_key", "max_events", "bogus",
                     "_aip")
_RESPONSES_FLAT = ("input", "conversation", "previous_response_id", "store", "model", "session_key", "max_events",
                   "bogus")
_STORED = ("response_id", "session_key", "body", "body.response_id", "bogus", "_aip")
_NONE = ("bogus", "_aip", "session_key")
_RUN = ("run_id", "last_event_id", "bogus", "_aip")
_JOB_FIELDS = ("name", "schedule", "prompt", "deliver", "skills", "skill", "repeat", "enabled", "include_disabled",
               "bogus", "job_id", "_aip")
_OPERATOR = ("objective", "context", "candidate_capabilities", "constraints", "resume", "bogus", "_aip")
_RESUME_FIELDS = ("resume", "resume.source_action_id", "resume.choice", "resume.resolve_all", "resume.bogus",
                  "bogus", "_aip")
CASES: dict[str, tuple[tuple[dict[str, Any], ...], tuple[str, ...]]] = {
    "chat": (({"prompt": "hi"}, {"messages": [MSG]}), _CHAT_FIELDS),
    "chat_stream": (({"query": "hi"},), _CHAT_FIELDS),
    "responses": (({"body": {"input": "hi"}},), _RESPONSES_FIELDS),
    "responses#flat": (({"input": "hi"},), _RESPONSES_FLAT),
    "responses_stream": (({"body": {"input": "hi"}},), _RESPONSES_FIELDS),
    "response_get": (({"response_id": "resp_1"},), _STORED),
    "response_delete": (({"response_id": "resp_1"},), _STORED),
    "run_start": (({"input": "hi"},), ("input", "instructions", "session_id", "session_key", "conversation_history",
                                       "previous_response_id", "model", "bogus", "_aip")),
    "run_get": (({"run_id": "run_1"},), _RUN),
    "run_events": (({"run_id": "run_1"},), _RUN),
    "run_stop": (({"run_id": "run_1"},), _RUN),
    "run_approval": (({"run_id": "run_1", "choice": "once"},), ("run_id", "choice", "all", "request_id", "bogus",
                                                                "_aip")),
    "run_steer": (({"run_id": "run_1", "input": "go on"},), ("run_id", "input", "bogus", "_aip")),
    "health": (({},), _NONE),
    "models": (({},), _NONE),
    "server_capabilities": (({},), _NONE),
    "toolsets": (({},), _NONE),
    "health_detailed": (({},), _NONE),
    "skills": (({},), _NONE),
    "model_options": (({},), _NONE),
    "sessions_list": (({},), ("limit", "offset", "source", "include_children", "bogus", "_aip")),
    "session_create": (({}, {"id": "s1", "title": "t"}), ("id", "session_id", "title", "system_prompt", "model",
                                                          "bogus", "_aip")),
    "session_get": (({"session_id": "s1"},), ("session_id", "bogus", "_aip")),
    "session_delete": (({"session_id": "s1"},), ("session_id", "bogus", "_aip")),
    "session_messages": (({"session_id": "s1"},), ("session_id", "limit", "offset", "order", "bogus")),
    "session_patch": (({"session_id": "s1", "title": "t"},), ("session_id", "title", "end_reason", "bogus")),
    "session_fork": (({"session_id": "s1"},), ("session_id", "id", "title", "bogus")),
    "session_chat": (({"session_id": "s1", "message": "hi"},),
                     ("session_id", "message", "input", "system_message", "instructions", "session_key",
                      "max_events", "bogus")),
    "session_chat_stream": (({"session_id": "s1", "message": "hi"},),
                            ("session_id", "message", "input", "system_message", "instructions", "session_key",
                             "max_events", "bogus")),
    "jobs_list": (({},), _JOB_FIELDS),
    "job_create": (({"name": "n", "schedule": "every 1h"},), _JOB_FIELDS),
    "job_get": (({"job_id": "0123456789ab"},), _JOB_FIELDS),
    "job_update": (({"job_id": "0123456789ab", "name": "n"},), _JOB_FIELDS),
    "job_delete": (({"job_id": "0123456789ab"},), ("job_id", "bogus")),
    "job_pause": (({"job_id": "0123456789ab"},), ("job_id", "bogus")),
    "job_resume": (({"job_id": "0123456789ab"},), ("job_id", "bogus")),
    "job_run": (({"job_id": "0123456789ab"},), ("job_id", "bogus")),
    "operator": (({"objective": "do it"}, {"resume": dict(_RESUME)}), _OPERATOR + _RESUME_FIELDS[1:5]),
    # The operator's two internal specs (not registered: its lifecycle calls them).
    "operator#start": (({"objective": "do it", "_aip": {"action_id": "act_1"}},), _OPERATOR),
    "operator#resume": (({"resume": dict(_RESUME), "_aip": {"run_id": "run_1"}},), _RESUME_FIELDS),
}


def _set(data: dict[str, Any], field: str, value: object, remove: bool) -> dict[str, Any]:
    out = copy.deepcopy(data)
    target = out
    parts = field.split(".")
    for part in parts[:-1]:
        inner = target.get(part)
        if not isinstance(inner, dict):
            return out if remove else {**out, part: {parts[-1]: value}}
        target = inner
    if remove:
        target.pop(parts[-1], None)
    else:
        target[parts[-1]] = value
    return out


def cases() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every case: (operation key, case name, input)."""
    for op, (bases, fields) in CASES.items():
        for b, base in enumerate(bases):
            yield op, f"{b}", copy.deepcopy(base)
            for field in fields:
                for i, value in enumerate(VALUES):
                    yield op, f"{b}:{field}={i}", _set(base, field, value, False)
                yield op, f"{b}:-{field}", _set(base, field, None, True)


def _builder(op: str) -> Callable[[dict[str, Any]], Any]:
    from hermes_sdk._app.builtin import build_request

    if op == "operator#start" or op == "operator#resume":
        from hermes_sdk._core.operations.common import split_key
        from hermes_sdk._families.operator.operations import OPERATOR_RESUME, OPERATOR_START

        spec = OPERATOR_START if op.endswith("start") else OPERATOR_RESUME
        return lambda data: spec.request(split_key(data, None)[1])
    name = op.split("#")[0]
    return lambda data: build_request(name, data)


def _json_safe(value: object) -> object:
    return json.loads(json.dumps(value, default=repr, sort_keys=True, ensure_ascii=True))


def outcome(op: str, data: dict[str, Any]) -> list[object]:
    """What building ``data`` for ``op`` gives: ["refused", class, details, message] or ["request", ...]."""
    from hermes_sdk.errors import HermesError

    try:
        request = _builder(op)(data)
    except HermesError as exc:
        return ["refused", type(exc).__name__, _json_safe(exc.details), exc.message]
    except Exception as exc:  # not a typed refusal: recorded as is, so a change shows
        return ["raised", type(exc).__name__, str(exc)[:300]]
    body = request.body
    if body is not None and len(body) > 300:
        shown: object = f"{len(body)} bytes sha256:{hashlib.sha256(body).hexdigest()}"
    else:
        shown = None if body is None else body.decode("utf-8")
    return ["request", request.method, request.path, dict(sorted(request.headers.items())), shown,
            request.max_events, request.stream]


def record() -> dict[str, dict[str, list[object]]]:
    """Every case's outcome, by operation key and case name."""
    warnings.simplefilter("ignore")
    out: dict[str, dict[str, list[object]]] = {}
    for op, name, data in cases():
        out.setdefault(op, {})[name] = outcome(op, data)
    return out


def pack(found: dict[str, dict[str, list[object]]]) -> dict[str, object]:
    """The file's form: the distinct outcomes once, and per operation each case's outcome index in
    :func:`cases` order (with the case names' count, so a changed table is noticed)."""
    index: dict[str, int] = {}
    table: list[list[object]] = []
    ops: dict[str, list[int]] = {}
    for op, by_name in found.items():
        for result in by_name.values():
            key = json.dumps(result, sort_keys=True)
            if key not in index:
                index[key] = len(table)
                table.append(result)
            ops.setdefault(op, []).append(index[key])
    return {"outcomes": table, "cases": ops}


def unpack(packed: dict[str, Any]) -> dict[str, dict[str, list[object]]]:
    """The recorded outcomes by operation key and case name (the names rebuilt from the tables)."""
    names: dict[str, list[str]] = {}
    for op, name, _ in cases():
        names.setdefault(op, []).append(name)
    out: dict[str, dict[str, list[object]]] = {}
    for op, indexes in packed["cases"].items():
        if len(indexes) != len(names.get(op, ())):
            raise ValueError(f"{op}: the corpus has {len(indexes)} cases, the tables {len(names.get(op, ()))}")
        out[op] = {name: packed["outcomes"][i] for name, i in zip(names[op], indexes)}
    return out


def load() -> dict[str, dict[str, list[object]]]:
    """The committed corpus."""
    return unpack(json.loads(CORPUS.read_text(encoding="utf-8")))


def main() -> int:
    found = record()
    packed = pack(found)
    CORPUS.write_text(json.dumps(packed, separators=(",", ":"), ensure_ascii=True).replace("],[", "],\n[") + "\n",
                      encoding="utf-8")
    total = sum(len(v) for v in found.values())
    refused = sum(1 for v in found.values() for o in v.values() if o[0] == "refused")
    print(f"{total} cases over {len(found)} operations: {refused} refused, {total - refused} built, "
          f"{len(packed['outcomes'])} distinct outcomes -> {CORPUS.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
