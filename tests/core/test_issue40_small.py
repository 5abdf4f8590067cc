"""Issue 40's small items: the client's home module, the builders' control fields, one ``Received``."""

from __future__ import annotations

import hermes_sdk
from hermes_sdk._app import builtin
from hermes_sdk.testing import HermesEmulator


def test_the_client_and_the_capability_parser_say_hermes_sdk_is_their_module() -> None:
    assert hermes_sdk.HermesClient.__module__ == "hermes_sdk"
    assert hermes_sdk.parse_capability_id.__module__ == "hermes_sdk"
    assert hermes_sdk.HermesClient.__qualname__ == "HermesClient"


def test_no_builder_lists_the_idempotency_key_it_never_receives() -> None:
    """The key is taken off every input once (split_key) before any builder runs: a builder's control
    fields do not name it (three did, dead entries)."""
    from hermes_sdk._families import _shared
    from hermes_sdk._families.chat import operations as chat
    from hermes_sdk._families.responses import operations as responses

    for module in (_shared, chat, responses):
        assert "idempotency_key" not in module.CONTROL_FIELDS, module.__name__


def test_the_key_still_never_reaches_a_body_or_a_refusal(hermes_emulator: HermesEmulator) -> None:
    for operation, data in (("chat", {"prompt": "hi"}), ("responses", {"input": "hi"}),
                            ("responses", {"body": {"input": "hi"}}), ("job_create", {"name": "n", "schedule": "1h"}),
                            ("session_create", {"title": "t"})):
        with_key = builtin.build_request(operation, {**data, "idempotency_key": "k-1"})
        without = builtin.build_request(operation, data)
        assert with_key.body == without.body and b"k-1" not in (with_key.body or b""), operation
    with hermes_emulator.client(load_entrypoints=False) as client:
        assert client.chat(prompt="hi", idempotency_key="k-chat").text
        (sent,) = [r for r in hermes_emulator.requests_seen if r.path == "/v1/chat/completions"]
        assert sent.header("Idempotency-Key") == "k-chat" and "k-chat" not in sent.raw_body.decode()


def test_one_class_is_named_received() -> None:
    from hermes_sdk._core import exchange
    from hermes_sdk._families.runs import run_answers

    assert exchange.Received.__name__ == "Received"
    assert not hasattr(run_answers, "Received") and run_answers.RunQueue.__name__ == "RunQueue"


FIRST_CHAT = """
import sys
from hermes_sdk import HermesClient
import hermes_sdk.plugin  # the family kit: exported, but what a chat does not use is not loaded
with HermesClient(sys.argv[1], sys.argv[2], load_entrypoints=False) as client:
    client.chat(prompt="hi")
print("hermes_sdk._core.events" in sys.modules)
"""


def test_the_family_kit_costs_a_first_chat_no_stream_events(hermes_emulator: HermesEmulator) -> None:
    """The stream events (9 ms of attrs classes) load with a process's first stream, not its first chat,
    though ``hermes_sdk.plugin`` exports them."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", FIRST_CHAT, hermes_emulator.base_url, hermes_emulator.api_key],
                         capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split()[-1] == "False", out.stderr
