"""Raw-wire helpers for the sessions / jobs / skills conformance cases (``requests`` only).

The ``server`` fixture's ``Target`` is shared by the whole session (and, on the real server,
by every other conformance file), so these cases never assume an empty store: every session
and job they make has a unique id or name, and jobs are deleted again so that no triggered
job runs on a later tick of the real server's 60 s cron scheduler.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import uuid
from typing import Any

import requests
from conformance_helpers import Target

SESSION_KEYS = [
    "id",
    "source",
    "user_id",
    "model",
    "title",
    "started_at",
    "ended_at",
    "end_reason",
    "message_count",
    "tool_call_count",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "estimated_cost_usd",
    "actual_cost_usd",
    "api_call_count",
    "parent_session_id",
    "has_system_prompt",
    "has_model_config",
]
LIST_KEYS = SESSION_KEYS[:19] + ["last_active", "preview"] + SESSION_KEYS[19:]
MESSAGE_KEYS = [
    "id",
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
    "token_count",
    "finish_reason",
    "reasoning",
    "reasoning_content",
]
JOB_KEYS = [
    "id",
    "name",
    "prompt",
    "skills",
    "skill",
    "model",
    "provider",
    "provider_snapshot",
    "model_snapshot",
    "base_url",
    "script",
    "no_agent",
    "context_from",
    "schedule",
    "schedule_display",
    "repeat",
    "enabled",
    "state",
    "paused_at",
    "paused_reason",
    "created_at",
    "next_run_at",
    "last_run_at",
    "last_status",
    "last_error",
    "last_delivery_error",
    "deliver",
    "origin",
    "enabled_toolsets",
    "workdir",
]
GENERATED_SID = re.compile(r"^api_\d{10}_[0-9a-f]{8}$")
JOB_ID = re.compile(r"^[a-f0-9]{12}$")
RUN_ID = re.compile(r"^run_[0-9a-f]{32}$")
STREAM_MSG_ID = re.compile(r"^msg_[0-9a-f]{32}$")
SECURITY = ("Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy")
JSON_TYPE = "application/json; charset=utf-8"


def sid(label: str = "sj") -> str:
    return f"{label}-{uuid.uuid4().hex[:10]}"


class Wire:
    """Raw HTTP against one server; every call returns the ``requests.Response``."""

    def __init__(self, target: Target) -> None:
        self.t = target

    @property
    def kind(self) -> str:
        return self.t.kind

    def req(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        auth: bool | str = True,
        headers: dict[str, str] | None = None,
        stream: bool = False,
        timeout: float = 60.0,
    ) -> requests.Response:
        hdrs: dict[str, str] = {}
        if auth is True:
            hdrs["Authorization"] = f"Bearer {self.t.api_key}"
        elif isinstance(auth, str):
            hdrs["Authorization"] = auth
        data: bytes | None = raw
        if body is not None:
            data = json.dumps(body).encode()
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        hdrs.update(headers or {})
        return self.t.http.request(method, self.t.url(path), data=data, headers=hdrs, stream=stream, timeout=timeout)

    # -- sessions ---------------------------------------------------------------------------
    def create(self, **fields: Any) -> dict[str, Any]:
        fields.setdefault("id", sid())
        resp = self.req("POST", "/api/sessions", fields)
        assert resp.status_code == 201, resp.text
        session: dict[str, Any] = resp.json()["session"]
        return session

    def session(self, session_id: str) -> dict[str, Any]:
        resp = self.req("GET", f"/api/sessions/{quote(session_id)}")
        assert resp.status_code == 200, resp.text
        session: dict[str, Any] = resp.json()["session"]
        return session

    def messages(self, session_id: str) -> dict[str, Any]:
        resp = self.req("GET", f"/api/sessions/{quote(session_id)}/messages")
        assert resp.status_code == 200, resp.text
        body: dict[str, Any] = resp.json()
        return body

    def chat(self, session_id: str, message: str, **extra: Any) -> dict[str, Any]:
        resp = self.req("POST", f"/api/sessions/{quote(session_id)}/chat", {"message": message, **extra})
        assert resp.status_code == 200, resp.text
        body: dict[str, Any] = resp.json()
        return body

    def stream(
        self, session_id: str, body: Any, **headers: str
    ) -> tuple[requests.Response, list[tuple[str, dict[str, Any]]]]:
        resp = self.req("POST", f"/api/sessions/{quote(session_id)}/chat/stream", body, headers=headers)
        return resp, parse_sse(resp.text) if resp.headers.get("Content-Type") == "text/event-stream" else []

    # -- jobs -----------------------------------------------------------------------------------
    def job(self, **fields: Any) -> dict[str, Any]:
        fields.setdefault("name", sid("job"))
        fields.setdefault("schedule", "every 2h")
        resp = self.req("POST", "/api/jobs", fields)
        assert resp.status_code == 200, resp.text
        job: dict[str, Any] = resp.json()["job"]
        return job

    def job_ids(self, include_disabled: bool = True) -> list[str]:
        resp = self.req("GET", "/api/jobs" + ("?include_disabled=true" if include_disabled else ""))
        assert resp.status_code == 200, resp.text
        return [j["id"] for j in resp.json()["jobs"]]

    def delete_job(self, job_id: str) -> None:
        self.req("DELETE", f"/api/jobs/{job_id}")

    # -- skills -----------------------------------------------------------------------------------
    def install_skills(self, skills: list[tuple[str | None, str, str]]) -> None:
        """``(category, name, SKILL.md text)``: files under HERMES_HOME/skills, or the emulator's list."""
        if self.t.emulator is not None:
            for category, name, text in skills:
                self.t.emulator.add_skill(name, _description(text), category)
            return
        root = self.t.live.home / "skills"
        for category, name, text in skills:
            folder = root / category / name if category else root / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "SKILL.md").write_text(text, encoding="utf-8")

    def remove_skills(self) -> None:
        if self.t.emulator is not None:
            self.t.emulator.skills.clear()
            return
        shutil.rmtree(self.t.live.home / "skills", ignore_errors=True)

    # -- the cron tick ------------------------------------------------------------------------
    def wait_tick(self, job_ids: list[str], timeout: float = 150.0) -> None:
        """Until every job ran once: the emulator ticks now; Hermes ticks every 60 s by itself."""
        if self.t.emulator is not None:
            self.t.emulator.tick_jobs()
            return
        deadline = time.monotonic() + timeout
        pending = set(job_ids)
        while pending and time.monotonic() < deadline:
            for job_id in list(pending):
                resp = self.req("GET", f"/api/jobs/{job_id}")
                if resp.status_code == 404 or resp.json()["job"]["last_run_at"] is not None:
                    pending.discard(job_id)
            time.sleep(1.0)
        assert not pending, f"jobs {pending} did not run within {timeout}s"


def _description(text: str) -> str:
    """What Hermes reads from a SKILL.md: the frontmatter description, else the first body line."""
    body = text
    if text.startswith("---"):
        front, _, body = text[3:].partition("\n---")
        for line in front.splitlines():
            if line.startswith("description:"):
                return line.split(":", 1)[1].strip()
    for line in body.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    return ""


def quote(session_id: str) -> str:
    from urllib.parse import quote as _quote

    return _quote(session_id, safe="")


def parse_sse(text: str) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    for block in text.split("\n\n"):
        name, data = "", None
        for line in block.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
        if data is not None:
            events.append((name, data))
    return events


def openai_err(message: str, code: str | None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


AUTH_401 = {"error": {"message": "Invalid API key", "type": "invalid_request_error", "code": "invalid_api_key"}}
