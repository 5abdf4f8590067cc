"""Observers run in pluggy's order, through pluggy; one word per concept, with the old names deprecated."""

from __future__ import annotations

import subprocess
import sys
import warnings
from typing import Any

import pytest

from hermes_sdk import hookimpl
from hermes_sdk._core import _plugin_manager
from hermes_sdk.testing import HermesEmulator

ORDER: list[str] = []


class First:
    name = "first"

    @hookimpl(tryfirst=True)
    def hermes_call_result(self, call: Any, result: Any) -> None:
        ORDER.append("first")

    @hookimpl(tryfirst=True)
    def hermes_stream_event(self, call: Any, event: Any) -> None:
        ORDER.append("first-event")


class Plain:
    name = "plain"

    @hookimpl
    def hermes_call_result(self, call: Any, result: Any) -> None:
        ORDER.append("plain")
        raise RuntimeError("an observer's bug")  # logged; the next observer still runs

    @hookimpl
    def hermes_stream_event(self, call: Any, event: Any) -> None:
        ORDER.append("plain-event")


class Last:
    name = "last"

    @hookimpl(trylast=True)
    def hermes_call_result(self, call: Any, result: Any) -> None:
        ORDER.append("last")

    @hookimpl(trylast=True)
    def hermes_stream_event(self, call: Any, event: Any) -> None:
        ORDER.append("last-event")


def test_observers_run_in_pluggys_order_through_pluggy(caplog: pytest.LogCaptureFixture) -> None:
    ORDER.clear()
    with HermesEmulator() as emulator:
        # Registered last-first: pluggy's order comes from tryfirst/trylast, then the newest first.
        client = emulator.client(plugins=[Last(), Plain(), First()], load_entrypoints=False)
        traced: list[str] = []
        client.plugin_manager.add_hookcall_monitoring(lambda name, impls, kwargs: traced.append(name),
                                                      lambda outcome, name, impls, kwargs: None)
        client.chat(prompt="hi")
        assert ORDER == ["first", "plain", "last"]
        ORDER.clear()
        client.chat_stream(prompt="hi").result()
        events = [o for o in ORDER if o.endswith("-event")]
        assert events[:3] == ["first-event", "plain-event", "last-event"]
        assert ORDER[-3:] == ["first", "plain", "last"]
        client.close()
    assert "hermes_call_result" in traced and "hermes_stream_event" in traced  # pluggy's monitoring sees them
    assert any("'plain'" in r.getMessage() and "hermes_call_result" in r.getMessage() and "RuntimeError" in
               r.getMessage() for r in caplog.records)


class OldNames:
    """A plugin written against the former hook and argument names."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl(wrapper=True)
    def hermes_invocation(self, invocation: Any) -> Any:
        self.seen.append(f"invocation:{invocation.operation}")
        return (yield)

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        self.seen.append(f"attempt-of:{attempt.invocation.operation}")
        return (yield)

    @hookimpl
    def hermes_stream_event(self, invocation: Any, event: Any) -> None:
        self.seen.append(f"event:{invocation.operation}")

    @hookimpl
    def hermes_action_result(self, invocation: Any, result: Any) -> None:
        self.seen.append(f"result:{result['status']}")


def test_the_former_hook_names_still_work_and_warn() -> None:
    plugin = OldNames()
    with HermesEmulator() as emulator:
        with pytest.warns(DeprecationWarning) as caught:
            client = emulator.client(plugins=[plugin], load_entrypoints=False)
        messages = " ".join(str(w.message) for w in caught)
        assert "hermes_invocation(invocation) is deprecated; implement hermes_call(call)" in messages
        assert "hermes_action_result(invocation, result) is deprecated; implement hermes_call_result(call, result)" \
            in messages
        assert "hermes_stream_event(invocation, event) is deprecated; implement hermes_stream_event(call, event)" \
            in messages
        with pytest.warns(DeprecationWarning, match="Attempt.invocation is deprecated"):
            client.chat_stream(prompt="hi").result()
        client.close()
    assert plugin.seen[:2] == ["invocation:chat_stream", "attempt-of:chat_stream"]
    assert "event:chat_stream" in plugin.seen and plugin.seen[-1] == "result:completed"
    described = {d["name"]: d["hooks"] for d in _plugin_manager.describe(client.plugin_manager)}
    assert described["OldNames"] == ["hermes_call", "hermes_call_result", "hermes_http_attempt",
                                     "hermes_stream_event"]


def test_the_new_names_do_not_warn() -> None:
    class NewNames:
        @hookimpl(wrapper=True)
        def hermes_call(self, call: Any) -> Any:
            return (yield)

        @hookimpl
        def hermes_call_result(self, call: Any, result: Any) -> None:
            pass

    with HermesEmulator() as emulator, warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        client = emulator.client(plugins=[NewNames()], load_entrypoints=False)
        client.chat(prompt="hi")
        client.close()


def test_the_old_module_paths_import_with_a_warning() -> None:
    for code in ("import hermes_sdk.plugins", "from hermes_sdk.plugin import Invocation"):
        failed = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code],
                                capture_output=True, text=True, timeout=60)
        assert failed.returncode != 0 and "DeprecationWarning" in failed.stderr, code
        ok = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-c", code + "; print('ok')"],
                            capture_output=True, text=True, timeout=60, check=True)
        assert ok.stdout.strip() == "ok"
    clean = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c",
                            "import hermes_sdk, hermes_sdk.plugin, hermes_sdk.hookspecs; hermes_sdk.HermesClient"],
                           capture_output=True, text=True, timeout=60)
    assert clean.returncode == 0, clean.stderr


def test_a_hook_and_its_former_name_together_are_refused() -> None:
    from hermes_sdk import PluginError

    class Both:
        @hookimpl
        def hermes_call_result(self, call: Any, result: Any) -> None:
            pass

        @hookimpl
        def hermes_action_result(self, invocation: Any, result: Any) -> None:
            pass

    with HermesEmulator() as emulator, pytest.warns(DeprecationWarning), pytest.raises(PluginError) as info:
        emulator.client(plugins=[Both()], load_entrypoints=False)
    assert "twice" in info.value.message


def test_an_old_style_hookwrapper_under_the_former_name_still_wraps_the_call() -> None:
    seen: list[Any] = []

    class OldStyle:
        @hookimpl(hookwrapper=True)
        def hermes_invocation(self, invocation: Any) -> Any:
            outcome = yield
            seen.append((invocation.operation, outcome.get_result().status))

    with HermesEmulator() as emulator:
        with pytest.warns(DeprecationWarning):
            client = emulator.client(plugins=[OldStyle()], load_entrypoints=False)
        with client:
            client.chat(prompt="hi")
    assert seen == [("chat", "completed")]
