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

Tool-call magic (the same prompts make the same calls in ``hermes_sdk.testing``; put the
magic words BEFORE the first directive, whose argument runs to ``||`` or the end of line):

* ``TOOL:terminal:<cmd>``, ``TOOL:read_file:<path>``, ``TOOL:todo:<text>``,
  ``TOOL:write_file:<path>=<content>``, ``TOOL:<other>:<x>`` (``{"input": x}``),
  ``TOOLJSON:<name>:{...}``; directives joined by ``||`` are parallel calls of one turn.
  Streamed, each call's arguments are split over two chunks, ``finish_reason: "tool_calls"``.
* ``PREAMBLE``: the tool-call turn also carries the text ``Calling tools now.``.
* last message has role ``tool``: ``DONE: <each result joined by " | ">``, a result over 160
  characters cut there and ending in ``…``.
* ``REASON``: ``reasoning_content`` deltas (non-stream: ``message.reasoning_content``).
* ``THINKTAG``: the content starts with ``<think>pondering the request</think>``.
* approvals reviewer (system prompt "security reviewer"): ``APPROVE`` if the command
  contains ``smart-approve``, ``DENY`` for ``smart-deny``, else ``ESCALATE``.

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
DIRECTIVE_RE = re.compile(r"(TOOLJSON|TOOL):([^:\s|]+):")
PREAMBLE_TEXT = "Calling tools now."
THINK_PREFIX = "<think>pondering the request</think>"
RESULT_PREVIEW_CHARS = 160


def done_text(results: list[str]) -> str:
    """The answer after the tools ran: a result cut at 160 characters ends in "…" (as the emulator)."""
    return "DONE: " + " | ".join(r if len(r) <= RESULT_PREVIEW_CHARS else r[:RESULT_PREVIEW_CHARS] + "…"
                                 for r in results)
_CALL_SEQ = [0]
_CALL_LOCK = threading.Lock()


# parse_directives and call_arguments mirror hermes_sdk/testing/tools.py on purpose: this
# process stands alone (it must not import the SDK under test); tests/test_emulator_runs.py
# checks that both make the same calls for the same prompts.
def parse_directives(prompt: str) -> list[tuple[str, str, str]]:
    """``(kind, name, argument)`` per directive; an argument runs to ``||`` or end of line."""
    found: list[tuple[str, str, str]] = []
    for line in prompt.splitlines():
        for part in line.split("||"):
            match = DIRECTIVE_RE.search(part)
            if match:
                found.append((match.group(1), match.group(2), part[match.end() :].strip()))
    return found


def call_arguments(kind: str, name: str, arg: str) -> str:
    """The arguments JSON the fake LLM sends for one directive (compact, in this key order)."""
    if kind == "TOOLJSON":
        try:
            return json.dumps(json.loads(arg), separators=(",", ":"))
        except ValueError:
            return arg
    if name == "terminal":
        args: dict[str, Any] = {"command": arg}
    elif name == "read_file":
        args = {"path": arg}
    elif name == "todo":
        args = {"todos": [{"id": "1", "content": arg, "status": "in_progress"}]}
    elif name == "write_file":
        path, _, content = arg.partition("=")
        args = {"path": path, "content": content}
    else:
        args = {"input": arg}
    return json.dumps(args, separators=(",", ":"))


def plan_tool_calls(last_user: str) -> list[dict[str, Any]]:
    calls = []
    for kind, name, arg in parse_directives(last_user):
        with _CALL_LOCK:
            _CALL_SEQ[0] += 1
            call_id = f"call_fake{_CALL_SEQ[0]:04d}"
        function = {"name": name, "arguments": call_arguments(kind, name, arg)}
        calls.append({"id": call_id, "type": "function", "function": function})
    return calls


def trailing_tool_results(messages: list[dict[str, Any]]) -> list[str]:
    """Contents of the tool messages after the last assistant turn (empty if the last isn't a tool)."""
    results: list[str] = []
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "tool":
            break
        results.append(message_text(message))
    return list(reversed(results))


def reviewer_verdict(messages: list[dict[str, Any]]) -> str | None:
    """The smart-approval reviewer call: recognised by its system prompt."""
    system = " ".join(message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "system")
    if "security reviewer" not in system.lower():
        return None
    text = " ".join(message_text(m) for m in messages if isinstance(m, dict))
    if "smart-approve" in text:
        return "APPROVE"
    if "smart-deny" in text:
        return "DENY"
    return "ESCALATE"


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
    tools = [t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    assistant_calls = [
        [c.get("id"), c.get("function", {}).get("name"), c.get("function", {}).get("arguments")]
        for m in messages
        if isinstance(m, dict) and m.get("role") == "assistant"
        for c in m.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    tool_results = [
        {"tool_call_id": m.get("tool_call_id"), "content": message_text(m)}
        for m in messages
        if isinstance(m, dict) and m.get("role") == "tool"
    ]
    system = " ".join(message_text(m) for m in messages if isinstance(m, dict) and m.get("role") == "system")
    return {
        "tool_names": sorted(n for n in tools if isinstance(n, str)),
        "assistant_tool_calls": assistant_calls,
        "tool_results": tool_results,
        "system_tail": system[-120:],
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
    disable_nagle_algorithm = True  # headers and body are separate writes: no wait for a delayed ACK
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
        model = body.get("model") or MODEL_ID
        stream = body.get("stream") in (True, "true")
        verdict = reviewer_verdict(messages)
        if verdict is not None:
            self.reply(stream, model, verdict, "stop", usage_for(messages, verdict))
            return
        results = trailing_tool_results(messages)
        if results:
            text = done_text(results)
            self.reply(stream, model, text, "stop", usage_for(messages, text))
            return
        slow = SLOW_RE.search(last_user)
        if slow:
            time.sleep(float(slow.group(1)))
        failure = find_failure(last_user)
        if failure:
            status, message, err_type, code = failure
            self.send_error_json(status, message, err_type, code)
            return
        calls = plan_tool_calls(last_user) if body.get("tools") else []
        if calls:
            preamble = PREAMBLE_TEXT if "PREAMBLE" in last_user else ""
            usage = usage_for(messages, preamble)
            if stream:
                self.stream_chat(model, preamble, "tool_calls", usage, calls=calls)
            else:
                self.send_json(200, completion(model, preamble or None, "tool_calls", usage, calls=calls))
            return
        text, finish = plan_reply(messages)
        if "THINKTAG" in last_user and finish == "stop":
            text = THINK_PREFIX + text
        usage = usage_for(messages, text)
        reasoning = "Reasoning about: " + last_user if "REASON" in last_user else None
        self.reply(stream, model, text, finish, usage, reasoning)

    def reply(
        self,
        stream: bool,
        model: str,
        text: str,
        finish: str,
        usage: dict[str, int],
        reasoning: str | None = None,
    ) -> None:
        if stream:
            self.stream_chat(model, text, finish, usage, reasoning=reasoning)
        else:
            self.send_json(200, completion(model, text, finish, usage, reasoning=reasoning))

    def stream_chat(
        self,
        model: str,
        text: str,
        finish: str,
        usage: dict[str, int],
        calls: list[dict[str, Any]] | None = None,
        reasoning: str | None = None,
    ) -> None:
        base = {
            "id": f"chatcmpl-fake{uuid.uuid4().hex[:20]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
        }
        events = [dict(base, choices=[delta_choice({"role": "assistant", "content": ""})])]
        if reasoning:
            pieces = split_deltas(reasoning)
            events += [dict(base, choices=[delta_choice({"reasoning_content": p})]) for p in pieces]
        events += [dict(base, choices=[delta_choice({"content": piece})]) for piece in split_deltas(text)]
        for index, call in enumerate(calls or []):
            args = call["function"]["arguments"]
            half = len(args) // 2
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": args[:half]},
            }
            events.append(dict(base, choices=[delta_choice({"tool_calls": [head]})]))
            tail = {"index": index, "function": {"arguments": args[half:]}}
            events.append(dict(base, choices=[delta_choice({"tool_calls": [tail]})]))
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


def completion(
    model: str,
    text: str | None,
    finish: str,
    usage: dict[str, int],
    calls: list[dict[str, Any]] | None = None,
    reasoning: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = calls
    if reasoning:
        message["reasoning_content"] = reasoning
    return {
        "id": f"chatcmpl-fake{uuid.uuid4().hex[:20]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
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
