"""``hermes-sdk operate``: ``client.operate`` from the shell, the person at the terminal approving.

Starting an action, and answering its pending approval (``--resume ID --choice ...``), are
approval-gated like ``responses delete``: asked at the terminal, or ``--yes``. The run's own
commands are never answered here: the action returns ``requires_human`` with the command, and
``operate --resume ACTION_ID --choice once|session|deny`` answers it, from any later invocation
(the state directory's idempotency store keeps the action).
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import TYPE_CHECKING, Optional

from .._core.display import visible
from ._cli_logs import log_call
from .cli import EXIT_OK, _client, _failure, _note, _operator_approval, _print_json, _text_arg, _Usage

if TYPE_CHECKING:
    from .._core.approval import ApprovalDecision, ApprovalRequest
    from .._families.operator.types import OperatorResult
    from .cli import Subcommands


def _question(args: argparse.Namespace, objective: Optional[str]) -> str:
    if objective is not None:
        return f"Start an operator action: {visible(objective)!r}?"
    return f"Answer operator action {visible(args.resume)}'s pending approval with {args.choice!r}?"


def _report(args: argparse.Namespace, result: OperatorResult) -> int:
    if args.json:
        _print_json(result.to_json())
    else:
        _note(f"operator action: {result.action_id} ({result.status}"
              + (f", run {result.run_id}" if result.run_id else "") + ")")
        if result.output:
            print(visible(result.output, keep="\n\t") if sys.stdout.isatty() else result.output)
    if result.status == "completed":
        return EXIT_OK
    if result.status == "requires_human":
        pending = result.pending_approval or {}
        command = pending.get("command") or pending.get("description") or "an approval"
        return _failure(args, None, "hermes_sdk.requires_human",
                        f"the agent waits for a person: {command}; answer with: hermes-sdk operate --resume "
                        f"{result.action_id} --choice once|session|deny --reason TEXT", action_id=result.action_id)
    return _failure(args, result.error, "hermes_sdk.operator", f"operator action {result.status}")


def cmd_operate(args: argparse.Namespace) -> int:
    if args.resume and args.objective:
        raise _Usage("give OBJECTIVE to start an action or --resume ACTION_ID, not both")
    if args.choice and not args.resume:
        raise _Usage("--choice answers a pending approval: give it with --resume ACTION_ID")
    objective = None if args.resume else _text_arg(args.objective, "objective")
    gated = objective is not None or args.choice is not None
    if gated and not args.reason:
        raise _Usage("--reason TEXT is required to start an action or answer its approval (kept as evidence)")
    confirm = _operator_approval(args, _question(args, objective))

    def provide(request: ApprovalRequest) -> Optional[ApprovalDecision]:
        if request.operation == "run_approval":  # the run's commands: requires_human, then --resume --choice
            return None
        return confirm(request)

    key: str = args.idempotency_key or f"cli-operate-{uuid.uuid4().hex}"
    with _client(args, approval_provider=provide) as client:
        if objective is not None:
            result = client.operate(objective, idempotency_key=key, reason=args.reason)
        elif gated or args.idempotency_key:
            result = client.operate(resume=args.resume, choice=args.choice, resolve_all=args.resolve_all,
                                    idempotency_key=key, reason=args.reason)
        else:
            result = client.operate(resume=args.resume)
        pending = result.pending_approval or {}
        log_call(args, client, "operate", prompt=objective, reply=result.output, status=result.status,
                 run_id=result.run_id, action_id=result.action_id, session_id=result.session_id,
                 approvals=[{"requested": pending.get("command")}] if pending.get("command") else
                 ([{"answered": args.choice}] if args.choice else None))
    return _report(args, result)


def add_operate_parser(sub: Subcommands, conn: argparse.ArgumentParser) -> None:
    op = sub.add_parser("operate", parents=[conn], help="run a governed operator action (you approve it)",
                        description="Start a governed operator action (client.operate) on /v1/runs and follow it; "
                                    "you are asked to approve it (or pass --yes). When the agent asks to run a "
                                    "command it stops with requires_human; answer with --resume ACTION_ID --choice.")
    op.add_argument("objective", nargs="*", metavar="OBJECTIVE", help="what to do; '-' or omitted: read stdin")
    op.add_argument("--resume", metavar="ACTION_ID", help="continue this action: follow it, or answer with --choice")
    op.add_argument("--choice", choices=("once", "session", "deny", "always"),
                    help="answer the action's pending approval (with --resume)")
    op.add_argument("--resolve-all", action="store_true", help="the choice answers every pending request")
    op.add_argument("--reason", metavar="TEXT", help="why (required to start or to answer), kept as evidence")
    op.add_argument("--yes", action="store_true", help="confirm without a prompt")
    op.add_argument("--idempotency-key", metavar="KEY",
                    help="one action per key (kept in the state directory); default: a new key")
    op.add_argument("--json", action="store_true", help="print the result as JSON")
    op.add_argument("--no-log", action="store_true", help="keep this command out of the history")
    op.set_defaults(func=cmd_operate)
