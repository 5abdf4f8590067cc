"""``hermes-sdk logs``: the history of prompts, replies, sessions, runs and their approvals.

Kept in the state directory's ``logs.db`` (SQLite, 0600, directory 0700), on by default; ``logs
off`` leaves a ``logs-off`` file there (as llm does) and ``--no-log`` skips one command. Every text
goes through the client's redaction first (its registered keys, the credential and identifier
patterns, its own patterns and its plugins' filters), so the file never holds an API key; the ids
of a session, run or response are kept in their own fields, as ``state.json`` keeps the last session.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional

from .._core.display import visible
from .._core.redaction import REDACTED, holds_secret
from .._core.sqlite_files import private_sqlite_files
from ._cli_support import private_state_dir, server_key, state_dir
from .cli import EXIT_FAILED, EXIT_OK, _base_url, _print_json

if TYPE_CHECKING:
    from .._core.events import RunEvent
    from .cli import Subcommands
    from .client import HermesClient

COLUMNS = ("id", "datetime_utc", "command", "base_url", "model", "system", "prompt", "reply", "status",
           "session_id", "run_id", "response_id", "action_id", "approvals", "options")
_SCHEMA = """CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY AUTOINCREMENT, datetime_utc TEXT NOT NULL, command TEXT NOT NULL, base_url TEXT,
    model TEXT, system TEXT, prompt TEXT, reply TEXT, status TEXT, session_id TEXT, run_id TEXT,
    response_id TEXT, action_id TEXT, approvals TEXT, options TEXT)"""
_TEXTS = ("base_url", "model", "system", "prompt", "reply", "status")
_IDS = ("session_id", "run_id", "response_id", "action_id")


def logs_db() -> Path:
    return state_dir() / "logs.db"


def _off_file() -> Path:
    return state_dir() / "logs-off"


def logging_on() -> bool:
    return not _off_file().exists()


def _private_file(path: Path) -> None:
    """Create ``path`` 0600 (never readable by others for a moment) or narrow it to 0600, without
    opening it: closing a descriptor of a SQLite file another thread has open drops its locks."""
    private_state_dir()
    private_sqlite_files(str(path))


def _connect(create: bool) -> Optional[sqlite3.Connection]:
    path = logs_db()
    if not create and not path.exists():
        return None
    _private_file(path)  # SQLite gives its journal the database file's mode
    db = sqlite3.connect(str(path), timeout=10)
    db.execute(_SCHEMA)
    return db


def _redacted(client: HermesClient, value: object) -> Any:
    """Every string through the client's redaction (its keys, patterns and plugin filters)."""
    redactor = client._executor.runtime.redactor
    if isinstance(value, str):
        return _storable(redactor.text(value))
    if isinstance(value, Mapping):
        return {str(k): _redacted(client, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redacted(client, v) for v in value]
    return value


def _storable(text: str) -> str:
    """``text`` as SQLite can keep it: a lone surrogate (a reply may hold one) written out as ``\\ud800``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def kept_id(value: object) -> object:
    """An id as the history keeps it: one that holds the key (a server echoed it) is not kept."""
    if isinstance(value, str):
        return REDACTED if holds_secret(value) else _storable(value)
    return value


def run_approvals(events: Iterable[RunEvent]) -> list[dict[str, object]]:
    """The approvals of a run as its events tell them: each request, and each answer."""
    from .._core.events import ApprovalRequested
    from .._families.runs.events import ApprovalResponded

    found: list[dict[str, object]] = []
    for event in events:
        if isinstance(event, ApprovalRequested):
            found.append({"requested": event.command})
        elif isinstance(event, ApprovalResponded):
            found.append({"answered": event.choice})
    return found


def log_call(args: Optional[argparse.Namespace], client: HermesClient, command: str, **fields: object) -> None:
    """Keep one entry (unless ``--no-log`` or ``logs off``); a log that cannot be written never fails
    the command: it says so on stderr."""
    if args is None or getattr(args, "no_log", False) or not logging_on():
        return
    row: dict[str, object] = {"datetime_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "command": command,
                              "base_url": server_key(_base_url(args))}
    row.update({k: v for k, v in fields.items() if v is not None})
    for name in _TEXTS:
        if isinstance(row.get(name), str):
            row[name] = _redacted(client, row[name])
    for name in _IDS:
        if name in row:
            row[name] = kept_id(row[name])
    for name in ("approvals", "options"):
        if name in row:
            row[name] = json.dumps(_redacted(client, row[name]), ensure_ascii=False, default=str)
    names = [n for n in COLUMNS[1:] if n in row]
    try:
        db = _connect(create=True)
        assert db is not None
        with db:
            db.execute(f"INSERT INTO log ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                       [row[n] for n in names])
        db.close()
    except (OSError, sqlite3.Error, ValueError) as exc:  # (UnicodeError is a ValueError)
        sys.stderr.write(f"hermes-sdk: could not write the log {logs_db()}: {exc} (`hermes-sdk logs off` "
                         "stops logging)\n")


def _entry(values: Iterable[object]) -> dict[str, object]:
    entry = dict(zip(COLUMNS, values))
    for name in ("approvals", "options"):
        text = entry.get(name)
        entry[name] = json.loads(text) if isinstance(text, str) else None
    return entry


def _query(where: str = "", params: Iterable[object] = (), limit: int = 0) -> list[dict[str, object]]:
    db = _connect(create=False)
    if db is None:
        return []
    try:
        sql = f"SELECT {', '.join(COLUMNS)} FROM log {where} ORDER BY id DESC"
        sql += f" LIMIT {int(limit)}" if limit else ""
        return [_entry(row) for row in db.execute(sql, list(params))]
    finally:
        db.close()


def _print_entry(entry: Mapping[str, object]) -> None:
    ids = "  ".join(f"{name.split('_')[0]}: {entry[name]}" for name in _IDS if entry.get(name))
    lines = [f"# {entry['datetime_utc']}  {entry['command']}  (id {entry['id']})",
             "  ".join(part for part in (f"model: {entry['model']}" if entry.get("model") else "",
                                         f"status: {entry['status']}" if entry.get("status") else "", ids) if part)]
    for title, name in (("System", "system"), ("Prompt", "prompt"), ("Reply", "reply")):
        if entry.get(name):
            lines += ["", f"## {title}", "", str(entry[name])]
    approvals = entry.get("approvals")
    if isinstance(approvals, list) and approvals:
        lines += ["", "## Approvals", ""]
        lines += [f"- asked: {a['requested']}" if "requested" in a else f"- answered: {a.get('answered')}"
                  for a in approvals if isinstance(a, dict)]
    print(visible("\n".join(lines), keep="\n\t") + "\n")


def cmd_logs_list(args: argparse.Namespace) -> int:
    where, params = "", []
    if args.query:
        like = "%" + args.query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where = "WHERE " + " OR ".join(f"{c} LIKE ? ESCAPE '\\'" for c in ("prompt", "reply", "system", "approvals"))
        params = [like] * 4
    entries = _query(where, params, args.count)
    if args.json:
        _print_json(entries)
    else:
        for entry in reversed(entries) if args.oldest_first else entries:
            _print_entry(entry)
    return EXIT_OK


def cmd_logs_show(args: argparse.Namespace) -> int:
    found = _query("WHERE id = ?", [args.id])
    if not found:
        sys.stderr.write(f"hermes-sdk: no log entry {args.id}\n")
        return EXIT_FAILED
    if args.json:
        _print_json(found[0])
    else:
        _print_entry(found[0])
    return EXIT_OK


def cmd_logs_switch(args: argparse.Namespace) -> int:
    if args.action == "off":
        _private_file(_off_file())
    else:
        _off_file().unlink(missing_ok=True)
    return cmd_logs_status(args)


def cmd_logs_status(args: argparse.Namespace) -> int:
    db = _connect(create=False)
    count = 0
    if db is not None:
        count = int(db.execute("SELECT count(*) FROM log").fetchone()[0])
        db.close()
    print(f"Logging is {'on' if logging_on() else 'off'}")
    print(f"Log: {logs_db()} ({count} entries)")
    return EXIT_OK


def cmd_logs_path(args: argparse.Namespace) -> int:
    print(logs_db())
    return EXIT_OK


def add_logs_parser(sub: Subcommands) -> None:
    shown = argparse.ArgumentParser(add_help=False)
    shown.add_argument("-n", "--count", type=int, default=3, metavar="N",
                       help="how many entries, newest first (default: %(default)s; 0: all)")
    shown.add_argument("-q", "--query", metavar="TEXT", help="only entries whose prompt, reply or approvals hold TEXT")
    shown.add_argument("--oldest-first", action="store_true", help="print the entries found oldest first")
    shown.add_argument("--json", action="store_true", help="print the entries as a JSON array")
    logs = sub.add_parser("logs", parents=[shown], help="list, search and show the history (logs on|off|status)",
                          description="The history of prompts, replies, sessions, runs and their approvals, kept "
                                      "redacted in the state directory's logs.db (0600). On by default; `logs off` "
                                      "stops it, --no-log skips one command.")
    logs.set_defaults(func=cmd_logs_list)
    lsub = logs.add_subparsers(dest="action", metavar="ACTION")
    lsub.add_parser("list", parents=[shown], help="list entries (the default)",
                    description="List entries, newest first.").set_defaults(func=cmd_logs_list)
    show = lsub.add_parser("show", help="print one entry", description="Print one entry (--json: as JSON).")
    show.add_argument("id", type=int, metavar="ID", help="the entry's id")
    show.add_argument("--json", action="store_true", help="print it as JSON")
    show.set_defaults(func=cmd_logs_show)
    for name, what, func in (("on", "turn logging on", cmd_logs_switch), ("off", "turn logging off", cmd_logs_switch),
                             ("status", "say whether logging is on, where and how many entries", cmd_logs_status),
                             ("path", "print the path of the log database", cmd_logs_path)):
        lsub.add_parser(name, help=what, description=what[0].upper() + what[1:] + ".").set_defaults(func=func)
