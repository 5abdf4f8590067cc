"""Decoding: one converter reads every family's results, and decoders take ``(json, DecodeContext)``."""

from __future__ import annotations

import random
import warnings
from typing import Any, Optional

import attrs
import pytest

from hermes_sdk import HermesError, InvalidResponseError
from hermes_sdk._app.builtin import BUILTIN_SPECS
from hermes_sdk._core import convert
from hermes_sdk._families.discovery import types as discovery
from hermes_sdk._families.jobs import types as jobs
from hermes_sdk._families.runs import types as runs
from hermes_sdk._families.sessions import types as sessions
from hermes_sdk.plugin import ClientView, Contract, DecodeContext, Family, OperationSpec, RequestParts, hookimpl
from hermes_sdk.testing import HermesEmulator

_CONTRACT = Contract(operation="health_probe", method="GET", path="/health", risk="low", stability="experimental",
                     requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=True,
                     streaming=False, side_effects=("read",), data={"classification": "internal"},
                     expected_latency_ms=100, timeout_ms=5_000)


def _no_input(operation: str, data: object) -> RequestParts:
    return RequestParts({})


def _family(spec: OperationSpec[object]) -> object:
    class Probe:
        @hookimpl
        def hermes_families(self, client: ClientView) -> tuple[Family[None]]:
            return (Family("probe", (spec,)),)
    return Probe()


def test_a_decoder_receives_a_typed_context(hermes_emulator: HermesEmulator) -> None:
    seen: list[DecodeContext] = []

    def decode(data: object, ctx: DecodeContext) -> object:
        seen.append(ctx)
        return data

    spec: OperationSpec[object] = OperationSpec(_CONTRACT, _no_input, decode=decode)
    with hermes_emulator.client(load_entrypoints=False, plugins=[_family(spec)]) as client:
        result = client.invoke("cap:hermes_agent:default:health_probe", {}, action_id="act_probe")
    assert result.ok and result.output["status"] == "ok"
    (ctx,) = seen
    assert (ctx.operation, ctx.action_id, ctx.replayed) == ("health_probe", "act_probe", False)
    assert ctx.headers["content-type"].startswith("application/json")  # the reply's, case-insensitive
    replayed = spec.typed_from_record({"status": "ok"}, "s1", "act_probe")
    assert replayed == {"status": "ok"} and seen[-1] == DecodeContext("health_probe", "s1", "act_probe", True)


def test_a_positional_decoder_warns_once_when_the_spec_is_built_and_keeps_working(
        hermes_emulator: HermesEmulator) -> None:
    calls: list[tuple[object, ...]] = []

    def legacy(data: object, session_id: Optional[str], action_id: Optional[str] = None,
               replayed: bool = False, headers: object = None) -> object:
        calls.append((session_id, action_id, replayed, headers is not None))
        return data

    with pytest.warns(DeprecationWarning, match="health_probe.*DecodeContext") as caught:
        spec: OperationSpec[object] = OperationSpec(_CONTRACT, _no_input, decode=legacy)
    assert len(caught) == 1 and caught[0].filename == __file__  # it points at the spec's author
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # never again per call, nor when the spec is evolved
        spec = attrs.evolve(spec, public=True)
        with hermes_emulator.client(load_entrypoints=False, plugins=[_family(spec)]) as client:
            for _ in range(2):
                assert client.invoke("cap:hermes_agent:default:health_probe", {}, action_id="act_1").ok
        assert spec.typed_from_record({"status": "ok"}, None, "act_1") == {"status": "ok"}
    # Called as the call path called it before: headers on a live reply, replayed=True on a replay.
    assert calls == [(None, "act_1", False, True), (None, "act_1", False, True), (None, "act_1", True, False)]


def test_a_legacy_from_record_is_adapted_too() -> None:
    with pytest.warns(DeprecationWarning, match="from_record"):
        spec: OperationSpec[object] = OperationSpec(
            _CONTRACT, _no_input, decode=lambda data, ctx: data,
            from_record=lambda output, session_id, action_id, replayed: (output, session_id, action_id, replayed))
    assert spec.typed_from_record("out", "s", "a") == ("out", "s", "a", True)


def test_the_lenient_rules_of_the_hand_decoders_hold() -> None:
    session = sessions.session({"session": {
        "id": "s1", "title": 7, "source": None, "model": "m", "started_at": 3, "ended_at": True, "message_count": True,
        "parent_session_id": ["x"], "last_active": 1.5, "pinned": True, "archived": "yes", "extra": {"kept": 1}}})
    assert (session.title, session.source, session.model) == (None, None, "m")  # a non-str: None
    assert (session.started_at, session.ended_at, session.last_active) == (3.0, None, 1.5)  # numbers, not bools
    assert session.message_count == 0 and session.parent_session_id is None  # a bool is not a count
    assert (session.pinned, session.archived, session.hidden) == (True, None, None)
    assert session.raw["extra"] == {"kept": 1} and session.raw["title"] == 7  # raw: the object as received
    page = sessions.session_page({"data": [{"id": "a"}], "has_more": 1, "limit": "20", "offset": 40})
    assert (page.has_more, page.limit, page.offset, [s.id for s in page]) == (False, 0, 40, ["a"])
    job = jobs.job({"job": {"id": "0123456789ab", "name": None, "schedule": "x", "enabled": None,
                            "skills": ["a", 1, "b"], "repeat": 3}})
    assert (job.name, job.schedule, job.enabled, job.skills, job.repeat) == ("", None, True, ("a", "b"), 3)
    assert jobs.job_deleted({"ok": 1}).deleted is False and jobs.job_deleted({"ok": True}).deleted is True
    toolsets = discovery.toolsets({"data": [{"name": "web", "enabled": 1, "configured": "no"}, "junk"]})
    assert [(t.name, t.enabled, t.configured) for t in toolsets] == [("web", False, None)]
    status = runs.run_status({"run_id": "r", "status": "completed", "usage": [], "runtime": {"s": 1}, "partial": 0})
    assert (status.usage, status.runtime, status.partial) == (None, {"s": 1}, None)
    event = sessions.parse_session_event("message.started", {"message": {"id": "msg_1"}, "seq": True, "ts": 2})
    assert isinstance(event, sessions.SessionMessageStarted)
    assert (event.event, event.message_id, event.seq, event.ts) == ("message.started", "msg_1", None, 2.0)


@pytest.mark.parametrize("decode, data, message", [
    (sessions.session, [], "where a session envelope was expected"),
    (sessions.session, {"session": {"id": 5}}, "the session object has no id"),
    (sessions.session_page, {"data": [1]}, "where a session object was expected"),
    (jobs.jobs, {"jobs": {}}, "a job list without a 'jobs' array"),
    (runs.run_status, {"run_id": "r"}, "the run object has no run_id or status"),
    (runs.run_started, {"run_id": ""}, "the run start reply has no run_id"),
    (discovery.models, "text", "where a models list was expected"),
])
def test_a_malformed_reply_is_invalid_response(decode: convert.Decoder[object], data: object, message: str) -> None:
    with pytest.raises(InvalidResponseError, match=message):
        decode(data, convert.NO_CONTEXT)


def _random_json(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(9 if depth < 3 else 6)
    leaves: list[object] = [None, True, 0, -1, 2.5, "", "x", "run_1"]
    if kind < 5:
        return rng.choice(leaves)
    if kind == 5:
        return [_random_json(rng, depth + 1) for _ in range(rng.randrange(3))]
    keys = ["id", "run_id", "status", "session", "job", "jobs", "data", "session_id", "message", "content", "choices",
            "output", "deleted", "ok", "providers", "usage", "name", "tools", "features", "skills"]
    return {rng.choice(keys): _random_json(rng, depth + 1) for _ in range(rng.randrange(6))}


def test_every_builtin_decoder_answers_any_json_with_a_value_or_a_typed_error() -> None:
    rng = random.Random(24)
    decoders = [spec for spec in BUILTIN_SPECS.values() if spec.decode is not None]
    assert len(decoders) >= 25
    for _ in range(300):
        data = _random_json(rng)
        for spec in decoders:
            assert spec.decode is not None
            try:
                spec.decode(data, DecodeContext(spec.name, "s", "act_1"))
            except HermesError:
                pass  # never cattrs' own, a TypeError or a KeyError


@pytest.mark.parametrize("operation, body", [
    ("session_get", {"object": "hermes.session", "session": {"id": "s1", "title": "t", "message_count": 2}}),
    ("jobs_list", {"jobs": [{"id": "0123456789ab", "name": "n", "schedule": {"kind": "cron"}}]}),
    ("run_start", {"run_id": "run_1", "status": "started"}),
    ("run_get", {"run_id": "run_1", "status": "completed", "output": "done"}),
    ("toolsets", {"object": "list", "data": [{"name": "web", "enabled": True, "tools": ["a"]}]}),
    ("chat", {"id": "c1", "model": "m", "created": 1, "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]}),
])
def test_a_replay_returns_what_the_first_call_returned(operation: str, body: dict[str, object]) -> None:
    spec = BUILTIN_SPECS[operation]
    assert spec.decode is not None
    first = spec.decode(body, DecodeContext(operation, None, "act_1", False, {"X-Request-Id": "r"}))
    again = spec.typed_from_record(body, None, "act_1")
    assert again == first and getattr(again, "replayed", True) is True


def test_the_optional_leaf_hooks_structure_as_cattrs_does() -> None:
    import cattrs

    plain = cattrs.Converter()  # cattrs' own Optional handling, with the SDK's JSON object hook
    plain.register_structure_hook_func(lambda t: t == dict[str, Any], lambda value, _: convert.object_copy(value))
    values: list[object] = [None, "", "x", 0, 1, -2, 2.5, float("inf"), True, False, "12", "1.5", [], {}, {"a": 1},
                            [1], b"b", object()]
    for kind in (Optional[str], Optional[int], Optional[float], Optional[bool], Optional[dict[str, Any]]):
        for value in values:
            outcomes = []
            for converter in (plain, convert.converter):
                try:
                    outcomes.append(("value", converter.structure(value, kind)))
                except Exception as exc:  # the same failure class as cattrs' own
                    outcomes.append(("error", type(exc).__name__))
            assert outcomes[0] == outcomes[1], (kind, value, outcomes)
