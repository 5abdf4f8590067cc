"""Forked workers (gunicorn --preload, Celery prefork, multiprocessing fork): a client that made
calls, streamed and ran before the fork works in every child, and the parent's keeps working.

Every child is a real ``os.fork()`` (or a multiprocessing "fork" process) talking to the emulator
over loopback; each is reaped with a bounded wait and killed by its pid if it overstays.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any, Callable

import pytest
from core_support import wait_for

from hermes_sdk import DeadlineExceededError, HermesClient, InvalidInputError
from hermes_sdk._core.capabilities import capability_id
from hermes_sdk._core.deadline import WATCHDOG
from hermes_sdk._core.idempotency import SQLiteStore
from hermes_sdk._families.runs import RunsState
from hermes_sdk.testing import HermesEmulator

pytestmark = [
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    # Python 3.12+ warns about fork() in a process with threads (the emulator's): that is the point.
    pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning"),
]

CHILDREN = 4
# A guard against a hang, not a bound: past the children's own 60 s deadline, so a child that
# hung on an inherited socket fails by its exit code, however busy the machine.
CHILD_BUDGET = 90.0


def _reap(pids: list[int], budget: float = CHILD_BUDGET) -> dict[int, int]:
    """Exit codes by pid; a child still running after ``budget`` is killed (by its pid) and fails."""
    codes: dict[int, int] = {}
    until = time.monotonic() + budget
    while len(codes) < len(pids) and time.monotonic() < until:
        for pid in pids:
            if pid not in codes:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    codes[pid] = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") \
                        else status >> 8
        time.sleep(0.01)
    stragglers = [pid for pid in pids if pid not in codes]
    for pid in stragglers:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert not stragglers, f"children still running after {budget} s (killed): {stragglers}"
    return codes


def _fork(work: Callable[[], None]) -> int:
    """A child running ``work``: exit 0 if it returns, 1 (traceback on stderr) if it raises."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            work()
            code = 0
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return pid


def _child_calls(client: HermesClient, n: int, parent_stream: Any = None) -> None:
    """What a worker does: plain calls and a stream, concurrently on two threads of the child."""
    errors: list[BaseException] = []

    def stream_in_thread() -> None:
        try:
            with client.chat_stream(prompt=f"child-{n}-stream") as stream:
                result = stream.result()
            assert result.status == "completed" and result.text == f"ECHO: child-{n}-stream", result
        except BaseException as exc:
            errors.append(exc)

    streamer = threading.Thread(target=stream_in_thread)
    streamer.start()
    for i in range(3):
        assert client.chat(prompt=f"child-{n}-{i}", timeout=5).text == f"ECHO: child-{n}-{i}"
    # An idempotent call goes through the store (its lock) and the watchdog (its thread).
    assert client.chat(prompt=f"child-{n}-keyed", idempotency_key=f"fork-{os.getpid()}",
                       timeout=5).text == f"ECHO: child-{n}-keyed"
    streamer.join(5)
    assert not streamer.is_alive(), "the child's stream did not end"
    if errors:
        raise errors[0]
    if parent_stream is not None:
        # The parent's open stream is not the child's: reading it is refused, closing it is a no-op.
        with pytest.raises(InvalidInputError, match="parent process"):
            next(iter(parent_stream))
        assert parent_stream.abort() is False
        parent_stream.close()
    client.close()  # closes the child's pool only: the parent's sockets are untouched


def _parent_keeps_calling(client: HermesClient, stop: threading.Event, errors: list[BaseException]) -> threading.Thread:
    def loop() -> None:
        i = 0
        try:
            while not stop.is_set():
                assert client.chat(prompt=f"parent-{i}", timeout=5).text == f"ECHO: parent-{i}"
                i += 1
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=loop)
    thread.start()
    return thread


@pytest.fixture
def used_client(hermes_emulator: HermesEmulator) -> Any:
    """A client that made plain calls, a stream and a run before anything forks."""
    client = hermes_emulator.client(load_entrypoints=False)
    for i in range(3):
        assert client.chat(prompt=f"before-{i}").text == f"ECHO: before-{i}"
    with client.chat_stream(prompt="before-stream") as stream:
        assert stream.result().text == "ECHO: before-stream"
    assert client.run("before-run", idempotency_key="before-run").wait(timeout=10).ok
    yield client
    client.close()


def test_forked_children_get_their_own_connections(used_client: HermesClient) -> None:
    # A stream the parent has open across the fork: still the parent's to read afterwards.
    open_stream = used_client.chat_stream(prompt="open across the fork")
    first = next(iter(open_stream))
    stop, errors = threading.Event(), []  # type: ignore[var-annotated]
    parent = _parent_keeps_calling(used_client, stop, errors)
    try:
        pids = [_fork(lambda n=n: _child_calls(used_client, n, open_stream)) for n in range(CHILDREN)]
        codes = _reap(pids)
    finally:
        stop.set()
        parent.join(10)
    assert codes == {pid: 0 for pid in pids}, f"child exit codes: {codes}"
    assert not errors, errors
    # The parent's stream was neither read nor shut down by a child: it ends as it should.
    rest = list(open_stream)
    result = open_stream.result()
    assert result.status == "completed" and result.text == "ECHO: open across the fork", (first, rest, result)
    assert used_client.chat(prompt="after").text == "ECHO: after"
    assert used_client.run("after-run", idempotency_key="after-run").wait(timeout=10).ok


def test_locks_held_at_fork_time_do_not_deadlock_the_child(used_client: HermesClient) -> None:
    """Another thread of the parent holds the store's, the transport's and the watchdog's locks
    (and the stopped-runs set's) at the moment of the fork: the child must still make calls."""
    runtime = used_client._executor.runtime
    locks = [runtime.store._lock, runtime.transport._lock, used_client._executor.state(RunsState).stopped._lock,  # type: ignore[attr-defined]
             WATCHDOG._cond]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        for lock in locks:
            lock.acquire()
        held.set()
        release.wait(10)
        for lock in reversed(locks):
            lock.release()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(5)
    try:
        pids = [_fork(lambda n=n: _child_calls(used_client, n)) for n in range(2)]
    finally:
        release.set()
        holder.join(5)
    codes = _reap(pids)
    assert codes == {pid: 0 for pid in pids}, f"child exit codes: {codes}"
    assert used_client.chat(prompt="after").text == "ECHO: after"


def test_a_sqlite_store_is_reopened_in_the_child(hermes_emulator: HermesEmulator, tmp_path: Any) -> None:
    client = hermes_emulator.client(load_entrypoints=False, idempotency_store=SQLiteStore(str(tmp_path / "keys.db")))
    try:
        assert client.chat(prompt="parent", idempotency_key="parent-key").text == "ECHO: parent"
        pids = [_fork(lambda n=n: _child_calls(client, n)) for n in range(2)]
        codes = _reap(pids)
        assert codes == {pid: 0 for pid in pids}, f"child exit codes: {codes}"
        # The parent's connection still works, and it sees the records the children wrote.
        assert client.chat(prompt="parent", idempotency_key="parent-key").text == "ECHO: parent"
        store = client._executor.runtime.store
        for pid in pids:
            record = store.get(capability_id("default", "chat"), f"fork-{pid}")
            assert record is not None and record.state == "completed", (pid, record)
    finally:
        client.close()


def _mp_worker(client: HermesClient, n: int, queue: Any) -> None:
    try:
        _child_calls(client, n)
        queue.put((n, "ok"))
    except BaseException as exc:
        queue.put((n, f"{type(exc).__name__}: {exc}"))


def test_multiprocessing_fork_children(used_client: HermesClient) -> None:
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    stop, errors = threading.Event(), []  # type: ignore[var-annotated]
    parent = _parent_keeps_calling(used_client, stop, errors)
    procs = [ctx.Process(target=_mp_worker, args=(used_client, n, queue)) for n in range(CHILDREN)]
    try:
        for proc in procs:
            proc.start()
        until = time.monotonic() + CHILD_BUDGET
        for proc in procs:
            proc.join(max(0.0, until - time.monotonic()))
        stragglers = [proc.pid for proc in procs if proc.is_alive()]
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        assert not stragglers, f"multiprocessing children still running after {CHILD_BUDGET} s: {stragglers}"
    finally:
        stop.set()
        parent.join(10)
    results = dict(queue.get(timeout=5) for _ in procs)
    assert results == {n: "ok" for n in range(CHILDREN)}, results
    assert [proc.exitcode for proc in procs] == [0] * CHILDREN
    assert not errors, errors
    assert used_client.chat(prompt="after").text == "ECHO: after"


def test_the_child_drops_the_inherited_pool_without_touching_the_parents_sockets(used_client: HermesClient) -> None:
    transport = used_client._executor.runtime.transport
    parent_adapter = transport.session.get_adapter("http://127.0.0.1/")
    read_fd, write_fd = os.pipe()

    def child() -> None:
        os.close(read_fd)
        fresh = transport.session.get_adapter("http://127.0.0.1/")
        # A new adapter (new, empty pools), and the parent's left as it was: nothing closed.
        assert fresh is not parent_adapter and fresh is transport.session.get_adapter("https://x/")
        assert used_client.chat(prompt="child").text == "ECHO: child"
        os.write(write_fd, b"ok")

    pid = _fork(child)
    os.close(write_fd)
    assert _reap([pid]) == {pid: 0}
    assert os.read(read_fd, 16) == b"ok"
    os.close(read_fd)
    assert transport.session.get_adapter("http://127.0.0.1/") is parent_adapter
    assert used_client.chat(prompt="parent").text == "ECHO: parent"


def test_a_pid_change_seen_on_send_resets_the_pool(used_client: HermesClient) -> None:
    """A fork the at-fork hook did not see (made from C code) is caught on the next send."""
    transport = used_client._executor.runtime.transport
    before = transport.session.get_adapter("http://127.0.0.1/")
    transport._pid = -1  # what a child made without the hook would see
    assert used_client.chat(prompt="again").text == "ECHO: again"
    assert transport.session.get_adapter("http://127.0.0.1/") is not before
    assert transport._pid == os.getpid()


def test_a_callers_session_works_in_the_child(hermes_emulator: HermesEmulator) -> None:
    import requests

    session = requests.Session()
    client = hermes_emulator.client(load_entrypoints=False, session=session)
    try:
        assert client.chat(prompt="parent").text == "ECHO: parent"
        pools_before = session.get_adapter("http://127.0.0.1/").poolmanager
        pids = [_fork(lambda n=n: _child_calls(client, n)) for n in range(CHILDREN)]
        assert _reap(pids) == {pid: 0 for pid in pids}
        assert session.get_adapter("http://127.0.0.1/").poolmanager is pools_before
        assert client.chat(prompt="parent again").text == "ECHO: parent again"
    finally:
        client.close()
        session.close()


def test_the_child_has_its_own_watchdog_and_deadlines_hold(raw_server: Any) -> None:
    hung_up: list[bool] = []  # per connection: the client hung up before the server gave up (60 s)

    def silent(conn: Any, request: Any, server: Any) -> None:
        conn.settimeout(60)  # accepts, never answers: only the watchdog ends the call
        try:
            hung_up.append(conn.recv(1) == b"")
        except socket.timeout:
            hung_up.append(False)
        except OSError:  # reset by the client
            hung_up.append(True)

    server = raw_server(silent)
    client = HermesClient(server.base_url, "raw-key", load_entrypoints=False)
    try:
        with pytest.raises(DeadlineExceededError):
            client.chat(prompt="x", timeout=0.3)  # the parent's watchdog thread is running
        assert WATCHDOG._thread is not None and WATCHDOG._thread.is_alive()

        def child() -> None:
            assert WATCHDOG._thread is None and WATCHDOG.pending() == 0  # the parent's is not here
            with pytest.raises(DeadlineExceededError):
                client.chat(prompt="x", timeout=0.5)
            assert WATCHDOG._thread is not None and WATCHDOG._thread.is_alive()

        pids = [_fork(child) for _ in range(2)]
        assert _reap(pids) == {pid: 0 for pid in pids}
        # Each call (the parent's and the two children's) was ended by its own watchdog: the client
        # hung up while the server still held the connection (an order, not a clock).
        assert wait_for(lambda: len(hung_up) == 3, 30) and all(hung_up), hung_up
    finally:
        client.close()


def test_sqlite_connections_are_per_thread_and_never_cross_a_fork(tmp_path: Any) -> None:
    """The one connection helper the core store and the inbox queue share (hermes_sdk.plugin)."""
    from hermes_sdk.plugin import SQLiteConnections

    connections = SQLiteConnections(str(tmp_path / "shared.db"), 5.0)
    parent = connections.get()
    parent.execute("CREATE TABLE t (who TEXT)")
    assert connections.get() is parent  # one per thread
    other: list[Any] = []
    thread = threading.Thread(target=lambda: other.append(connections.get()))
    thread.start()
    thread.join(5)
    assert other and other[0] is not parent

    def child() -> None:
        conn = connections.get()
        assert conn is not parent, "a forked child used its parent's SQLite connection"
        conn.execute("INSERT INTO t VALUES ('child')")

    codes = _reap([_fork(child)])
    assert list(codes.values()) == [0], f"child exit code: {codes}"
    # The parent's connection was not closed by the child and sees the child's row.
    assert parent.execute("SELECT who FROM t").fetchall() == [("child",)]
    connections.close()
    assert connections.get() is not parent  # close() drops every thread's; the next get opens anew
    connections.close()
