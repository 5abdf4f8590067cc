"""Each stage of the call path on its own, without a socket; and a seventh operation added by a spec only."""

from __future__ import annotations

import io
import time
from typing import Any, Iterator, Optional

import attrs
import pytest
import requests
import urllib3

from hermes_sdk import (
    ApprovalDeniedError,
    ApprovalRequiredError,
    DeadlineExceededError,
    Endpoint,
    ExecutionContext,
    HermesClient,
    IdempotencyConflictError,
    InvalidInputError,
    InvalidResponseError,
    MemoryStore,
    OutcomeUnknownError,
    PluginError,
    TenantMismatchError,
    hookimpl,
)
from hermes_sdk._app.builtin import BUILTIN_SPECS as SPECS
from hermes_sdk._app.builtin import FAMILIES
from hermes_sdk._core._plugin_manager import build_manager
from hermes_sdk._core.call import Call
from hermes_sdk._core.executor import Executor
from hermes_sdk._core.families import Family, Registry
from hermes_sdk._core.models import ActionResult
from hermes_sdk._core.options import CallOptions
from hermes_sdk._core.redaction import Redactor
from hermes_sdk._core.runtime import Runtime
from hermes_sdk._core.stages import approval, execute, idempotency, observe, policy
from hermes_sdk.plugin import ClientView, Contract, OperationSpec, RequestParts, register, unregister
from hermes_sdk.testing import HermesEmulator


class FakeTransport:
    """Answers every request from a list of (status, headers, body) without a socket."""

    def __init__(self, *replies: tuple[int, dict[str, str], bytes]) -> None:
        self.replies = list(replies)
        self.sent: list[tuple[str, str, dict[str, str], Optional[bytes]]] = []

    def send(self, endpoint: Endpoint, method: str, path: str, headers: Any, body: Optional[bytes],
             timeout: float, connect_timeout: float = 10.0) -> requests.Response:
        self.sent.append((method, path, dict(headers), body))
        status, head, data = self.replies.pop(0)
        response = requests.Response()
        response.status_code = status
        response.headers = requests.structures.CaseInsensitiveDict(head)
        response.raw = urllib3.HTTPResponse(body=io.BytesIO(data), headers=head, status=status,
                                            preload_content=False)
        return response

    def check_session_headers(self) -> None:
        pass

    def close(self) -> None:
        pass


def make_call(operation: str = "chat", input: Optional[dict[str, Any]] = None, *, key: Optional[str] = None,
              tenant: Optional[str] = None, context: Optional[ExecutionContext] = None,
              deadline: Optional[float] = None, provider: Any = None, approval_given: Any = None,
              transport: Any = None, store: Any = None, plugins: tuple[Any, ...] = (),
              strict: bool = False) -> Call:
    spec = SPECS[operation]
    data = input if input is not None else {"prompt": "hello"}
    rt = Runtime(pm=build_manager(plugins, load_entrypoints=False), store=store or MemoryStore(),
                 transport=transport or FakeTransport(), redactor=Redactor(), approval_provider=provider,
                 strict_idempotency=strict, registry=Registry(FAMILIES))
    endpoint = Endpoint("default", "http://127.0.0.1:9", "secret-key-123", tenant_id=tenant)
    call = Executor({"default": endpoint}, None, rt).build(spec, endpoint, data, CallOptions(
        idempotency_key=key, action_id="act_1", context=context, approval=approval_given))
    call.deadline = deadline  # as given (a past one too), for the policy stage to judge
    return call


DELETE_INPUT = {"response_id": "resp_1"}


def approver(request: Any) -> Any:
    return request.approve(approver="ops", policy_decision_id="pd-1", reason="cleanup")


# ---------------------------------------------------------------------------- policy


def test_policy_builds_headers_with_the_callers_key_and_context() -> None:
    call = make_call(key="k-1", context=ExecutionContext(principal_id="p", trace_id="t"), deadline=time.time() + 60,
                     input={"prompt": "hi", "session_id": "s-1"})
    policy.check(call)
    h = call.headers
    assert h["Authorization"] == "Bearer secret-key-123" and h["Idempotency-Key"] == "k-1"
    assert h["Accept"] == "application/json" and h["X-Hermes-Session-Id"] == "s-1"
    assert h["X-AIP-Principal-Id"] == "p" and "X-AIP-Deadline-Unix-Ms" in h


def test_policy_refuses_tenant_key_and_deadline() -> None:
    with pytest.raises(TenantMismatchError):
        policy.check(make_call(tenant="t-a", context=ExecutionContext(tenant_id="t-b")))
    with pytest.raises(InvalidInputError) as info:
        policy.check(make_call("response_delete", DELETE_INPUT))
    assert info.value.details["field"] == "idempotency_key"
    with pytest.raises(DeadlineExceededError) as late:
        policy.check(make_call(deadline=time.time() - 1))
    assert late.value.details["sent"] is False


def test_policy_stream_accepts_event_stream() -> None:
    call = make_call("chat_stream", {"prompt": "x"})
    policy.check(call)
    assert call.headers["Accept"] == "text/event-stream"


# ---------------------------------------------------------------------------- approval


def test_approval_is_skipped_for_ungated_operations() -> None:
    call = make_call()
    approval.approve(call)
    assert call.decision is None


def test_approval_required_names_the_fix() -> None:
    with pytest.raises(ApprovalRequiredError) as info:
        approval.approve(make_call("response_delete", DELETE_INPUT, key="k"))
    text = str(info.value)
    assert "approval_request" in text and "approval_provider" in text and "--yes" in text
    assert len(info.value.details["input_hash"]) == 64


def test_approval_from_provider_is_bound_and_kept_as_evidence() -> None:
    call = make_call("response_delete", DELETE_INPUT, key="k", provider=approver)
    approval.approve(call)
    assert call.decision is not None and call.decision.decision == "approved"
    assert call.decision.input_snapshot is not None


def test_approval_decision_for_another_input_is_denied() -> None:
    other = make_call("response_delete", {"response_id": "resp_other"}, key="k", provider=approver)
    approval.approve(other)
    with pytest.raises(ApprovalDeniedError):
        approval.approve(make_call("response_delete", DELETE_INPUT, key="k", approval_given=other.decision))


def test_failing_provider_is_a_plugin_error() -> None:
    def broken(request: Any) -> Any:
        raise RuntimeError("down")

    with pytest.raises(PluginError):
        approval.approve(make_call("response_delete", DELETE_INPUT, key="k", provider=broken))


# ---------------------------------------------------------------------------- idempotency


def test_begin_reserves_then_replays_then_refuses_pending() -> None:
    store = MemoryStore()
    first = make_call(key="k", store=store)
    assert idempotency.begin(first) is None and first.record_key == "k"
    assert store.get(first.capability_id, "k").state == "pending"
    with pytest.raises(OutcomeUnknownError):
        idempotency.begin(make_call(key="k", store=store))
    done = ActionResult(action_id="act_1", capability_id=first.capability_id, status="completed", output={"a": 1})
    idempotency.finish(first, done)
    replay = idempotency.begin(make_call(key="k", store=store))
    assert replay is not None and replay.replayed and replay.output == {"a": 1}


def test_begin_strict_refuses_another_input() -> None:
    store = MemoryStore()
    first = make_call(key="k", store=store)
    idempotency.begin(first)
    idempotency.finish(first, ActionResult(action_id="a", capability_id=first.capability_id, status="completed"))
    with pytest.raises(IdempotencyConflictError):
        idempotency.begin(make_call(input={"prompt": "other"}, key="k", store=store, strict=True))


def test_finish_gives_an_unsent_failure_its_key_back() -> None:
    store = MemoryStore()
    call = make_call(key="k", store=store)
    idempotency.begin(call)
    failed = ActionResult(action_id="a", capability_id=call.capability_id, status="failed")
    idempotency.finish(call, failed, unsent=True)
    assert store.get(call.capability_id, "k") is None


def test_recorded_reads_without_reserving() -> None:
    store = MemoryStore()
    call = make_call("response_delete", DELETE_INPUT, key="k", store=store)
    assert idempotency.recorded(call) is None and store.get(call.capability_id, "k") is None


# ---------------------------------------------------------------------------- execute


CHAT_JSON = (b'{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"hermes-agent","choices":'
             b'[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":null}')


def test_execute_decodes_and_sets_the_typed_value() -> None:
    transport = FakeTransport((200, {"Content-Type": "application/json", "X-Hermes-Session-Id": "s"}, CHAT_JSON))
    call = make_call(transport=transport)
    policy.check(call)
    result = execute.execute(call)
    assert result.status == "completed" and result.http_status == 200 and result.session_id == "s"
    assert call.value.text == "hi" and call.value.action_id == "act_1" and call.executed is False
    assert transport.sent[0][:2] == ("POST", "/v1/chat/completions")
    assert call.attributes["attempts"] == 1 and call.attributes["http_status"] == 200


def test_execute_bad_json_is_invalid_response_and_uncertain_for_a_model_call() -> None:
    call = make_call(transport=FakeTransport((200, {}, b"<html>")))
    policy.check(call)
    with pytest.raises(InvalidResponseError) as info:
        execute.execute(call)
    assert info.value.uncertain_outcome is True and info.value.http_status == 200


def test_execute_retries_only_retry_safe_operations() -> None:
    fail = (503, {"Content-Type": "application/json", "Retry-After": "0"}, b'{"error":{"message":"busy"}}')
    stored = (b'{"id":"resp_1","object":"response","status":"completed","output":[],"created_at":1,'
              b'"model":"m","usage":null}')
    get = make_call("response_get", {"response_id": "resp_1"},
                    transport=FakeTransport(fail, (200, {"Content-Type": "application/json"}, stored)))
    policy.check(get)
    assert execute.execute(get).status == "completed" and get.attributes["attempts"] == 2
    chat = make_call(transport=FakeTransport(fail, fail))
    policy.check(chat)
    with pytest.raises(Exception) as info:
        execute.execute(chat)
    assert info.value.uncertain_outcome is True and chat.attributes["attempts"] == 1


# ---------------------------------------------------------------------------- observe


class Observer:
    def __init__(self) -> None:
        self.results: list[dict[str, Any]] = []

    @hookimpl
    def hermes_call_result(self, call: Any, result: dict[str, Any]) -> None:
        self.results.append(result)


def test_observe_hands_observers_a_redacted_result() -> None:
    seen = Observer()
    call = make_call(plugins=(seen,))
    result = ActionResult(action_id="act_1", capability_id=call.capability_id, status="completed",
                          output={"choices": [{"message": {"content": "the secret answer"}}]})
    observe.observe(call, result)
    assert seen.results and seen.results[0]["status"] == "completed"
    assert "the secret answer" not in repr(seen.results)


def test_observer_wrappers_are_refused_at_registration() -> None:
    class Wrapping:
        @hookimpl(wrapper=True)
        def hermes_call_result(self, call: Any, result: Any) -> Iterator[None]:
            yield

    with pytest.raises(PluginError) as info:
        build_manager([Wrapping()], load_entrypoints=False)
    assert info.value.details["hook"] == "hermes_call_result"


# ---------------------------------------------------------------------------- a seventh operation


def _health_parts(operation: str, input: Any) -> RequestParts:
    if set(input) - {"probe"}:
        raise InvalidInputError("health_probe takes only 'probe'", details={"field": "input"})
    return RequestParts({})


def _probe_spec() -> OperationSpec[dict[str, Any]]:
    contract = attrs.evolve(SPECS["response_get"].contract, operation="health_probe", path="/health",
                            stability="experimental")
    assert isinstance(contract, Contract)
    return OperationSpec(contract, _health_parts, decode=lambda data, ctx: data)


class ProbeFamily:
    @hookimpl
    def hermes_families(self, client: ClientView) -> tuple[Family[None]]:
        return (Family("probe", (_probe_spec(),)),)


def test_a_seventh_operation_is_one_registered_spec(hermes_emulator: HermesEmulator) -> None:
    with hermes_emulator.client(load_entrypoints=False, plugins=[ProbeFamily()]) as client:
        cap = "cap:hermes_agent:default:health_probe"
        assert cap in [d["capability_id"] for d in client.capabilities()]
        result = client.invoke(cap, {})
        assert result.status == "completed" and result.output["status"] == "ok"
        refused = client.invoke(cap, {"unknown": 1})
        assert refused.status == "failed" and refused.error.code.endswith("configuration_or_input")
        keyed = client.invoke(cap, {}, idempotency_key="probe-1")
        again = client.invoke(cap, {}, idempotency_key="probe-1")
        assert keyed.status == again.status == "completed" and again.replayed
    with hermes_emulator.client(load_entrypoints=False) as other:  # the family is the first client's only
        assert "health_probe" not in {d["operation"] for d in other.capabilities()}


def test_process_wide_registration_still_works_for_one_release(hermes_emulator: HermesEmulator) -> None:
    with pytest.warns(DeprecationWarning, match="hermes_families"):
        register(_probe_spec())
    try:
        with hermes_emulator.client(load_entrypoints=False) as client:
            assert client.invoke("cap:hermes_agent:default:health_probe", {}).status == "completed"
    finally:
        unregister("health_probe")
    with hermes_emulator.client(load_entrypoints=False) as client:
        assert "health_probe" not in {d["operation"] for d in client.capabilities()}


def test_client_methods_show_a_readable_required_default() -> None:
    import inspect

    sig = inspect.signature(HermesClient.response_delete)
    assert repr(sig.parameters["idempotency_key"].default) == "<required>"
