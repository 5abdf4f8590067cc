"""Raw-wire helpers for the /v1/runs conformance suite (``requests`` only, no SDK client).

``RunsTarget`` is one server with tools on (``[terminal, file, todo]``, manual approvals,
a short ``approvals.timeout``): the emulator, or the real Hermes with its terminal's cwd in
a scratch directory. Files the tests create live in the emulator's simulated file system
or, for Hermes, in that real scratch directory.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import requests

APPROVAL_TIMEOUT = 4.0  # approvals.timeout on both servers: the timeout cases stay short
TERMINAL_EVENTS = ("run.completed", "run.failed", "run.cancelled")
EMULATOR_SCRATCH = "/scratch/hermes-emulator/work"


def uniq(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:10]}"


class RunsTarget:
    """What a runs conformance test sees of a server, whichever kind it is."""

    def __init__(
        self,
        kind: str,
        base_url: str,
        api_key: str,
        *,
        emulator: Any = None,
        live: Any = None,
        max_concurrent_runs: int = 10,
    ) -> None:
        self.kind = kind
        self.base_url = base_url
        self.api_key = api_key
        self.emulator = emulator
        self.live = live
        self.max_concurrent_runs = max_concurrent_runs
        self.http = requests.Session()
        self.http.trust_env = False  # loopback only: never through an env proxy

    def __repr__(self) -> str:
        return f"<RunsTarget {self.kind} {self.base_url}>"

    # -- the scratch area ---------------------------------------------------------------
    @property
    def scratch(self) -> str:
        """Absolute directory for test files (the real server's terminal cwd)."""
        return EMULATOR_SCRATCH if self.live is None else str(self.live.scratch)

    def make_file(self, path: str, content: str = "x\n") -> str:
        if self.emulator is not None:
            self.emulator.files[path] = content
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(content)
        return path

    def exists(self, path: str) -> bool:
        if self.emulator is not None:
            prefix = path.rstrip("/") + "/"
            return any(p == path or p.startswith(prefix) for p in self.emulator.files)
        return os.path.exists(path)

    def victim(self) -> str:
        """A fresh directory holding one file, for the dangerous ``rm -rf`` cases."""
        directory = f"{self.scratch}/{uniq('victim')}"
        self.make_file(f"{directory}/file.txt")
        return directory

    # -- raw HTTP --------------------------------------------------------------------------
    def url(self, path: str) -> str:
        return self.base_url + path

    def auth(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", **extra}

    def start(self, body: Any, **headers: str) -> requests.Response:
        return self.http.post(self.url("/v1/runs"), json=body, headers=self.auth(**headers), timeout=30)

    def start_id(self, prompt: str, **fields: Any) -> str:
        resp = self.start({"input": prompt, **fields})
        assert resp.status_code == 202, resp.text
        return str(resp.json()["run_id"])

    def get(self, run_id: str) -> requests.Response:
        return self.http.get(self.url(f"/v1/runs/{run_id}"), headers=self.auth(), timeout=10)

    def approve(self, run_id: str, body: Any) -> requests.Response:
        return self.http.post(self.url(f"/v1/runs/{run_id}/approval"), json=body, headers=self.auth(), timeout=10)

    def stop(self, run_id: str) -> requests.Response:
        return self.http.post(self.url(f"/v1/runs/{run_id}/stop"), headers=self.auth(), timeout=10)

    def wait_status(self, run_id: str, statuses: tuple[str, ...], timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            body: dict[str, Any] = self.get(run_id).json()
            if body.get("status") in statuses or time.monotonic() > deadline:
                return body
            time.sleep(0.05)

    def wait_done(self, run_id: str, timeout: float = 20.0) -> dict[str, Any]:
        return self.wait_status(run_id, ("completed", "failed", "cancelled"), timeout)

    def subscribe(self, run_id: str, read_timeout: float = 40.0) -> EventStream:
        resp = requests.get(
            self.url(f"/v1/runs/{run_id}/events"),
            headers=self.auth(),
            stream=True,
            timeout=(5, read_timeout),
        )
        return EventStream(resp)

    def events(self, run_id: str, read_timeout: float = 40.0) -> tuple[list[dict[str, Any]], list[str]]:
        """Subscribe and read to the end: ``(events, comments)``."""
        with self.subscribe(run_id, read_timeout) as stream:
            assert stream.status == 200, stream.response.text
            return stream.read_all()


class EventStream:
    """An open ``/events`` response read frame by frame (data-only SSE, comments kept)."""

    def __init__(self, response: requests.Response) -> None:
        self.response = response
        self.status = response.status_code
        self.raw = b""
        self._buffer = b""
        self._chunks: Optional[Iterator[bytes]] = None
        self.events: list[dict[str, Any]] = []
        self.comments: list[str] = []
        self.closed = False

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.response.close()

    def next_frame(self) -> Optional[str]:
        """The next raw frame (without its blank line), or None at the end of the body."""
        if self._chunks is None:
            self._chunks = self.response.iter_content(chunk_size=None)
        while b"\n\n" not in self._buffer:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                self.closed = True
                return None
            self.raw += chunk
            self._buffer += chunk
        frame, self._buffer = self._buffer.split(b"\n\n", 1)
        return frame.decode("utf-8")

    def next_event(self) -> Optional[dict[str, Any]]:
        """The next ``data:`` event (comments are recorded and skipped), or None at the end."""
        while True:
            frame = self.next_frame()
            if frame is None:
                return None
            if frame.startswith(":"):
                self.comments.append(frame[1:].strip())
                continue
            assert frame.startswith("data: ") and "\n" not in frame, repr(frame)
            event: dict[str, Any] = json.loads(frame[len("data: ") :])
            self.events.append(event)
            return event

    def until(self, event_type: str) -> dict[str, Any]:
        while True:
            event = self.next_event()
            assert event is not None, f"stream ended before {event_type}: {self.events}"
            if event["event"] == event_type:
                return event

    def read_all(self) -> tuple[list[dict[str, Any]], list[str]]:
        while self.next_event() is not None:
            pass
        return self.events, self.comments


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in events]


def without_deltas(events: list[dict[str, Any]]) -> list[str]:
    """Event types with runs of ``message.delta`` collapsed (delta boundaries differ by server)."""
    out: list[str] = []
    for kind in kinds(events):
        if kind == "message.delta" and out and out[-1] == kind:
            continue
        out.append(kind)
    return out


def delta_text(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["event"] == "message.delta")
