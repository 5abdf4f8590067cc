"""A deterministic fake OpenAI-compatible upstream LLM for the live Hermes server.

Hermes (the real API server under test) talks to this process as its model
provider, so every agent run is reproducible and nothing leaves the machine.

Magic prompts (see docs/live-server.md):

* ``SLOW:<sec>`` in the last user message: sleep that long before answering.
* ``FAIL500`` / ``FAIL400`` / ``FAIL401`` in the last user message: return that
  HTTP status with an OpenAI error body.
* ``TRUNCEMPTY`` in any user message: empty text, ``finish_reason: "length"``.
* ``TRUNCATE`` in any user message: ``ECHO-PART``, ``finish_reason: "length"``.
* otherwise: ``ECHO: <last user message>``.

Every request is logged as one JSON line, which lets tests count upstream calls
(the oracle for "the model ran exactly once").

Run: ``python tests/live/fake_llm.py --port 0 --log calls.jsonl --port-file port``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL_ID = "fake-model"
CHAT_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"

# The status, message and OpenAI error type/code returned for each FAIL switch.
FAILURES: dict[str, tuple[int, str, str, str | None]] = {
    "FAIL500": (500, "fake upstream exploded (FAIL500)", "server_error", None),
    "FAIL400": (
        400,
        "fake upstream bad request (FAIL400)",
        "invalid_request_error",
        None,
    ),
    "FAIL401": (
        401,
        "fake upstream unauthorized (FAIL401)",
        "authentication_error",
        "invalid_api_key",
    ),
}
SLOW_RE = re.compile(r"SLOW:(\d+(?:\.\d+)?)")
N_DELTAS = 3


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message whose content is a string or a list of parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "".join(p for p in parts if isinstance(p, str))
    return ""


def user_texts(messages: list[dict[str, Any]]) -> list[str]:
    return [message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "user"]


def plan_reply(messages: list[dict[str, Any]]) -> tuple[str, str]:
    """(text, finish_reason) for a successful answer to ``messages``."""
    users = user_texts(messages)
    if any("TRUNCEMPTY" in u for u in users):
        return "", "length"
    if any("TRUNCATE" in u for u in users):
        return "ECHO-PART", "length"
    return f"ECHO: {users[-1] if users else ''}", "stop"


def find_failure(last_user: str) -> tuple[int, str, str, str | None] | None:
    for switch, failure in FAILURES.items():
        if switch in last_user:
            return failure
    return None


def usage_for(messages: list[dict[str, Any]], text: str) -> dict[str, int]:
    # Rough but deterministic: ~4 characters per prompt token, one token per word.
    prompt = sum(len(message_text(m)) for m in messages if isinstance(m, dict)) // 4
    completion = len(text.split())
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def split_deltas(text: str, n: int = N_DELTAS) -> list[str]:
    """Split ``text`` into at most ``n`` non-empty pieces so clients see real streaming."""
    if not text:
        return []
    size = max(1, -(-len(text) // n))
    return [text[i : i + size] for i in range(0, len(text), size)]


class CallLog:
    """Appends one JSON line per request; thread-safe, flushed at once."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.lock = threading.Lock()

    def write(self, entry: dict[str, Any]) -> None:
        if not self.path:
            return
        line = json.dumps(entry) + "\n"
        with self.lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)


def chat_log_entry(body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    users = user_texts(messages)
    return {
        "stream": bool(body.get("stream", False)),
        "model": body.get("model"),
        "n_messages": len(messages),
        "n_tools": len(body.get("tools") or []),
        "roles": [m.get("role") for m in messages if isinstance(m, dict)],
        "last_user": users[-1] if users else None,
        "keys": sorted(body),
    }


class FakeLLMHandler(BaseHTTPRequestHandler):
    # HTTP/1.0: each response closes its connection, so SSE needs no chunking.
    protocol_version = "HTTP/1.0"
    server_version = "FakeLLM/1.0"
    call_log: CallLog = CallLog(None)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the JSON call log is the record; keep stderr quiet

    # -- routing ---------------------------------------------------------
    def do_GET(self) -> None:
        self.call_log.write({"ts": time.time(), "method": "GET", "path": self.path})
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == MODELS_PATH:
            self.send_json(200, {"object": "list", "data": [model_card()]})
        elif path == f"{MODELS_PATH}/{MODEL_ID}":
            self.send_json(200, model_card())
        else:
            # Local-server probes (/api/v1/models, /api/tags, /v1/props, ...) must look absent.
            self.send_error_json(404, f"not found: {path}", "invalid_request_error")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        body = self.read_json()
        entry: dict[str, Any] = {"ts": time.time(), "method": "POST", "path": self.path}
        if path == CHAT_PATH and isinstance(body, dict):
            entry.update(chat_log_entry(body))
        self.call_log.write(entry)
        if path != CHAT_PATH:
            self.send_error_json(404, f"not found: {path}", "invalid_request_error")
        elif not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self.send_error_json(
                400,
                "fake upstream: invalid JSON or missing messages",
                "invalid_request_error",
            )
        else:
            self.answer_chat(body)

    # -- chat ------------------------------------------------------------
    def answer_chat(self, body: dict[str, Any]) -> None:
        messages: list[dict[str, Any]] = body["messages"]
        users = user_texts(messages)
        last_user = users[-1] if users else ""
        slow = SLOW_RE.search(last_user)
        if slow:
            time.sleep(float(slow.group(1)))
        failure = find_failure(last_user)
        if failure:
            status, message, err_type, code = failure
            self.send_error_json(status, message, err_type, code)
            return
        text, finish = plan_reply(messages)
        usage = usage_for(messages, text)
        model = body.get("model") or MODEL_ID
        if body.get("stream") in (True, "true"):
            self.stream_chat(model, text, finish, usage)
        else:
            self.send_json(200, completion(model, text, finish, usage))

    def stream_chat(self, model: str, text: str, finish: str, usage: dict[str, int]) -> None:
        base = {
            "id": f"chatcmpl-fake{uuid.uuid4().hex[:20]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        events = [dict(base, choices=[delta_choice({"role": "assistant", "content": ""})])]
        events += [dict(base, choices=[delta_choice({"content": piece})]) for piece in split_deltas(text)]
        events.append(dict(base, choices=[delta_choice({}, finish)]))
        events.append(dict(base, choices=[], usage=usage))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        try:
            for event in events:
                self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client (Hermes) hung up, e.g. an interrupted run

    # -- helpers ---------------------------------------------------------
    def read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return None

    def send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def send_error_json(self, status: int, message: str, err_type: str, code: str | None = None) -> None:
        self.send_json(
            status,
            {
                "error": {
                    "message": message,
                    "type": err_type,
                    "param": None,
                    "code": code,
                }
            },
        )


def model_card() -> dict[str, Any]:
    return {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "fake-llm"}


def delta_choice(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}


def completion(model: str, text: str, finish: str, usage: dict[str, int]) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake{uuid.uuid4().hex[:20]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "logprobs": None,
                "finish_reason": finish,
            }
        ],
        "usage": usage,
    }


def make_server(port: int = 0, log_path: str | None = None, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A bound (not yet serving) fake LLM; ``server.server_address[1]`` is its port."""
    handler = type("BoundFakeLLMHandler", (FakeLLMHandler,), {"call_log": CallLog(log_path)})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def write_port_file(path: str, port: int) -> None:
    # Write then rename, so a poller never reads a half-written number.
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(str(port))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free ephemeral port")
    parser.add_argument("--log", default=None, help="append one JSON line per request here")
    parser.add_argument("--port-file", default=None, help="write the bound port here once listening")
    args = parser.parse_args(argv)
    server = make_server(args.port, args.log, args.host)
    port = server.server_address[1]
    if args.port_file:
        write_port_file(args.port_file, port)
    print(f"fake LLM listening on http://{args.host}:{port}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
