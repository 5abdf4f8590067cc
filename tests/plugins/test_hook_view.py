"""What a hook is given holds no credential, no raw prompt and no runtime: every hook, canary key and prompt.

A plugin implements every hook and keeps each object it receives; a walk over everything reachable
from those objects (attributes, slots, mappings, sequences; not into functions or modules) finds
neither the canary API key nor the canary prompt, and no store, transport, runtime or client.
"""

from __future__ import annotations

import types
from typing import Any, Iterator

import pytest

from hermes_sdk import HermesClient, IdempotencyStore, hookimpl
from hermes_sdk._core.runtime import Runtime
from hermes_sdk._core.transport import Transport
from hermes_sdk.testing import HermesEmulator

CANARY_KEY = "sk-canary-7f3a9c1e5b"
CANARY_PROMPT = "canary prompt 4d2e8b: the launch codes"


class Keeper:
    """Implements every hook; keeps what each receives."""

    def __init__(self) -> None:
        self.given: list[tuple[str, Any]] = []

    @hookimpl
    def hermes_idempotency_store(self, url: str, client: Any) -> Any:
        self.given.append(("hermes_idempotency_store", client))
        return None

    @hookimpl
    def hermes_approval_provider(self, client: Any) -> Any:
        self.given.append(("hermes_approval_provider", client))
        return None

    @hookimpl
    def hermes_redaction_filters(self, client: Any) -> Any:
        self.given.append(("hermes_redaction_filters", client))
        return None

    @hookimpl(wrapper=True)
    def hermes_invocation(self, invocation: Any) -> Any:
        self.given.append(("hermes_invocation", invocation))
        result = yield
        self.given.append(("hermes_invocation result", result))
        return result

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        self.given.append(("hermes_http_attempt", attempt))
        reply = yield
        self.given.append(("hermes_http_attempt reply", reply))
        return reply

    @hookimpl
    def hermes_stream_event(self, invocation: Any, event: Any) -> None:
        self.given.append(("hermes_stream_event", (invocation, event)))

    @hookimpl
    def hermes_action_result(self, invocation: Any, result: Any) -> None:
        self.given.append(("hermes_action_result", (invocation, result)))


FORBIDDEN = (HermesClient, Runtime, Transport)


def reachable(root: Any, depth: int = 8) -> Iterator[Any]:
    seen: set[int] = set()
    todo = [(root, 0)]
    while todo:
        value, level = todo.pop()
        if id(value) in seen or level > depth:
            continue
        seen.add(id(value))
        yield value
        if isinstance(value, (str, bytes, int, float, bool, type(None), types.FunctionType, types.MethodType,
                              types.BuiltinFunctionType, types.ModuleType, type)):
            continue
        children: list[Any] = []
        if isinstance(value, dict):
            children = [*value.keys(), *value.values()]
        elif isinstance(value, (list, tuple, set, frozenset)):
            children = list(value)
        else:
            for name in dir(type(value)):
                if name.startswith("__"):
                    continue
                slot = getattr(type(value), name, None)
                if isinstance(slot, (property, types.MemberDescriptorType)):
                    try:
                        children.append(getattr(value, name))
                    except Exception:
                        pass
            children.extend(getattr(value, "__dict__", {}).values())
        todo.extend((c, level + 1) for c in children)


@pytest.mark.parametrize("kind", ["chat", "chat_stream", "responses_stream"])
def test_no_hook_can_reach_the_key_the_prompt_or_the_store(kind: str) -> None:
    keeper = Keeper()
    with HermesEmulator(api_key=CANARY_KEY) as emulator:
        client = emulator.client(plugins=[keeper], idempotency_store="memory:")
        if kind == "chat":
            client.chat(prompt=CANARY_PROMPT, idempotency_key="k-canary")
            client.chat(prompt=CANARY_PROMPT, idempotency_key="k-canary")  # a replay is hooked too
        elif kind == "chat_stream":
            client.chat_stream(prompt=CANARY_PROMPT).result()
        else:
            client.responses_stream(input=CANARY_PROMPT).result()
        client.close()
    hooks = {name.split(" ")[0] for name, _ in keeper.given}
    expected = {"hermes_idempotency_store", "hermes_approval_provider", "hermes_redaction_filters",
                "hermes_invocation", "hermes_http_attempt", "hermes_action_result"}
    if kind != "chat":
        expected.add("hermes_stream_event")
    assert expected <= hooks
    for name, given in keeper.given:
        if name.endswith(" result") or name.endswith(" reply"):
            continue  # what the plugin gets back is the caller's own result (it holds the reply)
        for value in reachable(given):
            assert not isinstance(value, FORBIDDEN), f"{name} reaches a {type(value).__name__}"
            assert not isinstance(value, IdempotencyStore) or isinstance(value, type), f"{name} reaches the store"
            if isinstance(value, str):
                assert CANARY_KEY not in value, f"{name} reaches the API key"
                assert "launch codes" not in value, f"{name} reaches the prompt"
        assert CANARY_KEY not in repr(given) and "launch codes" not in repr(given)


def test_headers_a_tracer_reads_are_redacted() -> None:
    keeper = Keeper()
    with HermesEmulator(api_key=CANARY_KEY) as emulator:
        client = emulator.client(plugins=[keeper])
        client.chat(prompt="hi", session_id="sess-secret-1", idempotency_key="key-secret-1")
        client.close()
    view = next(v for name, v in keeper.given if name == "hermes_invocation")
    assert view.headers["Authorization"] == "[REDACTED]"
    assert view.headers["Accept"] == "application/json"
    shown = " ".join(view.headers.values())
    assert "sess-secret-1" not in shown and "key-secret-1" not in shown and CANARY_KEY not in shown
