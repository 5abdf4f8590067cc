"""The deterministic scripted "agent" behind the emulator.

By default it reproduces the fake upstream LLM that served the real Hermes
server in the recorded transcripts, *as seen through Hermes* (retry text,
truncation continuations, zeroed usage), so one suite can run against both:

- ``ECHO: <last user message>``, streamed in groups of three words (Hermes merges back-to-back
  user turns first, so a turn that failed without a reply joins the next one);
- ``SLOW:<sec>`` in the last user message sleeps first;
- ``FAIL500`` / ``FAIL400`` / ``FAIL401`` in the last user message fail the run;
- ``TRUNCATE`` in any user message gives ``ECHO-PART`` x4 with an
  ``output_truncated`` partial state; ``TRUNCEMPTY`` gives no text at all;
- ``THINKTAG`` prefixes the answer with ``<think>pondering the request</think>``
  (dropped from the text, kept in the runs' ``reasoning.available``);
- with tools on (``toolsets``), ``TOOL:``/``TOOLJSON:`` directives and ``PREAMBLE``
  make one tool-call turn, then ``DONE: <results>`` (see ``tools.py``).

Tests steer it further with queued replies, a responder callable, forced
failures and truncation (see ``HermesEmulator``).
"""

from __future__ import annotations

import functools
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Union

from .tools import (
    PREAMBLE_TEXT,
    Approver,
    Interrupted,
    ToolBox,
    ToolCall,
    ToolRecord,
    call_arguments,
    done_text,
    parse_directives,
)
from .wire import repair_turns, word_count

PROMPT_OVERHEAD_TOKENS = 251  # Hermes' own system prompt, as counted by the fake LLM
TOOLS_PROMPT_OVERHEAD_TOKENS = 587  # ... plus the seven tool schemas of [terminal, file, todo]
THINK_PREFIX = "<think>pondering the request</think>"
REASONING_PREVIEW_CHARS = 500
_THINK_TAGS = re.compile(r"</?(think|reasoning|REASONING_SCRATCHPAD)>")
TRUNCATION_ERROR = "Response remained truncated after 4 continuation attempts"
_CONTINUATIONS = 4
_UPSTREAM_FAILURES = {
    500: ("HTTP 500: fake upstream exploded (FAIL500)", True),
    400: ("HTTP 400: fake upstream bad request (FAIL400)", False),
    401: ("HTTP 401: fake upstream unauthorized (FAIL401)", False),
}
_SLOW = re.compile(r"SLOW:(\d+(?:\.\d+)?)")
CONTINUATION_PROMPT = (
    "[System: Your previous response was truncated by the output length limit. Continue "
    "exactly where you left off. Do not restart or repeat prior text. Finish the answer directly.]"
)


@dataclass(frozen=True)
class RequestInfo:
    """What the agent was asked to do; handed to responder callables."""

    endpoint: str  # "chat", "responses" or "runs"
    prompt: str
    history: list[dict[str, str]]
    system_prompt: str
    session_id: str
    stream: bool
    body: dict[str, object]
    headers: dict[str, str]

    @property
    def user_messages(self) -> list[str]:
        """The history's user messages and then the prompt, as sent (not merged)."""
        return [m["content"] for m in self.history if m.get("role") == "user"] + [self.prompt]

    @functools.cached_property  # computed once per request: the model asks several times
    def upstream_turns(self) -> list[dict[str, str]]:
        """History and prompt as Hermes sends them upstream (consecutive same-role turns merged)."""
        return repair_turns(self.history + [{"role": "user", "content": self.prompt}])

    @property
    def upstream_prompt(self) -> str:
        """The last user message the model sees (a failed turn left without a reply merges into it)."""
        return self.upstream_turns[-1]["content"]


@dataclass
class Reply:
    """A scripted agent outcome.

    ``finish="stop"`` is a completed run; ``"length"`` a truncated partial run
    (``text`` may be empty, which Hermes turns into a hard failure);
    ``"error"`` an agent failure whose ``text`` becomes the final response.
    """

    text: str | None = None
    deltas: Sequence[str] | None = None
    finish: str = "stop"
    error: str | None = None
    delay: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


ReplyLike = Union[str, Reply]  # noqa: UP007 - runtime alias, must work on 3.9
Responder = Callable[[RequestInfo], ReplyLike]


@dataclass
class AgentResult:
    """The agent's outcome, shaped like Hermes' ``_run_agent`` result."""

    final_response: str | None
    completed: bool = True
    partial: bool = False
    failed: bool = False
    error: str | None = None
    error_code: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    streamed: list[str] = field(default_factory=list)
    tool_records: list[ToolRecord] = field(default_factory=list)
    preamble: str = ""

    @property
    def finish_reason(self) -> str:
        """The finish reason by Hermes' rule (L2921-2926), which tries length, then error, then stop."""
        if self.partial and self.error and "truncat" in self.error.lower():
            return "length"
        if self.failed or (not self.completed and self.error):
            return "error"
        return "stop"


def io_usage(result: AgentResult) -> dict[str, int]:
    """``input``/``output`` token usage (Responses, runs); zero unless the run completed."""
    if not result.completed:
        return {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    return {
        "input_tokens": result.prompt_tokens,
        "output_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


def word_groups(text: str, size: int = 3) -> list[str]:
    """Split into runs of ``size`` words, keeping the original whitespace."""
    tokens = re.findall(r"\s*\S+", text)
    if not tokens:
        return [text] if text else []
    groups = ["".join(tokens[i : i + size]) for i in range(0, len(tokens), size)]
    trailing = text[len("".join(tokens)) :]
    if trailing:
        groups[-1] += trailing
    return groups


class Cancelled(Exception):
    """The client went away, the run was stopped, or the emulator is stopping."""


def _ignore(*_args: object) -> None:
    return None


@dataclass
class AgentHooks:
    """What an endpoint wants to hear about while the agent works (all optional).

    ``approver`` is set only by ``/v1/runs``: without it a dangerous command is not run
    and the model receives a ``pending_approval`` result, as on chat and Responses.
    """

    tool_started: Callable[[ToolCall], None] = _ignore
    tool_completed: Callable[[ToolRecord], None] = _ignore
    assistant_message: Callable[[str], None] = _ignore  # runs: reasoning.available
    approver: Approver | None = None
    session_patterns: set[str] = field(default_factory=set)


def reasoning_text(content: str) -> str:
    """``reasoning.available.text``: think tags removed (inner text kept), 500 chars."""
    return _THINK_TAGS.sub("", content)[:REASONING_PREVIEW_CHARS]


class ScriptedModel:
    """Thread-safe source of agent results plus the knobs tests turn."""

    def __init__(self, token_delay: float = 0.0, api_max_retries: int = 1) -> None:
        self._lock = threading.Lock()
        # Hermes' ``agent.api_max_retries``: upstream tries for a retryable (5xx) failure.
        self.default_api_max_retries = max(1, api_max_retries)
        self.api_max_retries = self.default_api_max_retries
        self._upstream: list[dict[str, object]] = []
        self._queue: deque[ReplyLike] = deque()
        self._responder: Responder | None = None
        self._fail_next: deque[int] = deque()
        self._truncation: bool | None = None  # None: off; False: with text; True: empty
        self._executions = 0
        self._call_seq = 0
        self.toolbox = ToolBox()
        # The upstream call after a tool turn takes a while on Hermes too: long enough that an
        # approval POSTed right after another one finds the run alive (409 approval_not_pending).
        self.followup_delay = 0.2
        self.stopping = threading.Event()
        self.default_token_delay = token_delay
        self.token_delay = token_delay

    # -- controls -------------------------------------------------------
    def script(self, replies: Sequence[ReplyLike], responder: Responder | None) -> None:
        """Queue ``replies`` for the next executions; ``responder`` answers once the queue is empty."""
        with self._lock:
            self._queue.extend(replies)
            if responder is not None:
                self._responder = responder

    def fail_next(self, count: int, status: int) -> None:
        """Make the next ``count`` executions fail as an upstream ``status`` (500, 400 or 401) would."""
        if status not in _UPSTREAM_FAILURES:
            raise ValueError(f"status must be one of {sorted(_UPSTREAM_FAILURES)}")
        with self._lock:
            self._fail_next.extend([status] * count)

    def force_truncation(self, enabled: bool, empty: bool) -> None:
        """Make every execution end truncated (``empty``: with no text) until turned off."""
        with self._lock:
            self._truncation = empty if enabled else None

    def reset(self) -> None:
        """Forget scripts, faults, counters and the upstream log; restore the constructor's settings."""
        with self._lock:
            self._queue.clear()
            self._responder = None
            self._fail_next.clear()
            self._truncation = None
            self._executions = 0
            self._call_seq = 0
            self._upstream.clear()
            self.token_delay = self.default_token_delay
            self.api_max_retries = self.default_api_max_retries

    @property
    def executions(self) -> int:
        """Agent executions so far."""
        with self._lock:
            return self._executions

    @property
    def upstream_calls(self) -> list[dict[str, object]]:
        """The upstream LLM calls a real Hermes would have made, like the fake LLM logs them.

        One per execution, ``api_max_retries`` for an upstream 5xx, and four for a
        truncated run (three continuation requests). Each is ``{"roles", "n_messages",
        "last_user"}``; Hermes always prepends its own system prompt.
        """
        with self._lock:
            return list(self._upstream)

    @property
    def prompt_overhead(self) -> int:
        return TOOLS_PROMPT_OVERHEAD_TOKENS if self.toolbox.toolsets else PROMPT_OVERHEAD_TOKENS

    def _log_upstream(self, info: RequestInfo, calls: int = 1, continuation: bool = False) -> None:
        roles = ["system"] + [str(m.get("role")) for m in info.upstream_turns]
        last = info.upstream_prompt
        entries = []
        for _ in range(calls):
            entries.append({"roles": list(roles), "n_messages": len(roles), "last_user": last})
            if continuation:
                roles = roles + ["assistant", "user"]
                last = CONTINUATION_PROMPT
        with self._lock:
            self._upstream.extend(entries)

    # -- execution ------------------------------------------------------
    def run(
        self,
        info: RequestInfo,
        on_delta: Callable[[str], None],
        cancel: threading.Event,
        hooks: AgentHooks | None = None,
    ) -> AgentResult:
        """Run one agent turn, calling ``on_delta`` for each streamed piece."""
        hooks = hooks or AgentHooks()
        if cancel.is_set():
            raise Cancelled()
        with self._lock:
            self._executions += 1
            failure = self._fail_next.popleft() if self._fail_next else None
            truncation = self._truncation
            scripted: ReplyLike | None = self._queue.popleft() if self._queue else None
            responder = self._responder
        if scripted is None and responder is not None and failure is None:
            scripted = responder(info)
        slow = _SLOW.search(info.upstream_prompt)
        if slow and scripted is None:
            self._sleep(float(slow.group(1)), cancel)
        if failure is not None:
            return self._upstream_failure(failure, info)
        if truncation is not None:
            return self._truncated(info, on_delta, cancel, empty=truncation)
        if scripted is not None:
            reply = Reply(text=scripted) if isinstance(scripted, str) else scripted
            self._log_upstream(info)
            return self._announce(self._scripted(info, reply, on_delta, cancel), hooks)
        return self._default(info, on_delta, cancel, hooks)

    @staticmethod
    def _announce(result: AgentResult, hooks: AgentHooks) -> AgentResult:
        if result.final_response and not result.failed:
            hooks.assistant_message(reasoning_text(result.final_response))
        return result

    def _default(
        self,
        info: RequestInfo,
        on_delta: Callable[[str], None],
        cancel: threading.Event,
        hooks: AgentHooks,
    ) -> AgentResult:
        prompt = info.upstream_prompt
        for status in (500, 400, 401):
            if f"FAIL{status}" in prompt:
                return self._upstream_failure(status, info)
        users = info.user_messages
        if any("TRUNCEMPTY" in u for u in users):
            return self._truncated(info, on_delta, cancel, empty=True)
        if any("TRUNCATE" in u for u in users):
            return self._truncated(info, on_delta, cancel, empty=False)
        directives = parse_directives(prompt) if self.toolbox.toolsets else []
        if directives:
            return self._tool_turn(info, directives, on_delta, cancel, hooks)
        self._log_upstream(info)
        if "THINKTAG" in prompt:
            raw = THINK_PREFIX + "ECHO: " + prompt
            visible = [re.sub(r"<think>.*?</think>", "", g, flags=re.S) for g in word_groups(raw)]
            reply = Reply(
                text=raw.replace(THINK_PREFIX, ""),
                deltas=[g for g in visible if g],
                completion_tokens=word_count(raw),
            )
            result = self._scripted(info, reply, on_delta, cancel)
            hooks.assistant_message(reasoning_text(raw))
            return result
        return self._announce(self._scripted(info, Reply(text="ECHO: " + prompt), on_delta, cancel), hooks)

    def _tool_turn(
        self,
        info: RequestInfo,
        directives: list[tuple[str, str, str]],
        on_delta: Callable[[str], None],
        cancel: threading.Event,
        hooks: AgentHooks,
    ) -> AgentResult:
        """One tool-call turn (calls run one after another), then the ``DONE:`` answer."""
        preamble = PREAMBLE_TEXT if "PREAMBLE" in info.upstream_prompt else ""
        with self._lock:
            calls = []
            for kind, name, arg in directives:
                self._call_seq += 1
                calls.append(ToolCall(f"call_fake{self._call_seq:04d}", name, call_arguments(kind, name, arg)))
        self._log_upstream(info)
        first_prompt = prompt_token_count(info, self.prompt_overhead)
        if preamble:
            self._emit([preamble], on_delta, cancel)
            hooks.assistant_message(reasoning_text(preamble))
        known = set(self.toolbox.tool_names)
        records: list[ToolRecord] = []
        for call in calls:
            if cancel.is_set():
                raise Cancelled()
            if call.name not in known:
                records.append(ToolRecord(call, self.toolbox.unknown_tool_text(call.name), True, 0.0, ran=False))
                continue
            hooks.tool_started(call)
            began = time.monotonic()
            try:
                result, error = self.toolbox.execute(call, hooks.approver, cancel, hooks.session_patterns)
            except Interrupted:
                interrupted = json.dumps({"output": "", "exit_code": 130, "error": "Command interrupted"})
                hooks.tool_completed(ToolRecord(call, interrupted, True, round(time.monotonic() - began, 3)))
                raise Cancelled() from None
            record = ToolRecord(call, result, error, round(time.monotonic() - began, 3))
            records.append(record)
            hooks.tool_completed(record)
        if self.followup_delay and any(r.ran for r in records):
            self._sleep(self.followup_delay, cancel)
        if cancel.is_set():
            raise Cancelled()
        text = done_text([r.result for r in records])
        roles = ["system"] + [str(m.get("role")) for m in info.upstream_turns] + ["assistant"]
        roles += ["tool"] * len(records)
        with self._lock:
            self._upstream.append({"roles": roles, "n_messages": len(roles), "last_user": info.upstream_prompt})
        deltas = word_groups(text)
        if deltas and any(r.ran for r in records):
            deltas[0] = "\n\n" + deltas[0]  # Hermes' paragraph break after a tool turn (stream only)
        streamed = self._emit(deltas, on_delta, cancel)
        hooks.assistant_message(reasoning_text(text))
        second_prompt = first_prompt + word_count(preamble) + sum(word_count(r.result) for r in records)
        return AgentResult(
            final_response=text,
            prompt_tokens=first_prompt + second_prompt,
            completion_tokens=max(1, word_count(preamble)) + word_count(text),
            streamed=streamed,
            tool_records=records,
            preamble=preamble,
        )

    def _scripted(
        self,
        info: RequestInfo,
        reply: Reply,
        on_delta: Callable[[str], None],
        cancel: threading.Event,
    ) -> AgentResult:
        if reply.delay:
            self._sleep(reply.delay, cancel)
        text = reply.text or ""
        deltas = list(reply.deltas) if reply.deltas is not None else word_groups(text)
        if reply.text is None and reply.deltas is not None:
            text = "".join(deltas)
        if reply.finish == "error":
            # An upstream error: nothing is streamed, the text is Hermes' final response.
            error = reply.error or "HTTP 500: scripted failure"
            return AgentResult(
                final_response=text or None,
                completed=False,
                failed=True,
                error=error,
                error_code="agent_error",
            )
        streamed = self._emit(deltas, on_delta, cancel)
        if reply.finish == "length":
            return AgentResult(
                final_response=text or None,
                completed=False,
                partial=True,
                error=reply.error or TRUNCATION_ERROR,
                error_code="output_truncated",
                streamed=streamed,
            )
        prompt_tokens = reply.prompt_tokens
        if prompt_tokens is None:
            prompt_tokens = prompt_token_count(info, self.prompt_overhead)
        completion = reply.completion_tokens
        if completion is None:
            completion = word_count(text)
        return AgentResult(
            final_response=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion,
            streamed=streamed,
        )

    def _truncated(
        self,
        info: RequestInfo,
        on_delta: Callable[[str], None],
        cancel: threading.Event,
        *,
        empty: bool,
    ) -> AgentResult:
        deltas = [] if empty else ["ECHO-PART"] * _CONTINUATIONS
        self._log_upstream(info, _CONTINUATIONS, continuation=True)
        reply = Reply(deltas=deltas, finish="length")
        return self._scripted(info, reply, on_delta, cancel)

    def _upstream_failure(self, status: int, info: RequestInfo) -> AgentResult:
        error, retryable = _UPSTREAM_FAILURES[status]
        tries = self.api_max_retries if retryable else 1
        self._log_upstream(info, tries)
        final = f"API call failed after {tries} retries: {error}" if retryable else error
        return AgentResult(
            final_response=final,
            completed=False,
            failed=True,
            error=error,
            error_code="agent_error",
        )

    def _emit(
        self,
        deltas: list[str],
        on_delta: Callable[[str], None],
        cancel: threading.Event,
    ) -> list[str]:
        streamed: list[str] = []
        for piece in deltas:
            if self.token_delay:
                self._sleep(self.token_delay, cancel)
            if cancel.is_set():
                raise Cancelled()
            on_delta(piece)
            streamed.append(piece)
        return streamed

    def _sleep(self, seconds: float, cancel: threading.Event) -> None:
        # Sliced so that both the request's cancel and emulator shutdown interrupt it.
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if cancel.wait(min(remaining, 0.05)) or self.stopping.is_set():
                raise Cancelled()


def prompt_token_count(info: RequestInfo, overhead: int = PROMPT_OVERHEAD_TOKENS) -> int:
    """The fake LLM counts whitespace words on top of Hermes' system prompt."""
    words = word_count(info.system_prompt) + word_count(info.prompt)
    words += sum(word_count(m.get("content", "")) for m in info.history)
    return overhead + words
