"""Round 6: a refusal that provably ran nothing keeps no result under its key.

Hermes answers a 503 ``gateway_draining`` and the concurrency gate's 429 before any agent work
(``details["before_agent_work"]``): like a refused connection, the key is given back, so the same
key after the drain runs the call once. Every store kind the suite has (memory, SQLite, and the
plugin stores through the store interface when installed), the chat stream, runs and the CLI.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from core_support import agent_requests, approve_all

from hermes_sdk import HermesClient, MemoryStore, RateLimitedError, ServerError, SQLiteStore
from hermes_sdk._app.cli import main
from hermes_sdk.testing import HermesEmulator


def _sql_store(tmp: Path) -> Any:
    sql = pytest.importorskip("hermes_sdk_sql")
    return sql.SQLStore(f"sql+sqlite:///{tmp / 'sql.db'}")


def _redis_store(tmp: Path) -> Any:
    fakeredis = pytest.importorskip("fakeredis")
    redis_plugin = pytest.importorskip("hermes_sdk_redis")
    client = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    client.ping()
    return redis_plugin.RedisStore(client, owns_client=True)


STORES: dict[str, Callable[[Path], Any]] = {
    "memory": lambda tmp: MemoryStore(),
    "sqlite": lambda tmp: SQLiteStore(str(tmp / "keys.db")),
    "sql-plugin": _sql_store,
    "redis-plugin": _redis_store,
}


@pytest.fixture(params=sorted(STORES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    made = STORES[request.param](tmp_path)
    yield made
    made.close()


def chat_posts(emu: HermesEmulator) -> int:
    return sum(1 for r in emu.requests_seen if r.method == "POST" and r.path == "/v1/chat/completions")


def keyed(emu: HermesEmulator, store: Any, **kwargs: Any) -> HermesClient:
    return emu.client(load_entrypoints=False, approval_provider=approve_all, idempotency_store=store, **kwargs)


def test_a_draining_refusal_gives_the_key_back_on_every_store(emu: HermesEmulator, store: Any) -> None:
    with keyed(emu, store) as client:
        emu.draining = True
        with pytest.raises(ServerError) as refused:
            client.chat(prompt="after the drain", idempotency_key="k-drain-6")
        assert refused.value.details["before_agent_work"] is True
        cap = refused.value.capability_id
        assert store.get(cap, "k-drain-6") is None  # no result kept: the key is free
        emu.draining = False
        before, executions = chat_posts(emu), emu.executions
        reply = client.chat(prompt="after the drain", idempotency_key="k-drain-6")
        assert reply.text == "ECHO: after the drain" and not reply.replayed
        assert chat_posts(emu) == before + 1 and emu.executions == executions + 1
        again = client.chat(prompt="after the drain", idempotency_key="k-drain-6")  # now the result is kept
        assert again.replayed and chat_posts(emu) == before + 1


def test_a_concurrency_cap_refusal_gives_the_key_back(hermes_emulator_factory: Any, store: Any) -> None:
    emu = hermes_emulator_factory(max_concurrent_runs=1)
    with keyed(emu, store) as client:
        slow = client.chat_stream(prompt="SLOW:1 hold")
        next(iter(slow))  # admitted: it holds the only slot
        counted = threading.Event()  # its model call can start after its first chunk (a loaded machine)
        for _ in range(1000):
            if emu.executions >= 1 or counted.wait(0.01):
                break
        assert emu.executions == 1
        with pytest.raises(RateLimitedError) as refused:
            client.chat(prompt="capped", idempotency_key="k-cap-6")
        assert refused.value.details["before_agent_work"] is True
        assert store.get(refused.value.capability_id, "k-cap-6") is None
        emu.max_concurrent_runs = 2  # a slot is free again (the held run still holds its own)
        before = emu.executions
        assert client.chat(prompt="capped", idempotency_key="k-cap-6").text == "ECHO: capped"
        assert emu.executions == before + 1
        slow.close()


def test_a_stream_refused_while_draining_gives_the_key_back(emu: HermesEmulator) -> None:
    with keyed(emu, MemoryStore()) as client:
        emu.draining = True
        with pytest.raises(ServerError):
            client.chat_stream(prompt="streamed", idempotency_key="k-stream-6").result()
        emu.draining = False
        before = emu.executions
        result = client.chat_stream(prompt="streamed", idempotency_key="k-stream-6").result()
        assert result.text == "ECHO: streamed" and emu.executions == before + 1


@pytest.mark.parametrize("version", ["0.19.0", "0.22.2"])  # 0.21+ keeps run keys itself
def test_a_run_start_refused_while_draining_gives_the_key_back_and_is_sent_once(hermes_emulator_factory: Any,
                                                                               version: str) -> None:
    emu = hermes_emulator_factory(server_version=version)
    with keyed(emu, MemoryStore()) as client:
        emu.draining = True
        before = len(agent_requests(emu))
        with pytest.raises(ServerError) as refused:
            client.runs.start("a run after the drain", idempotency_key="k-run-6")
        assert refused.value.details["before_agent_work"] is True
        starts = [r for r in emu.requests_seen[before:] if r.method == "POST" and r.path == "/v1/runs"]
        assert len(starts) == 1  # a refusal before any work is not resent under the key
        emu.draining = False
        run = client.runs.start("a run after the drain", idempotency_key="k-run-6")
        assert run.wait().status == "completed"


def test_the_cli_retries_a_drained_session_turn_with_the_same_key(emu: HermesEmulator, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # the CLI's own SQLite store lives here
    monkeypatch.setenv("HERMES_BASE_URL", emu.base_url)
    monkeypatch.setenv("HERMES_API_KEY", emu.api_key)
    monkeypatch.delenv("HERMES_SDK_IDEMPOTENCY_STORE", raising=False)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    assert main(["chat", "my name is Ada"]) == 0
    with emu.client(load_entrypoints=False) as client:
        sid = client.sessions.list().data[0].id
    emu.draining = True
    assert main(["sessions", "chat", sid, "drained", "--idempotency-key", "k-cli-6"]) != 0
    emu.draining = False
    capsys.readouterr()
    before = emu.executions
    assert main(["sessions", "chat", sid, "drained", "--idempotency-key", "k-cli-6"]) == 0
    assert capsys.readouterr().out == "ECHO: drained\n" and emu.executions == before + 1
