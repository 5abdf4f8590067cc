"""The per-call keywords are declared once, by CallOptions: every typed method that takes them takes
the same names with the same defaults, and the unknown-keyword hint knows them from there."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterator

import attrs

from hermes_sdk import HermesClient
from hermes_sdk._core.operations import keywords
from hermes_sdk._core.options import CallOptions
from hermes_sdk._families.chat import Chat
from hermes_sdk._families.responses import Responses

#: What every call takes (CallOptions' fields a method may expose as keywords).
SHARED = ("endpoint", "action_id", "context", "deadline", "timeout")
#: The exceptions, each for its reason: approval_request sends nothing (it names a call, it does not
#: bound one); server_features is read once per endpoint and kept; invoke's capability id names its endpoint;
#: with_options sets the client's default timeout (its other keywords are the client's, not a call's);
#: sessions.iter makes one call per page, each with an action id of its own.
LOCAL = {"client.approval_request": ["endpoint", "action_id"], "client.server_features": ["endpoint"],
         "client.invoke": ["action_id", "context", "deadline", "timeout"],
         "runs.approval_request": ["endpoint", "context"], "client.with_options": ["timeout"],
         "sessions.iter": ["endpoint", "context", "deadline", "timeout"]}


def _methods(client: HermesClient) -> Iterator[tuple[str, Callable[..., Any]]]:
    owners: list[tuple[str, object]] = [("client", client)]
    owners += [(name, getattr(client, name)) for name in ("runs", "sessions", "jobs")]
    owners += [("chat", client.resource(Chat)), ("responses", client.resource(Responses))]
    for owner_name, owner in owners:
        for name, member in inspect.getmembers(type(owner), inspect.isfunction):
            if not name.startswith("_") and not member.__module__.endswith(".aliases"):  # deprecated aliases
                yield f"{owner_name}.{name}", getattr(owner, name)


def test_every_method_taking_call_keywords_takes_them_as_call_options_declares_them() -> None:
    defaults = {f.name: f.default for f in attrs.fields(CallOptions)}
    client = HermesClient("http://127.0.0.1:9", "k", load_entrypoints=False)
    checked = 0
    try:
        for where, method in _methods(client):
            params = inspect.signature(method).parameters
            given = [name for name in SHARED if name in params and params[name].kind is inspect.Parameter.KEYWORD_ONLY]
            if not given:
                continue
            checked += 1
            assert given == LOCAL.get(where, list(SHARED)), f"{where} takes {given} of the per-call keywords"
            if where == "client.with_options":  # its default means "keep the client's"
                continue
            for name in given:
                param = params[name]
                assert param.kind is inspect.Parameter.KEYWORD_ONLY, (where, name)
                assert param.default == defaults[name], (where, name, param.default)
            for name in ("idle_timeout", "keep_events", "reason"):
                if name in params:
                    assert params[name].default == defaults[name], (where, name, params[name].default)
    finally:
        client.close()
    assert checked >= 26  # the six, invoke, run and the resources' methods (chat's and Responses' six too)


def test_the_unknown_keyword_hint_knows_every_call_option() -> None:
    names = {f.name for f in attrs.fields(CallOptions)}
    assert names - {"approval", "reason"} <= set(keywords.CALL_KEYWORDS)
