"""The hot-path shortcuts give exactly what the general code gives (differential tests)."""

from __future__ import annotations

import random

import attrs

from hermes_sdk._core import convert
from hermes_sdk._core.models import StreamEvent, StreamResult
from hermes_sdk.errors import StreamError


def _random_json(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.randrange(-1000, 1000)
    if kind == 3:
        return rng.random() * 100
    if kind == 4:
        return rng.choice(["", "x", " word", "[DONE]", "é✓"])
    if kind == 5:
        return ("t", rng.randrange(3))  # not JSON: takes the general path
    if kind == 6:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {f"k{i}": _random_json(rng, depth + 1) for i in range(rng.randrange(4))}


def test_stream_result_to_json_matches_cattrs() -> None:
    rng = random.Random(7)
    for i in range(300):
        events = [StreamEvent(event=rng.choice([None, "response.output_text.delta"]), id=rng.choice([None, "1"]),
                              data=_random_json(rng), raw_data="raw", terminal=rng.random() < 0.1)
                  for _ in range(rng.randrange(6))]
        result = StreamResult("ep", "chat_stream", 200, events, "text", True, False, "completed",
                              error=StreamError("m") if i % 3 == 0 else None, usage={"u": [1, {"v": 2}]},
                              final={"f": None} if i % 2 else None, event_count=len(events))
        fast = convert.stream_result_to_json(result)
        slow = convert.converter.unstructure(result)
        assert fast == slow and list(fast) == list(slow)
        for a, b in zip(fast["events"], events):  # a copy, as cattrs makes, never the same objects
            assert not isinstance(b.data, (dict, list)) or a["data"] is not b.data


def _decode_reference(raw: str) -> object:
    import json

    if raw == "[DONE]":
        return "[DONE]"
    if not raw.strip():
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def test_decode_event_matches_json_loads() -> None:
    from hermes_sdk._core.streaming import decode_event

    samples = ['{"a": 1}', '{"a": 1} ', '{"a": 1}\n', '{"a": 1} x', '{"a": 1}{}', '{', '{"a": NaN}', ' {"a": 1}',
               '[1, 2]', '"s"', '1', 'text', '{"a": [1, {"b": null}]}', '{"a": "\\ud800"}', '{}', '{"a":1}\t',
               '[DONE]', '', '  ', '{"x": 1e400}', '{"d": {"a": 1, "a": 2}}']
    for raw in samples:
        got = decode_event("message", None, raw).data
        want = _decode_reference(raw)
        assert repr(got) == repr(want), raw


def test_action_result_to_json_matches_cattrs() -> None:
    from hermes_sdk._core.models import ActionResult

    rng = random.Random(11)
    for i in range(300):
        result = ActionResult(action_id=f"a{i}", capability_id="cap:hermes_agent:ep:chat",
                              status=rng.choice(["completed", "failed"]), output=_random_json(rng),
                              error=StreamError("m") if i % 5 == 0 else None, replayed=i % 2 == 0,
                              idempotency_key=rng.choice([None, "k"]), session_id=rng.choice([None, "s"]),
                              http_status=rng.choice([None, 200]),
                              approval=rng.choice([None, {"decision": {"by": ["x", {"y": 1}]}}]),
                              recorded_at=rng.choice([None, 1.5]))
        fast = convert.action_result_to_json(result)
        slow = convert.converter.unstructure(result)
        assert fast == slow and list(fast) == list(slow)
        for got, given in ((fast["output"], result.output), (fast["approval"], result.approval)):
            assert not isinstance(given, (dict, list)) or got is not given  # a copy: the record is its own


def _chat_reply(rng: random.Random) -> object:
    """A chat completion as Hermes sends it, with any field now and then of another JSON type."""
    def some(good: object) -> object:
        return good if rng.random() < 0.8 else _random_json(rng)

    def message() -> object:
        out = {"role": some("assistant"), "content": some(rng.choice(["hi", None, [{"type": "text", "text": "a"}]]))}
        if rng.random() < 0.4:
            out["tool_calls"] = some(rng.choice([None, [], [{"id": "c", "function": {"name": "f"}}], [{"a": 1}, {}]]))
        for name in ("role", "content"):
            if rng.random() < 0.05:
                del out[name]
        return out if rng.random() < 0.95 else _random_json(rng)

    def choice(index: int) -> object:
        out = {"index": some(rng.choice([index, "1", 2.7, True])), "message": message(),
               "finish_reason": some(rng.choice(["stop", "length", None]))}
        for name in ("index", "message", "finish_reason"):
            if rng.random() < 0.05:
                del out[name]
        return out if rng.random() < 0.95 else _random_json(rng)

    reply = {"id": "chatcmpl-1", "object": "chat.completion", "model": some("hermes-agent"),
             "created": some(rng.choice([1700000000, "12", 3.5])),
             "choices": [choice(i) for i in range(rng.randrange(3))],
             "usage": some({"prompt_tokens": 1}), "hermes": some(rng.choice([None, {"state": "partial"}])),
             "extra": _random_json(rng)}
    for name in ("model", "created", "usage", "hermes"):
        if rng.random() < 0.1:
            del reply[name]
    return reply


def _chat_by_cattrs(obj: dict, ctx: object) -> object:
    # What chat_completion was before it read by hand: the reply handed to the cattrs converter.
    from hermes_sdk._families.chat.types import ChatCompletion

    return convert.converter.structure(
        {"id": obj.get("id", ""), "model": obj.get("model"), "created": obj.get("created"),
         "choices": obj.get("choices") or [], "usage": obj.get("usage"), "hermes": obj.get("hermes"),
         "session_id": ctx.session_id, "raw": dict(obj), "action_id": ctx.action_id,  # type: ignore[attr-defined]
         "replayed": ctx.replayed, "headers": ctx.headers},  # type: ignore[attr-defined]
        ChatCompletion)


def test_chat_completion_reads_as_cattrs_does() -> None:
    from hermes_sdk._families.chat.types import chat_completion
    from hermes_sdk.errors import InvalidResponseError

    rng = random.Random(13)
    ctx = convert.DecodeContext("chat", session_id="s1", action_id="a1", replayed=True, headers={"X": "1"})
    read = failed = 0
    for _ in range(3000):
        reply = _chat_reply(rng)
        try:
            want = _chat_by_cattrs(reply, ctx)
        except Exception:
            want = None
        try:
            got = chat_completion(reply, ctx)
        except InvalidResponseError:
            got = None
        assert (got is None) == (want is None), reply
        if got is None:
            failed += 1
            continue
        read += 1
        assert got == want and repr(got) == repr(want), reply
        for a, b in ((got, want),) + tuple(zip(got.choices, want.choices)):  # field types too: 1 is not 1.0
            types = [[type(v) for v in attrs.astuple(x, recurse=False)] for x in (a, b)]
            assert types[0] == types[1]
        assert (got.action_id, got.replayed, got.headers) == (want.action_id, want.replayed, want.headers)
        assert got.raw == reply and got.raw is not reply
    assert read > 1000 and failed > 300  # both kinds of reply were exercised
