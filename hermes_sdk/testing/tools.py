"""Simulated agent tools: the fake LLM's tool-call magic and deterministic tool results.

Nothing here executes anything. ``terminal`` commands, ``read_file`` and ``write_file``
act on an in-memory file table (``ToolBox.files``); results have the JSON shapes Hermes
0.19.0 gave in the captures (``spec/hermes-runs.md`` and ``hermes-wire/26``-``41``).

Magic prompts (as the fake upstream LLM of the captures understood them; the magic words
go *before* the first directive, whose argument runs to ``||`` or the end of the line):

- ``TOOL:terminal:<cmd>``, ``TOOL:read_file:<path>``, ``TOOL:todo:<text>``,
  ``TOOL:write_file:<path>=<content>``, ``TOOL:<other>:<x>`` (arguments ``{"input": x}``),
  ``TOOLJSON:<name>:{...}`` (exactly that JSON); directives joined by ``||`` are parallel
  calls of one turn (Hermes runs them one after another);
- ``PREAMBLE``: the tool-call turn also carries the text ``Calling tools now.``;
- after the tools ran the model answers ``DONE: <each result joined by " | ">``, a result over 160
  characters cut there and ending in ``…`` (so a cut answer says it was cut).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

PREAMBLE_TEXT = "Calling tools now."
RESULT_PREVIEW_CHARS = 160
# platform_toolsets.api_server: [terminal, file, todo] offers exactly these seven tools.
TOOLSET_TOOLS: dict[str, tuple[str, ...]] = {
    "terminal": ("process", "terminal"),
    "file": ("patch", "read_file", "search_files", "write_file"),
    "todo": ("todo",),
}
DEFAULT_TOOLSETS = ("terminal", "file", "todo")
EMOJI = {
    "terminal": "\U0001f4bb",
    "process": "\u2699\ufe0f",
    "read_file": "\U0001f4d6",
    "write_file": "\u270d\ufe0f",
    "patch": "\U0001f527",
    "search_files": "\U0001f50e",
    "todo": "\U0001f4cb",
}
# (regex, pattern key) from Hermes' DANGEROUS_PATTERNS (tools/approval.py); first match wins.
DANGEROUS_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\brm\s+(-[^\s]*\s+)*/", "delete in root path"),
    (r"\brm\s+-[^\s]*r", "recursive delete"),
    (r"\brm\s+--recursive\b", "recursive delete (long flag)"),
    (r"\bchmod\s+(-[^\s]*\s+)*(777|666|o\+[rwx]*w|a\+[rwx]*w)\b", "world/other-writable permissions"),
    (r"\bDROP\s+(TABLE|DATABASE)\b", "SQL DROP"),
    (r"\bDELETE\s+FROM\b(?![^\n]*\bWHERE\b)", "SQL DELETE without WHERE"),
    (r"\b(curl|wget)\b.*\|\s*(?:[/\w]*/)?(?:ba)?sh(?:\s|$|-c)", "pipe remote content to shell"),
    (r"\bxargs\s+.*\brm\b", "xargs with rm"),
    (r"\bfind\b.*-delete\b", "find -delete"),
)
# Blocked under every approval mode, never asked about (Hermes' "hardline" list, abridged).
HARDLINE = re.compile(r"(\brm\s+(-[^\s]*\s+)*/\s*$|\bmkfs\b|\bshutdown\b|\breboot\b)")
_DIRECTIVE = re.compile(r"(TOOLJSON|TOOL):([^:\s|]+):")

DENIED_TEXT = (
    "BLOCKED: Command denied by user. The user has NOT consented to this action. Do NOT retry "
    "this command, do NOT rephrase it, and do NOT attempt the same outcome via a different "
    "command. Stop the current workflow and wait for the user to respond before taking any "
    "further destructive or irreversible action."
)
TIMED_OUT_TEXT = (
    "BLOCKED: Command timed out without user response. The user has NOT consented to this "
    "action. Do NOT retry this command, do NOT rephrase it, and do NOT attempt the same outcome "
    "via a different command. Stop the current workflow and wait for the user to respond before "
    "taking any further destructive or irreversible action. Silence is not consent."
)
HARDLINE_TEXT = "BLOCKED: This command is on the hardline block list and can never be run."


@dataclass(frozen=True)
class ToolCall:
    """One tool call of the model's tool turn."""

    call_id: str
    name: str
    arguments: str  # the JSON the model sent (compact, like the fake LLM)

    @property
    def args(self) -> dict[str, object]:
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}

    @property
    def display_arguments(self) -> str:
        """``json.dumps`` of the parsed args, default separators (what Responses items carry)."""
        return json.dumps(self.args)

    @property
    def preview(self) -> str:
        args = self.args
        if self.name == "terminal":
            return str(args.get("command", ""))
        if self.name in ("read_file", "write_file", "patch"):
            return os.path.basename(str(args.get("path", "")))
        if self.name == "todo":
            todos = args.get("todos")
            return f"planning {len(todos) if isinstance(todos, list) else 0} task(s)"
        for value in args.values():
            return str(value)
        return ""


@dataclass
class ToolRecord:
    """A tool call and what came back (Responses items and the run transcript use it)."""

    call: ToolCall
    result: str
    error: bool
    duration: float
    ran: bool = True  # False: unknown tool, no progress events


@dataclass(frozen=True)
class Danger:
    """A dangerous command that needs an approval (the ``approval.request`` payload)."""

    command: str
    pattern_key: str
    smart_denied: bool = False

    @property
    def allow_permanent(self) -> bool:
        return not self.smart_denied

    @property
    def choices(self) -> list[str]:
        return ["once", "deny"] if self.smart_denied else ["once", "session", "always", "deny"]

    def payload(self) -> dict[str, object]:
        body: dict[str, object] = {
            "command": self.command,
            "pattern_key": self.pattern_key,
            "pattern_keys": [self.pattern_key],
            "description": self.pattern_key,
            "allow_permanent": self.allow_permanent,
        }
        if self.smart_denied:
            body["smart_denied"] = True
        return body


# An approver answers "once" | "session" | "always" | "deny" | "timeout" (blocks until then).
Approver = Callable[[Danger], str]


def parse_directives(prompt: str) -> list[tuple[str, str, str]]:
    """``(kind, name, argument)`` for each ``TOOL``/``TOOLJSON`` directive of the prompt."""
    found: list[tuple[str, str, str]] = []
    for line in prompt.splitlines():
        for part in line.split("||"):
            match = _DIRECTIVE.search(part)
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
        args: dict[str, object] = {"command": arg}
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


def done_text(results: list[str]) -> str:
    """The model's answer after the tools ran (the same on the live fake LLM, tests/live/fake_llm.py)."""
    return "DONE: " + " | ".join(r if len(r) <= RESULT_PREVIEW_CHARS else r[:RESULT_PREVIEW_CHARS] + "…"
                                 for r in results)


def detect_danger(command: str) -> str | None:
    for pattern, key in DANGEROUS_PATTERNS:
        if re.search(pattern, command, re.IGNORECASE | re.DOTALL):
            return key
    return None


def _terminal_result(output: str, exit_code: int, error: str | None = None, **extra: object) -> str:
    body: dict[str, object] = {"output": output, "exit_code": exit_code, "error": error}
    body.update(extra)
    return json.dumps(body)


class Interrupted(Exception):
    """The run was stopped while a tool was running."""


@dataclass
class ToolBox:
    """The simulated tools of one emulator: an in-memory file table and approval state."""

    toolsets: tuple[str, ...] = ()
    files: dict[str, str] = field(default_factory=dict)
    approval_mode: str = "manual"  # manual | smart | off
    command_allowlist: set[str] = field(default_factory=set)  # "always" answers (process-wide)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def tool_names(self) -> list[str]:
        names: set[str] = set()
        for toolset in self.toolsets:
            names.update(TOOLSET_TOOLS.get(toolset, ()))
        return sorted(names)

    def unknown_tool_text(self, name: str) -> str:
        return f"Tool '{name}' does not exist. Available tools: {', '.join(self.tool_names)}"

    # -- execution ----------------------------------------------------------
    def execute(
        self,
        call: ToolCall,
        approver: Approver | None,
        cancel: threading.Event,
        session_patterns: set[str],
    ) -> tuple[str, bool]:
        """Run one known tool: ``(result text, error flag)``. Raises Interrupted on stop."""
        args = call.args
        if call.name == "terminal":
            return self._terminal(str(args.get("command", "")), approver, cancel, session_patterns)
        if call.name == "read_file":
            return self._read_file(str(args.get("path", "")))
        if call.name == "write_file":
            path, content = str(args.get("path", "")), str(args.get("content", ""))
            with self._lock:
                self.files[path] = content
            return json.dumps({"bytes_written": len(content.encode("utf-8")), "dirs_created": False}), False
        if call.name == "todo":
            raw = args.get("todos")
            todos: list[object] = raw if isinstance(raw, list) else []
            items = [
                {"id": str(t.get("id", i + 1)), "content": t.get("content"), "status": t.get("status", "pending")}
                for i, t in enumerate(todos)
                if isinstance(t, dict)
            ]
            summary = {
                "total": len(items),
                "pending": sum(1 for t in items if t["status"] == "pending"),
                "in_progress": sum(1 for t in items if t["status"] == "in_progress"),
                "completed": sum(1 for t in items if t["status"] == "completed"),
                "cancelled": sum(1 for t in items if t["status"] == "cancelled"),
            }
            return json.dumps({"todos": items, "summary": summary}), False
        return json.dumps({"output": "", "error": None}), False

    def _read_file(self, path: str) -> tuple[str, bool]:
        with self._lock:
            text = self.files.get(path)
        if text is None:
            body = {
                "content": "",
                "total_lines": 0,
                "file_size": 0,
                "truncated": False,
                "is_binary": False,
                "is_image": False,
                "error": f"File not found: {path}",
            }
            return json.dumps(body), True
        lines = text.split("\n")
        numbered = "\n".join(f"{i}|{line}" for i, line in enumerate(lines, 1))
        body = {
            "content": numbered,
            "total_lines": text.count("\n") or (1 if text else 0),
            "file_size": len(text.encode("utf-8")),
            "truncated": False,
            "is_binary": False,
            "is_image": False,
        }
        return json.dumps(body), False

    def _terminal(
        self,
        command: str,
        approver: Approver | None,
        cancel: threading.Event,
        session_patterns: set[str],
    ) -> tuple[str, bool]:
        if HARDLINE.search(command):
            return _terminal_result("", -1, HARDLINE_TEXT, status="blocked"), True
        note: dict[str, object] = {}
        pattern = detect_danger(command)
        with self._lock:
            allowed = pattern in self.command_allowlist
        if pattern and not allowed and pattern not in session_patterns and self.approval_mode != "off":
            smart = self.approval_mode == "smart"
            if smart and "smart-approve" in command:
                note["approval"] = f"Command was flagged ({pattern}) and auto-approved by smart approval."
            else:
                danger = Danger(command, pattern, smart_denied=smart and "smart-deny" in command)
                if approver is None:
                    # Chat and Responses: nothing can approve it; the model hears "pending".
                    body = {"output": "", "exit_code": -1, "error": "", "status": "pending_approval"}
                    body.update(
                        approval_pending=True,
                        command=command,
                        description=pattern,
                        pattern_key=pattern,
                        smart_denied=danger.smart_denied,
                        allow_permanent=danger.allow_permanent,
                    )
                    return json.dumps(body), False
                choice = approver(danger)
                if choice == "timeout":
                    return _terminal_result("", -1, TIMED_OUT_TEXT, status="blocked"), True
                if choice not in ("once", "session", "always"):
                    return _terminal_result("", -1, DENIED_TEXT, status="blocked"), True
                if choice == "session":
                    session_patterns.add(pattern)
                elif choice == "always" and not danger.smart_denied:
                    with self._lock:
                        self.command_allowlist.add(pattern)
                note["approval"] = f"Command required approval ({pattern}) and was approved by the user."
        output, exit_code = self._simulate(command, cancel)
        error = None
        return _terminal_result(output, exit_code, error, **note), exit_code != 0

    def _simulate(self, command: str, cancel: threading.Event) -> tuple[str, int]:
        """A deterministic stand-in for the shell: echo, sleep, true/false, ls/cat, rm."""
        try:
            argv = shlex.split(command)
        except ValueError:
            argv = command.split()
        if not argv:
            return "", 0
        prog, rest = argv[0], argv[1:]
        if prog == "echo":
            return " ".join(a for a in rest if a != "-n"), 0
        if prog == "sleep":
            try:
                seconds = float(rest[0]) if rest else 0.0
            except ValueError:
                return f"sleep: invalid time interval '{rest[0]}'", 1
            if cancel.wait(seconds):
                raise Interrupted()
            return "", 0
        if prog in ("true", ":"):
            return "", 0
        if prog == "false":
            return "", 1
        paths = [a for a in rest if not a.startswith("-")]
        with self._lock:
            if prog == "rm":
                for path in paths:
                    prefix = path.rstrip("/") + "/"
                    for name in [n for n in self.files if n == path or n.startswith(prefix)]:
                        del self.files[name]
                return "", 0
            if prog == "cat":
                for path in paths:
                    if path not in self.files:
                        return f"cat: {path}: No such file or directory", 1
                return "".join(self.files[p] for p in paths).rstrip("\n"), 0
            if prog == "ls":
                out: list[str] = []
                for path in paths or ["."]:
                    prefix = path.rstrip("/") + "/"
                    children = sorted({n[len(prefix) :].split("/")[0] for n in self.files if n.startswith(prefix)})
                    if path in self.files:
                        out.append(path)
                    elif children:
                        out.extend(children)
                    elif path != ".":
                        return f"ls: cannot access '{path}': No such file or directory", 2
                return "\n".join(out), 0
        return "", 0


__all__ = [
    "DEFAULT_TOOLSETS",
    "PREAMBLE_TEXT",
    "Danger",
    "Interrupted",
    "ToolBox",
    "ToolCall",
    "ToolRecord",
    "call_arguments",
    "detect_danger",
    "done_text",
    "parse_directives",
]
