"""The ``hermes-sdk`` command, configured by the same environment variables as the client.

Exit codes: 0 the call completed; 1 the agent or Hermes failed (the same with and without
``--stream``), printed on stderr as ``code: message`` with ids and credentials scrubbed; 2 usage;
130 interrupted (Ctrl-C); 141 the reader of stdout went away (``| head``).
"""

from __future__ import annotations

import argparse
import errno
import getpass
import json
import os
import shlex
import sys
from typing import Any, Callable, Optional, Sequence

from ._signals import interrupt_on_signals
from .errors import HermesError

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 130, 141
_DEFAULT_MODEL = "hermes-agent"


class _Usage(Exception):
    """A usage error found after parsing (exit 2, like argparse's own)."""


def _client(args: argparse.Namespace, **kwargs: Any) -> Any:
    from .client import HermesClient

    return HermesClient(getattr(args, "base_url", None), getattr(args, "api_key", None), **kwargs)


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False, default=str)
    sys.stdout.write("\n")


def _print_json_line(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _text_arg(value: Optional[str], what: str) -> str:
    """TEXT as given; ``-`` or no TEXT reads stdin (when something is piped in)."""
    if value is not None and value != "-":
        return value
    stdin = sys.stdin
    if stdin is None or (value is None and stdin.isatty()):
        raise _Usage(f"no {what}: give it as an argument, pipe it in, or use '-' to read stdin")
    text = stdin.read().rstrip("\r\n")
    if not text.strip():
        raise _Usage(f"no {what}: stdin was empty")
    return text


def _failure(err: Optional[HermesError], fallback: str) -> int:
    # str() scrubs ids and credentials from Hermes' text; err.message is never printed raw.
    sys.stderr.write(f"{err if err is not None else fallback}\n")
    return EXIT_FAILED


def _response_id(result: Any) -> Optional[str]:
    final = result.final if isinstance(result.final, dict) else {}
    rid = final.get("id")
    if isinstance(rid, str):
        return rid
    for event in result.events:  # the first event of a Responses stream carries the id
        data = event.data
        if isinstance(data, dict) and isinstance(data.get("response"), dict):
            rid = data["response"].get("id")
            if isinstance(rid, str):
                return rid
    return None


def _stream_out(stream: Any, as_json: bool, *, print_response_id: bool = False) -> int:
    """Print a stream as it arrives: text deltas, or one JSON line per event then a result line."""
    from .convert import stream_result_to_json

    with stream:
        if as_json:
            for event in stream:
                _print_json_line({"type": "event", "event": event.event, "id": event.id, "data": event.data,
                                  "terminal": event.terminal})
        else:
            for piece in stream.text_deltas():
                sys.stdout.write(piece)
                sys.stdout.flush()
            sys.stdout.write("\n")
        result = stream.result()
    rid = _response_id(result) if print_response_id else None
    if as_json:
        summary = stream_result_to_json(result)
        summary.pop("events", None)  # already printed, one line each
        line = {"type": "result", **summary}
        if print_response_id:
            line["response_id"] = rid
        _print_json_line(line)
    elif rid:
        sys.stderr.write(f"response id: {rid}\n")
    if result.status != "completed":
        return _failure(result.error, f"hermes_sdk.stream: stream {result.status}")
    return EXIT_OK


def _chat_input(args: argparse.Namespace) -> dict[str, Any]:
    text = _text_arg(args.text, "prompt")
    fields: dict[str, Any] = {"session_id": args.session_id, "model": args.model or _DEFAULT_MODEL}
    if args.system:
        fields["messages"] = [{"role": "system", "content": args.system}, {"role": "user", "content": text}]
    else:
        fields["prompt"] = text
    return fields


def cmd_chat(args: argparse.Namespace) -> int:
    fields = _chat_input(args)
    with _client(args) as client:
        if args.stream:
            return _stream_out(client.chat_stream(**fields), args.json)
        result = client.chat(**fields)
    if args.json:
        _print_json({**result.raw, "session_id": result.session_id})
    else:
        print(result.text or "")
    if result.finish_reason != "stop":
        # The same outcome as a stream whose finish chunk says error or length: exit 1.
        sys.stderr.write(f"finish_reason: {result.finish_reason} (the agent did not complete)\n")
        return EXIT_FAILED
    return EXIT_OK


def cmd_responses_create(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"input": _text_arg(args.input, "input")}
    if args.previous_response_id:
        body["previous_response_id"] = args.previous_response_id
    if args.conversation:
        body["conversation"] = args.conversation
    if args.model:
        body["model"] = args.model
    if args.system:
        body["instructions"] = args.system
    with _client(args) as client:
        if args.stream:
            return _stream_out(client.responses_stream(body), args.json, print_response_id=True)
        result = client.responses(body)
    if args.json:
        _print_json(result.raw)
    else:
        print(result.output_text)
        sys.stderr.write(f"response id: {result.id}\n")
    if result.status != "completed":
        sys.stderr.write(f"status: {result.status} (the agent did not complete)\n")
        return EXIT_FAILED
    return EXIT_OK


def cmd_responses_get(args: argparse.Namespace) -> int:
    with _client(args) as client:
        result = client.response_get(args.id)
    if args.json:
        _print_json(result.raw)
    else:
        print(result.output_text)
    return EXIT_OK


def cmd_responses_delete(args: argparse.Namespace) -> int:
    """``hermes-sdk responses delete ID``: delete a stored response, the terminal operator approving.

    The operator confirms at a prompt, or up front with ``--yes``. Without ``--yes`` and without a
    terminal nothing is decided, so the deletion is refused (``hermes_sdk.approval_required``).
    """
    from .approval import ApprovalRequest

    def approve(request: ApprovalRequest) -> Any:
        # The operator at the terminal is the approver; --yes records that they confirmed up front.
        if not args.yes:
            if sys.stdin is None or not sys.stdin.isatty():
                return None
            answer = input(f"Delete stored response {args.id!r}? Reason: {args.reason}. [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                return request.deny(approver=getpass.getuser(), reason="declined at the terminal")
        return request.approve(approver=getpass.getuser(), policy_decision_id="cli-operator-confirmation",
                               reason=args.reason)

    with _client(args, approval_provider=approve) as client:
        receipt = client.response_delete(args.id, idempotency_key=args.idempotency_key, reason=args.reason)
    _print_json({"id": receipt.id, "object": receipt.object, "deleted": receipt.deleted})
    return EXIT_OK


def cmd_capabilities(args: argparse.Namespace) -> int:
    if getattr(args, "base_url", None) or os.environ.get("HERMES_BASE_URL"):
        with _client(args) as client:
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
    return EXIT_OK


def cmd_plugins(args: argparse.Namespace) -> int:
    """``hermes-sdk plugins``: print the loaded plugins and their hooks as JSON."""
    from .plugins import build_manager, describe

    _print_json(describe(build_manager()))
    return EXIT_OK


def cmd_emulator(args: argparse.Namespace) -> int:
    from .testing import HermesEmulator

    emulator = HermesEmulator(args.host, args.port, args.api_key, token_delay=args.token_delay)
    try:
        emulator.start()
    except OSError as exc:
        reason = "the address is already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
        sys.stderr.write(f"hermes-sdk emulator: cannot listen on {args.host}:{args.port}: {reason} "
                         f"(choose another --port, or --port 0 for a free one)\n")
        return EXIT_FAILED
    try:
        print(f"export HERMES_BASE_URL={shlex.quote(emulator.base_url)}")
        print(f"export HERMES_API_KEY={shlex.quote(emulator.api_key)}")
        sys.stdout.flush()
        sys.stderr.write("# Hermes emulator ready: paste the lines above into another shell, then e.g. "
                         "`hermes-sdk chat hello`. Ctrl-C stops it.\n")
        sys.stderr.flush()
        while emulator.running:
            import threading

            threading.Event().wait(0.5)
    except KeyboardInterrupt:
        pass  # Ctrl-C is how this command ends
    finally:
        emulator.stop()
    return EXIT_OK


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

    text = _text_arg(args.text, "task")
    key = args.idempotency_key or f"cli-run-{uuid.uuid4().hex}"
    with _client(args, approval_provider=_run_approver(args.approve)) as client:
        run = client.run(text, idempotency_key=key)
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
        return EXIT_FAILED
    return EXIT_OK


def add_run_parser(sub: Any, conn: argparse.ArgumentParser) -> None:
    """``hermes-sdk run TEXT [--approve ask|deny|once] [--idempotency-key KEY] [--json]``."""
    run = sub.add_parser("run", parents=[conn], help="start a durable run and follow it (tools, approvals)",
                         description="Start a durable run, print its text and tool lines as they arrive, and "
                                     "answer the agent's approval requests. TEXT may be piped in.")
    run.add_argument("text", nargs="?", metavar="TEXT", help="the task; '-' or omitted: read stdin")
    run.add_argument("--approve", choices=("ask", "deny", "once"), default="ask",
                     help="answer the agent's approval requests: ask at the terminal (default; "
                          "denied without one), deny all, or approve each once")
    run.add_argument("--idempotency-key", metavar="KEY",
                     help="one run per key (durable with HERMES_SDK_IDEMPOTENCY_STORE); default: a new key, "
                          "so a new run")
    run.add_argument("--json", action="store_true", help="print the result and its events as JSON at the end")
    run.set_defaults(func=cmd_run)


def _version() -> str:
    from . import __version__

    return f"hermes-sdk {__version__}"


def build_parser() -> argparse.ArgumentParser:
    # --base-url and --api-key work before or after the subcommand; SUPPRESS keeps an unset
    # subcommand-level option from overwriting a top-level one.
    conn = argparse.ArgumentParser(add_help=False)
    conn.add_argument("--base-url", default=argparse.SUPPRESS, metavar="URL",
                      help="Hermes origin, e.g. http://127.0.0.1:8642 (default: $HERMES_BASE_URL)")
    conn.add_argument("--api-key", default=argparse.SUPPRESS, metavar="KEY",
                      help="API key sent as Authorization: Bearer (default: $HERMES_API_KEY)")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true",
                         help="print JSON (with --stream: JSON Lines, one event per line as it arrives, "
                              "then a result line)")
    prompt = argparse.ArgumentParser(add_help=False)
    prompt.add_argument("-m", "--model", help=f"model name sent to Hermes (default: {_DEFAULT_MODEL})")
    prompt.add_argument("--system", metavar="TEXT", help="system prompt (Responses: instructions)")
    prompt.add_argument("--stream", action="store_true", help="print the reply as it arrives")

    parser = argparse.ArgumentParser(
        prog="hermes-sdk", parents=[conn],
        description="Hermes chat and Responses from the shell. Configured by HERMES_BASE_URL, HERMES_API_KEY, "
                    "HERMES_ENDPOINT_ID, HERMES_SDK_IDEMPOTENCY_STORE and HERMES_SDK_LOG=debug|info.",
        epilog="Exit codes: 0 completed, 1 the agent or Hermes failed, 2 usage, 130 interrupted, 141 closed pipe.")
    parser.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chat = sub.add_parser("chat", parents=[conn, prompt, as_json], help="run one chat turn",
                          description="Run one chat turn. TEXT may be piped in: echo hi | hermes-sdk chat")
    chat.add_argument("text", nargs="?", metavar="TEXT", help="the prompt; '-' or omitted: read stdin")
    chat.add_argument("--session-id", metavar="ID", help="continue this Hermes chat session (X-Hermes-Session-Id)")
    chat.set_defaults(func=cmd_chat)

    responses = sub.add_parser("responses", help="create, get or delete Responses objects",
                               description="Create, get or delete stored Responses objects.")
    rsub = responses.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = rsub.add_parser("create", parents=[conn, prompt, as_json], help="create a response (one turn)",
                             description="Create a response. The response id is printed on stderr "
                                         "(with --json: in the output) so turns can be chained.")
    create.add_argument("input", nargs="?", metavar="INPUT", help="the input text; '-' or omitted: read stdin")
    chain = create.add_mutually_exclusive_group()
    chain.add_argument("--previous-response-id", metavar="ID", help="continue from this stored response")
    chain.add_argument("--conversation", metavar="NAME", help="continue the named conversation")
    create.set_defaults(func=cmd_responses_create)
    get = rsub.add_parser("get", parents=[conn, as_json], help="print a stored response",
                          description="Print a stored response's output text.")
    get.add_argument("id", metavar="ID", help="the response id")
    get.set_defaults(func=cmd_responses_get)
    delete = rsub.add_parser("delete", parents=[conn], help="delete a stored response (asks for approval)",
                             description="Delete a stored response. You are the approver: you are asked "
                                         "to confirm, or pass --yes.")
    delete.add_argument("id", metavar="ID", help="the response id")
    delete.add_argument("--idempotency-key", required=True, metavar="KEY",
                        help="one key per intended deletion; a repeat returns the first receipt (needs a "
                             "durable HERMES_SDK_IDEMPOTENCY_STORE across runs)")
    delete.add_argument("--reason", required=True, metavar="TEXT", help="why, kept with the approval evidence")
    delete.add_argument("--yes", action="store_true", help="confirm the deletion without a prompt")
    delete.set_defaults(func=cmd_responses_delete)

    caps = sub.add_parser("capabilities", parents=[conn, as_json], help="list capability descriptors",
                          description="List the capability descriptors (from the server when a base URL is "
                                      "configured, else the published contracts).")
    caps.set_defaults(func=cmd_capabilities)

    plugins = sub.add_parser("plugins", help="print the loaded plugins as JSON",
                             description="Print the loaded plugins, their hooks and distributions as JSON.")
    plugins.set_defaults(func=cmd_plugins)

    emulator = sub.add_parser(
        "emulator", help="serve the Hermes emulator until interrupted",
        description="Serve the bundled Hermes emulator until Ctrl-C. Prints ready-to-paste "
                    "`export HERMES_BASE_URL=... HERMES_API_KEY=...` lines on stdout.")
    emulator.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    emulator.add_argument("--port", type=int, default=0,
                          help="port to listen on (default: %(default)s, a free port; Hermes uses 8642)")
    emulator.add_argument("--api-key", default="test-key", help="the key clients must send (default: %(default)s)")
    emulator.add_argument("--token-delay", type=float, default=0.0, metavar="SECONDS",
                          help="wait before each streamed delta (default: %(default)s)")
    emulator.set_defaults(func=cmd_emulator)

    demo = sub.add_parser("demo", help="a streamed chat turn against the bundled emulator",
                          description="A streamed chat turn and a stored Responses round trip against the "
                                      "bundled emulator; needs no server.")
    demo.set_defaults(func=cmd_demo)

    add_run_parser(sub, conn)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    from ._logging import configure_from_env

    parser = build_parser()
    args = parser.parse_args(argv)
    configure_from_env()
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        with interrupt_on_signals():  # Ctrl-C and `kill` end a command cleanly, even started with `cmd &`
            code = func(args)
        sys.stdout.flush()  # a closed pipe must surface here, not in the interpreter's exit flush
        return code
    except _Usage as exc:
        parser.print_usage(sys.stderr)
        sys.stderr.write(f"hermes-sdk: error: {exc}\n")
        return EXIT_USAGE
    except HermesError as exc:
        return _failure(exc, "")
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and keep the exit-time flush quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE


if __name__ == "__main__":
    raise SystemExit(main())
