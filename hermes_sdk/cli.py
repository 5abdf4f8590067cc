"""The ``hermes-sdk`` command, configured by the same environment variables as the client.

Errors print their code and message on stderr and exit 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import sys
from typing import Any, Callable, Optional, Sequence

from .errors import HermesError


def _client(**kwargs: Any) -> Any:
    from .client import HermesClient

    return HermesClient(**kwargs)


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def _stream_out(stream: Any, as_json: bool) -> int:
    with stream:
        if as_json:
            result = stream.result()
        else:
            for piece in stream.text_deltas():
                sys.stdout.write(piece)
                sys.stdout.flush()
            sys.stdout.write("\n")
            result = stream.result()
    if as_json:
        from .convert import stream_result_to_json

        _print_json(stream_result_to_json(result))
    if result.status != "completed":
        err = result.error
        sys.stderr.write(f"{err.code if err else 'hermes_sdk.stream'}: stream {result.status}"
                         f"{': ' + err.message if err else ''}\n")
        return 1
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    client = _client()
    with client:
        if args.stream:
            return _stream_out(client.chat_stream(prompt=args.text, session_id=args.session_id), args.json)
        result = client.chat(prompt=args.text, session_id=args.session_id)
    if args.json:
        _print_json({**result.raw, "session_id": result.session_id})
    else:
        print(result.text or "")
        if result.finish_reason != "stop":
            sys.stderr.write(f"finish_reason: {result.finish_reason}\n")
    return 0


def cmd_responses_create(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"input": args.input}
    if args.previous_response_id:
        body["previous_response_id"] = args.previous_response_id
    if args.conversation:
        body["conversation"] = args.conversation
    with _client() as client:
        if args.stream:
            return _stream_out(client.responses_stream(body), args.json)
        result = client.responses(body)
    if args.json:
        _print_json(result.raw)
    else:
        print(result.output_text)
        sys.stderr.write(f"response id: {result.id}\n")
    return 0


def cmd_responses_get(args: argparse.Namespace) -> int:
    with _client() as client:
        result = client.response_get(args.id)
    if args.json:
        _print_json(result.raw)
    else:
        print(result.output_text)
    return 0


def cmd_responses_delete(args: argparse.Namespace) -> int:
    from .approval import ApprovalRequest

    def approve(request: ApprovalRequest) -> Any:
        # The operator at the terminal is the approver; --yes records that they confirmed up front.
        if not args.yes:
            if not sys.stdin.isatty():
                return None
            answer = input(f"Delete stored response {args.id!r}? Reason: {args.reason}. [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                return request.deny(approver=getpass.getuser(), reason="declined at the terminal")
        return request.approve(approver=getpass.getuser(), policy_decision_id="cli-operator-confirmation",
                               reason=args.reason)

    with _client(approval_provider=approve) as client:
        receipt = client.response_delete(args.id, idempotency_key=args.idempotency_key, reason=args.reason)
    _print_json({"id": receipt.id, "object": receipt.object, "deleted": receipt.deleted})
    return 0


def cmd_capabilities(args: argparse.Namespace) -> int:
    import os

    if os.environ.get("HERMES_BASE_URL"):
        with _client() as client:
            caps = client.capabilities()
    else:  # the contracts are data: list them for the configured (or default) endpoint id without a server
        from .capabilities import CONTRACTS, descriptor
        from .endpoints import normalize_endpoint_id

        endpoint_id = normalize_endpoint_id(os.environ.get("HERMES_ENDPOINT_ID") or "default")
        caps = [descriptor(endpoint_id, contract) for contract in CONTRACTS.values()]
    if args.json:
        _print_json(caps)
    else:
        for cap in caps:
            approval = "yes" if cap["approval"]["required"] else "no"
            print(f"{cap['capability_id']:<48} risk={cap['risk']:<6} retry={cap['retry']['safety']:<6} "
                  f"approval={approval:<3} key={cap['idempotency']['requirement']}")
    return 0


def cmd_plugins(args: argparse.Namespace) -> int:
    from .plugins import build_manager, describe

    _print_json(describe(build_manager()))
    return 0


def cmd_emulator(args: argparse.Namespace) -> int:
    from .testing import serve

    serve(args.host, args.port, args.api_key)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """A streamed chat turn against the bundled emulator, then a stored Responses round trip."""
    from .client import HermesClient
    from .testing import HermesEmulator

    with HermesEmulator(token_delay=0.05) as emulator:
        print(f"emulator: {emulator.base_url}")
        with HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False) as client:
            print("> chat_stream: Tell me a short story about a lighthouse keeper")
            stream = client.chat_stream(prompt="Tell me a short story about a lighthouse keeper")
            code = _stream_out(stream, False)
            result = stream.result()
            print(f"  status={result.status} events={result.event_count} session_id={result.session_id}")
            response = client.responses(input="Summarize the incident notes", store=True)
            print(f"> responses: {response.output_text!r} (status={response.status}, id={response.id})")
            fetched = client.response_get(response.id)
            print(f"> response_get: {fetched.output_text!r}")
    return code


# ---------------------------------------------------------------- hermes-sdk run (durable runs)
# Self-contained: the command, its approval prompt and its parser live in this block.

_RUN_CHOICES = {"o": "once", "once": "once", "s": "session", "session": "session", "d": "deny", "deny": "deny",
                "": "deny"}


def _run_approver(mode: str) -> Callable[[Any], Any]:
    """The approval provider of ``hermes-sdk run --approve MODE`` (the operator is the approver)."""

    def provide(request: Any) -> Any:
        user = getpass.getuser()
        snapshot = request.input_snapshot
        if mode == "deny":
            sys.stderr.write("[approval] denied (--approve deny)\n")
            return request.deny(approver=user, reason="denied by --approve deny")
        if mode == "once":
            sys.stderr.write("[approval] approved once (--approve once)\n")
            return request.approve(approver=user, policy_decision_id="cli-approve-once", reason="--approve once")
        if not sys.stdin.isatty():
            sys.stderr.write("[approval] no terminal to ask: denied\n")
            return request.deny(approver=user, reason="no terminal to ask")
        sys.stderr.write(f"[approval] the agent wants to run: {snapshot.get('command')}\n"
                         f"           ({request.reason})\n")
        while True:
            sys.stderr.write("Allow? [o]nce / [s]ession (this run) / [d]eny: ")
            sys.stderr.flush()
            try:
                answer = input().strip().lower()
            except EOFError:
                answer = ""
            choice = _RUN_CHOICES.get(answer)
            if choice is not None:
                break
        if choice == "deny":
            return request.deny(approver=user, reason="declined at the terminal")
        return request.approve(approver=user, policy_decision_id="cli-operator-confirmation",
                               reason="approved at the terminal", scope=choice)

    return provide


def _run_line(event: Any) -> Optional[str]:
    """The stderr line of one run event (None: not shown there)."""
    from .events import ApprovalResponded, RunCancelled, RunFailed, ToolCompleted, ToolStarted

    if isinstance(event, ToolStarted):
        return f"[tool] {event.tool}: {event.preview or ''}".rstrip()
    if isinstance(event, ToolCompleted):
        took = f" in {event.duration:.2f} s" if event.duration is not None else ""
        return f"[tool] {event.tool} {'failed' if event.error else 'done'}{took}"
    if isinstance(event, ApprovalResponded):
        return f"[approval] answered: {event.choice}"
    if isinstance(event, RunFailed):
        return f"[run] failed: {event.error or ''}".rstrip()
    if isinstance(event, RunCancelled):
        return "[run] cancelled"
    return None


def cmd_run(args: argparse.Namespace) -> int:
    """Start a durable run, print its text and tool lines live, answer approvals, exit 0 if completed."""
    import uuid

    from .events import MessageDelta

    key = args.idempotency_key or f"cli-run-{uuid.uuid4().hex}"
    with _client(approval_provider=_run_approver(args.approve)) as client:
        run = client.run(args.text, idempotency_key=key)
        sys.stderr.write(f"run id: {run.id}{' (replayed)' if run.replayed else ''}\n")
        open_line = False  # text written without its newline yet
        try:
            for event in run.events():
                if args.json:
                    continue
                if isinstance(event, MessageDelta):
                    sys.stdout.write(event.delta)
                    sys.stdout.flush()
                    open_line = not event.delta.endswith("\n")
                    continue
                line = _run_line(event)
                if line:
                    if open_line:
                        sys.stdout.write("\n")
                        sys.stdout.flush()
                        open_line = False
                    sys.stderr.write(line + "\n")
            result = run.wait()
        except KeyboardInterrupt:
            sys.stderr.write("[run] interrupted: stopping it\n")
            run.stop()
            result = run.wait(timeout=10)
    if args.json:
        _print_json({"run_id": result.run_id, "status": result.status, "output": result.output,
                     "usage": result.usage, "error": result.error, "events_complete": result.events_complete,
                     "events": [event.raw for event in result.events]})
    else:
        if open_line:
            sys.stdout.write("\n")
        if not result.events_complete:
            sys.stderr.write("[run] the events were not all seen (a replayed key, or a broken stream): "
                             "the output comes from the run's status\n")
            if result.output:
                sys.stdout.write(result.output + "\n")
    if result.status != "completed":
        sys.stderr.write(f"hermes_sdk.run: run {result.status}{': ' + result.error if result.error else ''}\n")
        return 1
    return 0


def add_run_parser(sub: Any) -> None:
    """``hermes-sdk run TEXT [--approve ask|deny|once] [--idempotency-key KEY] [--json]``."""
    run = sub.add_parser("run", help="start a durable run and follow it (tools, approvals)")
    run.add_argument("text")
    run.add_argument("--approve", choices=("ask", "deny", "once"), default="ask",
                     help="answer the agent's approval requests: ask at the terminal (default; "
                          "denied without one), deny all, or approve each once")
    run.add_argument("--idempotency-key", help="one run per key (durable with HERMES_SDK_IDEMPOTENCY_STORE); "
                                               "default: a new key, so a new run")
    run.add_argument("--json", action="store_true", help="print the result and its events as JSON at the end")
    run.set_defaults(func=cmd_run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hermes-sdk", description="Hermes chat and Responses from the shell. "
                                     "Configure with HERMES_BASE_URL, HERMES_API_KEY, HERMES_ENDPOINT_ID.")
    sub = parser.add_subparsers(dest="command", required=True)

    chat = sub.add_parser("chat", help="run one chat turn")
    chat.add_argument("text")
    chat.add_argument("--stream", action="store_true")
    chat.add_argument("--session-id")
    chat.add_argument("--json", action="store_true")
    chat.set_defaults(func=cmd_chat)

    responses = sub.add_parser("responses", help="create, get or delete Responses objects")
    rsub = responses.add_subparsers(dest="action", required=True)
    create = rsub.add_parser("create")
    create.add_argument("input")
    chain = create.add_mutually_exclusive_group()
    chain.add_argument("--previous-response-id")
    chain.add_argument("--conversation")
    create.add_argument("--stream", action="store_true")
    create.add_argument("--json", action="store_true")
    create.set_defaults(func=cmd_responses_create)
    get = rsub.add_parser("get")
    get.add_argument("id")
    get.add_argument("--json", action="store_true")
    get.set_defaults(func=cmd_responses_get)
    delete = rsub.add_parser("delete")
    delete.add_argument("id")
    delete.add_argument("--idempotency-key", required=True)
    delete.add_argument("--reason", required=True)
    delete.add_argument("--yes", action="store_true", help="confirm the deletion without a prompt")
    delete.set_defaults(func=cmd_responses_delete)

    caps = sub.add_parser("capabilities", help="list capability descriptors")
    caps.add_argument("--json", action="store_true")
    caps.set_defaults(func=cmd_capabilities)

    plugins = sub.add_parser("plugins", help="print the loaded plugins as JSON")
    plugins.set_defaults(func=cmd_plugins)

    emulator = sub.add_parser("emulator", help="serve the Hermes emulator until interrupted")
    emulator.add_argument("--host", default="127.0.0.1")
    emulator.add_argument("--port", type=int, default=0)
    emulator.add_argument("--api-key", default="test-key")
    emulator.set_defaults(func=cmd_emulator)

    demo = sub.add_parser("demo", help="a streamed chat turn against the bundled emulator")
    demo.set_defaults(func=cmd_demo)

    add_run_parser(sub)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        code = func(args)
        sys.stdout.flush()  # a closed pipe must surface here, not in the interpreter's exit flush
        return code
    except HermesError as exc:
        sys.stderr.write(f"{exc.code}: {exc.message}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and keep the exit-time flush quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141  # what a shell reports for SIGPIPE


if __name__ == "__main__":
    raise SystemExit(main())
