"""Round 6 (issue 38, items 11-19): what people and files are shown, typed and bounded."""

from __future__ import annotations

import collections
import types
from typing import Any, Callable, Iterator

import pytest
from core_support import RawRequest, RawServer, free_port, json_response

from hermes_sdk import HermesClient, HermesError, hookimpl

KEY = "sk-round6-Zq8Wv3Lk5Jt1Mx7Pb4"


# --- item 17: the key is unreachable from a failure a hook wrapper is handed -----------------------

_SKIP = (type, types.ModuleType, types.CodeType)


def _edges(value: object) -> Iterator[tuple[str, object]]:
    """What a hook wrapper (or an error tracker) can follow from ``value`` without module globals or
    the frames still running (``f_back``, ``__globals__``): a traceback's frames and their locals,
    exceptions' chains, containers, instance attributes and slots, closures and bound methods."""
    if isinstance(value, BaseException):
        yield from (("__traceback__", value.__traceback__), ("__cause__", value.__cause__),
                    ("__context__", value.__context__), ("args", value.args))
    if isinstance(value, types.TracebackType):
        yield from (("tb_frame", value.tb_frame), ("tb_next", value.tb_next))
        return
    if isinstance(value, types.FrameType):
        if value.f_globals.get("__name__") == __name__:
            return  # the test's own frames (they hold the client) are not the SDK's to hide
        yield from ((f"f_locals[{k!r}]", v) for k, v in list(value.f_locals.items()))
        return
    if isinstance(value, dict):
        for k, v in list(value.items()):
            yield f"[{k!r}]", v
            yield "key", k
        return
    if isinstance(value, (list, tuple, set, frozenset, collections.deque)):
        yield from ((f"[{i}]", v) for i, v in enumerate(list(value)))
        return
    if isinstance(value, types.FunctionType):
        yield from ((f"__closure__[{i}]", c.cell_contents) for i, c in enumerate(value.__closure__ or ())
                    if _filled(c))
        yield from (("__defaults__", value.__defaults__), ("__kwdefaults__", value.__kwdefaults__),
                    ("__dict__", value.__dict__))
        return
    if isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        yield "__self__", getattr(value, "__self__", None)
        yield "__func__", getattr(value, "__func__", None)
        return
    if isinstance(value, (types.GeneratorType, types.CoroutineType)):
        frame = value.gi_frame if isinstance(value, types.GeneratorType) else value.cr_frame
        yield "frame", frame
        return
    if hasattr(value, "func") and hasattr(value, "args") and callable(value):  # functools.partial
        yield from (("func", getattr(value, "func")), ("args", getattr(value, "args", ())),
                    ("keywords", getattr(value, "keywords", {})))
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        yield from ((f".{k}", v) for k, v in list(attributes.items()))
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and hasattr(value, name):
                yield f".{name}", getattr(value, name)


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def paths_to(secret: str, start: object, limit: int = 200_000, known: tuple[object, ...] = ()) -> list[str]:
    """Breadth-first from ``start``, bounded: every path to a text holding ``secret`` (not through
    ``known``: what the walker holds anyway, e.g. the caller's own client)."""
    found: list[str] = []
    seen = {id(start)} | {id(k) for k in known}
    queue: collections.deque[tuple[str, object]] = collections.deque([("error", start)])
    while queue and len(seen) < limit:
        path, value = queue.popleft()
        if isinstance(value, (str, bytes, bytearray)):
            text = value if isinstance(value, str) else bytes(value).decode("latin-1")
            if secret in text:
                found.append(path)
            continue
        if value is None or isinstance(value, (int, float, complex) + _SKIP):
            continue
        try:
            edges = list(_edges(value))
        except Exception:  # an object whose attributes cannot be read is not a way to the key
            continue
        for name, child in edges:
            if id(child) not in seen:
                seen.add(id(child))
                queue.append((path + name, child))
    assert len(seen) < limit, "the walk was cut short: raise the bound"
    return found


class Collector:
    """A wrapper on both around-hooks keeping every failure it is handed."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, BaseException]] = []
        self.paths: list[str] = []

    def _walk(self, hook: str, exc: BaseException) -> None:
        # Walked as it is handed over (its traceback grows as it leaves through the caller's frames).
        self.errors.append((hook, exc))
        self.paths += [f"{hook}: {path}" for path in paths_to(KEY, exc)]

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        try:
            return (yield)
        except BaseException as exc:
            self._walk("hermes_call", exc)
            raise

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        try:
            return (yield)
        except BaseException as exc:
            self._walk("hermes_http_attempt", exc)
            raise


def _reply(data: bytes) -> Callable[[Any, RawRequest, RawServer], None]:
    def handler(sock: Any, request: RawRequest, server: RawServer) -> None:
        sock.sendall(data)
    return handler


FAILURES: dict[str, Any] = {
    "connection_refused": None,
    "http_401": _reply(json_response(401, b'{"error":{"message":"bad key"}}')),
    "http_500": _reply(json_response(500, b'{"error":{"message":"boom"}}')),
    "decode_error": _reply(json_response(200, b"not json {")),
}


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_no_way_from_a_hooks_failure_to_the_key(kind: str, raw_server: Any) -> None:
    handler = FAILURES[kind]
    base_url = f"http://127.0.0.1:{free_port()}" if handler is None else raw_server(handler).base_url
    collector = Collector()
    with HermesClient(base_url, api_key=KEY, load_entrypoints=False, plugins=[collector],
                      max_attempts=1) as client:
        with pytest.raises(HermesError) as info:
            client.chat(prompt="x")
        hooks = [hook for hook, _ in collector.errors]
        assert "hermes_call" in hooks
        assert collector.paths == []
        # What the caller catches leads to no key but through the client the caller holds anyway
        # (the ``self`` of the public methods it is calling: the client, its resources, its executor).
        assert paths_to(KEY, info.value, known=made_of(client)) == []


def made_of(client: HermesClient) -> tuple[object, ...]:
    """The client and the objects it is made of (its attributes' values, and theirs)."""
    parts: list[object] = [client]
    for value in list(vars(client).values()):
        parts.append(value)
        parts += list(getattr(value, "__dict__", {}).values())
    return tuple(parts)
