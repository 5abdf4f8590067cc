"""Round 5: a failure's traceback holds no API key; close() leaves no connection open; fault rows
state the time they need; the SDK keeps no per-call memory under many threads."""

from __future__ import annotations

import gc
import os
import socket
import threading
from typing import Any, Callable, Iterator

import attrs
import pytest
from core_support import RawRequest, RawServer, chunk, free_port, json_response, sse_head

from hermes_sdk import HermesClient, HermesError, ServerError, hookimpl
from hermes_sdk.testing import HermesEmulator

KEY = "sk-test-SECRET-123456"


# --- item 5: no frame an SDK error's traceback reaches holds the key ---------------------------

def _scan(value: object, where: str, hits: list[str], seen: set[int], depth: int = 0) -> None:
    """Find KEY in ``value``: strings, bytes, repr(), and recursively dicts, sequences and attrs objects
    (what an error tracker serialises of a frame's locals, and more)."""
    if depth > 8 or id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, (str, bytes, bytearray)):
        text = value if isinstance(value, str) else bytes(value).decode("latin-1")
        if KEY in text:
            hits.append(where)
        return
    try:
        if KEY in repr(value):
            hits.append(where + " (repr)")
    except Exception:
        pass
    if isinstance(value, dict):
        for k, v in list(value.items()):
            _scan(k, f"{where} key", hits, seen, depth + 1)
            _scan(v, f"{where}[{k!r}]", hits, seen, depth + 1)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, v in enumerate(list(value)):
            _scan(v, f"{where}[{i}]", hits, seen, depth + 1)
    elif attrs.has(type(value)):
        for field in attrs.fields(type(value)):
            _scan(getattr(value, field.name, None), f"{where}.{field.name}", hits, seen, depth + 1)


def key_holders(exc: BaseException) -> list[str]:
    """Every place KEY is reachable from ``exc``: the locals of each frame of its traceback (tb_next
    chain) and of every exception chained to it (__cause__, __context__, recursively), and the
    exceptions' own args and attributes."""
    hits: list[str] = []
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        err = todo.pop()
        if id(err) in seen:
            continue
        seen.add(id(err))
        name = type(err).__name__
        _scan(err.args, f"{name}.args", hits, set())
        _scan(dict(vars(err)), f"{name}.__dict__", hits, set())
        tb = err.__traceback__
        while tb is not None:
            frame = tb.tb_frame
            for local, value in list(frame.f_locals.items()):
                _scan(value, f"{name} {frame.f_globals.get('__name__')}.{frame.f_code.co_name}:{local}", hits, set())
            tb = tb.tb_next
        todo += [e for e in (err.__cause__, err.__context__) if e is not None]
    return hits


class TracebackWalker:
    """A wrapper on both around-hooks that walks each failure it is handed, as an error tracker would."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.hits: list[str] = []

    def _walk(self, hook: str, exc: BaseException) -> None:
        self.seen.append(f"{hook}:{type(exc).__name__}")
        self.hits += [f"{hook}: {h}" for h in key_holders(exc)]

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


def _reply(data: bytes) -> Callable[[socket.socket, RawRequest, RawServer], None]:
    def handler(sock: socket.socket, request: RawRequest, server: RawServer) -> None:
        sock.sendall(data)
    return handler


def _silent(sock: socket.socket, request: RawRequest, server: RawServer) -> None:
    server.event("release").wait(10)  # never answers while the call waits


def _cut_stream(sock: socket.socket, request: RawRequest, server: RawServer) -> None:
    sock.sendall(sse_head() + chunk(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'))
    server.event("first").wait(10)  # the client has read the first event
    sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _read_stream(client: HermesClient, server: RawServer) -> None:
    with client.chat_stream(prompt="x") as stream:
        for _ in stream:
            server.event("first").set()


FAILURES: dict[str, tuple[Any, Callable[[HermesClient, Any], object], bool]] = {
    # name: (handler, or None for a refused connection; the call; whether a wrapper sees the failure)
    "connection_refused": (None, lambda c, s: c.chat(prompt="x"), True),
    "timeout": (_silent, lambda c, s: c.chat(prompt="x", timeout=0.5), True),
    "http_401": (_reply(json_response(401, b'{"error":{"message":"bad key"}}')), lambda c, s: c.chat(prompt="x"),
                 True),
    "http_500": (_reply(json_response(500, b'{"error":{"message":"boom"}}')),
                 lambda c, s: c.response_get("resp_1", timeout=30), True),
    "stream_cut": (_cut_stream, _read_stream, False),  # mid-stream: raised to the reader, after the hooks
    "decode_error": (_reply(json_response(200, b"not json {")), lambda c, s: c.chat(prompt="x"), True),
}


@pytest.fixture
def servers() -> Iterator[list[RawServer]]:
    made: list[RawServer] = []
    yield made
    for server in made:
        server.event("release").set()
        server.close()


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_no_frame_of_a_failure_holds_the_api_key(kind: str, servers: list[RawServer]) -> None:
    handler, call, hooked = FAILURES[kind]
    if handler is None:
        base_url, server = f"http://127.0.0.1:{free_port()}", None
    else:
        server = RawServer(handler)
        servers.append(server)
        base_url = server.base_url
    walker = TracebackWalker()
    with HermesClient(base_url, api_key=KEY, load_entrypoints=False, plugins=[walker], max_attempts=2) as client:
        with pytest.raises(HermesError) as info:
            call(client, server)
    if hooked:
        assert walker.seen, "the wrappers were handed no failure"
        assert any(s.startswith("hermes_http_attempt") for s in walker.seen) or kind == "decode_error"
    assert walker.hits == []
    assert key_holders(info.value) == []  # and what the caller catches (an error tracker's view)


def test_invoke_returns_an_error_without_frames(servers: list[RawServer]) -> None:
    server = RawServer(_reply(json_response(500, b'{"error":{"message":"boom"}}')))
    servers.append(server)
    with HermesClient(server.base_url, api_key=KEY, load_entrypoints=False) as client:
        result = client.invoke("cap:hermes_agent:default:chat", {"prompt": "x"})
    assert result.status == "failed" and isinstance(result.error, ServerError)
    assert key_holders(result.error) == []


# --- item 16: after client.close() no connection stays open ------------------------------------

def open_connections_to(port: int) -> int:
    """Client sockets of this host still ESTABLISHED to ``port`` (a socket the client closed is not)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[3] == "01":  # 01: ESTABLISHED
                count += 1
    return count


@pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="counts sockets through /proc/net/tcp (Linux)")
@pytest.mark.parametrize("threads", [16, 32])
def test_close_leaves_no_connection_open_after_threads_streamed(threads: int) -> None:
    # its own port: no other test's pooled connection is counted; a slot for every thread (abandoned
    # streams hold theirs: the default cap of 10 made a loaded machine's run a 429)
    emulator = HermesEmulator(max_concurrent_runs=threads).start()
    port = int(emulator.base_url.rsplit(":", 1)[1])
    client = emulator.client(load_entrypoints=False)
    abandoned: list[Any] = []  # half-read streams the caller still holds (a live response keeps its pool)
    barrier = threading.Barrier(threads)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            barrier.wait(30)
            how = ("to_the_end", "to_the_end", "abandoned", "closed_early")[i % 4]
            if how == "to_the_end":
                with client.chat_stream(prompt="hello there") as stream:
                    assert stream.result().error is None
            elif how == "abandoned":
                stream = client.chat_stream(prompt="hello there")
                next(iter(stream))
                abandoned.append(stream)
            else:
                with client.chat_stream(prompt="hello there") as stream:
                    next(iter(stream))
        except BaseException as exc:  # reported below, on the test's thread
            errors.append(exc)

    gc.disable()  # the garbage collector must not be what closes them
    try:
        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        assert errors == []
        assert open_connections_to(port) >= threads // 4  # the streams read to the end are pooled
        client.close()
        # Closing a socket takes it out of ESTABLISHED at once; nothing to wait for.
        assert open_connections_to(port) == 0
        assert all(stream.closed for stream in abandoned)
    finally:
        gc.enable()
        client.close()
        emulator.stop()
