"""``hermes-sdk keys ...`` and where a command's API key comes from.

The order, first found wins: ``--api-key-file PATH``, ``--api-key -`` (stdin) or ``--api-key KEY``;
then ``HERMES_API_KEY``; then the key stored for the server with ``hermes-sdk keys set`` (the state
directory's ``keys.json``, 0600, one key per base URL).
"""

from __future__ import annotations

import argparse
import getpass
import io
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .._core.display import visible
from ._cli_files import read_json, write_private_json
from ._cli_support import server_key, state_dir
from .cli import EXIT_FAILED, EXIT_OK, _base_url, _print_json, _Usage

if TYPE_CHECKING:
    from .cli import Subcommands

PS_WARNING = ("hermes-sdk: warning: --api-key KEY is visible to other users in `ps` and kept in your shell "
              "history; prefer `hermes-sdk keys set`, --api-key-file PATH, --api-key - (stdin) or HERMES_API_KEY")


def keys_file() -> Path:
    return state_dir() / "keys.json"


def _stored() -> dict[str, str]:
    keys = read_json(keys_file()).get("keys")
    return {str(k): str(v) for k, v in keys.items() if isinstance(v, str)} if isinstance(keys, dict) else {}


def stored_key(base_url: str) -> Optional[str]:
    """The key stored for ``base_url`` (whatever its spelling: ``HTTP://Host:80/`` is ``http://host``)."""
    return _stored().get(server_key(base_url)) if base_url else None


def _read_key_file(path: str, flag: str) -> str:
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise _Usage(f"{flag} {path}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    return _one_key(text, f"{flag} {path}")


def _one_key(text: str, where: str) -> str:
    key = text.strip()
    if not key:
        raise _Usage(f"{where}: no key in it")
    if any(ch.isspace() for ch in key):
        raise _Usage(f"{where}: a key is one word (it holds whitespace)")
    return key


def _key_from_stdin(where: str) -> str:
    stdin = sys.stdin
    if stdin is None:
        raise _Usage(f"{where}: no stdin to read the key from")
    if stdin.isatty():  # typed: not echoed
        return _one_key(getpass.getpass("API key: "), where)
    return _one_key(stdin.readline(), where)


def take_stdin_key(args: argparse.Namespace) -> None:
    """``--api-key -``: read the key before the command runs. Piped, stdin then carries only the key
    (it is replaced by an empty one, so no prompt is read from it and the key never becomes one)."""
    if getattr(args, "api_key", None) != "-":
        return
    if getattr(args, "api_key_file", None):
        raise _Usage("give --api-key or --api-key-file, not both")
    args.api_key = None
    args.stdin_key = _key_from_stdin("--api-key -")
    if sys.stdin is not None and not sys.stdin.isatty():
        sys.stdin = io.StringIO("")


def resolve_key(args: argparse.Namespace) -> tuple[Optional[str], Optional[str]]:
    """The key a command sends and where it came from; ``(None, None)`` when the client reads
    ``HERMES_API_KEY`` itself or there is no key at all."""
    path: Optional[str] = getattr(args, "api_key_file", None)
    given: Optional[str] = getattr(args, "api_key", None)
    if path and given:
        raise _Usage("give --api-key or --api-key-file, not both")
    if path:
        return _read_key_file(path, "--api-key-file"), "--api-key-file"
    if getattr(args, "stdin_key", None):
        return str(args.stdin_key), "--api-key - (stdin)"
    if given:
        sys.stderr.write(PS_WARNING + "\n")
        return given, "--api-key"
    if os.environ.get("HERMES_API_KEY"):
        return None, None
    stored = stored_key(_base_url(args))
    if stored:
        return stored, f"the key stored for {server_key(_base_url(args))} ({keys_file()})"
    return None, None


def masked(key: str) -> str:
    """A stored key as ``keys list`` shows it: its last four characters at most, for a long key."""
    return ("*" * 8 + key[-4:]) if len(key) >= 16 else "*" * 8


def _endpoint(args: argparse.Namespace) -> str:
    given = getattr(args, "server", None)  # `keys set URL`, as llm's `keys set NAME`
    if given and args.endpoint and server_key(given) != server_key(args.endpoint):
        raise _Usage(f"two servers given: {given} and --endpoint {args.endpoint}; give one")
    url: str = given or args.endpoint or _base_url(args)
    if not url:
        raise _Usage("which server? give its URL (keys set URL), or pass --endpoint URL (or --base-url URL, "
                     "or set HERMES_BASE_URL)")
    return server_key(url)


def cmd_keys_set(args: argparse.Namespace) -> int:
    url = _endpoint(args)
    key = _read_key_file(args.file, "--file") if args.file else _key_from_stdin("keys set")
    keys = _stored()
    keys[url] = key
    write_private_json(keys_file(), {"keys": dict(keys)})
    sys.stderr.write(visible(f"key stored for {url} in {keys_file()}") + "\n")
    return EXIT_OK


def cmd_keys_list(args: argparse.Namespace) -> int:
    keys = _stored()
    if args.json:
        _print_json({url: masked(key) for url, key in sorted(keys.items())})
    else:
        for url, key in sorted(keys.items()):
            print(f"{visible(url)}\t{masked(key)}")
    return EXIT_OK


def cmd_keys_remove(args: argparse.Namespace) -> int:
    url = _endpoint(args)
    keys = _stored()
    if keys.pop(url, None) is None:
        sys.stderr.write(visible(f"hermes-sdk: no key stored for {url}") + "\n")
        return EXIT_FAILED
    write_private_json(keys_file(), {"keys": dict(keys)})
    sys.stderr.write(visible(f"key removed for {url}") + "\n")
    return EXIT_OK


def cmd_keys_path(args: argparse.Namespace) -> int:
    print(keys_file())
    return EXIT_OK


def add_keys_parser(sub: Subcommands, conn: argparse.ArgumentParser) -> None:
    keys = sub.add_parser("keys", help="store API keys per server (0600, in the state directory)",
                          description="Store an API key per server (base URL) in the state directory's keys.json "
                                      "(0600). A command's key: --api-key-file, --api-key - or --api-key; else "
                                      "HERMES_API_KEY; else the key stored for its base URL.")
    ksub = keys.add_subparsers(dest="action", required=True, metavar="ACTION")
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--endpoint", metavar="URL",
                       help="the server's base URL (default: --base-url, else $HERMES_BASE_URL)")
    put = ksub.add_parser("set", parents=[conn, where], help="store a key, read from stdin (not echoed) or --file",
                          description="Store the key for a server: typed at a prompt that does not echo it, the "
                                      "first line piped in, or the contents of --file PATH.")
    put.add_argument("server", nargs="?", metavar="ENDPOINT",
                     help="the server's base URL (the same as --endpoint)")
    put.add_argument("--file", metavar="PATH", help="read the key from this file")
    put.set_defaults(func=cmd_keys_set)
    listing = ksub.add_parser("list", help="list the servers with a stored key (keys masked)",
                              description="List the servers with a stored key; the keys are masked.")
    listing.add_argument("--json", action="store_true", help="print a JSON object")
    listing.set_defaults(func=cmd_keys_list)
    remove = ksub.add_parser("remove", parents=[conn, where], help="forget a server's key",
                             description="Forget the key stored for a server.")
    remove.add_argument("server", nargs="?", metavar="ENDPOINT",
                        help="the server's base URL (the same as --endpoint)")
    remove.set_defaults(func=cmd_keys_remove)
    path = ksub.add_parser("path", help="print the path of the key file", description="Print the key file's path.")
    path.set_defaults(func=cmd_keys_path)
