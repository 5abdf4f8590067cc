"""Round 6 (issue 38, item 3): ``client.close()`` closes the Redis store the client built from a URL,
and leaves a store object the caller passed in open.

A real socket on loopback: redis-server when it is installed, else fakeredis's TCP server. What is
measured is the TCP connections this process opened to the server's port, open or closed
(``/proc/self/fd`` and ``/proc/net/tcp``).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest
import redis
from hermes_sdk_redis import RedisStore, RedisStorePlugin

from hermes_sdk import HermesClient
from hermes_sdk.testing import HermesEmulator

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/net/tcp"), reason="reads /proc/net/tcp")


def connections_to(port: int) -> set[str]:
    """This process's open TCP sockets (their inodes) whose remote port is ``port``."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[len("socket:["):-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in mine:
                found.add(fields[9])
    return found


@pytest.fixture(params=["real", "fake"])
def redis_url(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "real":
        yield request.getfixturevalue("redis_server")
        return
    fakeredis = pytest.importorskip("fakeredis")
    if not hasattr(fakeredis, "TcpFakeServer"):  # fakeredis before 2.26 (the oldest pins' redis 4.2)
        pytest.skip("this fakeredis has no TCP server; the real redis-server case runs where it is installed")
    server = fakeredis.TcpFakeServer(("127.0.0.1", 0))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"redis://127.0.0.1:{server.server_address[1]}/0"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/", 1)[0])


def test_client_close_closes_the_redis_store_it_built(hermes_emulator: HermesEmulator, redis_url: str) -> None:
    before = connections_to(port_of(redis_url))  # (the real server is shared: other tests' are not this one's)
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=redis_url,
                          load_entrypoints=False, plugins=[RedisStorePlugin()])
    client.chat(prompt="r6 redis", idempotency_key="r6-redis-url")
    opened = connections_to(port_of(redis_url)) - before
    assert opened
    client.close()
    assert not opened & connections_to(port_of(redis_url))


def test_a_redis_store_the_caller_passed_in_stays_open(hermes_emulator: HermesEmulator, redis_url: str) -> None:
    before = connections_to(port_of(redis_url))
    mine = redis.Redis.from_url(redis_url)
    store = RedisStore(mine, prefix="r6:given:")
    with HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, idempotency_store=store,
                      load_entrypoints=False) as client:
        client.chat(prompt="r6 redis given", idempotency_key="r6-redis-given")
    assert store.get("cap:hermes_agent:default:chat", "r6-redis-given") is not None
    opened = connections_to(port_of(redis_url)) - before
    assert opened  # the caller's client, still the caller's
    mine.close()
    mine.connection_pool.disconnect()  # the caller's own cleanup (redis-py 4.x's close() keeps the pool)
    assert not opened & connections_to(port_of(redis_url))
