"""``hermes-sdk sessions ...`` and ``hermes-sdk jobs ...``: the session and cron-job families.

Job mutations are approval-gated like ``responses delete``: the operator at the terminal is the
approver (asked on stdin, or /dev/tty when stdin is a pipe), or confirms up front with ``--yes``;
with neither nothing is sent.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from typing import TYPE_CHECKING, Callable

from .._core.display import visible
from .cli import (
    EXIT_OK,
    _agent_text,
    _as_json,
    _client,
    _line,
    _note,
    _operator_approval,
    _print_json,
    _stream_out,
    _text_arg,
)

if TYPE_CHECKING:
    from .._families.jobs.types import Job
    from .._families.sessions.types import Session
    from .cli import Subcommands


def _when(value: object) -> str:
    """An epoch-seconds or ISO time as printed in a table (``-`` when absent)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        import datetime

        return datetime.datetime.fromtimestamp(value, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%SZ")
    return str(value) if value else "-"


# ---------------------------------------------------------------- sessions


def _fields(*values: object) -> str:
    """A table line: each field visible() (a server's text), tab-separated."""
    return "\t".join(visible(str(value)) for value in values)


def _session_line(session: Session) -> str:
    ended = (f"ended: {session.end_reason}",) if session.end_reason else ()
    return _fields(session.id, session.title or "(untitled)", f"{session.message_count} messages",
                   _when(session.last_active or session.started_at), *ended)


def cmd_sessions_list(args: argparse.Namespace) -> int:
    """One line per session, most recently active first; ``--all`` reads every page."""
    with _client(args) as client:
        if args.all:
            sessions = list(client.sessions.iter(source=args.source, include_children=args.include_children))
            more = False
        else:
            page = client.sessions.list(limit=args.limit, offset=args.offset, source=args.source,
                                        include_children=args.include_children)
            sessions, more = list(page.data), page.has_more
    if args.json:
        _print_json([session.raw for session in sessions])
    else:
        for session in sessions:
            print(_session_line(session))
        if more:
            sys.stderr.write(f"more sessions: --offset {args.offset + len(sessions)} (or --all)\n")
    return EXIT_OK


def cmd_sessions_get(args: argparse.Namespace) -> int:
    with _client(args) as client:
        session = client.sessions.get(args.id)
    if args.json:
        _print_json(session.raw)
        return EXIT_OK
    for name in ("id", "title", "source", "model", "message_count", "parent_session_id", "end_reason"):
        value = getattr(session, name)
        if value is not None:
            _line(f"{name}: {value}")
    for name in ("started_at", "ended_at", "last_active"):
        value = getattr(session, name)
        if value is not None:
            _line(f"{name}: {_when(value)}")
    return EXIT_OK


def cmd_sessions_messages(args: argparse.Namespace) -> int:
    """The transcript, ``role: content`` per message; says so when Hermes answered for a fork."""
    with _client(args) as client:
        transcript = client.sessions.messages(args.id)
    if transcript.redirected:
        _note(f"hermes-sdk: Hermes answered with session {transcript.session_id} (the newest fork of {args.id})")
    if args.json:
        _print_json({"session_id": transcript.session_id, "messages": [m.raw for m in transcript.messages]})
        return EXIT_OK
    for message in transcript.messages:
        if message.content is not None:
            text = message.content
        else:
            text = f"(tool calls: {len(message.tool_calls or [])})" if message.tool_calls else ""
        label = message.role + (f" [{message.tool_name}]" if message.tool_name else "")
        print(f"{visible(label)}: {_agent_text(text)}")
    return EXIT_OK


def cmd_sessions_chat(args: argparse.Namespace) -> int:
    """One turn on a stored session's history (``POST /api/sessions/{id}/chat``)."""
    text = _text_arg(args.text, "message")
    with _client(args) as client:
        if args.stream:
            return _stream_out(client.sessions.chat_stream(args.id, text, system_message=args.system,
                                                           idempotency_key=args.idempotency_key), args)
        reply = client.sessions.chat(args.id, text, system_message=args.system,
                                     idempotency_key=args.idempotency_key)
    if args.json:
        _print_json({**reply.raw, "session_id": reply.session_id})
    else:
        print(_agent_text(reply.text))
    return EXIT_OK


# ---------------------------------------------------------------- jobs


def _job_line(job: Job) -> str:
    schedule = job.schedule_display or (job.schedule or {}).get("display") or "-"
    state = job.state or ("enabled" if job.enabled else "disabled")
    return _fields(job.id, job.name, schedule, state, f"next: {_when(job.next_run_at)}")


def _print_job(args: argparse.Namespace, job: Job) -> None:
    if args.json:
        _print_json(job.raw)
    else:
        print(_job_line(job))


def cmd_jobs_list(args: argparse.Namespace) -> int:
    with _client(args) as client:
        jobs = client.jobs.list(include_disabled=args.all)
    if args.json:
        _print_json([job.raw for job in jobs])
    else:
        for job in jobs:
            print(_job_line(job))
    return EXIT_OK


def cmd_jobs_get(args: argparse.Namespace) -> int:
    with _client(args) as client:
        job = client.jobs.get(args.id)
    if args.json:
        _print_json(job.raw)
        return EXIT_OK
    print(_job_line(job))
    for name in ("prompt", "deliver", "last_run_at", "last_status", "last_error", "created_at", "paused_at"):
        value = getattr(job, name)
        if value:
            _line(f"{name}: {value}")
    if job.skills:
        _line(f"skills: {', '.join(job.skills)}")
    return EXIT_OK


def _key(args: argparse.Namespace, action: str) -> str:
    return args.idempotency_key or f"cli-job-{action}-{uuid.uuid4().hex}"


def cmd_jobs_create(args: argparse.Namespace) -> int:
    approve = _operator_approval(args, f"Create cron job {args.name!r} ({args.schedule})?")
    with _client(args, approval_provider=approve) as client:
        job = client.jobs.create(name=args.name, schedule=args.schedule, prompt=args.prompt, deliver=args.deliver,
                                 skills=args.skill or None, repeat=args.repeat, idempotency_key=_key(args, "create"),
                                 reason=args.reason)
    _print_job(args, job)
    return EXIT_OK


def _job_action(action: str, question: str) -> Callable[[argparse.Namespace], int]:
    def command(args: argparse.Namespace) -> int:
        approve = _operator_approval(args, question.format(id=args.id))
        with _client(args, approval_provider=approve) as client:
            method = getattr(client.jobs, action)
            found = method(args.id, idempotency_key=_key(args, action), reason=args.reason)
        if action == "delete":
            _print_json({"id": found.id, "deleted": found.deleted})
        else:
            _print_job(args, found)
            if action == "run" and not _as_json(args):
                sys.stderr.write("the job is due: Hermes' scheduler runs it on its next tick (within a minute)\n")
        return EXIT_OK

    command.__doc__ = f"``hermes-sdk jobs {action} ID``: {question.format(id='ID')}"
    return command


_JOB_ACTIONS = {
    "pause": ("pause a job (asks for approval)", "Pause cron job {id}?"),
    "resume": ("resume a paused job (asks for approval)", "Resume cron job {id}?"),
    "run": ("make a job due now: it runs on the scheduler's next tick (asks for approval)",
            "Run cron job {id} on the scheduler's next tick?"),
    "delete": ("delete a job and its output (asks for approval)", "Delete cron job {id} and its output?"),
}


# ---------------------------------------------------------------- parsers


def _approval_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--reason", required=True, metavar="TEXT", help="why, kept with the approval evidence")
    parser.add_argument("--yes", action="store_true", help=f"confirm {what} without a prompt")
    parser.add_argument("--idempotency-key", metavar="KEY",
                        help="one action per key; a repeat returns the first result, also in a later invocation "
                             "(keys are kept in the state directory, or HERMES_SDK_IDEMPOTENCY_STORE); "
                             "default: a new key")


def add_sessions_commands(sub: Subcommands, conn: argparse.ArgumentParser, as_json: argparse.ArgumentParser) -> None:
    """``hermes-sdk sessions list|get|messages|chat`` (the sessions family's ``commands``)."""
    sessions = sub.add_parser("sessions", help="list and read Hermes sessions, chat in one",
                              description="Hermes' stored sessions (/api/sessions): list, get, messages, chat.")
    ssub = sessions.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = ssub.add_parser("list", parents=[conn, as_json], help="list sessions, most recently active first",
                              description="List sessions, most recently active first: id, title, messages, "
                                          "last activity.")
    listing.add_argument("--limit", type=int, default=50, help="sessions per page, 0-200 (default: %(default)s)")
    listing.add_argument("--offset", type=int, default=0, help="skip this many (default: %(default)s)")
    listing.add_argument("--source", metavar="SOURCE", help="only this source (api_server, cron, ...)")
    listing.add_argument("--include-children", action="store_true", help="list forks too")
    listing.add_argument("--all", action="store_true", help="read every page")
    listing.set_defaults(func=cmd_sessions_list)
    get = ssub.add_parser("get", parents=[conn, as_json], help="print a session",
                          description="Print a session's fields.")
    get.add_argument("id", metavar="ID", help="the session id")
    get.set_defaults(func=cmd_sessions_get)
    messages = ssub.add_parser("messages", parents=[conn, as_json], help="print a session's transcript",
                               description="Print a session's transcript. After a fork, Hermes answers the parent's "
                                           "id with the newest fork's transcript (said on stderr).")
    messages.add_argument("id", metavar="ID", help="the session id")
    messages.set_defaults(func=cmd_sessions_messages)
    chat = ssub.add_parser("chat", parents=[conn, as_json], help="one turn on a stored session",
                           description="One agent turn on a stored session's history. TEXT may be piped in.")
    chat.add_argument("id", metavar="ID", help="the session id")
    chat.add_argument("text", nargs="*", metavar="TEXT",
                      help="the message (several words need no quotes); '-' or omitted: read stdin")
    chat.add_argument("-s", "--system", metavar="TEXT", help="a system message for this turn")
    chat.add_argument("--stream", action="store_true", help="print the reply as it arrives")
    chat.add_argument("--idempotency-key", metavar="KEY", help="one turn per key (a repeat replays it)")
    chat.set_defaults(func=cmd_sessions_chat)


def add_jobs_commands(sub: Subcommands, conn: argparse.ArgumentParser, as_json: argparse.ArgumentParser) -> None:
    """``hermes-sdk jobs list|get|create|pause|resume|run|delete`` (the jobs family's ``commands``)."""
    jobs = sub.add_parser("jobs", help="list and manage cron jobs (changes ask for approval)",
                          description="Hermes' cron jobs (/api/jobs). Every change asks you to approve it, "
                                      "or takes --yes.")
    jsub = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    jlist = jsub.add_parser("list", parents=[conn, as_json], help="list jobs",
                            description="List cron jobs: id, name, schedule, state, next run.")
    jlist.add_argument("--all", action="store_true", help="paused and disabled jobs too")
    jlist.set_defaults(func=cmd_jobs_list)
    jget = jsub.add_parser("get", parents=[conn, as_json], help="print a job", description="Print a cron job.")
    jget.add_argument("id", metavar="ID", help="the job id (12 lowercase hex characters)")
    jget.set_defaults(func=cmd_jobs_get)
    create = jsub.add_parser("create", parents=[conn, as_json], help="create a job (asks for approval)",
                             description="Create a cron job. You are the approver: you are asked to confirm, "
                                         "or pass --yes.")
    create.add_argument("--name", required=True, help="the job's name")
    create.add_argument("--schedule", required=True,
                        help="'every 30m', a cron expression ('0 9 * * 1-5'), an ISO time or '30m' (one-shot)")
    create.add_argument("--prompt", metavar="TEXT", help="what the agent is asked each run")
    create.add_argument("--deliver", metavar="TARGET", help="where Hermes delivers the output")
    create.add_argument("--skill", action="append", metavar="NAME", help="a skill the run loads; repeatable")
    create.add_argument("--repeat", type=int, metavar="N", help="stop after N runs")
    _approval_options(create, "the creation")
    create.set_defaults(func=cmd_jobs_create)
    for action, (what, question) in _JOB_ACTIONS.items():
        parents = [conn] if action == "delete" else [conn, as_json]
        parser = jsub.add_parser(action, parents=parents, help=what,
                                 description=what[0].upper() + what[1:] + ". You are the approver: you are asked "
                                             "to confirm, or pass --yes.")
        parser.add_argument("id", metavar="ID", help="the job id (12 lowercase hex characters)")
        _approval_options(parser, f"the {action}")
        parser.set_defaults(func=_job_action(action, question))


__all__ = ["add_jobs_commands", "add_sessions_commands"]
