"""A cassette replays in CI where the server and its settings are gone: the SDK's cassette with no
``HERMES_*`` variable at all, vcrpy with the settings docs/testing.md gives it (any key, the URL
left out of its matching). Each replay runs in a process of its own, with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

SDK_APP = textwrap.dedent("""
    import sys
    from hermes_sdk import HermesClient
    from hermes_sdk.testing import use_cassette

    with use_cassette(sys.argv[1]) as cassette:
        with HermesClient(load_entrypoints=False) as client:
            reply = client.chat(prompt="hello replay")
            result = client.run("count to three", idempotency_key="replay-env-1").wait(timeout=30)
    print(cassette.mode, reply.text, result.status)
""")

VCR_APP = textwrap.dedent("""
    import sys
    import vcr
    from hermes_sdk import HermesClient

    recorder = vcr.VCR(filter_headers=["authorization"], record_mode="once",
                       match_on=["method", "path", "query"])   # docs/testing.md: the host is not matched
    with recorder.use_cassette(sys.argv[1]) as cassette:
        with HermesClient(load_entrypoints=False) as client:
            reply = client.chat(prompt="hello replay")
    print("replay" if cassette.play_count else "record", reply.text)
""")


def _run(script: Path, cassette: Path, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, str(script), str(cassette)], cwd=script.parent, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(PYTHONDONTWRITEBYTECODE="1", **extra)
    return env


def test_the_sdks_cassette_replays_with_no_hermes_variable_set(hermes_emulator_factory: Any, tmp_path: Path) -> None:
    emulator = hermes_emulator_factory()
    script, cassette = tmp_path / "app.py", tmp_path / "hermes.json"
    script.write_text(SDK_APP)
    live = _run(script, cassette, _clean_env(HERMES_BASE_URL=emulator.base_url, HERMES_API_KEY=emulator.api_key))
    assert live == "record ECHO: hello replay completed\n"
    emulator.stop()
    replayed = _run(script, cassette, _clean_env())
    assert replayed == live.replace("record", "replay", 1)


def test_the_stand_ins_leave_set_variables_alone_and_go_with_the_block(tmp_path: Path) -> None:
    from hermes_sdk.testing.cassette import REPLAY_ENVIRONMENT, use_cassette

    cassette = tmp_path / "empty.json"
    cassette.write_text('{"version": 1, "interactions": []}')
    mp = pytest.MonkeyPatch()
    try:
        mp.delenv("HERMES_BASE_URL", raising=False)
        mp.setenv("HERMES_API_KEY", "mine")
        with use_cassette(cassette):
            assert os.environ["HERMES_BASE_URL"] == REPLAY_ENVIRONMENT["HERMES_BASE_URL"]
            assert os.environ["HERMES_API_KEY"] == "mine"
        assert "HERMES_BASE_URL" not in os.environ and os.environ["HERMES_API_KEY"] == "mine"
        with use_cassette(tmp_path / "new.json"):  # recording: nothing is stood in
            assert "HERMES_BASE_URL" not in os.environ
    finally:
        mp.undo()


def test_vcrpy_replays_with_any_key_and_no_url_as_the_docs_say(hermes_emulator_factory: Any, tmp_path: Path) -> None:
    pytest.importorskip("vcr")
    emulator = hermes_emulator_factory()
    script, cassette = tmp_path / "app.py", tmp_path / "hermes.yaml"
    script.write_text(VCR_APP)
    live = _run(script, cassette, _clean_env(HERMES_BASE_URL=emulator.base_url, HERMES_API_KEY=emulator.api_key))
    assert live == "record ECHO: hello replay\n"
    emulator.stop()
    replayed = _run(script, cassette, _clean_env(HERMES_BASE_URL="http://hermes.invalid", HERMES_API_KEY="any"))
    assert replayed == "replay ECHO: hello replay\n"
