"""``hermes-sdk-inbox``: serve the approval inbox on its own, or list its entries.

The core ``hermes-sdk`` command has no hook for plugin subcommands, so the inbox ships this console
script of its own::

    HERMES_SDK_INBOX_TOKEN=... hermes-sdk-inbox --store postgresql://app@db/app   # serve
    hermes-sdk-inbox --store sqlite:///hermes-inbox.db list --state all --json
    hermes-sdk-inbox --store URL resume --watch 2     # send operator decisions (HERMES_BASE_URL, ...)
    hermes-sdk-inbox --store URL serve --resume       # both in one process
    hermes-sdk-inbox --store URL end-sessions         # sign every browser out, in every process

``resume`` and ``serve --resume`` build a ``HermesClient()`` from the environment
(``HERMES_BASE_URL``, ``HERMES_API_KEY``, ``HERMES_SDK_IDEMPOTENCY_STORE``, or
``--idempotency-store``): it must share the idempotency store of the processes that call
``client.operate``, where the operator state lives.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from typing import Any, Optional, Sequence

from hermes_sdk.plugin import visible

from ._version import __version__
from .inbox import Inbox
from .resume import ResumeWorker
from .serving import wsgi_server
from .sessions import LoginSessions
from .web import create_app, shown_ids, shown_input, token_from_env

_DESCRIPTION = "Serve the approval inbox on its own, or list its entries."
_EPILOG = """examples:
  export HERMES_SDK_INBOX_TOKEN=...        # the token from the environment, not the command line
  hermes-sdk-inbox --store postgresql://app@db/app              # serve
  hermes-sdk-inbox --store sqlite:///hermes-inbox.db list --state all --json
  hermes-sdk-inbox --store URL resume --watch 2                 # send operator decisions
  hermes-sdk-inbox --store URL serve --resume                   # both in one process

resume and serve --resume build a HermesClient from the environment (HERMES_BASE_URL,
HERMES_API_KEY, HERMES_SDK_IDEMPOTENCY_STORE or --idempotency-store): it must share the
idempotency store of the processes that call client.operate, where the operator state lives."""


def build_parser() -> argparse.ArgumentParser:
    """The options work before or after the subcommand; a subcommand's unset option keeps the
    top-level one (``argparse.SUPPRESS``)."""
    parser = argparse.ArgumentParser(prog="hermes-sdk-inbox", description=_DESCRIPTION, epilog=_EPILOG,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"hermes-sdk-inbox {__version__}",
                        help="print the version and exit")
    parser.add_argument("--store", default=os.environ.get("HERMES_SDK_INBOX_STORE"), required=False,
                        help="the queue's store URL (env HERMES_SDK_INBOX_STORE): sqlite:///path, "
                             "postgresql://..., mysql://..., sql+<SQLAlchemy URL>, redis://...")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="serve the inbox page (the default)")
    listing = sub.add_parser("list", help="print entries")
    listing.add_argument("--state", default="pending", help="pending, approved, denied, expired or all")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    listing.add_argument("--operation", default=None, help="only this operation (response_delete, job_pause, ...)")
    listing.add_argument("--id", default=None, help="only entries acting on this id (response, job, session, run...)")
    sub.add_parser("end-sessions", help="end every login session of the standalone page (each browser signs in "
                                        "again; the access token itself stays good)")
    resume = sub.add_parser("resume", help="send decided operator entries (operate(resume=...)) and follow them")
    resume.add_argument("--watch", type=float, default=None, metavar="SECONDS",
                        help="keep looking every SECONDS instead of once")

    def default(p: argparse.ArgumentParser, value: Any) -> Any:
        return value if p is parser else argparse.SUPPRESS

    for p in (serve, resume, parser):
        p.add_argument("--idempotency-store", default=default(p, None), metavar="URL",
                       help="the operator state's store (env HERMES_SDK_IDEMPOTENCY_STORE)")
        p.add_argument("--resume-timeout", type=float, default=default(p, None), metavar="SECONDS",
                       help="seconds each resumed operator action is followed (default 900)")
    for p in (parser, serve):
        p.add_argument("--resume", action="store_true", default=default(p, False),
                       help="also send operator decisions as they are made (a background worker)")
        p.add_argument("--host", default=default(p, "127.0.0.1"), help="bind address (default 127.0.0.1)")
        p.add_argument("--port", type=int, default=default(p, 8765),
                       help="port (default 8765; 0 picks a free one)")
        p.add_argument("--token", default=default(p, None),
                       help="the access token; prefer the environment variable HERMES_SDK_INBOX_TOKEN (a "
                            "command line is visible to other users); without either a random token is made "
                            "and printed")
        p.add_argument("--operator", default=default(p, "operator"), help="the identity the token signs in as")
        p.add_argument("--server", choices=("auto", "waitress", "werkzeug"), default=default(p, "auto"),
                       help="the WSGI server: waitress (pip install 'hermes-sdk-inbox[production]'), or "
                            "Werkzeug's development server; auto: waitress when installed")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command; a reader of stdout that went away (``list --json | head``) ends it quietly, exit 141."""
    try:
        code = _main(argv)
        sys.stdout.flush()  # a closed pipe must surface here, not in the interpreter's exit flush
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more to write, and the exit-time flush stays quiet
        return 141


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the subcommand given (``list``'s), whose usage a usage error shows."""
    chooser = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    chosen = getattr(args, chooser.dest, None) if chooser is not None else None
    return chooser.choices[chosen] if chooser is not None and chosen in chooser.choices else parser


def _main(argv: Optional[Sequence[str]]) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    if not args.store:
        parser.error("--store (or HERMES_SDK_INBOX_STORE) is required")
    if args.command == "list":
        inbox = Inbox(args.store)
        for entry in inbox.entries(state=None if args.state == "all" else args.state, operation=args.operation,
                                   identifier=args.id, limit=1000):
            if args.json:
                print(json.dumps(entry, sort_keys=True))
            else:
                ids = " ".join(f"{k}={v}" for k, v in shown_ids(entry).items())
                ids = f"{entry.get('tenant_id') or '-'}/{entry.get('principal_id') or '-'} {ids}"
                command = (entry.get("run") or {}).get("command")
                what = f"{command}  ({ids})" if command else ids
                if not entry.get("run") and shown_input(entry):  # what a call's approval approves
                    what += f"  input={shown_input(entry)}"
                if entry.get("fully_shown") is False:
                    what += "  [not fully shown: can only be denied]"
                if (entry.get("outcome") or {}).get("status"):
                    what += f"  [run {entry['outcome']['status']}]"
                # visible(): an agent's command cannot erase or rewrite what the operator reads
                print(visible(f"{entry['id']}  {entry['display_state']:8}  {entry['operation']:16}  {what}"))
        inbox.close()
        return 0
    if args.command == "resume":
        return _resume(args)
    if args.command == "end-sessions":
        inbox = Inbox(args.store)
        generation = LoginSessions(inbox.queue).end_all()
        inbox.close()
        print(f"hermes-sdk-inbox: every login session ended (generation {generation})", file=sys.stderr)
        return 0
    token = args.token or token_from_env()
    if not token:
        token = secrets.token_urlsafe(24)
        print(f"hermes-sdk-inbox: access token (give it at /login): {token}", file=sys.stderr, flush=True)
    worker = None
    if args.resume:
        worker = ResumeWorker(_client(args), args.store, timeout=args.resume_timeout).start()
    hermes, note = (worker.client, "") if worker is not None else _outcome_client()
    try:
        app = create_app(args.store, token=token, operator=args.operator,
                         on_decision=worker.wake if worker is not None else None, hermes=hermes)
    except ValueError as exc:
        parser.error(str(exc))
    server = wsgi_server(app, args.host, args.port, args.server)
    # The serving line first (scripts read it), then what the operator should know about this server.
    print(f"hermes-sdk-inbox: serving http://{args.host}:{server.port}/", file=sys.stderr, flush=True)
    for line in (server.warning or f"hermes-sdk-inbox: served by {server.name}", note):
        if line:
            print(line, file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
        if hermes is not None:
            hermes.close()
        if worker is not None:
            worker.stop(5)
        app.inbox.close()  # type: ignore[attr-defined]
    return 0


def _outcome_client() -> tuple[Any, str]:
    """A Hermes client for showing decided runs' outcomes when the environment names a server, and
    else why there is none."""
    if not os.environ.get("HERMES_BASE_URL"):
        return None, "hermes-sdk-inbox: HERMES_BASE_URL is not set, so decided runs' outcomes are not shown"
    from hermes_sdk import HermesClient, HermesError

    try:
        return HermesClient(load_entrypoints=False), ""
    except HermesError as exc:
        return None, f"hermes-sdk-inbox: no Hermes client for runs' outcomes ({exc.code})"


def _client(args: argparse.Namespace) -> Any:
    from hermes_sdk import HermesClient

    return HermesClient(idempotency_store=args.idempotency_store)


def _resume(args: argparse.Namespace) -> int:
    """Send decided operator entries once (print one JSON line each), or keep watching."""
    client = _client(args)
    worker = ResumeWorker(client, args.store, interval=args.watch or 1.0, timeout=args.resume_timeout)
    try:
        while True:
            for item in worker.run_once():
                print(json.dumps({"entry_id": item.entry_id, "action_id": item.action_id, "choice": item.choice,
                                  "status": item.result.status if item.result is not None else None,
                                  "run_id": item.result.run_id if item.result is not None else None,
                                  "skipped": item.skipped,
                                  "error": item.error.to_dict() if item.error is not None else None}),
                      flush=True)
            if not args.watch:
                return 0
            time.sleep(args.watch)
    except KeyboardInterrupt:
        return 0
    finally:
        client.close()
        worker.inbox.close()


if __name__ == "__main__":
    sys.exit(main())
