"""What the ``hermes-sdk`` command needs besides the client: the terminal, its state file, ``-o``
options, JSON errors and the verdict on a run's approvals. No command lives here (see cli.py)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Iterable, Mapping, Optional, Sequence, Union

from .._core.display import visible
from .._core.redaction import scrub
from ..errors import HermesError

if TYPE_CHECKING:
    from .._core.events import RunEvent
    from .._core.idempotency import SQLiteStore

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


# ---------------------------------------------------------------- the state directory


def state_dir() -> Path:
    """``$XDG_STATE_HOME/hermes-sdk``, else ``~/.local/state/hermes-sdk`` (created, or narrowed to, 0700)."""
    base = os.environ.get("XDG_STATE_HOME")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "hermes-sdk"


def private_state_dir() -> Path:
    """The state directory, created 0700 (and narrowed to 0700 if it exists): it holds prompts and results."""
    folder = state_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_mode & 0o077:
        os.chmod(folder, 0o700)
    return folder


def state_file() -> Path:
    return state_dir() / "state.json"


def idempotency_db() -> Path:
    """The CLI's default idempotency store: a SQLite file in the state directory."""
    return state_dir() / "idempotency.db"


def history_file() -> Path:
    """The interactive chat's line history (readline)."""
    return state_dir() / "chat_history"


def durable_store(needed: bool) -> Union[SQLiteStore, str, None]:
    """The CLI's idempotency store when ``HERMES_SDK_IDEMPOTENCY_STORE`` is unset: SQLite in the state
    directory (file 0600, directory 0700), so a repeated ``--idempotency-key`` is recognised by the
    next invocation. None when the variable is set (the client reads it). When the file cannot be
    opened, a command given a key (``needed``) fails: a key kept in memory would do nothing."""
    import sqlite3

    from .._core.idempotency import SQLiteStore
    from ..errors import InvalidInputError

    if os.environ.get("HERMES_SDK_IDEMPOTENCY_STORE"):
        return None
    try:
        private_state_dir()
        store = SQLiteStore(str(idempotency_db()))
        store.purge_expired()
        return store
    except (OSError, sqlite3.Error) as exc:
        if needed:
            raise InvalidInputError(
                f"cannot keep the idempotency key: {idempotency_db()} cannot be opened ({exc}); set "
                "HERMES_SDK_IDEMPOTENCY_STORE to a store that can", details={"field": "idempotency_store"}) from None
        return "memory:"


# ---------------------------------------------------------------- the last session (-c/--continue)


def server_key(base_url: str) -> str:
    """One spelling per server: scheme and host lower case, no default port, no trailing slash."""
    from urllib.parse import urlsplit

    text = base_url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    scheme = parts.scheme.lower()
    if not parts.hostname or scheme not in ("http", "https"):
        return text.rstrip("/")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    if port is not None and port != {"http": 80, "https": 443}[scheme]:
        host += f":{port}"
    return f"{scheme}://{host}{parts.path.rstrip('/')}"


def _read_state() -> dict[str, object]:
    try:
        data = json.loads(state_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def last_session(base_url: str) -> Optional[str]:
    """The chat session last used against ``base_url`` (``hermes-sdk chat -c``), whatever its spelling."""
    sessions = _read_state().get("last_session")
    if not isinstance(sessions, dict):
        return None
    wanted = server_key(base_url)
    entries = [entry for url, entry in sessions.items()  # an older version kept the URL as typed
               if server_key(url) == wanted and isinstance(entry, dict)]
    entries.sort(key=lambda entry: entry.get("updated_at") or 0)
    value = entries[-1].get("session_id") if entries else None
    return value if isinstance(value, str) and value else None


def remember_session(base_url: str, session_id: str) -> None:
    """Record the last chat session for ``base_url``: file mode 0600, directory 0700, replaced atomically.

    Failing to write it never fails the chat turn (a read-only home, a full disk): ``-c`` then
    continues the session before.
    """
    from .._core.redaction import holds_secret

    if holds_secret(session_id):  # a server echoed the key as the session id: never written to a file
        sys.stderr.write("hermes-sdk: the session id holds the API key; it is not remembered (-c will not "
                         "continue it)\n")
        return
    try:
        folder = private_state_dir()
        data = _read_state()
        sessions = data.get("last_session")
        if not isinstance(sessions, dict):
            sessions = {}
        key = server_key(base_url)
        sessions = {url: entry for url, entry in sessions.items() if server_key(url) != key}
        sessions[key] = {"session_id": session_id, "updated_at": time.time()}
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


# ---------------------------------------------------------------- line editing in the chat loop


class LineEditor:
    """``input()`` with readline's line editing and a history kept in the state directory (0600).

    Without the readline module (Windows, a Python built without it) lines are read as typed.
    """

    LENGTH = 1000

    def __init__(self) -> None:
        self._readline: Optional[ModuleType] = None
        try:
            import readline
        except ImportError:
            return
        self._readline = readline
        if "libedit" not in (readline.__doc__ or ""):  # the arrows, whatever TERM says (as llm binds them)
            for key, action in (("A", "previous-history"), ("B", "next-history"), ("C", "forward-char"),
                                ("D", "backward-char")):
                readline.parse_and_bind(f'"\\e[{key}": {action}')
        readline.set_history_length(self.LENGTH)
        try:
            readline.read_history_file(str(history_file()))
        except (OSError, ValueError):
            pass  # no history yet

    def read(self, prompt: str) -> str:
        line = input(prompt)
        if self._readline is not None and line.strip():
            self._save(self._readline)
        return line

    @staticmethod
    def _save(readline: ModuleType) -> None:
        """Write the history now (a killed loop keeps what was typed), private to the user."""
        path = history_file()
        try:
            private_state_dir()
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
            os.chmod(path, 0o600)
            readline.write_history_file(str(path))
        except OSError:
            pass  # a read-only home: editing still works, the history is not kept


# ---------------------------------------------------------------- -o NAME VALUE


def option_value(text: str) -> object:
    """``-o`` values are JSON when they parse (``0.2``, ``true``, ``["a"]``, ``{"k": 1}``), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


#: What each ``-o`` value must be, as the provider reads it: a value of another kind is a usage error
#: (exit 2), refused before anything is sent, not a request the server fails (exit 1).
_NUMBER, _INTEGER, _BOOLEAN, _OBJECT, _LIST = "a number", "an integer", "true or false", "a JSON object", "a JSON list"
OPTION_KINDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("temperature", "top_p", "presence_penalty", "frequency_penalty"), (_NUMBER,)),
    **dict.fromkeys(("max_tokens", "max_completion_tokens", "max_output_tokens", "n", "seed", "top_logprobs"),
                    (_INTEGER,)),
    **dict.fromkeys(("logprobs", "parallel_tool_calls", "store"), (_BOOLEAN,)),
    **dict.fromkeys(("metadata", "logit_bias", "response_format", "stream_options", "reasoning", "text"), (_OBJECT,)),
    **dict.fromkeys(("tools", "conversation_history"), (_LIST,)),
    "stop": ("a string", _LIST), "tool_choice": ("a string", _OBJECT),
}


def _is_kind(value: object, kind: str) -> bool:
    if kind in (_NUMBER, _INTEGER):
        return isinstance(value, (int, float) if kind == _NUMBER else int) and not isinstance(value, bool)
    checks: dict[str, type] = {_BOOLEAN: bool, _OBJECT: dict, _LIST: list, "a string": str}
    return isinstance(value, checks[kind])


def check_option_kind(name: str, text: str, value: object) -> None:
    """A usage error (ValueError) for ``-o temperature hot``: the value is not of the field's kind."""
    kinds = OPTION_KINDS.get(name)
    if kinds and not any(_is_kind(value, kind) for kind in kinds):
        raise ValueError(f"-o {name} {text}: the value must be {' or '.join(kinds)}")


def provider_options(pairs: Optional[Sequence[Sequence[str]]], own_flags: Mapping[str, str],
                     known: Iterable[str]) -> dict[str, object]:
    """The ``-o NAME VALUE`` pairs as provider fields. A usage error (ValueError): a name with its own
    flag, or a name the command does not know (with the close match, as the Python API suggests)."""
    from .._core.operations.keywords import close_match

    names = sorted(set(known) - set(own_flags))
    out: dict[str, object] = {}
    for name, value in pairs or ():
        if name in own_flags:
            raise ValueError(f"-o {name}: use {own_flags[name]} for that")
        if name not in names:
            close = close_match(name, names)
            hint = f"did you mean {close!r}? " if close else ""
            raise ValueError(f"-o {name}: unknown option ({hint}the options: {', '.join(names)})")
        if name in out:
            raise ValueError(f"-o {name} is given twice")
        out[name] = option_value(value)
        check_option_kind(name, value, out[name])
    return out


# ---------------------------------------------------------------- errors on stderr


def _scrubbed(value: object) -> object:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return _scrubbed_fields(value)
    if isinstance(value, (list, tuple)):
        return [_scrubbed(v) for v in value]
    return value


def _scrubbed_fields(fields: Mapping[str, object]) -> dict[str, object]:
    return {str(k): _scrubbed(v) for k, v in fields.items()}


def error_object(err: Optional[HermesError], code: str, message: str, **extra: object) -> dict[str, object]:
    """The one JSON object ``--json`` prints on stderr for a failure: scrubbed of ids and credentials."""
    if err is None:
        return {"code": code, "message": scrub(message), **_scrubbed_fields(extra)}
    doc = err.to_dict()
    return {"code": doc["code"], "message": scrub(err.message), "category": doc["category"],
            "retryable": doc["retryable"], "uncertain_outcome": doc["uncertain_outcome"],
            "http_status": doc["http_status"], "retry_after_ms": doc["retry_after_ms"],
            "details": _scrubbed(doc["details"]), "action_id": doc["action_id"],
            "capability_id": doc["capability_id"], "type": doc["type"], **_scrubbed_fields(extra)}


def json_visible(text: str) -> str:
    """JSON text with every character visible() would change (C1 controls, bidi, zero-width...)
    written as its ``\\u`` escape: the same JSON, nothing a terminal interprets."""
    if visible(text, keep="\n") == text:
        return text
    return "".join(ch if ch == "\n" or visible(ch) == ch else json.dumps(ch)[1:-1] for ch in text)


def print_error(as_json: bool, err: Optional[HermesError], code: str = "", message: str = "", *,
                plain: Optional[str] = None, **extra: object) -> None:
    """A failure on stderr: ``str(err)`` or ``plain`` (default ``code: message``), or under ``--json``
    one JSON object (``code``, ``message``, and for a HermesError its protocol fields)."""
    if as_json:
        line = json_visible(json.dumps(error_object(err, code, message, **extra), ensure_ascii=False, default=str))
    elif err is not None:
        line = visible(str(err))  # str() scrubs; a server's text cannot drive the terminal
    else:
        line = visible(scrub(plain if plain is not None else f"{code}: {message}"))
    sys.stderr.write(line + "\n")


# ---------------------------------------------------------------- a run's approvals


def unapproved_commands(events: Iterable[RunEvent]) -> list[str]:
    """The commands the agent asked to run and did not get approved: denied, or never answered
    (Hermes' approval timeout, a stop). Hermes answers a run's approvals oldest first."""
    from .._families.runs.events import ApprovalRequested, ApprovalResponded

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


__all__ = ["NO_TERMINAL", "LineEditor", "Terminal", "durable_store", "error_object", "history_file",
           "idempotency_db", "last_session", "option_value", "print_error", "private_state_dir", "provider_options",
           "remember_session", "server_key", "state_file", "unapproved_commands"]
