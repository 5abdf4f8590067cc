"""What the ``hermes-sdk`` command needs besides the client: the terminal, its state file, ``-o``
options, JSON errors and the verdict on a run's approvals. No command lives here (see cli.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import IO, Any, Iterable, Mapping, Optional, Sequence

from ..errors import HermesError
from .display import visible
from .redaction import scrub

# ---------------------------------------------------------------- the terminal

#: Where a prompt goes when stdin is a pipe (``git diff | hermes-sdk run --approve ask``).
TTY_PATH = "/dev/tty"


class Terminal:
    """The operator's terminal: stdin when it is one, else ``/dev/tty``, else none.

    ``ask()`` returns the answered line, or None when there is no terminal to ask (stdin is a
    pipe and the process has no controlling terminal: cron, CI, ``setsid``), or on end of input.
    """

    def __init__(self) -> None:
        self._tty: Optional[tuple[IO[str], IO[str]]] = None  # (read, write): a tty is not seekable, so no "r+"
        self._opened = False

    @property
    def available(self) -> bool:
        """Whether someone can be asked."""
        return self._stdin_is_tty() or self._open() is not None

    @staticmethod
    def _stdin_is_tty() -> bool:
        stdin = sys.stdin
        return stdin is not None and stdin.isatty()

    def _open(self) -> Optional[tuple[IO[str], IO[str]]]:
        if not self._opened:
            self._opened = True
            try:
                reader = open(TTY_PATH, encoding="utf-8", errors="replace")  # noqa: SIM115
            except OSError:
                return None
            try:
                writer = open(TTY_PATH, "w", encoding="utf-8", errors="replace")  # noqa: SIM115
            except OSError:
                reader.close()
                return None
            self._tty = (reader, writer)
        return self._tty

    def ask(self, prompt: str, context: str = "") -> Optional[str]:
        """Write ``context`` and ``prompt`` where the answer is read (stderr beside a terminal stdin,
        else /dev/tty) and read one line (None: no terminal, or end of input)."""
        prompt = context + prompt
        if self._stdin_is_tty():
            sys.stderr.write(prompt)
            sys.stderr.flush()
            line = sys.stdin.readline()
        else:
            tty = self._open()
            if tty is None:
                return None
            reader, writer = tty
            writer.write(prompt)
            writer.flush()
            line = reader.readline()
        return line.rstrip("\r\n") if line else None

    def say(self, text: str) -> None:
        """A line for the operator: on stderr (a prompt on /dev/tty keeps its context on stderr too)."""
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def close(self) -> None:
        if self._tty is not None:
            for stream in self._tty:
                stream.close()
            self._tty = None


NO_TERMINAL = ("no terminal to ask: stdin is not a terminal and {tty} cannot be opened (cron, CI, a "
               "detached process)").format(tty=TTY_PATH)


# ---------------------------------------------------------------- the state file (-c/--continue)


def state_dir() -> Path:
    """``$XDG_STATE_HOME/hermes-sdk``, else ``~/.local/state/hermes-sdk`` (created, or narrowed to, 0700)."""
    base = os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "hermes-sdk"


def state_file() -> Path:
    return state_dir() / "state.json"


def _read_state() -> dict[str, Any]:
    try:
        data = json.loads(state_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def last_session(base_url: str) -> Optional[str]:
    """The chat session last used against ``base_url`` (``hermes-sdk chat -c``), or None."""
    sessions = _read_state().get("last_session")
    entry = sessions.get(base_url) if isinstance(sessions, dict) else None
    value = entry.get("session_id") if isinstance(entry, dict) else None
    return value if isinstance(value, str) and value else None


def remember_session(base_url: str, session_id: str) -> None:
    """Record the last chat session for ``base_url``: file mode 0600, directory 0700, replaced atomically.

    Failing to write it never fails the chat turn (a read-only home, a full disk): ``-c`` then
    continues the session before.
    """
    try:
        folder = state_dir()
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if folder.stat().st_mode & 0o077:
            folder.chmod(0o700)  # one an older release (or a umask) left readable is narrowed too
        data = _read_state()
        sessions = data.get("last_session")
        if not isinstance(sessions, dict):
            sessions = {}
        sessions[base_url] = {"session_id": session_id, "updated_at": time.time()}
        data["last_session"] = sessions
        tmp = folder / f".state.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, sort_keys=True)
        os.chmod(tmp, 0o600)
        os.replace(tmp, state_file())
    except OSError as exc:
        sys.stderr.write(f"hermes-sdk: could not remember the session in {state_file()}: "
                         f"{exc.strerror or type(exc).__name__}\n")


# ---------------------------------------------------------------- -o NAME VALUE


def option_value(text: str) -> Any:
    """``-o`` values are JSON when they parse (``0.2``, ``true``, ``["a"]``, ``{"k": 1}``), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def provider_options(pairs: Optional[Sequence[Sequence[str]]], own_flags: Mapping[str, str]) -> dict[str, Any]:
    """The ``-o NAME VALUE`` pairs as provider fields; a name with its own flag is a usage error (ValueError)."""
    out: dict[str, Any] = {}
    for name, value in pairs or ():
        if name in own_flags:
            raise ValueError(f"-o {name}: use {own_flags[name]} for that")
        if name in out:
            raise ValueError(f"-o {name} is given twice")
        out[name] = option_value(value)
    return out


# ---------------------------------------------------------------- errors on stderr


def _scrubbed(value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {str(k): _scrubbed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v) for v in value]
    return value


def error_object(err: Optional[HermesError], code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The one JSON object ``--json`` prints on stderr for a failure: scrubbed of ids and credentials."""
    if err is None:
        return {"code": code, "message": scrub(message), **_scrubbed(extra)}
    doc = err.to_dict()
    return {"code": doc["code"], "message": scrub(err.message), "category": doc["category"],
            "retryable": doc["retryable"], "uncertain_outcome": doc["uncertain_outcome"],
            "http_status": doc["http_status"], "retry_after_ms": doc["retry_after_ms"],
            "details": _scrubbed(doc["details"]), "action_id": doc["action_id"],
            "capability_id": doc["capability_id"], "type": doc["type"], **_scrubbed(extra)}


def print_error(as_json: bool, err: Optional[HermesError], code: str = "", message: str = "", *,
                plain: Optional[str] = None, **extra: Any) -> None:
    """A failure on stderr: ``str(err)`` or ``plain`` (default ``code: message``), or under ``--json``
    one JSON object (``code``, ``message``, and for a HermesError its protocol fields)."""
    if as_json:
        line = json.dumps(error_object(err, code, message, **extra), ensure_ascii=False, default=str)
    elif err is not None:
        line = visible(str(err))  # str() scrubs; a server's text cannot drive the terminal
    else:
        line = visible(scrub(plain if plain is not None else f"{code}: {message}"))
    sys.stderr.write(line + "\n")


# ---------------------------------------------------------------- a run's approvals


def unapproved_commands(events: Iterable[Any]) -> list[str]:
    """The commands the agent asked to run and did not get approved: denied, or never answered
    (Hermes' approval timeout, a stop). Hermes answers a run's approvals oldest first."""
    from .events import ApprovalRequested, ApprovalResponded

    waiting: deque[str] = deque()
    refused: list[str] = []
    for event in events:
        if isinstance(event, ApprovalRequested):
            waiting.append(event.command)
        elif isinstance(event, ApprovalResponded):
            for _ in range(max(event.resolved, 1)):
                if not waiting:
                    break
                command = waiting.popleft()
                if event.choice == "deny":
                    refused.append(command)
    return refused + list(waiting)


__all__ = ["NO_TERMINAL", "Terminal", "error_object", "last_session", "option_value", "print_error",
           "provider_options", "remember_session", "state_file", "unapproved_commands"]
