"""Redaction: the allowlist, filters from plugins, and a canary run of all six capabilities."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from plugin_support import RecordingTracer

from hermes_sdk import AuthenticationError, HermesClient, HermesError, NotFoundError, Redactor, hookimpl
from hermes_sdk._core.redaction import REDACTED


def test_the_allowlist_keeps_operational_fields_only() -> None:
    r = Redactor()
    out = r.redact({"operation": "chat", "status": "completed", "http_status": 200, "replayed": False,
                    "prompt": "secret prompt", "messages": [{"role": "user", "content": "hi"}],
                    "instructions": "be evil", "output": [{"type": "message", "text": "answer"}],
                    "tools": [{"type": "function", "name": "transfer_money"}], "id": "resp_abc123",
                    "session_id": "s1", "session_key": "k1", "idempotency_key": "idem",
                    "new_provider_field": "unknown"})
    assert out["operation"] == "chat" and out["status"] == "completed" and out["http_status"] == 200
    for key in ("prompt", "instructions", "id", "session_id", "session_key", "idempotency_key",
                "new_provider_field"):
        assert out[key] == REDACTED, key
    assert out["messages"] == [{"role": REDACTED, "content": REDACTED}]
    assert out["tools"] == [{"type": "function", "name": REDACTED}]
    assert out["output"][0]["text"] == REDACTED


def test_patterns_scrub_ids_and_credentials_inside_allowed_text() -> None:
    r = Redactor(patterns=[r"ticket-\d+"])
    text = r.text("GET /v1/responses/resp_0123abc Authorization: Bearer abc.def sk-12345678abc ticket-991")
    assert "resp_0123abc" not in text and "abc.def" not in text and "sk-12345678abc" not in text
    assert "ticket-991" not in text and "/v1/responses/" in text


def test_exceptions_never_show_credentials(hermes_emulator: Any) -> None:
    key = "canary-credential-0042-abcdef"
    client = HermesClient(hermes_emulator.base_url, key, load_entrypoints=False)
    with pytest.raises(AuthenticationError) as info:
        client.chat(prompt="hi")
    for text in (str(info.value), repr(info.value), json.dumps(info.value.to_dict(), default=str),
                 repr(client), repr(client.endpoints)):
        assert key not in text
    client.close()


def test_exception_text_hides_ids_that_hermes_echoes(make_client: Any) -> None:
    # Hermes' 404 names the id; a traceback, a tracer's record_exception or log.exception must not.
    rid = "resp_0123456789abcdef0123456789ab"
    seen: list[BaseException] = []

    class Tracer:
        @hookimpl(wrapper=True)
        def hermes_call(self, call: Any) -> Any:
            try:
                return (yield)
            except BaseException as exc:
                seen.append(exc)
                raise

    client = make_client(plugins=[Tracer()])
    for call in (lambda c: c.responses(input="x", previous_response_id=rid), lambda c: c.response_get(rid)):
        with pytest.raises(NotFoundError) as info:
            call(client)
        err = info.value
        assert rid in err.message  # asked for on purpose: the provider's words
        for text in (str(err), repr(err), *map(str, err.args)):
            assert rid not in text and REDACTED in text
    assert len(seen) == 2 and all(rid not in str(exc) for exc in seen)


def test_plugins_add_filters(make_client: Any, tracer: RecordingTracer, caplog: pytest.LogCaptureFixture) -> None:
    class Filters:
        name = "account-filter"

        @hookimpl
        def hermes_redaction_filters(self, client: Any) -> Any:
            return [lambda key, text: text.replace("acct-7781", "[ACCOUNT]")]

    client = make_client(plugins=[Filters(), tracer])
    assert client.redactor.text("moved acct-7781") == "moved [ACCOUNT]"
    with caplog.at_level(logging.DEBUG, logger="hermes_sdk"):
        logging.getLogger("hermes_sdk").debug("about %s", "acct-7781")
    assert "acct-7781" not in caplog.text and "[ACCOUNT]" in caplog.text


def test_a_failing_filter_redacts_everything() -> None:
    r = Redactor(filters=[lambda key, text: 1 / 0])  # type: ignore[misc]
    assert r.text("anything") == REDACTED
    assert r.redact({"operation": "chat"}) == {"operation": REDACTED}


# ---------------------------------------------------------------------------------- the canary run

CANARY = {
    "prompt": "canary-prompt-31415",
    "message": "canary-message-27182",
    "instructions": "canary-instructions-16180",
    "output": "canary-output-14142",
    "session_id": "canary-session-id-17320",
    "session_key": "canary-session-key-22360",
    "idempotency_key": "canary-idem-key-26457",
    "api_key": "canary-api-key-30000-abcdef",
    "reason": "canary-approval-reason-33166",
}


class Everything(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.loggers: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        self.loggers.add(record.name)
        self.texts.append(self.format(record))
        self.texts.append(repr(record.msg))
        self.texts.append(repr(record.args))
        if record.exc_info:
            self.texts.append(logging.Formatter().formatException(record.exc_info))


@pytest.fixture
def all_logs() -> Iterator[Everything]:
    root = logging.getLogger()
    handler = Everything()
    old = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def test_canary_six_capabilities_leave_no_trace(hermes_emulator_factory: Any, all_logs: Everything,
                                                tracer: RecordingTracer) -> None:
    emulator = hermes_emulator_factory(api_key=CANARY["api_key"])
    emulator.script(lambda info: f"{CANARY['output']} and more words here")

    def approve(request: Any) -> Any:
        return request.approve(approver="ops", policy_decision_id="pd-1")

    client = HermesClient(emulator.base_url, CANARY["api_key"], approval_provider=approve, plugins=[tracer],
                          load_entrypoints=False, idempotency_store="memory:")
    seen: list[str] = []
    chat = client.chat(messages=[{"role": "system", "content": CANARY["message"]},
                                 {"role": "user", "content": CANARY["prompt"]}],
                       session_id=CANARY["session_id"], session_key=CANARY["session_key"],
                       idempotency_key=CANARY["idempotency_key"])
    seen.append(chat.id)
    stream = client.chat_stream(prompt=CANARY["prompt"], session_id=CANARY["session_id"])
    assert CANARY["output"] in stream.result().text
    seen.append(stream.result().events[0].data["id"])
    created = client.responses(input=CANARY["prompt"], instructions=CANARY["instructions"], store=True,
                               session_key=CANARY["session_key"], idempotency_key=CANARY["idempotency_key"] + "r")
    seen.append(created.id)
    streamed = client.responses_stream(input=CANARY["prompt"], instructions=CANARY["instructions"], store=True)
    assert streamed.result().status == "completed"
    got = client.response_get(created.id, session_key=CANARY["session_key"])
    assert got.id == created.id
    receipt = client.response_delete(created.id, idempotency_key=CANARY["idempotency_key"] + "d",
                                     reason=CANARY["reason"])
    assert receipt.deleted
    replayed = client.chat(messages=[{"role": "system", "content": CANARY["message"]},  # replay path: same input
                                     {"role": "user", "content": CANARY["prompt"]}],
                           session_id=CANARY["session_id"], session_key=CANARY["session_key"],
                           idempotency_key=CANARY["idempotency_key"])
    assert replayed.id == chat.id
    with pytest.raises(NotFoundError) as missing:  # error path (and a retried-never 404)
        client.response_get(created.id)
    for text in (str(missing.value), repr(missing.value)):
        assert CANARY["api_key"] not in text
    late = client.invoke("cap:hermes_agent:default:chat", {"prompt": CANARY["prompt"]},
                         idempotency_key=CANARY["idempotency_key"] + "x", deadline=1.0)  # deadline in the past
    assert isinstance(late.error, HermesError)
    client.close()

    assert {"hermes_sdk", "urllib3.connectionpool"} <= all_logs.loggers  # DEBUG lines were really produced
    assert tracer.invocations and tracer.attempts and tracer.events and tracer.results and tracer.settled
    haystacks = {"logs": "\n".join(all_logs.texts), "tracer": json.dumps(tracer.everything(), default=str)}
    needles = dict(CANARY, **{f"id{i}": value for i, value in enumerate(seen)})
    for where, haystack in haystacks.items():
        for name, needle in needles.items():
            assert needle not in haystack, f"{name} leaked into {where}"


def test_no_record_comes_from_an_unfiltered_sdk_child_logger(make_client: Any) -> None:
    # A filter on "hermes_sdk" does not see records of "hermes_sdk.<child>" loggers.
    names: set[str] = set()

    class Names(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            names.add(record.name)

    root = logging.getLogger()
    handler, level = Names(level=logging.DEBUG), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        client = make_client()
        client.chat_stream(prompt="x y").result()
        client.responses_stream(input="z").result()
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert "hermes_sdk" in names
    assert not [n for n in names if n.startswith("hermes_sdk.")], names
