"""Every fault class of issue 9 against the SDK, one row each: a misbehaving Hermes on loopback
(``hermes_sdk.testing.FaultServer``), each capability kind, and what the SDK must report.

Each row asserts the exact error class and code, ``retryable``, ``uncertain_outcome``, the state of
the idempotency record afterwards, that the call ended within its ``deadline=`` (absolute epoch
seconds, plus 0.25 s), that no secret the server echoed reaches ``str()``/``repr()``, and that no
socket is left open (the server sees every connection closed).
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
from typing import Any, Callable, Optional

import attrs
import pytest
import requests
from core_support import SchedulerLag

from hermes_sdk import HermesClient
from hermes_sdk._core._constants import RETRY_MAX_ATTEMPTS
from hermes_sdk._core.capabilities import capability_id
from hermes_sdk.errors import (
    AgentIncompleteError,
    ApprovalDeniedError,
    AuthenticationError,
    DeadlineExceededError,
    HermesError,
    InvalidInputError,
    InvalidResponseError,
    NotFoundError,
    RateLimitedError,
    RemoteRejectedError,
    ServerError,
    StreamCancelledError,
    StreamError,
    TransportError,
)
from hermes_sdk.testing import FaultServer

P = "connector.hermes_agent."
DEADLINE = 0.75  # seconds from the start of each call
SLACK = 0.25  # how late a call may end after its deadline
#: The bound of a row whose outcome is not about time but whose work takes some: a call the SDK
#: retries (three requests, two backoffs of 0.25 s and 0.5 s at most) or one that pushes megabytes
#: through the parsers and limits, with room for a busy 2-core machine. Against DEADLINE their
#: outcome was a race with the clock (deadline_exceeded when the machine was busy).
ROOMY_DEADLINE = 10.0
#: Faults whose outcome the deadline decides by design (a body dripped past it): they keep DEADLINE.
DECIDED_BY_DEADLINE = ("drip_error_body",)
#: Faults that push megabytes (or 100,000-deep JSON) through the SDK: CPU-bound on the client.
BULK_FAULTS = ("sse_split_boundaries", "sse_many_short_lines", "sse_frame_over_1mib", "sse_stream_over_limit",
               "sse_deep_json", "json_too_deep", "gzip_bomb", "gzip_bomb_error")
MODEL = ("chat", "responses")
STREAMS = ("chat_stream", "responses_stream")
READ = ("response_get",)
DELETE = ("response_delete",)
JSON_OPS = MODEL + READ + DELETE
ALL_OPS = JSON_OPS + STREAMS



@attrs.frozen
class Row:
    fault: str
    op: str
    error: Optional[type]  # None: the call succeeds
    code: Optional[str] = None
    retryable: bool = False
    uncertain: bool = False
    record: Optional[str] = "failed"  # the recorded ActionResult status, or None: no record (key given back)
    retry_after_ms: Any = "any"
    call: Optional[Callable[..., Any]] = None  # (client, key, deadline, server): instead of the op's call
    server: dict[str, Any] = attrs.Factory(dict)
    http_status: Any = "any"  # the status the error must keep (the status line was read)
    deadline: float = DEADLINE  # seconds the row's call is given (the bound its outcome needs)
    attempts: Optional[int] = None  # requests the server must see (a retried call), if checked

    @property
    def id(self) -> str:
        return f"{self.fault}-{self.op}"


def _read(op: str) -> bool:
    return op in READ


def status_rows() -> list[Row]:
    """HTTP statuses (bodies echo the API key and a secret) on every capability kind."""
    rows = []
    for op in ALL_OPS:
        read = _read(op)
        rows += [
            Row("status_401_secret", op, AuthenticationError, P + "authentication"),
            Row("status_404_secret", op, NotFoundError, P + "remote_rejected"),
            # Refused before any work (issue 38 item 4): no result is kept, the key is given back.
            Row("status_429_secret", op, RateLimitedError, P + "remote_temporary", retryable=read, uncertain=not read,
                record=None),
            Row("status_500_secret", op, ServerError, P + "remote_temporary", retryable=read, uncertain=not read),
            Row("redirect_huge_body", op, RemoteRejectedError, P + "remote_rejected"),
        ]
    for op in ("chat", "response_get", "response_delete"):
        read = _read(op)
        rows += [
            Row("status_503_secret", op, ServerError, P + "remote_temporary", retryable=read, uncertain=not read),
            Row("status_502_secret", op, ServerError, P + "remote_temporary", retryable=read, uncertain=not read),
            Row("status_502_agent_incomplete", op, AgentIncompleteError, P + "remote_temporary",
                retryable=read, uncertain=not read),
            Row("gzip_bomb_error", op, ServerError, P + "remote_temporary", retryable=read, uncertain=not read),
            Row("drip_error_body", op, ServerError, P + "remote_temporary", retryable=read, uncertain=not read),
        ]
    return rows


NEGATIVE_CHUNK = ((InvalidResponseError, P + "invalid_response") if sys.version_info >= (3, 10)
                  else (TransportError, P + "transport"))


def framing_rows() -> list[Row]:
    """Framing no HTTP parser accepts (``Content-Length: ²``, a negative chunk size), on every kind:
    a typed bad reply or the status's own error, the status kept, never a PluginError; whether
    response_get retries is the RetryPolicy's call (a 503 is retried, a bad reply is not)."""
    rows = []
    for op in ALL_OPS:
        read = _read(op)
        unsure = not read
        rows += [
            Row("content_length_superscript", op, InvalidResponseError, P + "invalid_response", uncertain=unsure,
                http_status=200),
            # Python 3.9's http.client reads a negative chunk size as a short read (IncompleteRead):
            # a transport failure there (the status kept on streams; a JSON body's read failure is
            # one "before an answer", which gives a read's key back), a parser error
            # (invalid_response, status kept) from 3.10 on.
            Row("negative_chunk_size", op, *NEGATIVE_CHUNK, uncertain=unsure,
                http_status=200 if NEGATIVE_CHUNK[0] is InvalidResponseError or op in STREAMS else "any")
            if NEGATIVE_CHUNK[0] is InvalidResponseError or op in STREAMS else
            Row("negative_chunk_size", op, *NEGATIVE_CHUNK, retryable=read, uncertain=unsure,
                record=None if read else "failed"),  # as close_mid_body: a short read
            Row("status_503_bad_framing", op, ServerError, P + "remote_temporary", retryable=read, uncertain=unsure,
                http_status=503),
        ]
    return rows


def retry_after_rows() -> list[Row]:
    rows = []
    for fault, expected in (("retry_after_inf", 30_000), ("retry_after_1e309", 30_000),
                            ("retry_after_huge", 30_000), ("retry_after_negative", 0),
                            ("retry_after_http_date", 30_000), ("retry_after_nan", None),
                            ("retry_after_garbage", None)):
        for op in ("chat", "chat_stream", "response_get", "response_delete"):
            read = _read(op)
            if op != "response_get" and fault not in ("retry_after_inf", "retry_after_1e309"):
                continue
            rows.append(Row(fault, op, RateLimitedError, P + "remote_temporary", retryable=read, uncertain=not read,
                            retry_after_ms=expected, record=None))  # a 429: nothing ran, the key is free
    return rows


def body_rows() -> list[Row]:
    """Bodies of 2xx answers that are not what the capability promises, and cut connections."""
    rows = []
    for op in JSON_OPS:
        read = _read(op)
        unsure = not read
        rows += [
            Row("ok", op, None, record="completed"),
            Row("non_json_200", op, InvalidResponseError, P + "invalid_response", uncertain=unsure),
            Row("json_wrong_shape", op, InvalidResponseError, P + "invalid_response", uncertain=unsure),
            Row("json_array", op, InvalidResponseError, P + "invalid_response", uncertain=unsure),
            # A reply naming another object is not this one's: a receipt for another id deleted
            # nothing we know of (and maybe ours: uncertain); model calls create new ids (ok).
            Row("reply_about_another_id", op, InvalidResponseError, P + "invalid_response", uncertain=unsure)
            if op in READ + DELETE else Row("reply_about_another_id", op, None, record="completed"),
            Row("json_too_deep", op, InvalidResponseError, P + "invalid_response", uncertain=unsure),
            Row("gzip_bomb", op, InvalidResponseError, P + "invalid_response", uncertain=unsure),
            # A cut read sent the request: a model call or delete is uncertain; a read is retried and,
            # failing, gives its key back (nothing changed on the server).
            Row("close_mid_body", op, TransportError, P + "transport", retryable=read, uncertain=unsure,
                record=None if read else "failed"),
            Row("half_open", op, DeadlineExceededError, P + "deadline_exceeded", uncertain=unsure,
                record=None if read else "failed"),
            Row("drip_headers", op, DeadlineExceededError, P + "deadline_exceeded", uncertain=unsure,
                record=None if read else "failed"),
            Row("drip_json_body", op, DeadlineExceededError, P + "deadline_exceeded", uncertain=unsure,
                record=None if read else "failed"),
        ]
    return rows


def stream_rows() -> list[Row]:
    rows = []
    for op in STREAMS:
        rows += [
            Row("ok", op, None, record="completed"),
            Row("sse_bom", op, None, record="completed"),
            Row("sse_split_boundaries", op, None, record="completed"),
            Row("sse_many_short_lines", op, None, record="completed"),
            Row("sse_deep_json", op, None, record="completed"),
            Row("sse_frame_over_1mib", op, InvalidResponseError, P + "invalid_response", uncertain=True),
            Row("sse_stream_over_limit", op, InvalidResponseError, P + "invalid_response", uncertain=True),
            Row("close_mid_stream", op, StreamError, P + "stream_incomplete", uncertain=True),
            Row("non_json_200", op, StreamError, P + "stream_incomplete", uncertain=True),
            Row("half_open", op, DeadlineExceededError, P + "deadline_exceeded", uncertain=True),
            Row("keepalive_forever", op, DeadlineExceededError, P + "deadline_exceeded", uncertain=True),
            Row("drip_sse", op, DeadlineExceededError, P + "deadline_exceeded", uncertain=True),
            Row("drip_headers", op, DeadlineExceededError, P + "deadline_exceeded", uncertain=True),
        ]
    return rows


# ---------------------------------------------------------------- rows with a call of their own


def _non_latin1_session_id(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.chat(prompt="hi", session_id="sess-日本", idempotency_key=key, deadline=deadline)


def _surrogate_session_key(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.responses(input="hi", session_key="k\udc80", idempotency_key=key, deadline=deadline)


def _surrogate_idempotency_key(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.chat_stream(prompt="hi", idempotency_key=key + "\ud800", deadline=deadline)


def _deadline_relative(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.chat(prompt="hi", idempotency_key=key, deadline=5)


def _deadline_infinite(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.response_get("resp_1", idempotency_key=key, deadline=math.inf)


def _huge_temperature(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.chat(prompt="hi", temperature=10 ** 400, idempotency_key=key, deadline=deadline)


def _deep_input(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    return client.responses(input="hi", metadata={"deep": deep}, idempotency_key=key, deadline=deadline)


def _mixed_keys(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.chat(prompt="hi", metadata={1: "a", "b": 2}, idempotency_key=key, deadline=deadline)


def _nan_approval(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    request = client.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup")
    decision = request.approve(approver="ops", policy_decision_id="pd-1")
    object.__setattr__(decision, "expires_at", math.nan)  # built around the validators
    return client.response_delete("resp_1", idempotency_key=key, approval=decision, reason="cleanup",
                                  deadline=deadline)


def _nan_approval_mapping(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    request = client.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup")
    decision = attrs.asdict(request.approve(approver="ops", policy_decision_id="pd-1"))
    decision["decided_at"] = math.nan
    return client.response_delete("resp_1", idempotency_key=key, approval=decision, reason="cleanup",
                                  deadline=deadline)


def _invoke_surrogate(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    result = client.invoke("cap:hermes_agent:default:response_get", {"response_id": "resp_\udcff"},
                           idempotency_key=key, deadline=deadline)
    assert result.status == "failed"
    raise result.error


def _caller_session_bad_header(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    session = requests.Session()
    session.headers["X-Team"] = "équipe-日本"
    other = HermesClient(base_url=client.endpoints[0].base_url, api_key=client.endpoints[0].api_key,
                         session=session, load_entrypoints=False, idempotency_store=client.idempotency_store)
    try:
        return other.chat(prompt="hi", idempotency_key=key, deadline=deadline)
    finally:
        other.close()
        session.close()


def _stream_left_open(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    stream = client.chat_stream(prompt="hi", idempotency_key=key, deadline=deadline)
    client.close()  # without closing the stream first: its socket must go too, not wait for GC
    assert server.wait_idle(0.5), "client.close() left an open stream's socket open"
    return stream.result()


def input_rows() -> list[Row]:
    """Inputs that must be refused before any I/O: nothing sent, no key reserved."""
    bad = dict(error=InvalidInputError, code=P + "configuration_or_input", record=None)
    return [
        Row("ok", "chat", call=_non_latin1_session_id, **bad),
        Row("ok", "responses", call=_surrogate_session_key, **bad),
        Row("ok", "chat_stream", call=_surrogate_idempotency_key, **bad),
        Row("ok", "chat", call=_deadline_relative, **bad),
        Row("ok", "response_get", call=_deadline_infinite, **bad),
        Row("ok", "chat", call=_huge_temperature, **bad),
        Row("ok", "responses", call=_deep_input, **bad),
        Row("ok", "chat", call=_mixed_keys, **bad),
        Row("ok", "response_get", call=_invoke_surrogate, **bad),
        Row("ok", "response_delete", call=_nan_approval, error=ApprovalDeniedError, code="hermes_sdk.approval_denied",
            record=None),
        Row("ok", "response_delete", call=_nan_approval_mapping, **bad),
        Row("ok", "chat", call=_caller_session_bad_header, **bad),
    ]


# ---------------------------------------------------------------- the jobs and sessions families


JOB = "0123456789ab"


def _job_get(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.jobs.get(JOB, deadline=deadline)


def _job_pause(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.jobs.pause(JOB, idempotency_key=key, deadline=deadline)


def _job_delete(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.jobs.delete(JOB, idempotency_key=key, deadline=deadline)


def _session_get(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.sessions.get("sess-1", deadline=deadline)


def _session_update(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.sessions.update("sess-1", title="mine", idempotency_key=key, deadline=deadline)


def _session_delete(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return client.sessions.delete("sess-1", idempotency_key=key, deadline=deadline)


def _sessions_iter(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    try:
        return list(client.sessions.iter(page_size=5, deadline=deadline))
    finally:  # the second full page with nothing new ends it: two requests, not thousands
        assert len(server.requests) == 2, len(server.requests)


def _other_client(client: HermesClient, env: dict[str, str], base_url: str, key: str, deadline: float) -> Any:
    """A chat through a client built under ``env`` (proxies and CA bundles are read per origin)."""
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)
    other = HermesClient(base_url=base_url, api_key=client.endpoints[0].api_key, load_entrypoints=False,
                         idempotency_store=client.idempotency_store)
    try:
        return other.chat(prompt="hi", idempotency_key=key, deadline=deadline)
    finally:
        other.close()
        for name, value in saved.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)


def _missing_ca_bundle(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return _other_client(client, {"REQUESTS_CA_BUNDLE": "/nonexistent/hermes-ca.pem"},
                         f"https://127.0.0.1:{server.port}", key, deadline)


def _proxy_bad_port(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return _other_client(client, {"HTTP_PROXY": "http://127.0.0.1:99999", "NO_PROXY": ""}, server.base_url, key,
                         deadline)


def _socks_without_pysocks(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    return _other_client(client, {"HTTP_PROXY": "socks5://user:pw@127.0.0.1:1080", "NO_PROXY": ""},
                         server.base_url, key, deadline)


def _through_proxy(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    """The fault server is the HTTP proxy: its fault is the proxy's answer."""
    return _other_client(client, {"HTTP_PROXY": server.base_url, "NO_PROXY": ""}, "http://hermes.invalid:8642",
                         key, deadline)


def _through_connect_tunnel(client: HermesClient, key: str, deadline: float, server: FaultServer) -> Any:
    """The fault server is the HTTPS proxy: its fault is the answer to ``CONNECT``."""
    return _other_client(client, {"HTTPS_PROXY": server.base_url, "NO_PROXY": ""}, "https://hermes.invalid:8642",
                         key, deadline)


def proxy_rows() -> list[Row]:
    """A proxy is watched from connect like a server: a dripped answer or CONNECT reply is cut at the bound."""
    late = dict(error=DeadlineExceededError, code=P + "deadline_exceeded", uncertain=True)
    return [Row("drip_headers", "chat", call=_through_proxy, **late),
            Row("drip_headers", "chat", call=_through_connect_tunnel, **late),
            Row("half_open", "chat", call=_through_connect_tunnel, **late)]


def unsent_rows() -> list[Row]:
    """Failures before any socket exists: certain (nothing sent), the key given back."""
    unsent = dict(error=TransportError, code=P + "transport", record=None)
    rows = [Row("ok", "chat", call=_missing_ca_bundle, **unsent), Row("ok", "chat", call=_proxy_bad_port, **unsent)]
    if importlib.util.find_spec("socks") is None:
        rows.append(Row("ok", "chat", call=_socks_without_pysocks, **unsent))
    return rows


def family_rows() -> list[Row]:
    """Replies about another job or session (declared once per operation: ``OperationSpec.reply_id``),
    and a list that ignores ``offset``."""
    invalid = dict(error=InvalidResponseError, code=P + "invalid_response")
    return [
        Row("reply_about_another_id", "job_get", call=_job_get, record=None, **invalid),
        Row("reply_about_another_id", "job_pause", call=_job_pause, uncertain=True, **invalid),
        Row("reply_about_another_id", "job_delete", call=_job_delete, uncertain=True, **invalid),
        Row("reply_about_another_id", "session_get", call=_session_get, record=None, **invalid),
        Row("reply_about_another_id", "session_patch", call=_session_update, uncertain=True, **invalid),
        Row("reply_about_another_id", "session_delete", call=_session_delete, uncertain=True, **invalid),
        Row("repeat_page", "sessions_list", call=_sessions_iter, record=None, **invalid),
    ]


ROWS = status_rows() + framing_rows() + retry_after_rows() + body_rows() + stream_rows() + input_rows()
ROWS += family_rows() + unsent_rows() + proxy_rows()
ROWS.append(Row("keepalive_forever", "chat_stream", StreamCancelledError, P + "cancelled", uncertain=True,
                record="cancelled", call=_stream_left_open))


def _bounded(row: Row) -> Row:
    """A row states the bound its outcome needs. One whose call the SDK retries (a read that fails
    retryably) gets the time all its attempts need and is judged by how many requests the server
    saw: given DEADLINE, whether the third attempt or its backoff fit decided between the row's error
    and deadline_exceeded (retry_after_nan-response_get failed so on a busy machine). A Retry-After
    longer than the bound ends it after one. A bulk row gets the time its parsing needs, and so does
    every row whose outcome is not a deadline error."""
    if row.call is not None or row.fault in DECIDED_BY_DEADLINE:
        return row
    if row.op in READ and row.retryable:
        waits_out = isinstance(row.retry_after_ms, int) and row.retry_after_ms >= ROOMY_DEADLINE * 1000
        return attrs.evolve(row, deadline=ROOMY_DEADLINE, attempts=1 if waits_out else RETRY_MAX_ATTEMPTS)
    if row.fault in BULK_FAULTS or row.error is not DeadlineExceededError:
        # An outcome that is not the deadline's: a short bound only raced it on a busy machine
        # (json_wrong_shape-response_get ended deadline_exceeded at load 11).
        return attrs.evolve(row, deadline=ROOMY_DEADLINE)
    return row


ROWS = [_bounded(row) for row in ROWS]


UNSENT_CALLS = (_missing_ca_bundle, _proxy_bad_port, _socks_without_pysocks)


def _params() -> list[Any]:
    out = []
    for row in ROWS:
        name = row.id + (f"-{row.call.__name__.strip('_')}" if row.call else "")
        out.append(pytest.param(row, id=name))
    return out


def approve(request: Any) -> Any:
    return request.approve(approver="fault-tests", policy_decision_id="pd-faults", reason="fault table")


def _call(client: HermesClient, op: str, key: str, deadline: float) -> Any:
    """The capability's typed call; a stream is read to its end and its result returned."""
    if op == "chat":
        return client.chat(prompt="hi", idempotency_key=key, deadline=deadline)
    if op == "responses":
        return client.responses(input="hi", idempotency_key=key, deadline=deadline)
    if op == "response_get":
        return client.response_get("resp_1", idempotency_key=key, deadline=deadline)
    if op == "response_delete":
        request = client.approval_request("response_delete", {"response_id": "resp_1"}, reason="cleanup")
        decision = request.approve(approver="ops", policy_decision_id="pd-1")
        return client.response_delete("resp_1", idempotency_key=key, approval=decision, reason="cleanup",
                                      deadline=deadline)
    method = client.chat_stream if op == "chat_stream" else client.responses_stream
    kwargs = {"prompt": "hi"} if op == "chat_stream" else {"input": "hi"}
    with method(idempotency_key=key, deadline=deadline, **kwargs) as stream:
        return stream.result()


@pytest.mark.parametrize("row", _params())
def test_fault(row: Row) -> None:
    # A fault holds a connection for 2 s at most: past the deadline, so a late SDK still fails the row
    # (a row with a roomy bound: past its bound).
    with FaultServer(fault=row.fault, max_seconds=max(2.0, row.deadline + 1.0), **row.server) as server:
        client = HermesClient(base_url=server.base_url, api_key=server.api_key, load_entrypoints=False,
                              approval_provider=approve)
        key = f"key-{row.id}"
        start = time.monotonic()
        deadline = time.time() + row.deadline
        error: Optional[HermesError] = None
        value: Any = None
        with SchedulerLag() as lag:
            try:
                value = (row.call or (lambda c, k, d, s: _call(c, row.op, k, d)))(client, key, deadline, server)
            except HermesError as exc:
                error = exc
            elapsed = time.monotonic() - start
        if error is None and getattr(value, "error", None) is not None:
            error = value.error  # a stream's outcome
        record = client.records.get(capability_id("default", row.op), key)
        client.close()
        idle = server.wait_idle(1.0)

        # The outcome, exactly.
        if row.error is None:
            assert error is None, f"expected success, got {error!r}"
            if row.op in STREAMS:
                assert value.status == "completed" and value.text.startswith("ok"), value
        else:
            assert type(error) is row.error, f"expected {row.error.__name__}, got {error!r}"
            assert error.code == row.code
            assert error.retryable is row.retryable
            assert error.uncertain_outcome is row.uncertain
            if row.http_status != "any":
                assert error.http_status == row.http_status, error.to_dict()
            if row.retry_after_ms != "any":
                assert error.retry_after_ms == row.retry_after_ms
            for text in (str(error), repr(error)):
                assert server.api_key not in text and server.secret not in text
        # The idempotency record.
        if row.record is None:
            assert record is None, record
        else:
            assert record is not None and record.state == "completed", record
            assert record.result["status"] == row.record
        if row.call is not None and (row.error is InvalidInputError or row.call in UNSENT_CALLS):
            assert server.requests == [], "refused input must send nothing"
        # Time: never later than the deadline (plus slack), whatever the server does; a busy machine
        # adds its measured wake-up lag twice (the watchdog's thread, then the caller's).
        late = elapsed - row.deadline
        assert late <= SLACK + 2 * lag.worst, f"{late:.2f}s late against a {row.deadline}s deadline " \
                                             f"(the scheduler's lag was {lag.worst:.3f}s)"
        if row.attempts is not None:
            assert len(server.requests) == row.attempts, [r.path for r in server.requests]
        # No socket left open: the server saw every connection closed by the client.
        assert idle, f"{server.open_connections} connection(s) still open"
        if row.fault == "redirect_huge_body":
            assert server.bytes_sent < 16 * 1024 * 1024, server.bytes_sent  # the body was never read
        assert server.errors == []


def test_the_table_covers_every_fault_and_capability_kind() -> None:
    from hermes_sdk.testing import FAULTS

    assert len(ROWS) >= 60
    assert {row.fault for row in ROWS} == set(FAULTS)
    assert {row.op for row in ROWS} >= set(ALL_OPS)


def test_fault_server_counts_connections_and_stops_by_itself() -> None:
    with FaultServer(fault="half_open", max_seconds=0.5) as server:
        sock = __import__("socket").create_connection((server.host, server.port))
        sock.sendall(b"GET /v1/responses/x HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.1)
        assert server.open_connections == 1 and server.connections_total == 1
        assert server.wait_idle(2.0)  # max_seconds ends it
        sock.close()
        server.script("status_404_secret", "ok")
        with requests.get(server.base_url + "/v1/responses/a") as first, \
                requests.get(server.base_url + "/v1/responses/b") as second:
            assert (first.status_code, second.status_code) == (404, 200)
    with pytest.raises(KeyError):
        FaultServer(fault="no_such_fault").start()


def test_the_pytest_fixture_serves_scripted_faults(hermes_fault_server: FaultServer) -> None:
    server = hermes_fault_server
    server.drip_interval = 0.001
    server.script("retry_after_inf", "drip_json_body")
    with HermesClient(base_url=server.base_url, api_key=server.api_key, load_entrypoints=False) as client:
        with pytest.raises(RateLimitedError) as info:
            client.chat(prompt="hi")
        assert info.value.retry_after_ms == 30_000
        assert client.chat(prompt="hi").text == "ok"  # dripped quickly enough to finish
        assert client.response_get("resp_1").id == "resp_1"  # the default fault again: "ok"
    assert server.wait_idle(1.0) and len(server.requests) == 3 and server.connections_total == 3


def test_every_test_server_turns_nagle_off() -> None:
    """A reply written in pieces must not wait ~40 ms for the client's delayed ACK on a keep-alive
    connection: the emulator's handler, the fault server's connections and the live fake LLM all
    set TCP_NODELAY (benchmarks/keepalive.py measures what it saves)."""
    import importlib.util
    import socket
    from pathlib import Path

    from hermes_sdk.testing.server import HermesHandler

    assert HermesHandler.disable_nagle_algorithm is True
    spec = importlib.util.spec_from_file_location("fake_llm", Path(__file__).resolve().parents[1] / "live" /
                                                  "fake_llm.py")
    assert spec is not None and spec.loader is not None
    fake_llm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake_llm)
    assert fake_llm.FakeLLMHandler.disable_nagle_algorithm is True
    with FaultServer(fault="half_open", max_seconds=2.0) as server:
        sock = socket.create_connection((server.host, server.port))
        sock.sendall(b"GET /v1/responses/x HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.monotonic() + 10
        while not server._socks and time.monotonic() < deadline:
            time.sleep(0.01)
        with server._lock:
            accepted = list(server._socks)
        assert accepted and all(s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) for s in accepted)
        sock.close()
