"""The public family API the built-in families use, given to a third-party family the same way (issue 31):
an ``admit`` rule sees an AdmitContext (never the internal call or the credential), a family declares
per-client state, a composite operation gets a CompositeContext, and the idempotency key leaves the
input in one place."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, Mapping

import attrs
import pytest

from hermes_sdk import HermesClient, InvalidInputError, RunNotFoundError
from hermes_sdk.plugin import (
    ActionResult,
    AdmitContext,
    CallOptions,
    ClientView,
    CompositeContext,
    Contract,
    DecodeContext,
    Family,
    FamilyExecutor,
    OperationSpec,
    RecordsView,
    RequestParts,
    hookimpl,
)
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.types import RunStatus


@attrs.define
class Counter:
    """The family's per-client state."""

    admitted: list[AdmitContext["Counter"]] = attrs.field(factory=list)
    refused: set[str] = attrs.field(factory=set)


def _contract(operation: str, path: str) -> Contract:
    return Contract(operation=operation, method="POST", path=path, risk="low", stability="experimental",
                    requires_approval=False, key_requirement="optional", key_ttl_ms=None, retry_safe=False,
                    streaming=False, side_effects=("write",), data={"classification": "internal"},
                    expected_latency_ms=100, timeout_ms=10_000)


def _admit(ctx: AdmitContext[Counter]) -> None:
    ctx.state.admitted.append(ctx)
    if ctx.input.get("name") in ctx.state.refused:
        raise InvalidInputError("refused by the family's state", details={"field": "name", "sent": False})


def _build(operation: str, data: Mapping[str, object]) -> RequestParts:
    if set(data) - {"name"}:
        raise InvalidInputError(f"unknown fields {sorted(set(data) - {'name'})}", details={"field": "input"})
    return RequestParts({"Content-Type": "application/json"}, json.dumps(dict(data)).encode())


def _decode(data: object, ctx: DecodeContext) -> object:
    return data


POKE: OperationSpec[object] = OperationSpec(_contract("poke", "/poke"), _build, decode=_decode, admit=_admit)


def _twice(ctx: CompositeContext) -> ActionResult:
    first = ctx.request(POKE, {"name": "one"})  # under the operation's own options (its key, its action)
    second = ctx.request(POKE, {"name": "two"}, CallOptions(endpoint=ctx.endpoint_id))
    state = ctx.state(Counter)
    return ActionResult(action_id=str(ctx.options.action_id),
                        capability_id=f"cap:hermes_agent:{ctx.endpoint_id}:twice",
                        status="completed", output={"replies": [first, second], "admitted": len(state.admitted),
                                                    "input": dict(ctx.input), "key": ctx.options.idempotency_key},
                        idempotency_key=ctx.options.idempotency_key)


TWICE: OperationSpec[ActionResult] = OperationSpec(_contract("twice", "/poke"), _build, composite=_twice)


class Pokes:
    def __init__(self, executor: FamilyExecutor) -> None:
        self._executor = executor

    @property
    def state(self) -> Counter:
        return self._executor.state(Counter)


FAMILY: Family[Pokes] = Family("pokes", (POKE, TWICE), Pokes, state=Counter)


class PokePlugin:
    @hookimpl
    def hermes_families(self, client: ClientView) -> tuple[Family[Pokes]]:
        return (FAMILY,)


class _Handler(BaseHTTPRequestHandler):
    seen: list[tuple[str, dict[str, str]]] = []

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.seen.append((body.decode(), dict(self.headers)))
        reply = json.dumps({"ok": json.loads(body)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture()
def server() -> Iterator[tuple[str, list[tuple[str, dict[str, str]]]]]:
    seen: list[tuple[str, dict[str, str]]] = []
    handler = type("Handler", (_Handler,), {"seen": seen})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_an_admit_rule_sees_its_family_state_and_the_input_without_the_key_or_credential(server: tuple) -> None:
    url, seen = server
    with HermesClient(url, "sk-secret", plugins=[PokePlugin()], load_entrypoints=False) as client:
        state = client.resource(Pokes).state
        assert client.with_options(timeout=5).resource(Pokes).state is state  # one state per client, shared
        result = client.invoke("cap:hermes_agent:default:poke", {"name": "a", "idempotency_key": "k-1"})
        assert result.status == "completed", result.error
        (ctx,) = state.admitted
        assert isinstance(ctx, AdmitContext) and ctx.state is state and isinstance(ctx.records, RecordsView)
        assert dict(ctx.input) == {"name": "a"} and ctx.operation == "poke" and ctx.endpoint_id == "default"
        assert ctx.base_url == url and not ctx.allow_permanent_approvals
        assert "sk-secret" not in repr(attrs.asdict(ctx, recurse=False))
        assert ctx.records.get("cap:hermes_agent:default:poke", "k-1") is not None  # the store as it is now
        body, headers = seen[0]
        assert json.loads(body) == {"name": "a"} and headers["Idempotency-Key"] == "k-1"
        state.refused.add("b")
        refused = client.invoke("cap:hermes_agent:default:poke", {"name": "b"})
        assert refused.status == "failed" and refused.error is not None and refused.error.details["sent"] is False
        assert len(seen) == 1  # nothing sent for the refused call
    with HermesClient(url, "k", plugins=[PokePlugin()], load_entrypoints=False) as other:
        assert other.resource(Pokes).state is not state  # another client, its own state


def test_a_composite_operation_gets_a_context_not_the_executor(server: tuple) -> None:
    url, seen = server
    with HermesClient(url, "k", plugins=[PokePlugin()], load_entrypoints=False) as client:
        result = client.invoke("cap:hermes_agent:default:twice", {"name": "x", "idempotency_key": "k-2"},
                               action_id="act_composite")
        assert result.status == "completed" and result.action_id == "act_composite"
        output = result.output
        assert isinstance(output, dict)
        assert output["input"] == {"name": "x"} and output["key"] == "k-2"  # the key taken off once, by invoke()
        assert output["admitted"] == 2 and [json.loads(b) for b, _ in seen] == [{"name": "one"}, {"name": "two"}]
        assert seen[0][1]["Idempotency-Key"] == "k-2" and "Idempotency-Key" not in seen[1][1]
        public = {name for name in dir(CompositeContext) if not name.startswith("_")}
        assert not {"executor", "runtime", "endpoint", "api_key"} & public


def test_a_third_party_run_stop_written_on_public_imports_behaves_as_the_builtin(
        hermes_emulator: HermesEmulator) -> None:
    """Issue 40: ``run_stop`` re-implemented in ``toy_run_stop.py`` (public imports only: the layout
    walk below proves it) sends the built-in's request, reads the same RunStatus, marks the run stopped
    in its own state first, and refuses and fails as the built-in does."""
    import toy_run_stop
    from test_architecture import imports, modules

    known = modules()
    path = Path(toy_run_stop.__file__)
    found = imports("toy_run_stop", path, {**known, "toy_run_stop": path}, type_checking=True)
    assert found <= {"hermes_sdk.errors", "hermes_sdk.plugin", "hermes_sdk.types"}, found

    release = threading.Event()  # the model answers when released: the runs are running while stopped
    hermes_emulator.script(lambda info: "done" if release.wait(60) else "timed out")
    with hermes_emulator.client(load_entrypoints=False, plugins=[toy_run_stop.ToyRunsPlugin()]) as client:
        toy = client.resource(toy_run_stop.ToyRuns)
        outcomes: list[tuple[object, ...]] = []
        for stop, stopped in ((client.runs.stop, client.runs.stopped), (toy.stop, toy.stopped)):
            run = client.runs.start("sleep 30", idempotency_key=f"k-{len(outcomes)}")
            before = len(hermes_emulator.requests_seen)
            status = stop(run.id)
            (sent,) = [r for r in hermes_emulator.requests_seen[before:] if r.path.endswith("/stop")]
            outcomes.append((type(status), status.run_id == run.id, status.status, sent.method,
                             sent.path.replace(run.id, "<id>"), sent.body, stopped(run.id)))
        release.set()
        assert outcomes[0] == outcomes[1] == (RunStatus, True, outcomes[0][2], "POST", "/v1/runs/<id>/stop", None,
                                              True), outcomes
        for bad in ({"run_id": ""}, {"run_id": "a/b"}, {"run_id": "r", "x": 1}):
            errors = []
            for operation in ("run_stop", "toy_run_stop"):
                result = client.invoke(f"cap:hermes_agent:default:{operation}", bad)
                assert result.error is not None
                errors.append((type(result.error), result.error.details.get("field"), result.error.message))
            assert errors[0] == errors[1], errors
        missing = []
        for stop in (client.runs.stop, toy.stop):
            with pytest.raises(RunNotFoundError) as caught:
                stop("run_nonexistent")
            missing.append((caught.value.http_status, caught.value.code, caught.value.message))
        assert missing[0] == missing[1], missing
        assert toy.steers() == client.server_features().run_steer
