"""The hook system: names, call style, wrappers, observers, built-ins, loading switches, failures."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from types import SimpleNamespace
from typing import Any

import pluggy
import pytest

from hermes_sdk import HermesError, PluginError, hookimpl, hookspecs
from hermes_sdk._core import _plugin_manager as plugins_mod

HOOKS = sorted(n for n in dir(hookspecs) if n.startswith("hermes_"))
FIRST_RESULT = {"hermes_idempotency_store", "hermes_approval_provider", "hermes_call", "hermes_http_attempt"}


def test_every_hook_has_the_prefix_and_a_docstring() -> None:
    assert HOOKS == ["hermes_approval_provider", "hermes_call", "hermes_call_result", "hermes_families",
                     "hermes_http_attempt", "hermes_idempotency_store", "hermes_redaction_filters",
                     "hermes_stream_event"]
    for name in HOOKS:
        assert getattr(hookspecs, name).__doc__, name


def test_provide_one_thing_hooks_are_first_result() -> None:
    pm = plugins_mod.build_manager(load_entrypoints=False)
    for name in HOOKS:
        opts = getattr(pm.hook, name).spec.opts
        assert opts["firstresult"] is (name in FIRST_RESULT), name


def test_hooks_are_called_by_keyword_only() -> None:
    pm = plugins_mod.build_manager(load_entrypoints=False)
    with pytest.raises(TypeError):
        pm.hook.hermes_idempotency_store("memory:", None)  # positional calls are refused by pluggy
    assert pm.hook.hermes_idempotency_store(url="memory:", client=None) is not None


def test_builtins_are_plugins_and_can_be_blocked(monkeypatch: pytest.MonkeyPatch) -> None:
    pm = plugins_mod.build_manager(load_entrypoints=False)
    assert {"hermes_sdk.core", "hermes_sdk.logging"} <= {n for n, _ in pm.list_name_plugin()}
    monkeypatch.setenv("HERMES_SDK_DISABLE_PLUGINS", "hermes_sdk.logging")
    pm = plugins_mod.build_manager(load_entrypoints=False)
    assert pm.get_plugin("hermes_sdk.logging") is None
    assert pm.get_plugin("hermes_sdk.core") is not None


def test_wrappers_surround_each_invocation_and_each_attempt(make_client: Any, tracer: Any) -> None:
    client = make_client(plugins=[tracer])
    assert client.chat(prompt="hello").text == "ECHO: hello"
    assert tracer.order == ["invocation:start", "attempt:start", "attempt:end", "invocation:end"]
    (inv,) = tracer.invocations
    assert inv["capability_id"] == "cap:hermes_agent:default:chat" and inv["operation"] == "chat"
    assert inv["http_status"] == 200 and inv["attempts"] == 1
    assert tracer.attempts == [{"method": "POST", "path": "/v1/chat/completions", "attempt": 1}]
    (res,) = tracer.results
    assert res["result"]["status"] == "completed"


def test_each_retry_is_its_own_attempt(make_client: Any, tracer: Any, hermes_emulator: Any) -> None:
    client = make_client(plugins=[tracer])
    created = client.responses(input="keep me", store=True)
    tracer.order.clear()
    tracer.attempts.clear()
    hermes_emulator.drop_connection("before_response", path=f"/v1/responses/{created.id}", count=1)
    assert client.response_get(created.id).id == created.id
    assert [a["attempt"] for a in tracer.attempts] == [1, 2]
    assert tracer.order == ["invocation:start", "attempt:start", "attempt:end", "attempt:start", "attempt:end",
                            "invocation:end"]


def test_stream_events_and_settled_results_are_observed(make_client: Any, tracer: Any) -> None:
    client = make_client(plugins=[tracer])
    with client.chat_stream(prompt="one two three four") as stream:
        # The invocation hook returned when headers arrived; the stream settles later.
        assert tracer.order[-1] == "invocation:end" and not tracer.settled
        assert stream.result().text == "ECHO: one two three four"
    assert tracer.events and all(set(e["event"]) == {"event", "terminal", "data"} for e in tracer.events)
    assert tracer.events[-1]["event"]["terminal"] is True
    assert len(tracer.settled) == 1 and tracer.settled[0]["status"] == "completed"
    assert tracer.results[-1]["result"]["status"] == "completed"


def test_a_failing_observer_is_logged_and_the_call_goes_on(make_client: Any,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        name = "broken-observer"

        @hookimpl
        def hermes_call_result(self, call: Any, result: Any) -> None:
            raise RuntimeError("observer bug")

        @hookimpl
        def hermes_stream_event(self, call: Any, event: Any) -> None:
            raise ValueError("observer bug")

    client = make_client(plugins=[Broken()])
    with caplog.at_level(logging.WARNING, logger="hermes_sdk"):
        assert client.chat(prompt="hi").text == "ECHO: hi"
        assert client.chat_stream(prompt="hi there").result().status == "completed"
    messages = [r.getMessage() for r in caplog.records]
    assert any("'broken-observer'" in m and "hermes_call_result" in m and "RuntimeError" in m for m in messages)
    assert any("'broken-observer'" in m and "hermes_stream_event" in m for m in messages)


def test_a_failing_settle_callback_is_logged(make_client: Any, caplog: pytest.LogCaptureFixture) -> None:
    class Settler:
        name = "settler"

        @hookimpl(wrapper=True)
        def hermes_call(self, call: Any) -> Any:
            call.on_stream_settled(lambda result: 1 / 0)
            return (yield)

    client = make_client(plugins=[Settler()])
    with caplog.at_level(logging.WARNING, logger="hermes_sdk"):
        assert client.chat_stream(prompt="x y").result().status == "completed"
    lines = [r.getMessage() for r in caplog.records if "ZeroDivisionError" in r.getMessage()]
    assert lines and "'Settler'" in lines[0] and "hermes_call (stream-settled callback)" in lines[0]


def test_two_instances_of_one_plugin_class_both_register(make_client: Any) -> None:
    seen: list[str] = []

    class Tag:
        def __init__(self, tag: str) -> None:
            self.tag = tag

        @hookimpl(wrapper=True)
        def hermes_call(self, call: Any) -> Any:
            seen.append(self.tag)
            return (yield)

    client = make_client(plugins=[Tag("a"), Tag("b")])
    client.chat(prompt="x")
    assert sorted(seen) == ["a", "b"]
    names = [name for name, _ in client.plugin_manager.list_name_plugin()]
    assert "Tag" in names and "Tag-2" in names


def test_a_failing_pipeline_hook_raises_a_typed_error_naming_the_plugin(make_client: Any,
                                                                        hermes_emulator: Any) -> None:
    class Boom:
        name = "boom-tracer"

        @hookimpl(wrapper=True)
        def hermes_http_attempt(self, attempt: Any) -> Any:
            raise KeyError("tracer bug")
            yield  # pragma: no cover

    client = make_client(plugins=[Boom()])
    with pytest.raises(PluginError) as info:
        client.chat(prompt="never sent", idempotency_key="k-boom")
    assert isinstance(info.value, HermesError)
    assert info.value.code == "hermes_sdk.plugin_failed"
    assert info.value.details["plugin"] == "boom-tracer" and info.value.details["hook"] == "hermes_http_attempt"
    assert info.value.uncertain_outcome is False
    assert hermes_emulator.executions == 0
    # Nothing was sent, so the key is given back and a fixed client can use it.
    assert client.records.get("cap:hermes_agent:default:chat", "k-boom") is None


def test_a_wrapper_failing_after_the_send_keeps_the_record(make_client: Any, hermes_emulator: Any) -> None:
    class LateBoom:
        name = "late-boom"

        @hookimpl(wrapper=True)
        def hermes_call(self, call: Any) -> Any:
            result = yield
            raise RuntimeError("exporter down")
            return result  # pragma: no cover

    client = make_client(plugins=[LateBoom()])
    with pytest.raises(PluginError) as info:
        client.chat(prompt="sent once", idempotency_key="k-late")
    assert info.value.details["plugin"] == "late-boom" and info.value.uncertain_outcome is True
    assert hermes_emulator.executions == 1
    record = client.records.get("cap:hermes_agent:default:chat", "k-late")
    assert record is not None and record.state == "completed"  # never forgotten: no blind re-execution
    with pytest.raises(PluginError):  # the recorded failure is replayed, the model is not run again
        client.chat(prompt="sent once", idempotency_key="k-late")
    assert hermes_emulator.executions == 1


def test_a_misspelt_hook_fails_at_construction(make_client: Any) -> None:
    class Typo:
        name = "typo-plugin"

        @hookimpl
        def hermes_call_results(self, call: Any, result: Any) -> None:
            pass

    with pytest.raises(PluginError) as info:
        make_client(plugins=[Typo()])
    assert info.value.details["plugin"] == "typo-plugin"
    assert "hermes_call_results" in str(info.value)


def test_an_unmarked_hook_fails_at_construction(make_client: Any) -> None:
    class Unmarked:
        name = "unmarked-plugin"

        def hermes_call_result(self, call: Any, result: Any) -> None:
            pass

    with pytest.raises(PluginError, match="unmarked-plugin") as info:
        make_client(plugins=[Unmarked()])
    assert "hookimpl" in str(info.value)


def test_a_bad_hook_signature_fails_at_construction(make_client: Any) -> None:
    class BadArgs:
        name = "bad-args"

        @hookimpl
        def hermes_call_result(self, call: Any, outcome: Any) -> None:
            pass

    with pytest.raises(PluginError, match="bad-args"):
        make_client(plugins=[BadArgs()])


def test_an_object_that_implements_no_hook_is_not_a_plugin(make_client: Any) -> None:
    class Forgotten:  # the marks were left off: nothing named hermes_* at all
        name = "forgotten"

        def call_result(self, call: Any, result: Any) -> None:
            pass

    for given, name in ((Forgotten(), "forgotten"), ("hermes_sdk_redis", "str"), (object(), "object")):
        with pytest.raises(PluginError, match="implements no hook") as info:
            make_client(plugins=[given])
        assert info.value.details == {"plugin": name}


def test_what_a_construction_hook_returns_is_checked_when_the_client_is_built(make_client: Any) -> None:
    class Answers:
        name = "answers"

        def __init__(self, hook: str, value: Any) -> None:
            self.hook, self.value = hook, value

        @hookimpl
        def hermes_approval_provider(self, client: Any) -> Any:
            return self.value if self.hook == "approval" else None

        @hookimpl
        def hermes_redaction_filters(self, client: Any) -> Any:
            return self.value if self.hook == "filters" else None

        @hookimpl
        def hermes_idempotency_store(self, url: str, client: Any) -> Any:
            return self.value if self.hook == "store" and url.startswith("odd:") else None

    cases = (("approval", "approve everything", {}), ("filters", ["not a filter"], {}),
             ("store", object(), {"idempotency_store": "odd://x"}))
    for hook, value, extra in cases:
        with pytest.raises(PluginError) as info:
            make_client(plugins=[Answers(hook, value)], **extra)
        assert info.value.details["hook"].startswith("hermes_"), (hook, info.value.details)
    # what the hooks may answer still works: a callable or request_approval object, a filter or a list of them
    client = make_client(plugins=[Answers("approval", lambda request: None)])
    assert client._executor.runtime.approval_provider is not None
    assert make_client(plugins=[Answers("filters", lambda key, text: text)]).redactor.filters


def test_module_plugins_work(make_client: Any) -> None:
    seen: list[str] = []

    @hookimpl
    def hermes_call_result(call: Any, result: Any) -> None:
        seen.append(result["status"])

    module = SimpleNamespace(__name__="module_plugin", hermes_call_result=hermes_call_result)
    client = make_client(plugins=[module])
    client.chat(prompt="hi")
    assert seen == ["completed"]


def _fake_entry_point(name: str, obj: Any) -> Any:
    return SimpleNamespace(name=name, value=f"fake:{name}", load=lambda: obj, dist=None)


@pytest.fixture
def fake_entry_points(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    class One:
        @hookimpl
        def hermes_call_result(self, call: Any, result: Any) -> None:
            pass

    class Two:
        @hookimpl
        def hermes_redaction_filters(self, client: Any) -> Any:
            return [lambda key, text: text]

    eps = [_fake_entry_point("ep-one", One), _fake_entry_point("ep-two", Two())]
    monkeypatch.setattr(plugins_mod, "_entry_points", lambda: tuple((ep, None) for ep in eps))
    monkeypatch.setattr(plugins_mod, "_loaded", {})
    monkeypatch.delenv("HERMES_SDK_PLUGINS", raising=False)
    monkeypatch.delenv("HERMES_SDK_DISABLE_PLUGINS", raising=False)
    return eps


def _names(pm: pluggy.PluginManager) -> set[str]:
    return {n for n, p in pm.list_name_plugin() if p is not None}


def test_entry_points_load_and_env_vars_limit_them(fake_entry_points: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert {"ep-one", "ep-two"} <= _names(plugins_mod.build_manager())
    assert not {"ep-one", "ep-two"} & _names(plugins_mod.build_manager(load_entrypoints=False))
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "ep-two")
    assert "ep-one" not in _names(plugins_mod.build_manager()) and "ep-two" in _names(plugins_mod.build_manager())
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    assert not {"ep-one", "ep-two"} & _names(plugins_mod.build_manager())
    monkeypatch.delenv("HERMES_SDK_PLUGINS")
    monkeypatch.setenv("HERMES_SDK_DISABLE_PLUGINS", "ep-one, hermes_sdk.logging")
    names = _names(plugins_mod.build_manager())
    assert "ep-one" not in names and "hermes_sdk.logging" not in names and "ep-two" in names


def test_a_broken_entry_point_names_itself_and_can_be_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    def explode() -> Any:
        raise ImportError("missing dependency")

    ep = SimpleNamespace(name="broken-ep", value="x:y", load=explode, dist=None)
    monkeypatch.setattr(plugins_mod, "_entry_points", lambda: ((ep, None),))
    monkeypatch.setattr(plugins_mod, "_loaded", {})
    monkeypatch.delenv("HERMES_SDK_PLUGINS", raising=False)
    with pytest.raises(PluginError, match="broken-ep"):
        plugins_mod.build_manager()
    monkeypatch.setenv("HERMES_SDK_DISABLE_PLUGINS", "broken-ep")
    plugins_mod.build_manager()  # the escape hatch


def test_an_entry_point_to_an_object_without_hooks_names_itself_and_can_be_disabled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class Unmarked:  # the entry point names the wrong object, or its marks were left off
        def call_result(self, call: Any, result: Any) -> None:
            pass

    monkeypatch.setattr(plugins_mod, "_entry_points", lambda: ((_fake_entry_point("bare-ep", Unmarked), None),))
    monkeypatch.setattr(plugins_mod, "_loaded", {})
    monkeypatch.delenv("HERMES_SDK_PLUGINS", raising=False)
    with pytest.raises(PluginError, match="'bare-ep' implements no hook"):
        plugins_mod.build_manager()
    monkeypatch.setenv("HERMES_SDK_DISABLE_PLUGINS", "bare-ep")
    assert "bare-ep" not in _names(plugins_mod.build_manager())


def test_describe_lists_plugins_and_hooks(fake_entry_points: Any) -> None:
    described = plugins_mod.describe(plugins_mod.build_manager())
    by_name = {d["name"]: d for d in described}
    assert by_name["hermes_sdk.core"]["builtin"] is True
    assert "hermes_call" in by_name["hermes_sdk.core"]["hooks"]
    assert by_name["ep-one"] == {"name": "ep-one", "hooks": ["hermes_call_result"], "entry_point": "fake:ep-one",
                                 "builtin": False}
    json.dumps(described)


def test_python_m_hermes_sdk_plugins_prints_json() -> None:
    out = subprocess.run([sys.executable, "-m", "hermes_sdk.plugins"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    names = {d["name"] for d in json.loads(out)}
    assert {"hermes_sdk.core", "hermes_sdk.logging"} <= names
