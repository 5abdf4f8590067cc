"""A family is a unit: the toy family of ``toy_family.py`` (three operations, one streamed) is added by
that module alone and one registration (a plugin given to the client), and works through its typed
resource (``client.resource(Toys)``), ``invoke()`` and ``capabilities()``; other clients do not see it."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest
import toy_family
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_sdk import HermesClient, HermesError


class ToyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    seen: list[str] = []
    renames = 0

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.seen.append(self.path)
        toy_id = self.path.split("/toy/", 1)[1]
        from urllib.parse import unquote
        body = json.dumps({"id": unquote(toy_id), "name": "robot", "extra": 1}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        length = int(self.headers["Content-Length"])
        payload = json.loads(self.rfile.read(length))
        if self.path != "/toy/stream":  # toy_rename
            type(self).renames += 1
            from urllib.parse import unquote
            body = json.dumps({"id": unquote(self.path.split("/toy/", 1)[1]), "name": payload["name"]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        topic = payload["topic"]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for event, data in (("toy.delta", {"delta": f"{topic} "}), ("toy.noise", {"x": 1}),
                            ("toy.delta", {"delta": "done"}), ("toy.done", {"ok": True})):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


@pytest.fixture()
def toy_client() -> Iterator[HermesClient]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ToyHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with HermesClient(f"http://127.0.0.1:{server.server_address[1]}", "toy-key", load_entrypoints=False,
                          plugins=[toy_family.ToyPlugin()]) as c:
            yield c
    finally:
        server.shutdown()
        server.server_close()


def test_the_toy_family_works_through_its_resource(toy_client: HermesClient) -> None:
    toys = toy_client.resource(toy_family.Toys)
    assert toys is toy_client.resource(toy_family.Toys)  # built once per client
    toy = toys.get("a b/c")
    assert toy.id == "a b/c" and toy.name == "robot" and toy.raw["extra"] == 1
    assert ToyHandler.seen[-1] == "/toy/a%20b%2Fc"  # one path segment
    renamed = toys.rename("a b/c", "bear", idempotency_key="rename-1")
    assert renamed.name == "bear" and toys.rename("a b/c", "bear", idempotency_key="rename-1") == renamed
    assert ToyHandler.renames == 1  # the second was replayed from the record
    stream = toys.stream("hello")
    assert [t.delta for t in stream.typed()] == ["hello ", "done"]
    result = stream.result()
    assert result.status == "completed" and result.text == "hello done" and result.final == {"ok": True}


def test_the_toy_family_is_listed_and_invocable(toy_client: HermesClient) -> None:
    names = {c["capability_id"].rsplit(":", 1)[1] for c in toy_client.capabilities()}
    assert {"toy_get", "toy_rename", "toy_stream"} <= names
    ok = toy_client.invoke("cap:hermes_agent:default:toy_stream", {"topic": "t"})
    assert ok.status == "completed" and ok.output["text"] == "t done"
    refused = toy_client.invoke("cap:hermes_agent:default:toy_stream", {"topic": ""})
    assert refused.status == "failed" and refused.error.code.endswith("configuration_or_input")


def test_the_family_belongs_to_the_client_that_was_given_it(toy_client: HermesClient) -> None:
    with HermesClient(toy_client.endpoints[0].base_url, "toy-key", load_entrypoints=False) as plain:
        assert not any(c["capability_id"].endswith(":toy_get") for c in plain.capabilities())
        with pytest.raises(KeyError):
            plain.resource(toy_family.Toys)
        missing = plain.invoke("cap:hermes_agent:default:toy_get", {"toy_id": "a"})
        assert missing.status == "failed" and "toy_get" in missing.error.message
    with pytest.raises(AttributeError):
        toy_client.toys  # noqa: B018  (a family is reached through client.resource, not a dynamic attribute)


def test_a_family_registered_twice_is_refused_at_construction(toy_client: HermesClient) -> None:
    from hermes_sdk import PluginError

    with pytest.raises(PluginError, match="already registered|two families"):
        HermesClient(toy_client.endpoints[0].base_url, "toy-key", load_entrypoints=False,
                     plugins=[toy_family.ToyPlugin(), toy_family.ToyPlugin()])


# ------------------------------------------------------------------ its declared input, as a built-in's

_TOY_BASES = {"toy_get": {"toy_id": "t1"}, "toy_rename": {"toy_id": "t1", "name": "n"}, "toy_stream": {"topic": "x"}}


def _toy_schemas(client: HermesClient) -> dict[str, Any]:
    return {d["operation"]: d["input_schema"] for d in client.capabilities() if d["operation"] in _TOY_BASES}


def test_the_toy_family_publishes_its_declared_input(toy_client: HermesClient) -> None:
    from test_input_schema import meta_check

    schemas = _toy_schemas(toy_client)
    assert set(schemas) == set(_TOY_BASES)
    for operation, schema in schemas.items():
        meta_check(schema, operation)
    assert schemas["toy_rename"]["required"] == ["toy_id", "name"]
    with pytest.raises(HermesError) as refused:  # refused by the kernel, before the builder, with the field
        toy_client.resource(toy_family.Toys).rename("t1", "")
    assert refused.value.details["field"] == "name"


@pytest.mark.parametrize("operation", sorted(_TOY_BASES))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_toy_inputs_built_from_its_schema_are_accepted_and_a_broken_field_is_named(operation: str,
                                                                                     data: st.DataObject) -> None:
    from test_input_schema import _WRONG, _accepts_type, draw_input

    spec = {s.name: s for s in (toy_family.TOY_GET, toy_family.TOY_RENAME, toy_family.TOY_STREAM)}[operation]
    schema = spec.input_schema
    given_input = draw_input(data, schema, _TOY_BASES[operation])
    spec.request(given_input)  # accepted
    name = data.draw(st.sampled_from(sorted(set(schema["properties"]) - {"idempotency_key", "_aip"})))
    wrong = next(v for v in _WRONG if not _accepts_type(schema["properties"][name], v))
    with pytest.raises(HermesError) as refused:
        spec.request({**given_input, name: wrong})
    assert refused.value.details["field"] == name
