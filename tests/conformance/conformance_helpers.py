"""Shared invariants of the conformance suite (ids, session ids, error fields)."""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable, Optional

import requests

from hermes_sdk import HermesClient, HermesError
from hermes_sdk.testing import HermesEmulator
from hermes_sdk.testing.versions import SERVER_VERSIONS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "live"))

from hermes_server import HERMES_VERSION  # noqa: E402

#: The release both servers play: the live server's (HERMES_PIP_SPEC), else the baseline.
SERVER_VERSION = HERMES_VERSION if HERMES_VERSION in SERVER_VERSIONS else "0.19.0"

HERMES_KEEPALIVE_SECONDS = 30.0  # CHAT_COMPLETIONS_SSE_KEEPALIVE_SECONDS, not configurable

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
RESP_ID = re.compile(r"^resp_[0-9a-f]{28}$")
CHAT_ID = re.compile(r"^chatcmpl-[0-9a-f]{29}$")
MSG_ID = re.compile(r"^msg_[0-9a-f]{24}$")
CHAT_SID = re.compile(r"^api-[0-9a-f]{16}$")

REMOTE_REJECTED = "connector.hermes_agent.remote_rejected"
REMOTE_TEMPORARY = "connector.hermes_agent.remote_temporary"
AUTHENTICATION = "connector.hermes_agent.authentication"
INPUT = "connector.hermes_agent.configuration_or_input"
STREAM_FAILED = "connector.hermes_agent.stream_failed"

FAIL500_TEXT = "HTTP 500: fake upstream exploded (FAIL500)"
FAIL400_TEXT = "HTTP 400: fake upstream bad request (FAIL400)"
TRUNCATION_TEXT = "Response remained truncated after 4 continuation attempts"
ZERO_CHAT_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
ZERO_RESP_USAGE = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}


def uniq(label: str) -> str:
    """A prompt no other test (or earlier run against a shared server) used."""
    return f"{label} {uuid.uuid4().hex[:12]}"


def derived_chat_session_id(system_prompt: str, first_user_message: str) -> str:
    """Hermes L852-867: ``api-`` + sha256(system + "\\n" + first user message)[:16]."""
    digest = hashlib.sha256((system_prompt + "\n" + first_user_message).encode("utf-8"))
    return "api-" + digest.hexdigest()[:16]


def assert_error(
    exc: HermesError,
    *,
    code: str,
    category: str,
    http_status: int | None,
    retryable: bool | None = None,
    uncertain: bool | None = None,
) -> None:
    assert exc.code == code, exc
    assert exc.category == category, exc
    assert exc.http_status == http_status, exc
    if retryable is not None:
        assert exc.retryable is retryable, exc
    if uncertain is not None:
        assert exc.uncertain_outcome is uncertain, exc


def assert_usage(usage: Any, prefix: str) -> None:
    """Token counts are nondeterministic across servers: check the shape and the sum."""
    keys = ("prompt_tokens", "completion_tokens") if prefix == "chat" else ("input_tokens", "output_tokens")
    assert isinstance(usage, dict), usage
    assert all(isinstance(usage[k], int) and usage[k] >= 0 for k in (*keys, "total_tokens")), usage
    assert usage["total_tokens"] == usage[keys[0]] + usage[keys[1]], usage


def message_output(text: str) -> list[dict[str, Any]]:
    """A Responses ``output`` holding one assistant message (no item id or status)."""
    return [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}]


class Target:
    """What a conformance test sees of a server, whichever kind it is."""

    def __init__(
        self,
        kind: str,
        base_url: str,
        api_key: str,
        calls: Callable[[], list[dict[str, Any]]],
        *,
        emulator: Optional[HermesEmulator] = None,
        live: Any = None,
        api_max_retries: int = 1,
        max_concurrent_runs: int = 10,
    ) -> None:
        self.kind = kind
        self.base_url = base_url
        self.api_key = api_key
        self._calls = calls
        self.emulator = emulator
        self.live = live
        self.api_max_retries = api_max_retries
        self.max_concurrent_runs = max_concurrent_runs
        self.http = requests.Session()
        self.http.trust_env = False  # loopback only: never through an env proxy

    def __repr__(self) -> str:
        return f"<Target {self.kind} {self.base_url}>"

    # -- model executions (upstream LLM calls) --------------------------------------
    def mark(self) -> int:
        """A position in the upstream-call log; pass it to ``calls_since``."""
        return len(self._calls())

    def calls_since(self, mark: int) -> list[dict[str, Any]]:
        """Upstream model calls after ``mark``: each has ``roles``, ``n_messages``, ``last_user``."""
        return [
            {"roles": c["roles"], "n_messages": c["n_messages"], "last_user": c["last_user"]}
            for c in self._calls()[mark:]
        ]

    def calls_between(self, start: int, end: int) -> list[dict[str, Any]]:
        return self.calls_since(start)[: end - start]

    # -- SDK and raw HTTP ------------------------------------------------------------------
    def client(self, **kwargs: Any) -> HermesClient:
        kwargs.setdefault("base_url", self.base_url)
        kwargs.setdefault("api_key", self.api_key)
        kwargs.setdefault("load_entrypoints", False)
        kwargs.setdefault("approval_provider", approve_all)
        return HermesClient(**kwargs)

    def url(self, path: str) -> str:
        return self.base_url + path

    def auth(self, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}", **extra}

    @contextlib.contextmanager
    def keepalive_window(self) -> Iterator[float]:
        """Yield the SSE keepalive interval (seconds) in force for the block.

        The emulator is switched to 0.5 s for the block; Hermes' 30 s is fixed.
        """
        if self.emulator is None:
            yield HERMES_KEEPALIVE_SECONDS
            return
        before = self.emulator.keepalive_seconds
        self.emulator.keepalive_seconds = 0.5
        try:
            yield 0.5
        finally:
            self.emulator.keepalive_seconds = before


def approve_all(request: Any) -> Any:
    """Approval provider for ``response_delete`` in the conformance suite."""
    return request.approve(approver="conformance-suite", policy_decision_id="pd-conformance")
