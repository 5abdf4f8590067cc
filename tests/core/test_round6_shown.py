"""Round 6 (issue 38, items 11-19): what people and files are shown, typed and bounded."""

from __future__ import annotations

import collections
import gzip
import io
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, Callable, Iterator

import attrs
import pytest
from core_support import RawRequest, RawServer, chunk, free_port, json_response, sse_head

from hermes_sdk import ApprovalDeniedError, ApprovalRequest, HermesClient, HermesError, InvalidResponseError, hookimpl
from hermes_sdk._app.cli import _run_approver
from hermes_sdk._app.cli import main as cli_main
from hermes_sdk.testing import HermesEmulator, runmachine
from hermes_sdk.testing.cassette import use_cassette
from hermes_sdk.types import ChatMessage

KEY = "sk-round6-Zq8Wv3Lk5Jt1Mx7Pb4"


# --- item 17: the key is unreachable from a failure a hook wrapper is handed -----------------------

_SKIP = (type, types.ModuleType, types.CodeType)


def _edges(value: object) -> Iterator[tuple[str, object]]:
    """What a hook wrapper (or an error tracker) can follow from ``value`` without module globals or
    the frames still running (``f_back``, ``__globals__``): a traceback's frames and their locals,
    exceptions' chains, containers, instance attributes and slots, closures and bound methods."""
    if isinstance(value, BaseException):
        yield from (("__traceback__", value.__traceback__), ("__cause__", value.__cause__),
                    ("__context__", value.__context__), ("args", value.args))
    if isinstance(value, types.TracebackType):
        yield from (("tb_frame", value.tb_frame), ("tb_next", value.tb_next))
        return
    if isinstance(value, types.FrameType):
        if value.f_globals.get("__name__") == __name__:
            return  # the test's own frames (they hold the client) are not the SDK's to hide
        yield from ((f"f_locals[{k!r}]", v) for k, v in list(value.f_locals.items()))
        return
    if isinstance(value, dict):
        for k, v in list(value.items()):
            yield f"[{k!r}]", v
            yield "key", k
        return
    if isinstance(value, (list, tuple, set, frozenset, collections.deque)):
        yield from ((f"[{i}]", v) for i, v in enumerate(list(value)))
        return
    if isinstance(value, types.FunctionType):
        yield from ((f"__closure__[{i}]", c.cell_contents) for i, c in enumerate(value.__closure__ or ())
                    if _filled(c))
        yield from (("__defaults__", value.__defaults__), ("__kwdefaults__", value.__kwdefaults__),
                    ("__dict__", value.__dict__))
        return
    if isinstance(value, (types.MethodType, types.BuiltinMethodType)):
        yield "__self__", getattr(value, "__self__", None)
        yield "__func__", getattr(value, "__func__", None)
        return
    if isinstance(value, (types.GeneratorType, types.CoroutineType)):
        frame = value.gi_frame if isinstance(value, types.GeneratorType) else value.cr_frame
        yield "frame", frame
        return
    if hasattr(value, "func") and hasattr(value, "args") and callable(value):  # functools.partial
        yield from (("func", value.func), ("args", getattr(value, "args", ())),
                    ("keywords", getattr(value, "keywords", {})))
    attributes = getattr(value, "__dict__", None)
    if isinstance(attributes, dict):
        yield from ((f".{k}", v) for k, v in list(attributes.items()))
    for cls in type(value).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if isinstance(name, str) and hasattr(value, name):
                yield f".{name}", getattr(value, name)


def _filled(cell: Any) -> bool:
    try:
        return cell.cell_contents is not cell  # reading an empty cell raises
    except ValueError:
        return False


def paths_to(secret: str, start: object, limit: int = 200_000, known: tuple[object, ...] = ()) -> list[str]:
    """Breadth-first from ``start``, bounded: every path to a text holding ``secret`` (not through
    ``known``: what the walker holds anyway, e.g. the caller's own client)."""
    found: list[str] = []
    seen = {id(start)} | {id(k) for k in known}
    queue: collections.deque[tuple[str, object]] = collections.deque([("error", start)])
    while queue and len(seen) < limit:
        path, value = queue.popleft()
        if isinstance(value, (str, bytes, bytearray)):
            text = value if isinstance(value, str) else bytes(value).decode("latin-1")
            if secret in text:
                found.append(path)
            continue
        if value is None or isinstance(value, (int, float, complex) + _SKIP):
            continue
        try:
            edges = list(_edges(value))
        except Exception:  # an object whose attributes cannot be read is not a way to the key
            continue
        for name, child in edges:
            if id(child) not in seen:
                seen.add(id(child))
                queue.append((path + name, child))
    assert len(seen) < limit, "the walk was cut short: raise the bound"
    return found


class Collector:
    """A wrapper on both around-hooks keeping every failure it is handed."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, BaseException]] = []
        self.paths: list[str] = []

    def _walk(self, hook: str, exc: BaseException) -> None:
        # Walked as it is handed over (its traceback grows as it leaves through the caller's frames).
        self.errors.append((hook, exc))
        self.paths += [f"{hook}: {path}" for path in paths_to(KEY, exc)]

    @hookimpl(wrapper=True)
    def hermes_call(self, call: Any) -> Any:
        try:
            return (yield)
        except BaseException as exc:
            self._walk("hermes_call", exc)
            raise

    @hookimpl(wrapper=True)
    def hermes_http_attempt(self, attempt: Any) -> Any:
        try:
            return (yield)
        except BaseException as exc:
            self._walk("hermes_http_attempt", exc)
            raise


def _reply(data: bytes) -> Callable[[Any, RawRequest, RawServer], None]:
    def handler(sock: Any, request: RawRequest, server: RawServer) -> None:
        sock.sendall(data)
    return handler


FAILURES: dict[str, Any] = {
    "connection_refused": None,
    "http_401": _reply(json_response(401, b'{"error":{"message":"bad key"}}')),
    "http_500": _reply(json_response(500, b'{"error":{"message":"boom"}}')),
    "decode_error": _reply(json_response(200, b"not json {")),
}


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_no_way_from_a_hooks_failure_to_the_key(kind: str, raw_server: Any) -> None:
    handler = FAILURES[kind]
    base_url = f"http://127.0.0.1:{free_port()}" if handler is None else raw_server(handler).base_url
    collector = Collector()
    with HermesClient(base_url, api_key=KEY, load_entrypoints=False, plugins=[collector],
                      max_attempts=1) as client:
        with pytest.raises(HermesError) as info:
            client.chat(prompt="x")
        hooks = [hook for hook, _ in collector.errors]
        assert "hermes_call" in hooks
        assert collector.paths == []
        # What the caller catches leads to no key but through the client the caller holds anyway
        # (the ``self`` of the public methods it is calling: the client, its resources, its executor).
        assert paths_to(KEY, info.value, known=made_of(client)) == []


def test_no_way_to_the_key_from_invokes_error_or_a_cut_stream(raw_server: Any) -> None:
    failing = raw_server(FAILURES["http_500"])

    def cut(sock: Any, request: RawRequest, server: RawServer) -> None:
        sock.sendall(sse_head() + chunk(b'data: {"choices":[{"delta":{"content":"hi"}}]}\n\n'))
        sock.close()  # mid-stream

    collector = Collector()
    with HermesClient(failing.base_url, api_key=KEY, load_entrypoints=False, plugins=[collector],
                      max_attempts=1) as client:
        result = client.invoke("cap:hermes_agent:default:chat", {"prompt": "x"})
        assert result.status == "failed" and result.error is not None
        assert paths_to(KEY, result.error, known=made_of(client)) == []
    with HermesClient(raw_server(cut).base_url, api_key=KEY, load_entrypoints=False, plugins=[collector],
                      max_attempts=1) as client:
        with pytest.raises(HermesError) as info:
            with client.chat_stream(prompt="x") as stream:
                list(stream)
        assert paths_to(KEY, info.value, known=made_of(client) + (stream,)) == []
    assert collector.paths == []


def made_of(client: HermesClient) -> tuple[object, ...]:
    """The client and the objects it is made of (its attributes' values, and theirs)."""
    parts: list[object] = [client]
    for value in list(vars(client).values()):
        parts.append(value)
        parts += list(getattr(value, "__dict__", {}).values())
    return tuple(parts)


# --- items 16, 18, 19: the CLI's history and a reply it cannot encode; ChatCompletion.text ----------

def _completion(content: Any, session: str = "sess-1") -> bytes:
    body = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "hermes-agent",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}]}).encode()
    return json_response(200, body, extra=f"X-Hermes-Session-Id: {session}\r\n")


def _cli(base_url: str, *argv: str, key: str = KEY) -> subprocess.CompletedProcess[bytes]:
    """``hermes-sdk ARGV`` as a user runs it, output piped (not a terminal)."""
    env = {**os.environ, "HERMES_BASE_URL": base_url, "HERMES_API_KEY": key, "HERMES_SDK_PLUGINS": ""}
    env.pop("PYTHONIOENCODING", None)
    return subprocess.run([sys.executable, "-m", "hermes_sdk", *argv], env=env, capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=120)


def _state_bytes() -> bytes:
    folder = Path(os.environ["XDG_STATE_HOME"])
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())


@pytest.mark.parametrize("stream", ["--no-stream", "--stream"])
def test_a_lone_surrogate_in_a_reply_is_printed_and_logged(stream: str, raw_server: Any) -> None:
    reply = "half \ud800 a pair"
    if stream == "--stream":
        events = [{"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {"content": reply}, "finish_reason": None}]},
                  {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
        body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        server = raw_server(_reply(sse_head() + chunk(body) + b"0\r\n\r\n"))
    else:
        server = raw_server(_reply(_completion(reply)))
    done = _cli(server.base_url, "chat", "hello", stream)
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    assert done.stdout == b"half \\ud800 a pair\n"  # the reply kept, its unencodable character written out
    assert b"half \\ud800 a pair" in _state_bytes()  # and logged


def test_a_key_echoed_as_the_session_id_is_kept_in_no_file(raw_server: Any) -> None:
    server = raw_server(_reply(_completion("hi", session=KEY)))
    done = _cli(server.base_url, "chat", "hello", "--no-stream")
    assert done.returncode == 0, done.stderr
    assert _state_bytes() and KEY.encode() not in _state_bytes()  # logs.db, state.json
    assert KEY.encode() not in done.stderr


@pytest.mark.parametrize("text", [5, ["a"], {"x": 1}, True])
def test_a_content_parts_text_that_is_not_a_string_is_a_typed_error(text: Any, raw_server: Any) -> None:
    server = raw_server(_reply(_completion([{"type": "text", "text": "ok "}, {"type": "text", "text": text}])))
    with HermesClient(server.base_url, api_key=KEY, load_entrypoints=False) as client:
        result = client.chat(prompt="x")
    with pytest.raises(InvalidResponseError) as info:
        result.text  # noqa: B018 (the property is the point)
    assert info.value.details["field"] == "choices[0].message.content[1].text"
    assert result.choices[0].message.content[1]["text"] == text  # the reply as sent is kept
    # a record whose content was changed behind the SDK's back reads the same way
    tampered = attrs.evolve(result, choices=[attrs.evolve(result.choices[0], message=ChatMessage(
        "assistant", [{"type": "text", "text": text}]))])
    with pytest.raises(InvalidResponseError):
        tampered.text  # noqa: B018


def test_parts_without_text_and_null_text_read_as_empty(raw_server: Any) -> None:
    server = raw_server(_reply(_completion([{"type": "image_url", "image_url": {"url": "x"}},
                                            {"type": "text", "text": None}, {"type": "text", "text": "ok"}])))
    with HermesClient(server.base_url, api_key=KEY, load_entrypoints=False) as client:
        assert client.chat(prompt="x").text == "ok"


# --- item 14: doctor --json scrubs what a server echoes ------------------------------------------------

def _echo_key(sock: Any, request: RawRequest, server: RawServer) -> None:
    if request.target.startswith("/health"):
        body = {"status": "ok", "platform": "hermes-agent", "version": f"0.21.0 {KEY}",
                "detail": {"echo": [KEY]}}
    else:
        body = {"object": "list", "data": [{"id": "hermes-agent", "object": "model", "note": KEY}]}
    sock.sendall(json_response(200, json.dumps(body).encode(), extra=f"X-Echo: {KEY}\r\n"))


@pytest.mark.parametrize("as_json", [True, False])
def test_doctor_never_prints_a_key_the_server_echoes(as_json: bool, raw_server: Any) -> None:
    server = raw_server(_echo_key)
    done = _cli(server.base_url, "doctor", *(["--json"] if as_json else []), "--timeout", "10")
    assert b"health" in done.stdout
    if as_json:
        assert json.loads(done.stdout)["findings"]
    assert KEY.encode() not in done.stdout + done.stderr


# --- item 13: a cassette keeps no key, however the reply came ------------------------------------------

def _chat_body(content: str) -> bytes:
    return json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "hermes-agent",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                    "finish_reason": "stop"}]}).encode()


def _gzipped(sock: Any, request: RawRequest, server: RawServer) -> None:
    body = gzip.compress(_chat_body(f"your key is {KEY}"))
    sock.sendall(json_response(200, body, extra="Content-Encoding: gzip\r\n"))


def _split(sock: Any, request: RawRequest, server: RawServer) -> None:
    body = _chat_body(f"your key is {KEY}")
    half = body.index(KEY.encode()) + len(KEY) // 2
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    sock.sendall(head + chunk(body[:half]) + chunk(body[half:]) + b"0\r\n\r\n")


def _not_utf8(sock: Any, request: RawRequest, server: RawServer) -> None:
    sock.sendall(json_response(500, b"\xff\xfe upstream said: " + KEY.encode() + b" \xff"))


def _bodies(path: Path) -> list[bytes]:
    """Each reply's body as the cassette would replay it, every chunk decoded."""
    from hermes_sdk.testing.cassette import _decoded

    stored = json.loads(path.read_text(encoding="utf-8"))["interactions"]
    return [b"".join(_decoded(c) for c in entry["response"]["chunks"]) for entry in stored]


@pytest.mark.parametrize("reply", ["gzip", "split", "not_utf8"])
def test_a_cassette_keeps_no_key(reply: str, raw_server: Any, tmp_path: Path) -> None:
    handler = {"gzip": _gzipped, "split": _split, "not_utf8": _not_utf8}[reply]
    server = raw_server(handler)
    path = tmp_path / "cassette.json"

    def call() -> object:
        with HermesClient(server.base_url, api_key=KEY, load_entrypoints=False, max_attempts=1) as client:
            try:
                return client.chat(prompt="x").text
            except HermesError as exc:
                return exc.code

    with use_cassette(path, "record"):
        live = call()
    assert live == (f"your key is {KEY}" if reply != "not_utf8" else "connector.hermes_agent.remote_temporary"), live
    assert KEY.encode() not in path.read_bytes()
    assert all(KEY.encode() not in body for body in _bodies(path))  # nor in a base64 chunk
    assert any(b"[REDACTED]" in body for body in _bodies(path))
    with use_cassette(path, "replay"):  # replayed as kept: the key's place says so
        replayed = call()
    assert replayed == ("your key is [REDACTED]" if reply != "not_utf8" else "connector.hermes_agent.remote_temporary")


# --- item 11: an approver is shown what is approved ------------------------------------------------

JOB = {"name": "nightly digest", "schedule": "0 3 * * *",
       "prompt": "Summarise the incident channel, then delete /srv/reports older than 7 days"}


class Asked:
    """An approval provider that keeps each request and answers as told (default: approve, not blind)."""

    def __init__(self, blind: bool = False) -> None:
        self.seen: list[ApprovalRequest] = []
        self.blind = blind

    def __call__(self, request: ApprovalRequest) -> Any:
        self.seen.append(request)
        return request.approve(approver="ops", policy_decision_id="pd-1", reason="agreed", blind=self.blind)


def _sent(emu: HermesEmulator, method: str, prefix: str) -> int:
    return sum(1 for r in emu.requests_seen if r.method == method and r.path.startswith(prefix))


def test_a_jobs_approval_shows_its_name_schedule_and_prompt(emu: HermesEmulator) -> None:
    asked = Asked()
    with emu.client(load_entrypoints=False, approval_provider=asked) as client:
        job = client.jobs.create(**JOB, idempotency_key="r6-job-1", reason="digest")
        client.jobs.update(job.id, prompt="Summarise only", idempotency_key="r6-job-2", reason="shorter")
    create, update = asked.seen
    assert create.input_snapshot == JOB and create.fully_shown and create.not_shown is None
    assert update.input_snapshot == {"job_id": job.id, "prompt": "Summarise only"} and update.fully_shown
    assert JOB["prompt"] not in repr(create)  # the approver's view is not for logs


def test_what_a_policy_hides_from_an_approver_is_said_and_not_approved_unseen(emu: HermesEmulator) -> None:
    asked = Asked()
    prompt = f"Use {KEY} and sk-live-9f8e7d6c5b4a3f2e1d0c to call the billing API"
    with emu.client(load_entrypoints=False, approval_provider=asked, api_key=emu.api_key,
                    redaction_patterns=[r"billing"]) as client:
        with pytest.raises(ApprovalDeniedError) as info:
            client.jobs.create(name="n", schedule="every 1h", prompt=prompt, idempotency_key="r6-job-3", reason="r")
    (request,) = asked.seen
    assert info.value.details["reason"] == "not_fully_shown" and _sent(emu, "POST", "/api/jobs") == 0
    assert request.fully_shown is False
    assert "API key" in str(request.not_shown) and "redaction pattern" in str(request.not_shown)
    assert "prompt" in str(request.not_shown)
    shown = str(request.input_snapshot["prompt"])
    assert KEY not in shown and "sk-live-9f8e7d6c5b4a3f2e1d0c" not in shown and "[REDACTED]" in shown
    assert shown.startswith("Use ") and "to call the" in shown  # every other byte


def test_every_approval_the_sdk_builds_shows_its_input(emu: HermesEmulator) -> None:
    """response_delete, session_delete, job_pause/remove, operator: the approver reads the input, in clear."""
    asked = Asked()
    with emu.client(load_entrypoints=False, approval_provider=asked) as client:
        stored = client.responses(input="keep me", store=True).id
        client.response_delete(stored, idempotency_key="r6-del", reason="cleanup")
        job = client.jobs.create(**JOB, idempotency_key="r6-job-4", reason="r")
        client.jobs.pause(job.id, idempotency_key="r6-pause", reason="r")
        client.operate("Count the files in /srv/reports", idempotency_key="r6-op", reason="audit")
    shown = {request.operation: request for request in asked.seen}
    assert shown["response_delete"].input_snapshot == {"response_id": stored}
    assert shown["job_pause"].input_snapshot == {"job_id": job.id}
    assert shown["operator"].input_snapshot["objective"] == "Count the files in /srv/reports"
    for request in asked.seen:
        assert "[REDACTED]" not in json.dumps(request.input_snapshot) and request.fully_shown, request.operation
    assert client.approval_request("session_delete", {"session_id": "sess-9"}).input_snapshot == {
        "session_id": "sess-9"}


# --- item 12: a run's command that is not a string ----------------------------------------------------

_MISSING = object()


@pytest.mark.parametrize("command", [["rm", "-rf", "/srv/data"], {"argv": ["rm", "-rf", "/srv/data"]}, None,
                                     _MISSING, "", 7], ids=["list", "object", "null", "missing", "empty", "number"])
def test_a_runs_command_that_is_not_a_string_is_shown_as_sent_and_denied(
        command: object, tools_emu: HermesEmulator, monkeypatch: pytest.MonkeyPatch) -> None:
    original = runmachine.approval_event

    def hostile(*args: Any) -> dict[str, Any]:
        event: dict[str, Any] = original(*args)
        if command is _MISSING:
            del event["command"]
        else:
            event["command"] = command
        return event

    monkeypatch.setattr(runmachine, "approval_event", hostile)
    asked = Asked(blind=True)  # even a policy approving blind: nobody saw what would run
    with tools_emu.client(load_entrypoints=False, approval_provider=asked) as client:
        run = client.run("TOOL:terminal:rm -rf /srv/data", idempotency_key=f"r6-run-{id(command)}")
        run.wait(timeout=30)
    (request,) = asked.seen
    expected = "null" if command is _MISSING else json.dumps(command, sort_keys=True)
    assert request.input_snapshot["command"] == expected  # never an empty command shown whole
    assert request.fully_shown is False
    assert "empty command" in str(request.not_shown) if command == "" else "not known" in str(request.not_shown)
    answers = [json.loads(r.raw_body) for r in tools_emu.requests_seen if r.path.endswith("/approval")]
    assert [answer["choice"] for answer in answers] == ["deny"]
    assert "/srv/data/keep.txt" in tools_emu.files


# --- items 11, 12 at the terminal: the operator reads what they approve ---------------------------------

class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def cli_env(emu: HermesEmulator, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> HermesEmulator:
    monkeypatch.setattr("hermes_sdk._app._cli_support.TTY_PATH", str(tmp_path / "no-tty"))
    monkeypatch.setenv("HERMES_BASE_URL", emu.base_url)
    monkeypatch.setenv("HERMES_API_KEY", emu.api_key)
    monkeypatch.setenv("HERMES_SDK_PLUGINS", "")
    monkeypatch.delenv("HERMES_SDK_IDEMPOTENCY_STORE", raising=False)
    return emu


def test_the_terminal_shows_the_job_it_asks_about(cli_env: HermesEmulator, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", _Terminal("y\n"))
    code = cli_main(["jobs", "create", "--name", JOB["name"], "--schedule", JOB["schedule"], "--prompt", JOB["prompt"],
                     "--reason", "digest"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert json.dumps(JOB, sort_keys=True, ensure_ascii=False) in err  # what runs on every tick, read before "y"


def test_the_terminal_denies_a_run_command_that_is_not_a_string(emu: HermesEmulator) -> None:
    said: list[str] = []

    class Terminal:
        available = True

        def say(self, text: str) -> None:
            said.append(text)

        def ask(self, prompt: str, context: str = "") -> str:
            raise AssertionError("asked to approve a command nobody can read")

    with emu.client(load_entrypoints=False) as client:
        request = client.runs.approval_request("run_r6", {"argv": ["rm", "-rf", "/"]})
    decision = _run_approver("ask", Terminal())(request)  # type: ignore[arg-type]
    assert decision is not None and decision.decision == "denied"
    assert '{"argv": ["rm", "-rf", "/"]}' in said[0] and "not fully shown" in said[0]
