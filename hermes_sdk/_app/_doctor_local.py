"""The doctor's local checks: the idempotency store the command line uses, and the plugins loaded.

The store is looked at without being changed: its file and directory modes are read before
anything opens it (opening a SQLite store narrows them), and a SQLite file is opened read-only.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Optional
from urllib.parse import quote, unquote, urlsplit

from .._core.sqlite_files import SQLITE_SIDE_FILES
from ..errors import HermesError
from ._doctor_base import FAIL, OK, WARN, Finding, StepTimeout, bounded, mask_url


def check(timeout: float) -> list[Finding]:
    return [store_finding(timeout), plugins_finding()]


def store_finding(timeout: float) -> Finding:
    url = os.environ.get("HERMES_SDK_IDEMPOTENCY_STORE")
    if not url:
        from ._cli_support import idempotency_db

        return sqlite_finding(str(idempotency_db()), "the command line's default, in the state directory", timeout)
    shown = mask_url(url)
    if url == "memory:":
        return Finding("idempotency_store", WARN, "memory: (HERMES_SDK_IDEMPOTENCY_STORE): keys live as long as "
                       "one process, so a repeated --idempotency-key in a later command is not recognised",
                       "set HERMES_SDK_IDEMPOTENCY_STORE=sqlite:////path/keys.db, or a store every worker "
                       "shares (redis://...)", {"url": shown})
    if url.startswith("sqlite:"):
        path = sqlite_path(url)
        if path is None:
            return Finding("idempotency_store", FAIL, f"{shown} names no file",
                           "use sqlite:////absolute/path/keys.db", {"url": shown})
        return sqlite_finding(path, f"{shown} (HERMES_SDK_IDEMPOTENCY_STORE)", timeout)
    return _plugin_store(url, shown, timeout)


def sqlite_path(url: str) -> Optional[str]:
    """The file of ``sqlite:///rel.db`` or ``sqlite:////abs.db`` (SQLAlchemy's rule, as the store reads it)."""
    parts = urlsplit(url)
    path = unquote((parts.netloc or "") + parts.path)
    if path.startswith("/") and not parts.netloc:
        path = path[1:]
    return path or None


def _mode_problems(path: Path) -> list[str]:
    """Which of the database's directory, file and side files others can read (0700 and 0600 expected)."""
    problems = []
    folder = path.parent
    if folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) & 0o077:
        problems.append(f"chmod 700 {folder}  # now {stat.S_IMODE(folder.stat().st_mode):04o}")
    for name in [path.name] + [path.name + side for side in SQLITE_SIDE_FILES]:
        one = folder / name
        if one.is_file() and stat.S_IMODE(one.stat().st_mode) & 0o077:
            problems.append(f"chmod 600 {one}  # now {stat.S_IMODE(one.stat().st_mode):04o}")
    return problems


def sqlite_finding(path: str, source: str, timeout: float) -> Finding:
    db = Path(path).expanduser().absolute()
    data: dict[str, object] = {"kind": "sqlite", "path": str(db), "source": source}
    problems = _mode_problems(db)  # before anything opens the file
    data["mode_fixes"] = problems
    if db.exists():
        try:
            bounded(lambda: _read_only_probe(db, timeout), timeout)
        except (sqlite3.Error, OSError, StepTimeout) as exc:
            return Finding("idempotency_store", FAIL, f"SQLite {db} ({source}) cannot be read: {exc}",
                           "check the file's owner and that it is a SQLite database; or point "
                           "HERMES_SDK_IDEMPOTENCY_STORE at another store", data)
        where = f"SQLite {db} ({source}) is readable"
    else:
        parent = next((p for p in [db.parent, *db.parent.parents] if p.exists()), None)
        if parent is None or not os.access(parent, os.W_OK | os.X_OK):
            return Finding("idempotency_store", FAIL, f"SQLite {db} ({source}) does not exist and {parent} is not "
                           "writable: a keyed command will fail", "make the directory writable, or point "
                           "HERMES_SDK_IDEMPOTENCY_STORE at another store", data)
        where = f"SQLite {db} ({source}) does not exist yet: it is made 0600 in a 0700 directory on first use"
    if problems:
        return Finding("idempotency_store", WARN, f"{where}, but others can read it (it holds prompts and results)",
                       "; ".join(problems), data)
    return Finding("idempotency_store", OK, where + ("; modes 0600/0700" if db.exists() else ""), data=data)


def _read_only_probe(db: Path, timeout: float) -> None:
    conn = sqlite3.connect(f"file:{quote(str(db))}?mode=ro", uri=True, timeout=timeout)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        conn.close()


def _plugin_store(url: str, shown: str, timeout: float) -> Finding:
    """A store a plugin makes (``redis://``...): built as a client builds it, then asked for a key."""
    from .._core._plugin_manager import build_manager
    from .._core.config import resolve_store
    from .._core.view import ClientView

    data: dict[str, object] = {"kind": url.split(":", 1)[0], "url": shown}
    fix = "start the store's server, fix the URL, or install the plugin for its scheme"
    try:
        store = resolve_store(build_manager(), ClientView((), (), ()), url)
    except HermesError as exc:
        return Finding("idempotency_store", FAIL, f"{shown} (HERMES_SDK_IDEMPOTENCY_STORE): {exc.message}", fix, data)
    try:
        bounded(lambda: store.get("cap:hermes_agent:doctor:probe", "hermes-sdk-doctor-probe"), timeout)
    except Exception as exc:  # noqa: BLE001 - a plugin's own client error (redis.ConnectionError...) too
        return Finding("idempotency_store", FAIL, f"{shown} (HERMES_SDK_IDEMPOTENCY_STORE) is not reachable: "
                       f"{type(exc).__name__}: {exc}", fix, data)
    finally:
        store.close()
    return Finding("idempotency_store", OK, f"{shown} (HERMES_SDK_IDEMPOTENCY_STORE) answered a lookup", data=data)


def plugins_finding() -> Finding:
    from .._core._plugin_manager import build_manager, describe

    try:
        plugins = describe(build_manager())
    except HermesError as exc:
        return Finding("plugins", FAIL, f"the plugins cannot be loaded: {exc.message}",
                       "fix or disable the plugin named (HERMES_SDK_DISABLE_PLUGINS=name)", {"error": exc.message})
    parts = [f"{p['name']} ({', '.join(p['hooks']) or 'no hooks'})" for p in plugins]  # type: ignore[arg-type]
    return Finding("plugins", OK, f"{len(plugins)} loaded: {'; '.join(parts)}", data={"plugins": plugins})
