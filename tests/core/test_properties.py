"""Property tests (Hypothesis, deterministic: derandomized, no example database, bounded examples).

(a) Every input to every capability builder is either mapped to a request Hermes accepts (a JSON
    body that parses strictly, headers and path that http.client can send) or refused with
    InvalidInputError: never another exception. The same through ``invoke()`` and a client whose
    session records what it would send.
(b) The SSE decoder gives the same events for any chunking of any valid stream, the events the
    stream encodes, and never buffers without bound.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Iterator

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_sdk import HermesClient
from hermes_sdk._app.builtin import build_request
from hermes_sdk._core._constants import MAX_SSE_FRAME_BYTES
from hermes_sdk._core.streaming import _sse_events, decode_event
from hermes_sdk.errors import CONFIGURATION_OR_INPUT, HermesError, InvalidInputError, InvalidResponseError

pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")

OPERATIONS = ("chat", "chat_stream", "responses", "responses_stream", "response_get", "response_delete")

DETERMINISTIC = settings(derandomize=True, database=None, deadline=None, max_examples=300,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                HealthCheck.filter_too_much])

# ---------------------------------------------------------------- input strategies

SURROGATES = st.sampled_from(["\ud800", "\udc80", "\udfff", "a\udbff"])
text = st.one_of(
    st.text(max_size=12),
    st.text(st.characters(max_codepoint=0x7F), min_size=1, max_size=12),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=4), SURROGATES, st.text(max_size=4)),
    st.sampled_from(["", " ", "hi", "日本", "café", "a\r\nb", "x\x00", "..", ".", "resp_1", " lead"]),
)
good = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=12)
mixed = st.one_of(good, good, good, text)  # mostly sendable strings, so the mapping is reached
numbers = st.one_of(
    st.integers(-1000, 1000), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([2 ** 53 - 1, 2 ** 53, 2 ** 64, 10 ** 400, -(10 ** 400), 1e308, 0.5, -0.0]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, text)
keys = st.one_of(text, text, text, st.integers(-3, 3), st.none(), st.booleans(), st.tuples(st.integers(0, 2)))


def _nest(value: Any, depth: int) -> Any:
    for i in range(depth):
        value = [value] if i % 2 else {"d": value}
    return value


json_like = st.recursive(scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                         st.dictionaries(keys, kids, max_size=4)), max_leaves=12)
any_value = st.one_of(
    json_like,
    st.builds(_nest, json_like, st.sampled_from([1, 40, 98, 99, 100, 101, 150, 3000])),
    st.sampled_from([set(), b"bytes", object(), float("nan"), (1, 2)]),
)
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "user", "assistant", "system", "tool", "", 5]),
                                 "content": st.one_of(mixed, st.lists(st.one_of(mixed, st.fixed_dictionaries(
                                     {"type": st.sampled_from(["text", "input_text", "image_url"]),
                                      "text": mixed})), max_size=3), st.none(), numbers)})
plausible = {
    "prompt": mixed, "query": mixed, "messages": st.lists(message, max_size=3), "model": mixed,
    "temperature": numbers, "top_p": numbers, "max_tokens": numbers, "seed": numbers, "stop": st.one_of(
        mixed, st.lists(mixed, max_size=2)), "metadata": st.dictionaries(keys, json_like, max_size=3),
    "session_id": mixed, "session_key": mixed, "idempotency_key": mixed, "max_events": numbers,
    "input": st.one_of(mixed, st.lists(st.one_of(mixed, message), max_size=3)), "store": scalars,
    "previous_response_id": mixed, "conversation": mixed, "instructions": mixed, "response_id": mixed,
    "conversation_history": st.lists(message, max_size=2), "_aip": any_value, "max_output_tokens": numbers,
    "tools": st.lists(st.dictionaries(keys, json_like, max_size=2), max_size=2),
}


BASE = {"chat": "prompt", "chat_stream": "prompt", "responses": "input", "responses_stream": "input",
        "response_get": "response_id", "response_delete": "response_id"}
FIELDS = {
    "chat": ["query", "messages", "model", "temperature", "top_p", "max_tokens", "seed", "stop", "metadata",
             "tools", "session_id", "session_key", "idempotency_key", "_aip"],
    "responses": ["model", "instructions", "store", "previous_response_id", "conversation", "metadata",
                  "conversation_history", "max_output_tokens", "temperature", "session_key", "idempotency_key",
                  "_aip", "tools"],
    "response_get": ["session_key", "idempotency_key", "_aip"],
}
FIELDS["chat_stream"] = FIELDS["chat"] + ["max_events"]
FIELDS["responses_stream"] = FIELDS["responses"] + ["max_events"]
FIELDS["response_delete"] = FIELDS["response_get"]


@st.composite
def inputs(draw: Any, operation: str) -> Any:
    """Mostly plausible inputs for the operation (so the mapping is reached), hostile values mixed in."""
    if draw(st.integers(0, 19)) == 0:
        return draw(any_value)  # not even a mapping, often
    base = BASE[operation]
    data: dict[Any, Any] = {base: draw(st.sampled_from(["hi", "resp_1", "Hello, world"]) | plausible[base])}
    for name in draw(st.lists(st.sampled_from(FIELDS[operation]), max_size=4, unique=True)):
        data[name] = draw(any_value) if draw(st.integers(0, 5)) == 0 else draw(plausible[name])
    if draw(st.integers(0, 3)) == 0:
        data[draw(keys)] = draw(any_value)
    if operation.startswith("responses") and draw(st.integers(0, 3)) == 0:
        body = {k: v for k, v in data.items() if k not in ("session_key", "idempotency_key", "max_events")}
        data = {"body": body, **{k: v for k, v in data.items() if k in ("session_key", "idempotency_key")}}
    return data


def _strict_json(body: bytes) -> Any:
    def refuse(constant: str) -> Any:
        raise ValueError(f"not JSON: {constant}")
    return json.loads(body.decode("utf-8"), parse_constant=refuse)


def _sendable(name: str, value: str) -> None:
    """What http.client and requests do with a header: latin-1 bytes, no CR/LF, no leading space."""
    assert isinstance(value, str)
    value.encode("latin-1")
    requests.utils.check_header_validity((name, value))


@DETERMINISTIC
@given(operation_and_input=st.sampled_from(OPERATIONS).flatmap(lambda op: st.tuples(st.just(op), inputs(op))))
def test_every_input_is_mapped_to_a_sendable_request_or_refused(operation_and_input: tuple[str, Any]) -> None:
    operation, data = operation_and_input
    try:
        request = build_request(operation, data)
    except InvalidInputError as exc:
        assert exc.code == CONFIGURATION_OR_INPUT and "field" in exc.details
        return
    except HermesError as exc:  # PayloadTooLargeError: refused locally, with the input code
        assert exc.code == CONFIGURATION_OR_INPUT and exc.details.get("sent") is False
        return
    if request.body is not None:
        body = _strict_json(request.body)
        assert isinstance(body, dict) and body["stream"] is request.stream
    for name, value in request.headers.items():
        _sendable(name, value)
    request.path.encode("ascii")
    assert request.path.startswith("/v1/")


class _Recording(requests.Session):
    """Sends nothing: records each prepared request and answers 200 with a minimal valid body."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[requests.PreparedRequest] = []

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        import io

        import urllib3

        self.sent.append(request)
        for name, value in request.headers.items():
            _sendable(name, value)
        assert request.url is not None
        request.url.encode("ascii")
        if request.body is not None:
            _strict_json(request.body if isinstance(request.body, bytes) else request.body.encode())
        if request.headers.get("Accept") == "text/event-stream":
            body, kind = b"data: [DONE]\n\n", "text/event-stream"
        elif request.method == "DELETE":
            body, kind = b'{"id": "resp_1", "object": "response", "deleted": true}', "application/json"
        else:
            body, kind = b'{"id": "x", "object": "response", "status": "completed", "output": []}', "application/json"
        response = requests.Response()
        response.status_code = 200
        response.headers = requests.structures.CaseInsensitiveDict({"Content-Type": kind,
                                                                   "Content-Length": str(len(body))})
        response.raw = urllib3.HTTPResponse(body=io.BytesIO(body), preload_content=False, status=200)
        response.request = request
        return response


_keys = itertools.count()


@pytest.fixture(scope="module")
def recording_client() -> Iterator[tuple[HermesClient, _Recording]]:
    session = _Recording()
    approve = lambda request: request.approve(approver="p", policy_decision_id="pd", reason="r")  # noqa: E731
    client = HermesClient(base_url="http://127.0.0.1:9", api_key="sk-prop", session=session,
                          load_entrypoints=False, approval_provider=approve)
    yield client, session
    client.close()


@settings(DETERMINISTIC, max_examples=150)
@given(operation_and_input=st.sampled_from(OPERATIONS).flatmap(lambda op: st.tuples(st.just(op), inputs(op))),
       key=st.one_of(st.none(), text))
def test_invoke_never_raises_and_sends_only_sendable_requests(recording_client: Any,
                                                              operation_and_input: tuple[str, Any], key: Any) -> None:
    operation, data = operation_and_input
    client, session = recording_client
    before = len(session.sent)
    if key is not None or operation == "response_delete":
        key = f"{key or 'k'}#{next(_keys)}"  # one client for every example: a key is never reused
    if isinstance(data, dict) and isinstance(data.get("idempotency_key"), str):
        data = {**data, "idempotency_key": f"{data['idempotency_key']}#{next(_keys)}"}  # nor one in the input
    result = client.invoke(f"cap:hermes_agent:default:{operation}", data, idempotency_key=key)
    assert result.status in ("completed", "failed"), result
    if len(session.sent) == before:  # nothing sent: refused before I/O, as an input error
        assert result.status == "failed" and isinstance(result.error, InvalidInputError), result.error
    if key is not None and isinstance(result.error, InvalidInputError):
        assert client.records.get(f"cap:hermes_agent:default:{operation}", key) is None


# ---------------------------------------------------------------- SSE


line_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20)
field_text = st.text(st.characters(blacklist_characters="\r\n:", blacklist_categories=("Cs",)), max_size=8)
sse_event = st.fixed_dictionaries({
    "event": st.one_of(st.none(), st.sampled_from(["response.output_text.delta", "done", "error"]), field_text),
    "id": st.one_of(st.none(), field_text),
    "data": st.one_of(st.none(), st.lists(line_text, min_size=1, max_size=4)),
    "comments": st.lists(line_text, max_size=2),
    "unknown": st.booleans(),
})


def _encode(events: list[dict[str, Any]], newline: bytes, bom: bool) -> tuple[bytes, list[tuple[str, Any, str]]]:
    out, expected = [], []
    for ev in events:
        lines = [b":" + c.encode() for c in ev["comments"]]
        if ev["unknown"]:
            lines.append(b"retry: 1000")
        if ev["event"] is not None:
            lines.append(b"event: " + ev["event"].encode())
        if ev["id"] is not None:
            lines.append(b"id: " + ev["id"].encode())
        for line in ev["data"] or ():
            lines.append(b"data: " + line.encode())
        if not lines:
            continue
        out.append(newline.join(lines) + newline + newline)
        if ev["event"] is not None or ev["id"] is not None or ev["data"] is not None:
            expected.append((ev["event"] or "message", ev["id"], "\n".join(ev["data"] or ())))
    return (b"\xef\xbb\xbf" if bom else b"") + b"".join(out), expected


def _chunked(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(stream)) for c in cuts})
    return [stream[a:b] for a, b in zip([0] + points, points + [len(stream)])]


@DETERMINISTIC
@given(events=st.lists(sse_event, max_size=8), newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
       bom=st.booleans(), cuts=st.lists(st.integers(0, 400), max_size=12), bytewise=st.booleans())
def test_any_chunking_of_a_valid_stream_gives_its_events(events: list[dict[str, Any]], newline: bytes, bom: bool,
                                                          cuts: list[int], bytewise: bool) -> None:
    stream, expected = _encode(events, newline, bom)
    chunks = [stream[i:i + 1] for i in range(len(stream))] if bytewise else _chunked(stream, cuts)
    whole = list(_sse_events(iter([stream])))
    got = list(_sse_events(iter(chunks)))
    assert got == whole == expected
    for sse in got:
        event = decode_event(*sse)
        assert event.raw_data == sse[2]


@settings(DETERMINISTIC, max_examples=40)
@given(sizes=st.lists(st.integers(512, 70_000), min_size=1, max_size=8),
       filler=st.sampled_from([b"x", b"data: y\n", b"y\r", b":\n", b"\r\n:"]))
def test_the_decoder_never_buffers_without_bound(sizes: list[int], filler: bytes) -> None:
    # A stream that never ends a frame: it is refused once the open frame passes 1 MiB, having read
    # no more than that and one chunk.
    consumed = 0

    def source() -> Iterator[bytes]:
        nonlocal consumed
        i = 0
        while True:  # one endless run of the filler, cut into chunks of the drawn sizes
            size = sizes[i % len(sizes)]
            i += 1
            skip = consumed % len(filler)
            chunk = (filler * (size // len(filler) + 2))[skip:skip + size]
            consumed += len(chunk)
            yield chunk
            assert consumed <= 64 * MAX_SSE_FRAME_BYTES, "read on without a limit"

    with pytest.raises(InvalidResponseError) as info:
        for _ in _sse_events(source()):
            pass
    assert info.value.details["limit_bytes"] == MAX_SSE_FRAME_BYTES
    assert consumed <= MAX_SSE_FRAME_BYTES + max(sizes) + 3


@DETERMINISTIC
@given(raw=st.one_of(st.text(max_size=50), st.builds(lambda n, s: "[" * n + s + "]" * n, st.integers(0, 50_000),
                                                      st.sampled_from(["", "1", '{"a":'])),
                     st.sampled_from(["[DONE]", " ", '{"x": 1} ', '{"x": 1} {', "NaN", "1e999"])))
def test_decode_event_never_raises(raw: str) -> None:
    event = decode_event("message", None, raw)
    assert event.raw_data == raw


@DETERMINISTIC
@given(value=st.one_of(json_like, st.builds(_nest, json_like, st.integers(95, 105))))
def test_the_fast_input_check_agrees_with_the_one_that_names_the_field(value: Any) -> None:
    from hermes_sdk._core.operations.common import _plain_tree, tree_error

    assert _plain_tree(value) is (tree_error(value) is None)


_FRAGMENTS = ["Bearer ", "bearer\t", "token", "=", ": ", "'", '"', "api_key", "Authorization", "secret", "resp_",
              "chatcmpl-", "msg_", "run_", "fco_", "api-", "sk-", "/v1/responses/", "/api/sessions/", "/chat",
              "://", "@", "0123456789abcdef", "ABCDEFGH",
              "-", "_", " ", ",", "?", "#", "a", "Z", "9", "123e4567-e89b-12d3-a456-426614174000", "é", "\n"]


def _scrub_every_pattern(text: str) -> str:
    from hermes_sdk._core.redaction import DEFAULT_PATTERNS, REDACTED, _secrets, _sub, route_ids

    routes = route_ids()  # the id segments of every operation's route first
    if routes is not None:
        text = _sub(routes, text)
    # then the keys registered in this process (every client's key: another test's client may have
    # registered one these fragments can spell, e.g. "sk-" + "secret")
    for secret in tuple(_secrets):
        text = text.replace(secret, REDACTED)
    for pattern in DEFAULT_PATTERNS:
        text = _sub(pattern, text)
    return text


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(_FRAGMENTS), max_size=12))
def test_the_one_search_precheck_and_the_cache_never_change_a_scrub(parts: list[str]) -> None:
    # scrub() skips the nine substitutions when one joined search finds nothing, and caches short
    # texts: the result is always what the nine substitutions give.
    from hermes_sdk._core.redaction import scrub

    text = "".join(parts)
    assert scrub(text) == _scrub_every_pattern(text)
    assert scrub(text) == _scrub_every_pattern(text)  # the cached answer


def test_a_secret_registered_later_is_scrubbed_from_a_cached_text() -> None:
    from hermes_sdk._core.redaction import register_secret, scrub

    text = "the key is zq-late-registered-4711"
    assert scrub(text) == text  # cached as harmless
    register_secret("zq-late-registered-4711")
    assert scrub(text) == "the key is [REDACTED]"
