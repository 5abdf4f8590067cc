"""Round 5 against a real redis-server: a frozen server (SIGSTOP) cannot hold a call past its
deadline, a stopped one is a retryable outage with nothing sent, and every key carries its TTL.

Each test starts its own redis-server (stopped, frozen and killed here by its PID only).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest
import redis
from hermes_sdk_redis import RedisStorePlugin

from hermes_sdk import DeadlineExceededError, HermesClient, IdempotencyRecord, PluginError, StoreUnavailableError
from hermes_sdk.testing import HermesEmulator

TIMEOUT = 1.0
# A safety limit, far past the call's 1 s: an SDK the deadline does not bound is let go by it, and
# fails because the limit fired first (an order of events, not a bound on a busy machine's clock).
SAFETY_LIMIT = 60.0
REDIS_SERVER = shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """One private redis-server on a loopback port; stopped only by its own PID."""

    def __init__(self, workdir: Path) -> None:
        self.port = _free_port()
        self.workdir = workdir
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: Optional[subprocess.Popen[bytes]] = None

    def start(self) -> None:
        assert REDIS_SERVER is not None
        self.proc = subprocess.Popen([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.workdir)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(self.url).ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    s = Server(tmp_path)
    s.start()
    yield s
    s.kill()


def client_for(emu: HermesEmulator, url: str, **kwargs: Any) -> HermesClient:
    return HermesClient(emu.base_url, emu.api_key, idempotency_store=url, load_entrypoints=False,
                        plugins=[RedisStorePlugin()], **kwargs)


def chat_posts(emu: HermesEmulator) -> int:
    return sum(1 for r in emu.requests_seen if r.method == "POST" and r.path == "/v1/chat/completions")


def test_a_frozen_redis_cannot_hold_a_call_past_its_deadline(server: Server, hermes_emulator: HermesEmulator) -> None:
    with client_for(hermes_emulator, server.url) as client:
        client.chat(prompt="warm", idempotency_key="warm", timeout=5)  # a pooled connection exists
        before = chat_posts(hermes_emulator)
        server.signal(signal.SIGSTOP)
        woke = threading.Event()

        def wake_up() -> None:
            woke.set()
            server.signal(signal.SIGCONT)

        wake = threading.Timer(SAFETY_LIMIT, wake_up)
        wake.start()
        try:
            with pytest.raises(DeadlineExceededError) as info:
                client.chat(prompt="hello", idempotency_key="frozen-1", timeout=TIMEOUT)
            assert not woke.is_set(), "a frozen Redis held the call until the safety limit woke it"
        finally:
            wake.cancel()
            server.signal(signal.SIGCONT)
        err = info.value
        assert err.details["sent"] is False and err.retryable is True and not err.uncertain_outcome
        assert chat_posts(hermes_emulator) == before  # nothing reached the server
        # The server wakes and runs the abandoned SET NX; the same key works again (given back, or
        # taken over by this process, which knows that reservation never sent anything).
        reply = client.chat(prompt="hello", idempotency_key="frozen-1", timeout=10)
        assert reply.text and chat_posts(hermes_emulator) == before + 1
        assert client.chat(prompt="hello", idempotency_key="frozen-1", timeout=10).replayed


def test_a_silent_server_that_accepts_and_never_answers(hermes_emulator: HermesEmulator) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    # Its own socket timeouts at the safety limit: only the call's deadline ends the call sooner.
    url = (f"redis://127.0.0.1:{listener.getsockname()[1]}/0?socket_timeout={SAFETY_LIMIT:g}"
           f"&socket_connect_timeout={SAFETY_LIMIT:g}")
    limit = threading.Event()
    timer = threading.Timer(SAFETY_LIMIT - 1, limit.set)
    timer.start()
    try:
        with client_for(hermes_emulator, url) as client:
            with pytest.raises(DeadlineExceededError) as info:
                client.chat(prompt="hello", idempotency_key="silent-1", timeout=TIMEOUT)
            assert not limit.is_set(), "the silent server held the call until the safety limit"
            assert info.value.details["sent"] is False
            assert chat_posts(hermes_emulator) == 0
    finally:
        timer.cancel()
        listener.close()


def test_a_stopped_redis_is_a_retryable_outage_with_nothing_sent(server: Server,
                                                                 hermes_emulator: HermesEmulator) -> None:
    with client_for(hermes_emulator, server.url) as client:
        server.kill()
        with pytest.raises(StoreUnavailableError) as info:
            client.chat(prompt="hello", idempotency_key="down-1", timeout=5)
        err = info.value
        assert isinstance(err, PluginError) and err.code == "hermes_sdk.store_unavailable"
        assert err.details["sent"] is False and err.retryable is True and not err.uncertain_outcome
        assert chat_posts(hermes_emulator) == 0
        server.start()  # back on the same port: the same key runs
        assert client.chat(prompt="hello", idempotency_key="down-1", timeout=5).text
        assert chat_posts(hermes_emulator) == 1


def test_every_key_carries_its_ttl_and_redis_drops_expired_records(server: Server,
                                                                   hermes_emulator: HermesEmulator) -> None:
    """Redis prunes by itself: every record and action index carries a TTL (a completed record
    keeps its own), and the server drops them when it passes: nothing is left to prune."""
    with client_for(hermes_emulator, server.url, key_retention=1) as client:
        store = client.idempotency_store
        for i in range(20):
            client.chat(prompt="hello", idempotency_key=f"ttl-{i}", timeout=5)
        keys = store.redis.keys(store.prefix + "*")
        assert len(keys) == 40  # a record and an action index per call
        ttls = [store.redis.pttl(k) for k in keys]
        assert all(0 < t <= 66_000 for t in ttls), ttls  # none lives forever (-1)
        now = time.time()
        short = IdempotencyRecord(capability_id="cap", key="short", action_id="act_short", input_hash="h",
                                  state="pending", created_at=now, expires_at=now + 0.3)
        assert store.reserve(short) is None
        store.complete("cap", "short", {"status": "completed"})
        assert 0 < store.redis.pttl(store._rec("cap", "short")) <= 300
        past = time.time() + 0.6
        while time.time() < past:  # the clock passes the TTL (a lower bound: load only waits longer)
            time.sleep(0.02)
        assert store.redis.exists(store._rec("cap", "short"), store._act("act_short")) == 0
