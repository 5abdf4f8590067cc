"""vcrpy records the SDK's calls and replays them with the server gone, as it does for ``requests``.

vcrpy (and pytest-recording on top of it) patches urllib3's connection classes and the pools'
``ConnectionCls``; the SDK's pools take their connection class from there on each new connection,
so a cassette sees chat, a stream and a run. The Authorization header is filtered as vcrpy's docs
show (``filter_headers``): the API key never reaches the cassette file.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from core_support import json_response

from hermes_sdk import DeadlineExceededError, HermesClient, TransportError
from hermes_sdk.testing import FaultServer

vcr = pytest.importorskip("vcr")


def _calls(client: HermesClient, base_url: str) -> dict[str, Any]:
    chat = client.chat(prompt="hello cassette")
    stream = client.chat_stream(prompt="stream me")
    texts = [event.text for event in stream if getattr(event, "text", None)]
    streamed = stream.result()
    run = client.run("count to three", idempotency_key="cassette-run-1")
    result = run.wait(timeout=30)
    plain = requests.get(base_url + "/health", timeout=10)  # a plain requests call, for comparison
    return {"chat": chat.text, "stream": (texts, streamed.text, streamed.status),
            "run": (run.id, result.status, result.output), "plain": plain.status_code}


def test_vcrpy_records_then_replays_chat_stream_and_run_with_the_server_gone(
        hermes_emulator_factory: Any, tmp_path: Path) -> None:
    emulator = hermes_emulator_factory()
    base_url, key = emulator.base_url, emulator.api_key
    cassette = tmp_path / "hermes.yaml"
    recorder = vcr.VCR(filter_headers=["authorization"], record_mode="once")

    with recorder.use_cassette(str(cassette)) as recorded:
        with HermesClient(base_url=base_url, api_key=key, load_entrypoints=False) as client:
            live = _calls(client, base_url)
    paths = [request.path for request in recorded.requests]
    assert "/v1/chat/completions" in paths and "/health" in paths
    assert any(path.startswith("/v1/runs") for path in paths)
    assert live["chat"] == "ECHO: hello cassette" and live["stream"][2] == "completed"
    text = cassette.read_text()
    assert key not in text and "authorization" not in text.lower()
    assert emulator.executions >= 3

    emulator.stop()
    with pytest.raises(TransportError) as gone:  # nothing listens there any more
        with HermesClient(base_url=base_url, api_key=key, load_entrypoints=False) as client:
            client.chat(prompt="hello cassette")
    assert gone.value.details.get("sent") is False

    replayer = vcr.VCR(filter_headers=["authorization"], record_mode="none")
    with replayer.use_cassette(str(cassette)) as replayed:
        with HermesClient(base_url=base_url, api_key=key, load_entrypoints=False) as client:
            assert _calls(client, base_url) == live
    assert replayed.play_count == len(recorded.requests)


def test_a_session_made_before_the_cassette_is_seen_by_it(hermes_emulator_factory: Any, tmp_path: Path) -> None:
    # A client (and its pooled connections) that existed before the cassette: its next call is
    # recorded, and after the cassette its calls reach the server again.
    emulator = hermes_emulator_factory()
    with HermesClient(base_url=emulator.base_url, api_key=emulator.api_key, load_entrypoints=False) as client:
        assert client.chat(prompt="before").text == "ECHO: before"
        with vcr.VCR(filter_headers=["authorization"]).use_cassette(str(tmp_path / "c.yaml")) as recorded:
            assert client.chat(prompt="during").text == "ECHO: during"
        assert len(recorded.requests) == 1
        assert client.chat(prompt="after").text == "ECHO: after"
    assert emulator.executions == 3


DRIPPED_BODY = b'{"choices": [{"message": {"content": "late"}}]}' + b" " * 40


def _drip_body(sock: socket.socket, req: Any, srv: Any) -> None:
    # Hermes' keep-alive framing: headers at once, then the body a byte every 0.2 s (for 8 s at most).
    srv.dripped = 0
    sock.sendall(json_response(200, DRIPPED_BODY)[:-len(DRIPPED_BODY)])
    for byte in DRIPPED_BODY:
        time.sleep(0.2)
        try:
            sock.sendall(bytes([byte]))
        except OSError:
            return
        srv.dripped += 1


def test_the_deadline_holds_while_a_cassette_records(raw_server: Any, tmp_path: Path) -> None:
    # vcrpy's connection opens its socket inside getresponse() and reads the whole reply there: the
    # watchdog still shuts that socket when the deadline passes, for a server that drips its
    # headers (and closes) or drips a keep-alive body; without it the call lasts 17-18 s, as long
    # as the drip. Decided by bytes: the call ended before the server's last byte.
    with FaultServer(fault="drip_headers", max_seconds=60.0) as dripping_headers:
        body_server = raw_server(_drip_body)
        for base_url, name, sent, whole in (
                (dripping_headers.base_url, "drip_headers", lambda: dripping_headers.bytes_sent, 91),
                (body_server.base_url, "drip_keepalive_body", lambda: body_server.dripped, len(DRIPPED_BODY))):
            with vcr.VCR(filter_headers=["authorization"]).use_cassette(str(tmp_path / f"{name}.yaml")):
                with HermesClient(base_url=base_url, api_key="k" * 20, load_entrypoints=False) as client:
                    with pytest.raises(DeadlineExceededError):
                        client.chat(prompt="hello", deadline=time.time() + 1.0)
                    assert sent() < whole, (name, sent())
