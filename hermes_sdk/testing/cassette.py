"""Record what the SDK sent and received, events as they arrived, and replay it with Hermes gone.

vcrpy reads a whole reply before it hands it over, so a run that waits for a person cannot be
recorded with it: the approval request would arrive only after the run ended. This recorder hooks
in where ``responses`` does (``requests.adapters.HTTPAdapter.send``) and taps the reply's body as the
SDK reads it, so every chunk reaches the SDK when it arrives and is written down with how many
requests had been sent by then. A replay hands a chunk over only once as many requests were sent
again: the event that follows an approval comes after the SDK sent the same decision, as it did live.

Nothing of a request's headers is kept (so no key); a key seen in an ``Authorization`` header, or
given as ``secrets``, is replaced by ``[REDACTED]`` wherever it appears in what is kept: a reply's
body is kept decoded (gzip and deflate undone), whole lines to a chunk, and checked as bytes, so
neither a compressed reply, nor a key split across two reads, nor a body that is not UTF-8 keeps it. Requests are
matched in order on method and path, and their bodies compared: a request the cassette does not
hold, or a body that differs (another decision), raises :class:`CassetteMiss`, which reaches the
test as raised.

Use :func:`use_cassette`, or the ``hermes_cassette`` pytest fixture (``hermes_sdk.testing``'s
plugin), which keeps one cassette per test in ``cassettes/<module>/<test>.json`` beside the test.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence
from urllib.parse import urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter

from .._core._inflate import Inflater, coding_of
from ..errors import HermesError

#: How long a replay waits for the SDK to send what the recording shows it sent before a chunk.
REPLAY_WAIT = 15.0
#: What a replay gives ``HermesClient()`` where the environment names no server: requests are matched
#: on method and path only, so neither the host nor the key matters, and nothing leaves the process.
REPLAY_ENVIRONMENT = {"HERMES_BASE_URL": "http://hermes-cassette.invalid", "HERMES_API_KEY": "cassette-replay"}
MODES = ("once", "record", "replay")
_REDACTED = "[REDACTED]"
_CHUNK = 65536


class CassetteMiss(AssertionError):
    """The SDK sent a request the cassette does not hold (or with another body), or the replay
    waited in vain for the request the recording shows before a chunk."""


class _Recording:
    """One interaction being recorded: the request, then the reply's chunks as they arrive."""

    def __init__(self, cassette: "Cassette", entry: dict[str, Any]) -> None:
        self.cassette = cassette
        self.entry = entry

    def chunk(self, data: bytes) -> None:
        if data:
            with self.cassette._lock:
                self.entry["response"]["chunks"].append({"after": self.cassette.sent, **_encoded(data)})


class Cassette:
    """The interactions of one recording (``mode`` is ``record`` or ``replay`` once in use)."""

    def __init__(self, path: "str | os.PathLike[str]", mode: str = "once", secrets: Sequence[str] = (),
                 redact: Optional[Callable[[str], str]] = None, replay_wait: float = REPLAY_WAIT) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        self.path = Path(path)
        if mode == "once":
            mode = "replay" if self.path.exists() else "record"
        self.mode = mode
        self.interactions: list[dict[str, Any]] = []
        if mode == "replay":
            self.interactions = json.loads(self.path.read_text(encoding="utf-8"))["interactions"]
        self.sent = 0  # requests the SDK sent through this cassette so far
        self.requests: list[tuple[str, str, Optional[object]]] = []  # (method, path, JSON body) as sent
        self._played: set[int] = set()
        self._secrets = {s for s in secrets if s}
        self._redact = redact
        self._replay_wait = replay_wait
        self._lock = threading.Condition()

    @property
    def play_count(self) -> int:
        return len(self._played)

    # ------------------------------------------------------------ the adapter's send

    def send(self, original: Callable[..., requests.Response], adapter: HTTPAdapter,
             request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        method, path, body = request.method or "GET", _path(request.url or "/"), _body(request.body)
        key = _bearer(request.headers.get("Authorization"))
        with self._lock:
            if key:
                self._secrets.add(key)
            self.requests.append((method, path, body))
            self.sent += 1
            self._lock.notify_all()
        if self.mode == "replay":
            return self._replay(adapter, request, method, path, body)
        entry: dict[str, Any] = {"request": {"method": method, "path": path, "body": body},
                                 "response": {"status": 0, "reason": "", "headers": [], "chunks": []}}
        response = original(adapter, request, **kwargs)
        entry["response"].update(status=response.status_code, reason=response.reason or "",
                                 headers=[[k, v] for k, v in response.raw.headers.items()
                                          if k.lower() != "set-cookie"])
        with self._lock:
            self.interactions.append(entry)
        _tap(response.raw, _Recording(self, entry))
        return response

    def _replay(self, adapter: HTTPAdapter, request: requests.PreparedRequest, method: str, path: str,
                body: Optional[object]) -> requests.Response:
        with self._lock:
            index = next((i for i, it in enumerate(self.interactions) if i not in self._played
                          and it["request"]["method"] == method and it["request"]["path"] == path), None)
            if index is None:
                raise CassetteMiss(f"the cassette {self.path} holds no (further) {method} {path}: record it again "
                                   "(mode='record', or delete the file)")
            recorded = self.interactions[index]
            if recorded["request"]["body"] != self._kept(body):
                was = json.dumps(recorded["request"]["body"])
                raise CassetteMiss(f"{method} {path} was sent with another body than recorded: "
                                   f"{json.dumps(body)} where the cassette has {was}")
            self._played.add(index)
        reply = recorded["response"]
        raw = urllib3.HTTPResponse(body=io.BytesIO(b""), headers=reply["headers"], status=reply["status"],
                                   reason=reply["reason"], preload_content=False, decode_content=False)
        _serve(raw, self, [(c["after"], _decoded(c)) for c in reply["chunks"]])
        return adapter.build_response(request, raw)

    def wait_sent(self, count: int, raw: urllib3.HTTPResponse) -> None:
        """Block until the SDK sent ``count`` requests again (or the reply was closed)."""
        end = time.monotonic() + self._replay_wait
        with self._lock:
            while self.sent < count and not raw.closed:
                left = end - time.monotonic()
                if left <= 0:
                    raise CassetteMiss(f"the replay waited {self._replay_wait:g} s for request #{count} (the "
                                       f"recording had sent it before the next chunk); the SDK sent {self.sent}: "
                                       f"{self.requests}")
                self._lock.wait(min(left, 0.1))

    # ------------------------------------------------------------ keeping

    def _kept(self, value: Any) -> Any:
        """``value`` as stored: the secrets replaced, then the caller's ``redact`` on each text."""
        if isinstance(value, str):
            for secret in self._secrets:
                value = value.replace(secret, _REDACTED)
            return self._redact(value) if self._redact is not None else value
        if isinstance(value, list):
            return [self._kept(v) for v in value]
        if isinstance(value, dict):
            return {k: self._kept(v) for k, v in value.items()}
        return value

    def _kept_reply(self, response: dict[str, Any]) -> dict[str, Any]:
        """A reply's body as stored: decoded (its content coding undone), its chunks cut at line ends
        (a secret split across two reads is whole in one), each secret replaced in the bytes
        whatever their encoding. A body whose coding cannot be undone is not kept (it cannot be
        checked); the SDK, which asks for identity, refuses such a reply anyway."""
        headers = [list(pair) for pair in response["headers"]]
        chunks = [(int(c["after"]), _decoded(c)) for c in response["chunks"]]
        coding = next((str(v) for k, v in headers if str(k).lower() == "content-encoding"), None)
        if coding is not None:
            try:
                chunks = _inflated(chunks, coding)
                headers = [pair for pair in headers if str(pair[0]).lower() != "content-encoding"]
            except HermesError:
                chunks = []
        chunks = [(after, self._kept_bytes(data)) for after, data in _whole_lines(chunks)]
        size = str(sum(len(data) for _, data in chunks))
        headers = [[k, size] if str(k).lower() == "content-length" else [k, v] for k, v in headers]
        kept = [{"after": after, **_encoded(data)} for after, data in chunks]
        return {**response, "headers": headers, "chunks": kept}

    def _kept_bytes(self, data: bytes) -> bytes:
        for secret in self._secrets:
            data = data.replace(secret.encode("utf-8"), _REDACTED.encode("ascii"))
        return data

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock:
            interactions = [{**entry, "response": self._kept_reply(entry["response"])} for entry in self.interactions]
            data = {"version": 1, "interactions": self._kept(interactions)}
        self.path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _tap(raw: urllib3.HTTPResponse, recording: _Recording) -> None:
    """Hand the body over as it arrives (``read1``; ``read`` for whole bodies), noting each chunk."""
    live = _live_chunks(raw)
    left = bytearray()

    def read1(amt: Optional[int] = None, **_: object) -> bytes:
        if left:
            out = bytes(left[:amt] if amt else left)
            del left[:len(out)]
            return out
        data = next(live, b"")
        recording.chunk(data)
        if amt and len(data) > amt:
            left.extend(data[amt:])
            data = data[:amt]
        return data

    _install(raw, read1)


def _serve(raw: urllib3.HTTPResponse, cassette: Cassette, chunks: list[tuple[int, bytes]]) -> None:
    """Hand the recorded chunks over, each once the SDK sent what it had sent before it arrived."""
    queue = list(chunks)
    left = bytearray()

    def read1(amt: Optional[int] = None, **_: object) -> bytes:
        if not left:
            if not queue:
                return b""
            after, data = queue.pop(0)
            cassette.wait_sent(after, raw)
            left.extend(data)
        out = bytes(left[:amt] if amt else left)
        del left[:len(out)]
        return out

    _install(raw, read1)


def _install(raw: urllib3.HTTPResponse, read1: Callable[..., bytes]) -> None:
    def read(amt: Optional[int] = None, **_: object) -> bytes:
        out = bytearray()
        while amt is None or len(out) < amt:
            data = read1(None if amt is None else amt - len(out))
            if not data:
                break
            out.extend(data)
        return bytes(out)

    # Instance attributes: the SDK reads a body with whatever read1 a response carries (a tap).
    raw.read1 = read1  # type: ignore[method-assign]
    raw.read = read  # type: ignore[method-assign,assignment]


def _live_chunks(raw: urllib3.HTTPResponse) -> Iterator[bytes]:
    """The body's bytes as they arrive, undecoded, by the original reader's public methods (the
    class's: the tap's own ``read`` and ``read1`` are set on the instance)."""
    cls = type(raw)
    if getattr(raw, "chunked", False) and raw.supports_chunked_reads():
        return iter(raw.read_chunked(_CHUNK, decode_content=False))
    read1 = getattr(cls, "read1", None)  # urllib3 >= 2.2
    if read1 is not None:
        return iter(lambda: read1(raw, _CHUNK, decode_content=False), b"")
    reply = getattr(getattr(raw, "connection", None), "sdk_reply", None)
    if getattr(raw, "length_remaining", 0) is None and callable(getattr(reply, "read1", None)):
        # urllib3 1.26 (and 2.0, 2.1), a close-delimited body (a run's events, a stream without
        # chunks): urllib3's read waits for 64 KiB or the end, so an approval request would reach
        # the SDK only when Hermes gave up. http.client's read1 returns what has arrived, as the
        # SDK's own reader does (hermes_sdk._core.sse); the connection closes at the body's end.
        return iter(lambda: reply.read1(_CHUNK), b"")  # type: ignore[union-attr]
    # a sized body (JSON) in pieces
    return iter(lambda: cls.read(raw, _CHUNK, decode_content=False), b"")


#: How much one inflate step may return (a recording is a test's: its replies are small).
_ROOM = 1 << 20


def _inflated(chunks: list[tuple[int, bytes]], coding: str) -> list[tuple[int, bytes]]:
    """Each chunk's decoded bytes (gzip or deflate, as the SDK decodes them); HermesError for another coding."""
    name = coding_of({"Content-Encoding": coding})
    if name is None:
        return chunks
    inflater = Inflater(name)
    out: list[tuple[int, bytes]] = []
    for after, data in chunks:
        pieces = [inflater.feed(data, _ROOM)]
        while inflater.pending:
            pieces.append(inflater.feed(b"", _ROOM))
        out.append((after, b"".join(pieces)))
    return out


def _whole_lines(chunks: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """The chunks cut only after a line end: a partial line joins the next chunk (handed over no
    earlier than that chunk: the SDK can act on no partial line, so no request depends on it)."""
    out: list[tuple[int, bytes]] = []
    carry = b""
    after = 0
    for after, data in chunks:
        data = carry + data
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        if cut:
            out.append((after, data[:cut]))
    if carry:
        out.append((after, carry))
    return out


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + ("?" + parts.query if parts.query else "")


def _body(body: object) -> Optional[object]:
    if body is None:
        return None
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    try:
        value: object = json.loads(text)  # compared as JSON: key order does not matter
        return value
    except ValueError:
        return text


def _bearer(value: Optional[str]) -> Optional[str]:
    if value and value.lower().startswith("bearer "):
        return value[7:].strip() or None
    return None


def _encoded(data: bytes) -> dict[str, str]:
    try:
        return {"text": data.decode("utf-8")}
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def _decoded(chunk: dict[str, Any]) -> bytes:
    if "text" in chunk:
        return str(chunk["text"]).encode("utf-8")
    return base64.b64decode(chunk["base64"])


@contextlib.contextmanager
def use_cassette(path: "str | os.PathLike[str]", mode: str = "once", *, secrets: Sequence[str] = (),
                 redact: Optional[Callable[[str], str]] = None,
                 replay_wait: float = REPLAY_WAIT) -> Iterator[Cassette]:
    """Record the SDK's HTTP traffic in ``path`` (JSON), or replay it from there with Hermes gone.

    ``mode``: ``once`` records when the file is missing and replays after, ``record`` always
    records, ``replay`` only replays. ``secrets``: more strings to keep out of the file (the key of
    every ``Authorization`` header is kept out anyway); ``redact``: applied to every kept text (what
    it changes is replayed changed). The file is written when the block ends.

    A replay needs no Hermes settings: where ``HERMES_BASE_URL`` or ``HERMES_API_KEY`` is unset,
    it is set to a stand-in (:data:`REPLAY_ENVIRONMENT`) for the block, so ``HermesClient()``
    builds in CI with the server gone; any values work, as neither is matched.
    """
    cassette = Cassette(path, mode, secrets, redact, replay_wait)
    original = HTTPAdapter.send
    stand_ins = {name: value for name, value in REPLAY_ENVIRONMENT.items()
                 if cassette.mode == "replay" and not os.environ.get(name)}

    def send(adapter: HTTPAdapter, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        for name, value in zip(("stream", "timeout", "verify", "cert", "proxies"), args):
            kwargs[name] = value
        return cassette.send(original, adapter, request, **kwargs)

    HTTPAdapter.send = send  # type: ignore[method-assign,assignment]
    os.environ.update(stand_ins)
    try:
        yield cassette
    finally:
        HTTPAdapter.send = original  # type: ignore[method-assign]
        for name, value in stand_ins.items():
            if os.environ.get(name) == value:  # what the block set itself stays
                del os.environ[name]
        if cassette.mode == "record":
            cassette.save()


__all__ = ["MODES", "REPLAY_ENVIRONMENT", "REPLAY_WAIT", "Cassette", "CassetteMiss", "use_cassette"]
