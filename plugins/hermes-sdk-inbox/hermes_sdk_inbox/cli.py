"""``hermes-sdk-inbox``: serve the approval inbox on its own, or list its entries.

The core ``hermes-sdk`` command has no hook for plugin subcommands, so the inbox ships this console
script of its own::

    hermes-sdk-inbox --store postgresql://app@db/app --token "$HERMES_SDK_INBOX_TOKEN"   # serve
    hermes-sdk-inbox --store sqlite:///hermes-inbox.db list --state all --json
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from typing import Optional, Sequence

from .inbox import Inbox
from .web import create_app, token_from_env


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes-sdk-inbox", description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", default=os.environ.get("HERMES_SDK_INBOX_STORE"), required=False,
                        help="the queue's store URL (env HERMES_SDK_INBOX_STORE): sqlite:///path, "
                             "postgresql://..., mysql://..., sql+<SQLAlchemy URL>, redis://...")
    sub = parser.add_subparsers(dest="command")
    serve = sub.add_parser("serve", help="serve the inbox page (the default)")
    listing = sub.add_parser("list", help="print entries")
    listing.add_argument("--state", default="pending", help="pending, approved, denied, expired or all")
    listing.add_argument("--json", action="store_true", help="one JSON object per line")
    for p in (parser, serve):
        p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
        p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
        p.add_argument("--token", default=None, help="the access token (env HERMES_SDK_INBOX_TOKEN); "
                                                     "without one a random token is made and printed")
        p.add_argument("--operator", default="operator", help="the identity the token signs in as")
    args = parser.parse_args(argv)
    if not args.store:
        parser.error("--store (or HERMES_SDK_INBOX_STORE) is required")
    if args.command == "list":
        inbox = Inbox(args.store)
        for entry in inbox.entries(state=None if args.state == "all" else args.state, limit=1000):
            if args.json:
                print(json.dumps(entry, sort_keys=True))
            else:
                what = (entry.get("run") or {}).get("command") or " ".join(
                    f"{k}={v}" for k, v in entry["targets"].items())
                print(f"{entry['id']}  {entry['display_state']:8}  {entry['operation']:16}  {what}")
        inbox.close()
        return 0
    token = args.token or token_from_env()
    if not token:
        token = secrets.token_urlsafe(24)
        print(f"hermes-sdk-inbox: access token (give it at /login): {token}", file=sys.stderr, flush=True)
    try:
        app = create_app(args.store, token=token, operator=args.operator)
    except ValueError as exc:
        parser.error(str(exc))
    from werkzeug.serving import make_server

    server = make_server(args.host, args.port, app, threaded=True)
    print(f"hermes-sdk-inbox: serving http://{args.host}:{server.server_port}/", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        app.inbox.close()  # type: ignore[attr-defined]
    return 0


if __name__ == "__main__":
    sys.exit(main())
