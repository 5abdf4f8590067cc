"""A caller's own requests.Session: its headers, verify and cert settings apply; ours still win."""

from __future__ import annotations

from typing import Any

import requests

from hermes_sdk import HermesClient


class _Recording(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self.sent: list[dict[str, Any]] = []

    def send(self, request: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.sent.append({"headers": dict(request.headers), **kwargs})
        return super().send(request, **kwargs)


def test_a_caller_session_keeps_its_headers_and_tls_settings(hermes_emulator: Any, tmp_path: Any) -> None:
    cert, key = tmp_path / "client.pem", tmp_path / "client.key"
    cert.write_text("unused over plain http")
    key.write_text("unused over plain http")
    session = _Recording()
    session.headers["X-Corp-Trace"] = "abc"
    session.headers["Authorization"] = "Bearer not-this-one"
    session.verify = "/etc/ssl/certs/corp-ca.pem"
    session.cert = (str(cert), str(key))
    session.trust_env = False
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, session=session,
                          load_entrypoints=False)
    assert client.chat(prompt="hello").text == "ECHO: hello"
    sent = session.sent[-1]
    assert sent["headers"]["X-Corp-Trace"] == "abc"
    assert sent["headers"]["Authorization"] == f"Bearer {hermes_emulator.api_key}"  # the endpoint's key wins
    assert sent["headers"]["User-Agent"].startswith("hermes-sdk/")
    assert sent["verify"] == "/etc/ssl/certs/corp-ca.pem" and sent["cert"] == (str(cert), str(key))
    assert sent["allow_redirects"] is False
    client.close()
    assert session.get(hermes_emulator.base_url + "/health").status_code == 200  # not closed by the client


def test_our_own_session_reads_the_environment_once(hermes_emulator: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    client = HermesClient(hermes_emulator.base_url, hermes_emulator.api_key, load_entrypoints=False)
    client.chat(prompt="one")
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # not re-read per call
    monkeypatch.delenv("NO_PROXY")
    assert client.chat(prompt="two").text == "ECHO: two"
    client.close()
