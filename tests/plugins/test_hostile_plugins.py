"""A hostile wrapper cannot make the SDK send one idempotency key twice, or one call twice.

Each class of attack gets its plugin; the emulator counts what actually reached it. The SDK decides
whether a request left from its own record, never from what a hook was given or raised.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from hermes_sdk import HermesError, PluginError, TransportError, hookimpl
from hermes_sdk._core import _plugin_manager
from hermes_sdk.plugin import HttpReply
from hermes_sdk.testing import HermesEmulator


class UnsetsExecuted:
    """Tries to tell the SDK the call never left, then fails after it did."""

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        result = yield
        call.executed = False  # read-only: raises AttributeError
        raise RuntimeError("after the send")
        return result


class LiesAboutTheOutcome:
    """Raises a typed error claiming nothing was sent, after the request left."""

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        yield
        raise TransportError("made up", uncertain_outcome=False, details={"sent": False, "started": False})


class RewritesTheCoresError:
    """Edits the SDK's own failure to claim the request never left."""

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        try:
            return (yield)
        except HermesError as exc:
            exc.uncertain_outcome = False
            exc.details.update(sent=False, started=False)
            exc.http_status = None
            raise


class FailsTheAttemptAfterSending:
    """Turns a delivered attempt into a retryable transport failure."""

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        yield
        raise TransportError("made up", uncertain_outcome=False, details={"sent": False})


class ProceedsAgain:
    """Runs the innermost step a second time after its yield (the old public ``proceed``)."""

    def __init__(self, hook: str) -> None:
        self.hook = hook
        self.refusals: list[str] = []

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        result = yield
        if self.hook == "hermes_call":
            try:
                return _plugin_manager._proceed(call)
            except PluginError as exc:
                self.refusals.append(exc.message)
        return result

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        reply = yield
        if self.hook == "hermes_http_attempt":
            try:
                return _plugin_manager._proceed(attempt)
            except PluginError as exc:
                self.refusals.append(exc.message)
        return reply


class MakesUpAReply:
    """Answers the attempt with a reply of its own instead of the SDK's."""

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        yield
        return HttpReply(200, {"Content-Type": "application/json"})


def _posts(emulator: HermesEmulator, path: str = "/v1/chat/completions") -> int:
    return sum(1 for r in emulator.requests_seen if r.method == "POST" and r.path == path)


@pytest.mark.parametrize("plugin", [UnsetsExecuted(), LiesAboutTheOutcome(), FailsTheAttemptAfterSending()],
                         ids=lambda p: type(p).__name__)
def test_one_key_executes_once_whatever_a_wrapper_claims(plugin: Any) -> None:
    with HermesEmulator() as emulator:
        client = emulator.client(plugins=[plugin], load_entrypoints=False)
        with pytest.raises(HermesError) as first:
            client.chat(prompt="hi", idempotency_key="k-once")
        assert first.value.uncertain_outcome is True  # it may have run: the truth, whatever the plugin said
        with pytest.raises(HermesError):  # the recorded failure, replayed: nothing is sent again
            client.chat(prompt="hi", idempotency_key="k-once")
        assert _posts(emulator) == 1 and emulator.executions == 1
        client.close()


def test_a_wrapper_that_edits_the_sdks_own_failure_does_not_free_the_key() -> None:
    with HermesEmulator() as emulator:
        client = emulator.client(plugins=[RewritesTheCoresError()], load_entrypoints=False)
        emulator.drop_connection("before_response")  # Hermes ran the call; the reply never came
        with pytest.raises(TransportError) as first:
            client.chat(prompt="hi", idempotency_key="k-edit")
        assert first.value.uncertain_outcome is True  # as the SDK raised it, not as the plugin rewrote it
        with pytest.raises(HermesError):
            client.chat(prompt="hi", idempotency_key="k-edit")  # the recorded failure, replayed
        assert _posts(emulator) == 1 and emulator.executions == 1
        client.close()


def test_a_wrapper_failing_a_read_after_it_was_sent_is_not_retried() -> None:
    with HermesEmulator() as emulator:
        client = emulator.client(load_entrypoints=False)
        rid = client.responses(input="x", store=True).id
        client.close()
        client = emulator.client(plugins=[FailsTheAttemptAfterSending()], load_entrypoints=False)
        before = len(emulator.requests_seen)
        with pytest.raises(TransportError):
            client.response_get(rid)  # retry-safe: a real transport failure would be retried
        assert len(emulator.requests_seen) - before == 1
        client.close()


@pytest.mark.parametrize("hook", ["hermes_call", "hermes_http_attempt"])
def test_the_innermost_step_runs_once(hook: str) -> None:
    plugin = ProceedsAgain(hook)
    with HermesEmulator() as emulator:
        client = emulator.client(plugins=[plugin], load_entrypoints=False)
        assert client.chat(prompt="hi").text == "ECHO: hi"
        assert _posts(emulator) == 1 and emulator.executions == 1
        client.close()
    assert plugin.refusals == ["the innermost hook step already ran: a call is sent once"]


def test_proceed_is_not_public() -> None:
    assert not hasattr(_plugin_manager, "proceed")
    code = ("import warnings; warnings.simplefilter('ignore'); import hermes_sdk.plugins as p; "
            "print(hasattr(p, 'proceed'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"
    with pytest.raises(PluginError):  # outside its call: refused
        _plugin_manager._proceed(object())


def test_a_made_up_reply_is_refused_and_the_call_stays_uncertain() -> None:
    with HermesEmulator() as emulator:
        client = emulator.client(plugins=[MakesUpAReply()], load_entrypoints=False)
        with pytest.raises(PluginError) as info:
            client.chat(prompt="hi", idempotency_key="k-made-up")
        assert info.value.uncertain_outcome is True and info.value.details["hook"] == "hermes_http_attempt"
        with pytest.raises(HermesError):
            client.chat(prompt="hi", idempotency_key="k-made-up")
        assert _posts(emulator) == 1
        client.close()


def test_a_wrapper_failing_before_the_send_gives_the_key_back() -> None:
    class Refuses:
        @hookimpl(wrapper=True)
        def hermes_call(self, call: Any) -> Any:
            if call.attributes.get("refuse", True):
                raise RuntimeError("policy says no")
            return (yield)

    with HermesEmulator() as emulator:
        client = emulator.client(plugins=[Refuses()], load_entrypoints=False)
        with pytest.raises(PluginError) as info:
            client.chat(prompt="hi", idempotency_key="k-free")
        assert info.value.uncertain_outcome is False and _posts(emulator) == 0
        client.close()
        client = emulator.client(load_entrypoints=False, idempotency_store=client.idempotency_store)
        assert client.chat(prompt="hi", idempotency_key="k-free").text == "ECHO: hi"  # the key was given back
        client.close()
