"""What a hook is given, and what it gets back, holds no credential: every hook, canary key and prompt.

A plugin implements every hook and keeps each object it receives and each one its ``yield`` hands
back (the reply, the result, or the exception thrown into it); a walk over everything reachable
from those objects (attributes, private slots, mappings, sequences, an exception's cause and
context, closures; not into modules or a function's globals) finds no canary API key, and in what
it is given neither the canary prompt, nor a store, transport, runtime, client, or requests/urllib3
object.
"""

from __future__ import annotations

import types
from typing import Any, Iterator

import pytest
import requests
import urllib3

from hermes_sdk import HermesClient, HermesError, IdempotencyStore, hookimpl
from hermes_sdk._core.runtime import Runtime
from hermes_sdk._core.transport import Transport
from hermes_sdk.plugin import Attempt, CallView, ClientView, HttpReply
from hermes_sdk.testing import HermesEmulator

CANARY_KEY = "sk-canary-7f3a9c1e5b"
CANARY_PROMPT = "canary prompt 4d2e8b: the launch codes"


class Keeper:
    """Implements every hook; keeps what each receives and what each wrapper's yield hands back."""

    def __init__(self) -> None:
        self.given: list[tuple[str, Any]] = []
        self.got_back: list[tuple[str, Any]] = []

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

        def keep(key: str, text: str) -> str:  # a filter is handed text to scrub: never the key itself
            self.given.append(("hermes_redaction_filters filter", (key, text)))
            return text
        return [keep]

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        self.given.append(("hermes_call", call))
        try:
            result = yield
        except BaseException as exc:
            self.got_back.append(("hermes_call error", exc))
            raise
        self.got_back.append(("hermes_call result", result))
        return result

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        self.given.append(("hermes_http_attempt", attempt))
        try:
            reply = yield
        except BaseException as exc:
            self.got_back.append(("hermes_http_attempt error", exc))
            raise
        self.got_back.append(("hermes_http_attempt reply", reply))
        return reply

    @hookimpl
    def hermes_stream_event(self, call: Any, event: Any) -> None:
        self.given.append(("hermes_stream_event", (call, event)))

    @hookimpl
    def hermes_call_result(self, call: Any, result: Any) -> None:
        self.given.append(("hermes_call_result", (call, result)))


FORBIDDEN = (HermesClient, Runtime, Transport, requests.Session, requests.Response, requests.PreparedRequest,
             urllib3.HTTPResponse, urllib3.PoolManager)
LEAVES = (str, bytes, int, float, bool, type(None), types.ModuleType, type)


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple, set, frozenset)):
        return list(value)
    if isinstance(value, types.MethodType):
        return [value.__self__, value.__func__]
    if isinstance(value, types.FunctionType):  # closures, not globals (a module reaches everything)
        cells = [cell.cell_contents for cell in value.__closure__ or () if _filled(cell)]
        return cells + list(value.__defaults__ or ())
    children: list[Any] = []
    if isinstance(value, BaseException):
        children += [value.__cause__, value.__context__, *value.args]
    for name in dir(type(value)):
        if name.startswith("__"):
            continue
        slot = getattr(type(value), name, None)
        if isinstance(slot, (property, types.MemberDescriptorType, types.GetSetDescriptorType)) \
                or (not callable(slot) and not isinstance(slot, (classmethod, staticmethod))):
            try:
                children.append(getattr(value, name))
            except Exception:
                pass
    mapping = getattr(value, "__dict__", None)
    if isinstance(mapping, dict):
        children.extend(mapping.values())
    return children


def _filled(cell: Any) -> bool:
    try:
        return cell.cell_contents is not _filled  # an empty cell raises
    except ValueError:
        return False


def reachable(root: Any, depth: int = 12) -> Iterator[Any]:
    seen: set[int] = set()
    todo = [(root, 0)]
    while todo:
        value, level = todo.pop()
        if id(value) in seen or level > depth:
            continue
        seen.add(id(value))
        yield value
        if not isinstance(value, LEAVES):
            todo.extend((c, level + 1) for c in _children(value))


def _exercise(client: Any, kind: str) -> None:
    if kind == "chat":
        client.chat(prompt=CANARY_PROMPT, idempotency_key="k-canary")
        client.chat(prompt=CANARY_PROMPT, idempotency_key="k-canary")  # a replay is hooked too
    elif kind == "chat_stream":
        client.chat_stream(prompt=CANARY_PROMPT).result()
    elif kind == "responses_stream":
        client.responses_stream(input=CANARY_PROMPT).result()
    else:  # a failure: the wrappers get the typed error thrown into their yield
        with pytest.raises(HermesError):
            client.chat(prompt=CANARY_PROMPT)


@pytest.mark.parametrize("kind", ["chat", "chat_stream", "responses_stream", "failure"])
def test_no_hook_can_reach_the_key_from_what_it_is_given_or_gets_back(kind: str) -> None:
    keeper = Keeper()
    # "failure": Hermes refuses the key (a 401 whose error names the key's masked prefix only).
    with HermesEmulator(api_key=CANARY_KEY if kind != "failure" else "sk-the-server-key") as emulator:
        client = emulator.client(plugins=[keeper], idempotency_store="memory:", api_key=CANARY_KEY)
        _exercise(client, kind)
        client.close()
    hooks = {name for name, _ in keeper.given}
    expected = {"hermes_idempotency_store", "hermes_approval_provider", "hermes_redaction_filters",
                "hermes_call", "hermes_http_attempt", "hermes_call_result"}
    if kind in ("chat_stream", "responses_stream"):
        expected.add("hermes_stream_event")
    assert expected <= hooks
    back = {name for name, _ in keeper.got_back}
    assert ({"hermes_call error", "hermes_http_attempt error"} if kind == "failure"
            else {"hermes_call result", "hermes_http_attempt reply"}) <= back
    walked = 0
    for name, value in [*keeper.given, *keeper.got_back]:
        for item in reachable(value):
            walked += 1
            assert not isinstance(item, FORBIDDEN), f"{name} reaches a {type(item).__name__}"
            assert not isinstance(item, IdempotencyStore) or isinstance(item, type), f"{name} reaches the store"
            if isinstance(item, (str, bytes)):
                text = item if isinstance(item, str) else item.decode("latin-1")
                assert CANARY_KEY not in text, f"{name} reaches the API key"
                if not name.startswith("hermes_call result"):  # the caller's own result may echo the prompt
                    assert "launch codes" not in text, f"{name} reaches the prompt"
        assert CANARY_KEY not in repr(value)
    assert walked > 100


def test_a_wrapper_gets_back_a_sealed_reply() -> None:
    keeper = Keeper()
    with HermesEmulator(api_key=CANARY_KEY) as emulator:
        client = emulator.client(plugins=[keeper])
        client.chat_stream(prompt=CANARY_PROMPT, session_id="sess-secret-9").result()
        client.close()
    (reply,) = [v for name, v in keeper.got_back if name == "hermes_http_attempt reply"]
    assert type(reply) is HttpReply and reply.status == reply.status_code == 200 and reply.streaming is True
    assert not hasattr(reply, "stream") and not hasattr(reply, "body")
    assert reply.headers["Content-Type"].startswith("text/event-stream")
    assert "sess-secret-9" not in " ".join(reply.headers.values())
    with pytest.raises(AttributeError):
        reply.status = 500  # type: ignore[misc]


def test_headers_a_tracer_reads_are_redacted() -> None:
    keeper = Keeper()
    with HermesEmulator(api_key=CANARY_KEY) as emulator:
        client = emulator.client(plugins=[keeper])
        client.chat(prompt="hi", session_id="sess-secret-1", idempotency_key="key-secret-1")
        client.close()
    view = next(v for name, v in keeper.given if name == "hermes_call")
    assert view.headers["Authorization"] == "[REDACTED]"
    assert view.headers["Accept"] == "application/json"
    shown = " ".join(view.headers.values())
    assert "sess-secret-1" not in shown and "key-secret-1" not in shown and CANARY_KEY not in shown


def test_every_view_is_read_only() -> None:
    keeper = Keeper()
    with HermesEmulator(api_key=CANARY_KEY) as emulator:
        client = emulator.client(plugins=[keeper])
        client.chat(prompt="hi")
        client.close()
    call = next(v for name, v in keeper.given if name == "hermes_call")
    attempt = next(v for name, v in keeper.given if name == "hermes_http_attempt")
    client_view = next(v for name, v in keeper.given if name == "hermes_approval_provider")
    assert (type(call), type(attempt), type(client_view)) == (CallView, Attempt, ClientView)
    assert call.executed is True and attempt.executed is True and attempt.call is call
    for obj, attr in ((call, "executed"), (call, "_executed"), (call, "operation"), (call, "attributes"),
                      (attempt, "executed"), (attempt, "_executed"), (attempt, "number"),
                      (client_view, "endpoint_ids")):
        with pytest.raises(AttributeError):
            setattr(obj, attr, False)
    with pytest.raises(AttributeError):
        del call.action_id
    assert not hasattr(call, "settle")  # only the SDK settles a stream
    call.set_attribute("mine", 1)  # hooks still add their own attributes
    attempt.set_attribute("mine", 2)
    assert call.attributes["mine"] == 1 and attempt.attributes["mine"] == 2
