"""The version a request names is the package's: one source, read by setup.cfg and the User-Agent."""

from __future__ import annotations

import http.server
import importlib.metadata
import json
import threading
from typing import Any

import hermes_sdk
from hermes_sdk import HermesClient


class _Recorder(http.server.BaseHTTPRequestHandler):
    seen: list[str] = []

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).seen.append(self.headers.get("User-Agent", ""))
        body = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "model": "m", "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_the_user_agent_is_the_installed_package_version() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with HermesClient(f"http://127.0.0.1:{server.server_port}", "k", load_entrypoints=False) as client:
            assert client.chat(prompt="hi").text == "ok"
    finally:
        server.shutdown()
        server.server_close()
    assert _Recorder.seen == [f"hermes-sdk/{hermes_sdk.__version__}"]
    assert hermes_sdk.__version__ == importlib.metadata.version("hermes-sdk")
