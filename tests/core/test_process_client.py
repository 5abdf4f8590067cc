"""ProcessClient: one HermesClient per process, shared by its threads, made again in a forked child."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from hermes_sdk import HermesClient, ProcessClient


def test_every_thread_of_a_process_gets_the_one_client(hermes_emulator: Any) -> None:
    hermes = ProcessClient(base_url=hermes_emulator.base_url, api_key=hermes_emulator.api_key,
                           load_entrypoints=False)
    assert "not made yet" in repr(hermes)
    barrier = threading.Barrier(8)
    seen: list[HermesClient] = []

    def use() -> None:
        barrier.wait()  # all ask at once: the first get() of the process races
        seen.append(hermes.get())

    threads = [threading.Thread(target=use) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(seen) == 8 and len({id(c) for c in seen}) == 1
    assert seen[0].chat(prompt="once").text == "ECHO: once"
    hermes.close()
    assert hermes.get() is not seen[0]  # a get() after close() makes a new one
    hermes.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_makes_its_own_client_and_leaves_the_parents_alone(hermes_emulator: Any) -> None:
    hermes = ProcessClient(base_url=hermes_emulator.base_url, api_key=hermes_emulator.api_key,
                           load_entrypoints=False)
    parent = hermes.get()
    assert parent.chat(prompt="before").text == "ECHO: before"
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own client, which works; closing it leaves the parent's
        code = 1
        try:
            child = hermes.get()
            ok = child is not parent and child.chat(prompt="child").text == "ECHO: child"
            hermes.close()
            code = 0 if ok else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        assert pipe.read() == b"\x00"
    os.waitpid(pid, 0)
    assert hermes.get() is parent and parent.chat(prompt="after").text == "ECHO: after"
    hermes.close()


def test_the_options_reach_the_client_and_the_environment_is_read_at_first_use(
        hermes_emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HERMES_BASE_URL", raising=False)
    hermes = ProcessClient(load_entrypoints=False)  # made before the settings exist: nothing read yet
    monkeypatch.setenv("HERMES_BASE_URL", hermes_emulator.base_url)
    monkeypatch.setenv("HERMES_API_KEY", hermes_emulator.api_key)
    assert hermes.get().chat(prompt="late").text == "ECHO: late"
    hermes.close()
