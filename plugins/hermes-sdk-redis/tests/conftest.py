"""A real redis-server on an ephemeral loopback port when the binary exists, else fakeredis."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

REDIS_SERVER = shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a private redis-server (skips when the binary is missing)."""
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server); fakeredis tests still run")
    port = _free_port()
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield url
    finally:
        os.kill(proc.pid, 15)  # stop only the server this fixture started, by its PID
        proc.wait(timeout=10)


@pytest.fixture(params=["real", "fake"])
def redis_client(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "real":
        url = request.getfixturevalue("redis_server")
        client = redis.Redis.from_url(url)
        client.flushdb()
    else:
        fakeredis = pytest.importorskip("fakeredis")
        # fakeredis sets a server up lazily, per connection, with check-then-set steps (its map of
        # servers, then ``dbs[0]``, a defaultdict): threads opening their first connections at once
        # can each get a database of their own, and each win one SET NX (CI py311, fakeredis 2.41).
        # A server made here and one command before any thread starts leave nothing to race.
        client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
        client.ping()
    yield client
    client.close()
