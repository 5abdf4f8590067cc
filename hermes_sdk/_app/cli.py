"""The ``hermes-sdk`` command, configured by the same environment variables as the client.

Exit codes: 0 the call completed; 1 the agent or Hermes failed (the same with and without
``--stream``; a run whose command was denied too), printed on stderr as ``code: message`` (with
``--json``: one JSON object) with ids and credentials scrubbed; 2 usage; 130 interrupted (Ctrl-C);
141 the reader of stdout went away (``| head``).
"""

from __future__ import annotations

import argparse
import errno
import getpass
import io
import json
import os
import shlex
import sys
from typing import TYPE_CHECKING, Callable, Iterable, Optional, Sequence, Union

from .._core._signals import interrupt_on_signals
from .._core.display import visible
from .._families.chat.operations import CHAT_FIELDS
from .._families.responses.operations import RESPONSES_FIELDS
from ..errors import HermesError, MissingCredentialError
from ._cli_input import read_turn
from ._cli_support import (
    NO_TERMINAL,
    LineEditor,
    Terminal,
    durable_store,
    json_visible,
    last_session,
    print_error,
    provider_options,
    remember_session,
)

if TYPE_CHECKING:
    from .._core.approval import ApprovalDecision, ApprovalProvider, ApprovalRequest
    from .._core.events import RunEvent
    from .._core.models import StreamResult
    from .._core.streaming import HermesStream
    from .client import HermesClient

    #: What ``add_subparsers()`` returns: where each command (and each family's) adds its parser.
    Subcommands = argparse._SubParsersAction[argparse.ArgumentParser]
    #: An approval provider the operator at the terminal answers.
    TerminalApprover = Callable[[ApprovalRequest], Optional[ApprovalDecision]]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_PIPE = 0, 1, 2, 130, 141
_DEFAULT_MODEL = "hermes-agent"


class _Usage(Exception):
    """A usage error found after parsing (exit 2, like argparse's own)."""


def _base_url(args: argparse.Namespace) -> str:
    return getattr(args, "base_url", None) or os.environ.get("HERMES_BASE_URL") or ""


def _client(args: argparse.Namespace, *, needs_key: bool = True,
            approval_provider: Optional[ApprovalProvider] = None) -> HermesClient:
    """The client for a command; without a key (and the command needs one) the fix is named first."""
    from ._cli_keys import resolve_key
    from .client import HermesClient

    given, source = resolve_key(args)
    if needs_key and not (given or os.environ.get("HERMES_API_KEY")):
        raise MissingCredentialError(
            "no API key: pass --api-key KEY or set HERMES_API_KEY, or store it with `hermes-sdk keys set` "
            "(Hermes' API_SERVER_KEY; for the emulator, `hermes-sdk emulator` prints the export lines)",
            details={"field": "api_key"})
    if not _base_url(args):
        from ..errors import InvalidInputError

        raise InvalidInputError("no Hermes URL: pass --base-url URL or set HERMES_BASE_URL "
                                "(e.g. http://127.0.0.1:8642)", details={"field": "base_url"})
    store = durable_store(needed=bool(getattr(args, "idempotency_key", None)))

    def build() -> HermesClient:
        if given:  # a refused key's message names where it came from
            from .._core.endpoints import Endpoint

            endpoint = Endpoint(os.environ.get("HERMES_ENDPOINT_ID") or "default", _base_url(args), given,
                                key_source=source)
            return HermesClient(endpoints=[endpoint], idempotency_store=store, approval_provider=approval_provider)
        return HermesClient(getattr(args, "base_url", None), None, idempotency_store=store,
                            approval_provider=approval_provider)

    if needs_key:
        return build()
    import logging

    class _NoKeyWarning(logging.Filter):  # true of calls that need a key, not of this one
        def filter(self, record: logging.LogRecord) -> bool:
            return "has no API key" not in str(record.msg)

    quiet = _NoKeyWarning()
    log = logging.getLogger("hermes_sdk")
    log.addFilter(quiet)
    try:
        return build()
    finally:
        log.removeFilter(quiet)


# Every line this command builds from a server's (or an agent's) text goes through visible(): an id,
# a name or a status carrying ESC[8m, a C1 control or U+202E cannot hide or rewrite what follows.


def _print_json(value: object) -> None:
    sys.stdout.write(json_visible(json.dumps(value, indent=2, ensure_ascii=False, default=str)) + "\n")


def _line(text: str) -> None:
    """A line on stdout built from server text (an id, a name, a status)."""
    print(visible(text))


def _note(text: str) -> None:
    """A line on stderr built from server text."""
    sys.stderr.write(visible(text) + "\n")


def _agent_text(text: str) -> str:
    """The agent's text: on a terminal it cannot move the cursor or erase lines; piped, it is the data."""
    return visible(text, keep="\n\t") if sys.stdout.isatty() else text


def _print_json_line(value: object) -> None:
    sys.stdout.write(json_visible(json.dumps(value, ensure_ascii=False, default=str)) + "\n")
    sys.stdout.flush()


def _piped() -> Optional[str]:
    """What is piped into stdin (a pipe or a file, not a terminal), or None. A stdin that cannot be
    read (closed, or a test runner's stand-in) carries nothing."""
    stdin = sys.stdin
    try:
        if stdin is None or stdin.isatty() or not stdin.readable():
            return None
    except (OSError, ValueError):
        return None
    return stdin.read()


def _text_arg(value: Union[str, Sequence[str], None], what: str) -> str:
    """TEXT as given (several words are one text: ``chat hello world``), after what is piped in, as
    llm does (``cat notes.txt | hermes-sdk chat summarize``: the notes, a blank line, ``summarize``);
    ``-`` reads stdin only."""
    if isinstance(value, (list, tuple)):
        value = " ".join(value) if value else None
    if value == "-":
        value = None
        if sys.stdin is not None and sys.stdin.isatty():
            return _typed_stdin(what)
    piped = _piped()
    piped = piped.rstrip("\r\n") if piped and piped.strip() else None
    if piped is not None and value is not None:
        return f"{piped}\n\n{value}"
    if piped is not None or value is not None:
        text = str(piped if piped is not None else value)
        if not text.strip():  # `chat ""`: refused as usage before anything is built or sent
            raise _Usage(f"no {what}: the {what} given is empty")
        return text
    if sys.stdin is None or sys.stdin.isatty():
        raise _Usage(f"no {what}: give it as an argument, pipe it in, or use '-' to read stdin")
    raise _Usage(f"no {what}: stdin was empty")


def _typed_stdin(what: str) -> str:
    """``-`` on a terminal: read until Ctrl-D."""
    text = sys.stdin.read().rstrip("\r\n")
    if not text.strip():
        raise _Usage(f"no {what}: stdin was empty")
    return text


def _as_json(args: Optional[argparse.Namespace]) -> bool:
    return bool(getattr(args, "json", False))


def _failure(args: Optional[argparse.Namespace], err: Optional[HermesError], code: str = "", message: str = "", *,
             plain: Optional[str] = None, **extra: object) -> int:
    """Print a failure (``code: message`` or ``plain``; one JSON object under ``--json``); exit 1."""
    print_error(_as_json(args), err, code, message, plain=plain, **extra)
    return EXIT_FAILED


def _response_id(result: StreamResult) -> Optional[str]:
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


def _stream_out(stream: HermesStream, args: Optional[argparse.Namespace], *, print_response_id: bool = False) -> int:
    """Print a stream as it arrives: text deltas, or one JSON line per event then a result line."""
    from .._core.convert import stream_result_to_json

    as_json = _as_json(args)
    with stream:
        if as_json:
            for event in stream:
                _print_json_line({"type": "event", "event": event.event, "id": event.id, "data": event.data,
                                  "terminal": event.terminal})
        else:
            for piece in stream.text_deltas():
                sys.stdout.write(_agent_text(piece))
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
        _note(f"response id: {rid}")
    if result.status != "completed":
        return _failure(args, result.error, "hermes_sdk.stream", f"stream {result.status}")
    return EXIT_OK


#: -o names that have their own flag (or are the prompt itself).
_CHAT_FLAGS = {"model": "-m/--model", "session_id": "--session-id or -c", "prompt": "TEXT", "messages": "-s/--system",
               "stream": "--stream"}
_RESPONSES_FLAGS = {"model": "-m/--model", "input": "INPUT", "instructions": "-s/--system",
                    "previous_response_id": "--previous-response-id", "conversation": "--conversation",
                    "stream": "--stream"}


def _options(args: argparse.Namespace, own: dict[str, str], known: Iterable[str]) -> dict[str, object]:
    try:
        return provider_options(getattr(args, "option", None), own, known)
    except ValueError as exc:
        raise _Usage(str(exc)) from None


def _chat_session(args: argparse.Namespace) -> Optional[str]:
    if not args.continue_:
        given: Optional[str] = args.session_id
        return given
    if args.session_id:
        raise _Usage("give --session-id or -c/--continue, not both")
    found = last_session(_base_url(args))
    if found is None:
        raise _Usage(f"-c/--continue: no earlier chat session with {_base_url(args) or 'this server'} to continue")
    return found


def _chat_turn(client: HermesClient, args: argparse.Namespace, text: str, session_id: Optional[str],
               stream: bool) -> tuple[int, Optional[str]]:
    """One chat turn printed and logged; returns the exit code and the session id Hermes answered with."""
    from ._cli_logs import log_call

    prompt: Optional[str] = None
    messages: Optional[list[dict[str, str]]] = None
    if args.system:
        messages = [{"role": "system", "content": args.system}, {"role": "user", "content": text}]
    else:
        prompt = text
    model = args.model or _DEFAULT_MODEL
    options = _options(args, _CHAT_FLAGS, CHAT_FIELDS) or None
    if stream:
        chat_stream = client.chat_stream(prompt=prompt, messages=messages, model=model, session_id=session_id,
                                         extra_body=options)
        code = _stream_out(chat_stream, args)
        done = chat_stream.result()
        log_call(args, client, "chat", model=model, system=args.system, prompt=text, reply=done.text,
                 status=done.status, session_id=done.session_id or session_id, options=options)
        return code, done.session_id or session_id
    result = client.chat(prompt=prompt, messages=messages, model=model, session_id=session_id, extra_body=options)
    log_call(args, client, "chat", model=model, system=args.system, prompt=text, reply=result.text,
             status=result.finish_reason, session_id=result.session_id or session_id, options=options)
    if _as_json(args):
        _print_json({**result.raw, "session_id": result.session_id})
    else:
        print(_agent_text(result.text or ""))
    if result.finish_reason != "stop":
        # The same outcome as a stream whose finish chunk says error or length: exit 1.
        return _failure(args, None, "hermes_sdk.agent_incomplete",
                        f"the agent did not complete (finish_reason {result.finish_reason})",
                        plain=f"finish_reason: {result.finish_reason} (the agent did not complete)",
                        finish_reason=result.finish_reason), result.session_id or session_id
    return EXIT_OK, result.session_id or session_id


def _interactive(args: argparse.Namespace) -> bool:
    """A chat loop: no TEXT, and stdin is a terminal."""
    return not args.text and sys.stdin is not None and sys.stdin.isatty()


def _streaming(args: argparse.Namespace) -> bool:
    """``--stream``/``--no-stream`` as given; by default a reply streams on a terminal (not under ``--json``)."""
    if args.stream is not None:
        return bool(args.stream)
    return sys.stdout.isatty() and not args.json


def cmd_chat(args: argparse.Namespace) -> int:
    from ._cli_templates import apply_template

    apply_template(args)
    session_id = _chat_session(args)
    base = _base_url(args)
    if not _interactive(args):
        text = _text_arg(args.text, "prompt")
        with _client(args) as client:
            code, session_id = _chat_turn(client, args, text, session_id, _streaming(args))
        if session_id:
            remember_session(base, session_id)
        return code
    # The loop: each line is a turn of one Hermes session (the first reply names it), streamed.
    _note(f"Chatting with {base} ({'session ' + session_id if session_id else 'a new session'}). "
          "Type 'exit' or press Ctrl-D to quit. '!multi' ... '!end' sends several lines as one.")
    code = EXIT_OK
    editor = LineEditor() if sys.stdout.isatty() else None
    with _client(args) as client:
        while True:
            try:
                text = read_turn(editor.read if editor is not None else _prompt_on_stderr).strip()
            except EOFError:
                sys.stderr.write("\n")
                break
            if text in ("exit", "quit"):
                break
            if not text:
                continue
            try:
                code, session_id = _chat_turn(client, args, text, session_id, True)
            except HermesError as exc:  # a failed turn does not end the conversation
                code = _failure(args, exc)
            if session_id:
                remember_session(base, session_id)
    if session_id:
        _note(f"session id: {session_id} (continue with: hermes-sdk chat -c)")
    return code


def _prompt_on_stderr(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def cmd_responses_create(args: argparse.Namespace) -> int:
    from ._cli_logs import log_call
    from ._cli_templates import apply_template

    apply_template(args)
    body: dict[str, object] = {"input": _text_arg(args.input, "input")}
    if args.previous_response_id:
        body["previous_response_id"] = args.previous_response_id
    if args.conversation:
        body["conversation"] = args.conversation
    if args.model:
        body["model"] = args.model
    if args.system:
        body["instructions"] = args.system
    options = _options(args, _RESPONSES_FLAGS, RESPONSES_FIELDS)
    logged = {"model": args.model, "system": args.system, "prompt": body["input"], "options": options or None}
    with _client(args) as client:
        if _streaming(args):
            stream = client.responses_stream(body, extra_body=options or None)
            code = _stream_out(stream, args, print_response_id=True)
            done = stream.result()
            log_call(args, client, "responses", reply=done.text, status=done.status,
                     response_id=_response_id(done), **logged)
            return code
        result = client.responses(body, extra_body=options or None)
        log_call(args, client, "responses", reply=result.output_text, status=result.status, response_id=result.id,
                 **logged)
    if args.json:
        _print_json(result.raw)
    else:
        print(_agent_text(result.output_text))
        _note(f"response id: {result.id}")
    if result.status != "completed":
        return _failure(args, None, "hermes_sdk.agent_incomplete",
                        f"the agent did not complete (status {result.status})",
                        plain=f"status: {result.status} (the agent did not complete)", status=result.status)
    return EXIT_OK


def cmd_responses_get(args: argparse.Namespace) -> int:
    with _client(args) as client:
        result = client.response_get(args.id)
    if args.json:
        _print_json(result.raw)
    else:
        print(_agent_text(result.output_text))
    return EXIT_OK


def _operator_approval(args: argparse.Namespace, question: str) -> TerminalApprover:
    """The approval provider of a destructive command: the operator at the terminal approves.

    ``--yes`` records that they confirmed up front; otherwise they are asked on the terminal (stdin,
    or /dev/tty when stdin is a pipe). With no terminal nothing is decided, so the call is refused
    (``hermes_sdk.approval_required``) and nothing is sent.
    """
    terminal = Terminal()

    def approve(request: ApprovalRequest) -> Optional[ApprovalDecision]:
        user = getpass.getuser()
        if request.operation == "run_approval":  # only this command's own action is confirmed here
            return request.deny(approver=user, reason="not asked at this prompt")
        if not args.yes:
            # The operator reads what is approved (the input as shown to an approver), not only the question.
            shown = json_visible(json.dumps(request.input_snapshot, ensure_ascii=False, sort_keys=True, default=str))
            context = f"[approval] {visible(request.operation)}: {shown}\n"
            if not request.fully_shown:
                terminal.say(context + f"[approval] not fully shown ({visible(str(request.not_shown))}): denied")
                return request.deny(approver=user, reason="the input was not fully shown")
            answer = terminal.ask(f"{question} Reason: {args.reason}. [y/N] ", context)
            if answer is None:
                terminal.say(f"hermes-sdk: {NO_TERMINAL}; pass --yes to confirm")
                return None
            if answer.strip().lower() not in ("y", "yes"):
                return request.deny(approver=user, reason="declined at the terminal")
        return request.approve(approver=user, policy_decision_id="cli-operator-confirmation",
                               reason=args.reason)

    return approve


def cmd_responses_delete(args: argparse.Namespace) -> int:
    """``hermes-sdk responses delete ID``: delete a stored response, the terminal operator approving.

    The operator confirms at a prompt (on /dev/tty when stdin is a pipe), or up front with
    ``--yes``. Without ``--yes`` and without a terminal nothing is decided, so the deletion is
    refused (``hermes_sdk.approval_required``).
    """
    approve = _operator_approval(args, f"Delete stored response {args.id!r}?")
    with _client(args, approval_provider=approve) as client:
        receipt = client.response_delete(args.id, idempotency_key=args.idempotency_key, reason=args.reason)
    _print_json({"id": receipt.id, "object": receipt.object, "deleted": receipt.deleted})
    return EXIT_OK


def cmd_models(args: argparse.Namespace) -> int:
    """``hermes-sdk models``: the model ids, one a line (``--json``: the entries as Hermes lists them)."""
    with _client(args) as client:
        models = client.models()
    if args.json:
        _print_json([model.raw for model in models])
    else:
        for model in models:
            _line(model.id)
    return EXIT_OK


def cmd_health(args: argparse.Namespace) -> int:
    """``hermes-sdk health``: ``ok`` and the platform and version; exit 1 when the server is not ok."""
    with _client(args, needs_key=False) as client:
        health = client.health()
    if args.json:
        _print_json(health.raw)
    else:
        extra = ", ".join(part for part in (health.platform, health.version) if part)
        _line(f"{health.status or 'unknown'}{' (' + extra + ')' if extra else ''}")
    if not health.ok:
        return _failure(args, None, "hermes_sdk.unhealthy", f"the server says {health.status!r}, not 'ok'",
                        status=health.status)
    return EXIT_OK


def cmd_toolsets(args: argparse.Namespace) -> int:
    """``hermes-sdk toolsets``: each toolset, whether the API server offers it, and its tools."""
    with _client(args) as client:
        toolsets = client.toolsets()
    if args.json:
        _print_json([toolset.raw for toolset in toolsets])
    else:
        for toolset in toolsets:
            state = "enabled" if toolset.enabled else "disabled"
            _line(f"{toolset.name:<16} {state:<8} {', '.join(toolset.tools)}".rstrip())
    return EXIT_OK


def cmd_capabilities(args: argparse.Namespace) -> int:
    if getattr(args, "base_url", None) or os.environ.get("HERMES_BASE_URL"):
        with _client(args) as client:
            caps = client.capabilities()
    else:  # the contracts are data: list them for the configured (or default) endpoint id without a server
        from .._core._plugin_manager import build_manager
        from .._core.capabilities import descriptor
        from .._core.config import build_registry
        from .._core.endpoints import normalize_endpoint_id
        from .._core.view import ClientView

        endpoint_id = normalize_endpoint_id(os.environ.get("HERMES_ENDPOINT_ID") or "default")
        registry = build_registry(build_manager(), ClientView((endpoint_id,), (), ()))  # the installed plugins' too
        caps = [descriptor(endpoint_id, spec.contract, spec.input_schema) for spec in registry.specs.values()]
    if args.json:
        _print_json(caps)
    elif getattr(args, "schema", False):  # each capability's input, as JSON Schema (llm models --options)
        _print_json({cap["capability_id"]: cap["input_schema"] for cap in caps})
    else:
        for cap in caps:
            approval = "yes" if cap["approval"]["required"] else "no"
            _line(f"{cap['capability_id']:<48} risk={cap['risk']:<6} retry={cap['retry']['safety']:<6} "
                  f"approval={approval:<3} key={cap['idempotency']['requirement']}")
    return EXIT_OK


def cmd_plugins(args: argparse.Namespace) -> int:
    """``hermes-sdk plugins``: print the loaded plugins and their hooks as JSON."""
    from .._core._plugin_manager import build_manager, describe

    _print_json(describe(build_manager()))
    return EXIT_OK


def cmd_emulator(args: argparse.Namespace) -> int:
    from ..testing import HermesEmulator
    from ..testing.emulator import options_from

    emulator = HermesEmulator(args.host, args.port, args.api_key, **options_from(args))
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
    from ..testing import HermesEmulator
    from .client import HermesClient

    with HermesEmulator(token_delay=0.05) as emulator:
        print(f"emulator: {emulator.base_url}")
        with HermesClient(emulator.base_url, emulator.api_key, load_entrypoints=False) as client:
            print("> chat_stream: Tell me a short story about a lighthouse keeper")
            stream = client.chat_stream(prompt="Tell me a short story about a lighthouse keeper")
            code = _stream_out(stream, None)
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


def _run_approver(mode: str, terminal: Terminal) -> TerminalApprover:
    """The approval provider of ``hermes-sdk run --approve MODE`` (the operator is the approver).

    ``ask`` prompts on the terminal: stdin when it is one, else /dev/tty (``cat task.txt | hermes-sdk
    run``); with neither, the command is denied and the line says why.
    """

    def provide(request: ApprovalRequest) -> Optional[ApprovalDecision]:
        user = getpass.getuser()
        if request.operation != "run_approval":  # this command answers the agent's commands only
            return None
        snapshot = request.input_snapshot
        if mode == "deny":
            terminal.say("[approval] denied (--approve deny)")
            return request.deny(approver=user, reason="denied by --approve deny")
        if mode == "once":
            terminal.say("[approval] approved once (--approve once)")
            # --approve once approves before anything is shown: blind by the operator's own choice
            return request.approve(approver=user, policy_decision_id="cli-approve-once", reason="--approve once",
                                   blind=not request.fully_shown)
        if not terminal.available:
            terminal.say(f"[approval] {NO_TERMINAL}: denied (decide up front with --approve once or "
                         "--approve deny)")
            return request.deny(approver=user, reason="no terminal to ask")
        # The snapshot is already visible() (as every ApprovalRequest of a run is); again, for a wrapped provider.
        context = (f"[approval] the agent wants to run: {visible(str(snapshot.get('command')))}\n"
                   f"           ({visible(str(request.reason))})\n")
        if not request.fully_shown:
            # A person approves what they read: a command partly hidden by a policy is not offered.
            terminal.say(context + f"[approval] not fully shown ({visible(str(request.not_shown))}): denied "
                         "(a hidden command cannot be approved here)")
            return request.deny(approver=user, reason="the command was not fully shown")
        while True:
            answer = terminal.ask("Allow? [o]nce / [s]ession (this run) / [d]eny: ", context)
            context = ""
            choice = _RUN_CHOICES.get((answer or "").strip().lower())
            if answer is None:
                choice = "deny"  # end of input: nobody approved
            if choice is not None:
                break
        if choice == "deny":
            return request.deny(approver=user, reason="declined at the terminal")
        return request.approve(approver=user, policy_decision_id="cli-operator-confirmation",
                               reason="approved at the terminal", scope=choice)

    return provide


def _run_line(event: RunEvent) -> Optional[str]:
    """The stderr line of one run event (None: not shown there)."""
    from .._families.runs.events import ApprovalResponded, RunCancelled, RunFailed, ToolCompleted, ToolStarted

    if isinstance(event, ToolStarted):
        return visible(f"[tool] {event.tool}: {event.preview or ''}".rstrip())
    if isinstance(event, ToolCompleted):
        took = f" in {event.duration:.2f} s" if event.duration is not None else ""
        return visible(f"[tool] {event.tool} {'failed' if event.error else 'done'}{took}")
    if isinstance(event, ApprovalResponded):
        return visible(f"[approval] answered: {event.choice}")
    if isinstance(event, RunFailed):
        return visible(f"[run] failed: {event.error or ''}".rstrip())
    if isinstance(event, RunCancelled):
        return "[run] cancelled"
    return None


def _run_event_line(event: RunEvent) -> dict[str, object]:
    return {"type": "event", "event": event.event, "run_id": event.run_id, "timestamp": event.timestamp,
            "data": event.raw}


def cmd_run(args: argparse.Namespace) -> int:
    """Start a durable run, print its text and tool lines live, answer approvals; exit 0 only if it
    completed and every command the agent asked to run was approved."""
    import uuid

    from .._core.events import MessageDelta
    from ._cli_logs import log_call, run_approvals
    from ._cli_support import unapproved_commands

    text = _text_arg(args.text, "task")
    key = args.idempotency_key or f"cli-run-{uuid.uuid4().hex}"
    terminal = Terminal()
    with _client(args, approval_provider=_run_approver(args.approve, terminal)) as client:
        run = client.run(text, idempotency_key=key)
        _note(f"run id: {run.id}{' (replayed)' if run.replayed else ''}")
        if args.json:
            _print_json_line({"type": "run", "run_id": run.id, "replayed": run.replayed})
        open_line = False  # text written without its newline yet
        try:
            for event in run.events():
                if args.json:  # JSON Lines: one event per line, as it arrives
                    _print_json_line(_run_event_line(event))
                    continue
                if isinstance(event, MessageDelta):
                    # On a terminal, the agent's text cannot move the cursor or erase the prompt's lines.
                    sys.stdout.write(_agent_text(event.delta))
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
        finally:
            terminal.close()
        log_call(args, client, "run", prompt=text, reply=result.output, status=result.status, run_id=result.run_id,
                 approvals=run_approvals(result.events))
    refused = unapproved_commands(result.events)
    if args.json:
        _print_json_line({"type": "result", "run_id": result.run_id, "status": result.status,
                          "output": result.output, "usage": result.usage, "error": result.error,
                          "events_complete": result.events_complete, "events_note": result.events_note,
                          "unapproved_commands": refused})
    else:
        if open_line:
            sys.stdout.write("\n")
        if not result.events_complete:
            _note(f"[run] the events were not all seen ({result.events_note or 'a replayed key'}): "
                  "the whole output follows")
            if result.output:
                sys.stdout.write(_agent_text(result.output) + "\n")
    if result.status != "completed":
        return _failure(args, None, "hermes_sdk.run", f"run {result.status}"
                        + (f": {result.error}" if result.error else ""), status=result.status)
    if refused:
        # Hermes ends such a run "completed" (the tool result says BLOCKED); the task was not done.
        return _failure(args, None, "hermes_sdk.run",
                        f"run completed, but the agent's command was not approved: {refused[0]}"
                        + (f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""),
                        status=result.status, unapproved_commands=refused)
    return EXIT_OK


def cmd_steer(args: argparse.Namespace) -> int:
    """``hermes-sdk steer RUN_ID TEXT``: a message for a running agent (Hermes 0.20+)."""
    text = _text_arg(args.text, "the steer message")
    with _client(args) as client:
        answer = client.runs.steer(args.run_id, text)
    if args.json:
        _print_json(answer.raw or {"run_id": answer.run_id, "accepted": answer.accepted})
    else:
        print(f"{visible(answer.run_id)}\t{'accepted' if answer.accepted else 'not accepted'}")
    return EXIT_OK if answer.accepted else EXIT_FAILED


def add_run_parser(sub: Subcommands, conn: argparse.ArgumentParser) -> None:
    """``hermes-sdk run TEXT [--approve ask|deny|once] [--idempotency-key KEY] [--json]``."""
    run = sub.add_parser("run", parents=[conn], help="start a durable run and follow it (tools, approvals)",
                         description="Start a durable run, print its text and tool lines as they arrive, and "
                                     "answer the agent's approval requests. TEXT may be piped in.")
    run.add_argument("text", nargs="*", metavar="TEXT",
                     help="the task (several words need no quotes); '-' or omitted: read stdin")
    run.add_argument("--approve", choices=("ask", "deny", "once"), default="ask",
                     help="answer the agent's approval requests: ask at the terminal (default; on /dev/tty "
                          "when stdin is a pipe; denied without one), deny all, or approve each once")
    run.add_argument("--idempotency-key", metavar="KEY",
                     help="one run per key, kept in the state directory (or HERMES_SDK_IDEMPOTENCY_STORE) so a "
                          "repeat replays the run; default: a new key, so a new run")
    run.add_argument("--json", action="store_true",
                     help="JSON Lines on stdout: a run line, one line per event as it arrives, then a result line; "
                          "errors as one JSON object on stderr")
    run.add_argument("--no-log", action="store_true", help="keep this run out of the history (`hermes-sdk logs`)")
    run.set_defaults(func=cmd_run)
    steer = sub.add_parser("steer", parents=[conn], help="send a message to a running agent (Hermes 0.20+)",
                           description="Send a message to a running run's agent (POST /v1/runs/{id}/steer); it "
                                       "arrives as run.steered. Refused before sending on a server without it (0.19).")
    steer.add_argument("run_id", metavar="RUN_ID", help="the run to steer (it must be running)")
    steer.add_argument("text", nargs="*", metavar="TEXT", help="the message; '-' or omitted: read stdin")
    steer.add_argument("--json", action="store_true", help="print Hermes' reply as JSON")
    steer.set_defaults(func=cmd_steer)


def _version() -> str:
    from .._version import __version__

    return f"hermes-sdk {__version__}"


def build_parser() -> argparse.ArgumentParser:
    # --base-url and --api-key work before or after the subcommand; SUPPRESS keeps an unset
    # subcommand-level option from overwriting a top-level one.
    conn = argparse.ArgumentParser(add_help=False)
    conn.add_argument("--base-url", default=argparse.SUPPRESS, metavar="URL",
                      help="Hermes origin, e.g. http://127.0.0.1:8642 (default: $HERMES_BASE_URL)")
    conn.add_argument("--api-key", default=argparse.SUPPRESS, metavar="KEY",
                      help="API key sent as Authorization: Bearer; '-' reads it from stdin (a literal KEY is "
                           "visible in ps: prefer --api-key-file, $HERMES_API_KEY or `hermes-sdk keys set`)")
    conn.add_argument("--api-key-file", default=argparse.SUPPRESS, metavar="PATH",
                      help="read the API key from this file (before $HERMES_API_KEY and a stored key)")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true",
                         help="print JSON (with --stream: JSON Lines, one event per line as it arrives, "
                              "then a result line)")
    prompt = argparse.ArgumentParser(add_help=False)
    prompt.add_argument("-m", "--model", help=f"model name sent to Hermes (default: {_DEFAULT_MODEL})")
    prompt.add_argument("-s", "--system", metavar="TEXT", help="system prompt (Responses: instructions)")
    prompt.add_argument("--stream", action=argparse.BooleanOptionalAction, default=None,
                        help="print the reply as it arrives (default: on a terminal, unless --json)")
    prompt.add_argument("-t", "--template", metavar="NAME",
                        help="use a saved template's system prompt, model and options (`hermes-sdk templates`)")
    prompt.add_argument("--no-log", action="store_true", help="keep this call out of the history (`hermes-sdk logs`)")
    prompt.add_argument("-o", "--option", nargs=2, action="append", metavar=("NAME", "VALUE"),
                        help="a provider option sent in the body, e.g. -o temperature 0.2 (VALUE is JSON when "
                             "it parses, else a string); repeatable; an unknown NAME is refused")

    parser = argparse.ArgumentParser(
        prog="hermes-sdk", parents=[conn],
        description="Hermes chat and Responses from the shell. Configured by HERMES_BASE_URL, HERMES_API_KEY, "
                    "HERMES_ENDPOINT_ID, HERMES_SDK_IDEMPOTENCY_STORE and HERMES_SDK_LOG=debug|info.",
        epilog="Exit codes: 0 completed, 1 the agent or Hermes failed, 2 usage, 130 interrupted, 141 closed pipe.")
    parser.add_argument("--version", action="version", version=_version(), help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    chat = sub.add_parser("chat", parents=[conn, prompt, as_json], help="run one chat turn, or chat interactively",
                          description="Run one chat turn: hermes-sdk chat hello world. TEXT may be piped in "
                                      "(echo hi | hermes-sdk chat). Without TEXT on a terminal: an interactive "
                                      "chat, every line a turn of one session.")
    chat.add_argument("text", nargs="*", metavar="TEXT",
                      help="the prompt (several words need no quotes); '-': read stdin; omitted: read stdin, "
                           "or chat interactively on a terminal")
    chat.add_argument("--session-id", metavar="ID", help="continue this Hermes chat session (X-Hermes-Session-Id)")
    chat.add_argument("-c", "--continue", dest="continue_", action="store_true",
                      help="continue the last chat session with this server (remembered in "
                           "$XDG_STATE_HOME/hermes-sdk/state.json, else ~/.local/state/hermes-sdk/state.json)")
    chat.set_defaults(func=cmd_chat)

    responses = sub.add_parser("responses", help="create, get or delete Responses objects",
                               description="Create, get or delete stored Responses objects.")
    rsub = responses.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = rsub.add_parser("create", parents=[conn, prompt, as_json], help="create a response (one turn)",
                             description="Create a response. The response id is printed on stderr "
                                         "(with --json: in the output) so turns can be chained.")
    create.add_argument("input", nargs="*", metavar="INPUT",
                        help="the input text (several words need no quotes); '-' or omitted: read stdin")
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
                        help="one key per intended deletion; a repeat returns the first receipt (keys are kept "
                             "in the state directory, or HERMES_SDK_IDEMPOTENCY_STORE)")
    delete.add_argument("--reason", required=True, metavar="TEXT", help="why, kept with the approval evidence")
    delete.add_argument("--yes", action="store_true", help="confirm the deletion without a prompt")
    delete.set_defaults(func=cmd_responses_delete)

    for name, what, func in (("models", "list the models the server offers", cmd_models),
                             ("health", "check the server's health (no API key needed); exit 1 if not ok",
                              cmd_health),
                             ("toolsets", "list the server's toolsets and whether the API server offers them",
                              cmd_toolsets)):
        found = sub.add_parser(name, parents=[conn, as_json], help=what, description=what[0].upper() + what[1:] + ".")
        found.set_defaults(func=func)

    caps = sub.add_parser("capabilities", parents=[conn, as_json], help="list capability descriptors",
                          description="List the capability descriptors (from the server when a base URL is "
                                      "configured, else the published contracts).")
    caps.add_argument("--schema", action="store_true",
                      help="print each capability's input schema (JSON Schema) instead of the table")
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
    from ..testing.emulator import add_options

    add_options(emulator)  # the same behaviour options as `python -m hermes_sdk.testing`
    emulator.set_defaults(func=cmd_emulator)

    demo = sub.add_parser("demo", help="a streamed chat turn against the bundled emulator",
                          description="A streamed chat turn and a stored Responses round trip against the "
                                      "bundled emulator; needs no server.")
    demo.set_defaults(func=cmd_demo)

    add_run_parser(sub, conn)
    from ._cli_keys import add_keys_parser
    from ._cli_logs import add_logs_parser
    from ._cli_operate import add_operate_parser
    from ._cli_templates import add_templates_parser
    from .doctor import add_doctor_parser

    add_operate_parser(sub, conn)
    add_logs_parser(sub)
    add_keys_parser(sub, conn)
    add_templates_parser(sub)
    add_doctor_parser(sub, conn)
    add_family_commands(sub, conn, as_json)
    return parser


def add_family_commands(sub: Subcommands, conn: argparse.ArgumentParser, as_json: argparse.ArgumentParser) -> None:
    """Each family's own subcommands (``Family.commands``), for the families of the installed plugins."""
    import importlib

    from .._core._plugin_manager import build_manager
    from .._core.config import build_registry
    from .._core.view import ClientView

    for family in build_registry(build_manager(), ClientView((), (), ())).families.values():
        if family.commands:
            module, _, function = family.commands.partition(":")
            getattr(importlib.import_module(module), function)(sub, conn, as_json)


def _tolerant_output() -> list[tuple[io.TextIOWrapper, str]]:
    """stdout and stderr write what they cannot encode (a reply's lone surrogate) as ``\\ud800``
    instead of failing the command with the reply lost; returns the streams changed (to restore)."""
    changed: list[tuple[io.TextIOWrapper, str]] = []
    for stream in (sys.stdout, sys.stderr):
        # (``surrogateescape``, a C locale's, fails on a surrogate outside U+DC80-U+DCFF too)
        if isinstance(stream, io.TextIOWrapper) and stream.errors in ("strict", "surrogateescape"):
            was = stream.errors
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # a closed or detached stream: left as it is
                continue
            changed.append((stream, was))
    return changed
def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``args`` ran: ``keys set``'s, not the top level's."""
    found = parser
    while True:
        chooser = next((a for a in found._actions if isinstance(a, argparse._SubParsersAction)), None)
        chosen = getattr(args, chooser.dest, None) if chooser is not None else None
        if chooser is None or chosen not in chooser.choices:
            return found
        found = chooser.choices[chosen]


def main(argv: Optional[Sequence[str]] = None) -> int:
    from .._core._logging import configure_from_env

    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    command = _command_parser(parser, args)  # a usage error shows the usage of the command given
    words = "text" if isinstance(getattr(args, "text", None), list) else "input"
    if extra and isinstance(getattr(args, words, None), list) and not any(w.startswith("-") for w in extra):
        setattr(args, words, getattr(args, words) + extra)  # `chat ID hello --stream world`: one text
    elif extra:
        command.error(f"unrecognized arguments: {' '.join(extra)}")
    configure_from_env()
    func: Callable[[argparse.Namespace], int] = args.func
    stdin = sys.stdin
    strict = _tolerant_output()
    try:
        with interrupt_on_signals():  # Ctrl-C and `kill` end a command cleanly, even started with `cmd &`
            from ._cli_keys import take_stdin_key

            take_stdin_key(args)  # `--api-key -`: the key, read before any prompt is
            code = func(args)
        sys.stdout.flush()  # a closed pipe must surface here, not in the interpreter's exit flush
        return code
    except _Usage as exc:
        if _as_json(args):
            print_error(True, None, "hermes_sdk.usage", str(exc))
        else:
            command.print_usage(sys.stderr)
            _note(f"{command.prog}: error: {exc}")
        return EXIT_USAGE
    except HermesError as exc:
        return _failure(args, exc)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and keep the exit-time flush quiet too.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    finally:
        sys.stdin = stdin
        for stream, errors in strict:
            stream.reconfigure(errors=errors)


if __name__ == "__main__":
    raise SystemExit(main())
