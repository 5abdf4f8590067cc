"""``hermes-sdk templates ...``: saved system prompts, models and ``-o`` options, used with ``-t NAME``.

Kept in the state directory's ``templates.json`` (0600). A template fills what the command line
leaves out: ``-s``, ``-m`` and ``-o`` given on the command line win.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .._core.display import visible
from .._families.chat.operations import CHAT_FIELDS
from .._families.responses.operations import RESPONSES_FIELDS
from ._cli_files import read_json, write_private_json
from ._cli_support import provider_options, state_dir
from .cli import EXIT_FAILED, EXIT_OK, _print_json, _Usage

if TYPE_CHECKING:
    from .cli import Subcommands

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def templates_file() -> Path:
    return state_dir() / "templates.json"


def _templates() -> dict[str, dict[str, object]]:
    found = read_json(templates_file()).get("templates")
    return {str(k): v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {}


def _save(templates: dict[str, dict[str, object]]) -> None:
    write_private_json(templates_file(), {"templates": dict(templates)})


def apply_template(args: argparse.Namespace) -> None:
    """Fill ``args`` from ``-t NAME``: its system prompt, model and options, where not given."""
    name = getattr(args, "template", None)
    if not name:
        return
    templates = _templates()
    template = templates.get(name)
    if template is None:
        known = ", ".join(sorted(templates)) or "none saved"
        raise _Usage(f"-t {name}: no such template (the templates: {known}; see `hermes-sdk templates list`)")
    if not args.system and isinstance(template.get("system"), str):
        args.system = template["system"]
    if not args.model and isinstance(template.get("model"), str):
        args.model = template["model"]
    given = list(args.option or [])
    names = {pair[0] for pair in given}
    saved = template.get("options")
    pairs = [list(map(str, pair)) for pair in saved if isinstance(pair, list) and len(pair) == 2] \
        if isinstance(saved, list) else []
    args.option = [pair for pair in pairs if pair[0] not in names] + given or None


def cmd_templates_save(args: argparse.Namespace) -> int:
    if not _NAME.fullmatch(args.name):
        raise _Usage(f"template name {args.name!r}: letters, digits, '_', '.' and '-' only")
    if not (args.system or args.model or args.option):
        raise _Usage("a template needs -s/--system, -m/--model or -o NAME VALUE")
    try:  # refused now, not at its first use: a name no command knows
        provider_options(args.option, {"model": "-m/--model", "stream": "--stream"}, CHAT_FIELDS | RESPONSES_FIELDS)
    except ValueError as exc:
        raise _Usage(str(exc)) from None
    templates = _templates()
    templates[args.name] = {k: v for k, v in (("system", args.system), ("model", args.model),
                                              ("options", [list(p) for p in args.option or []] or None)) if v}
    _save(templates)
    sys.stderr.write(visible(f"template {args.name!r} saved in {templates_file()}") + "\n")
    return EXIT_OK


def cmd_templates_list(args: argparse.Namespace) -> int:
    templates = _templates()
    if args.json:
        _print_json(templates)
        return EXIT_OK
    for name, template in sorted(templates.items()):
        system = str(template.get("system") or "").replace("\n", " ")
        summary = "  ".join(part for part in (f"-m {template['model']}" if template.get("model") else "",
                                              system[:60] + ("..." if len(system) > 60 else "")) if part)
        print(f"{visible(name)}\t{visible(summary)}")
    return EXIT_OK


def cmd_templates_show(args: argparse.Namespace) -> int:
    template = _templates().get(args.name)
    if template is None:
        sys.stderr.write(visible(f"hermes-sdk: no template {args.name!r}") + "\n")
        return EXIT_FAILED
    _print_json({"name": args.name, **template})
    return EXIT_OK


def cmd_templates_remove(args: argparse.Namespace) -> int:
    templates = _templates()
    if templates.pop(args.name, None) is None:
        sys.stderr.write(visible(f"hermes-sdk: no template {args.name!r}") + "\n")
        return EXIT_FAILED
    _save(templates)
    return EXIT_OK


def cmd_templates_path(args: argparse.Namespace) -> int:
    print(templates_file())
    return EXIT_OK


def add_templates_parser(sub: Subcommands) -> None:
    templates = sub.add_parser("templates", help="save system prompts, models and options to use with -t NAME",
                               description="Saved system prompts (and a model, -o options) for chat and responses "
                                           "create: hermes-sdk chat -t NAME TEXT. Kept in templates.json (0600).")
    tsub = templates.add_subparsers(dest="action", required=True, metavar="ACTION")
    save = tsub.add_parser("save", help="save (or replace) a template",
                           description="Save a template: hermes-sdk templates save terse -s 'Answer in one line.'")
    save.add_argument("name", metavar="NAME", help="the template's name (letters, digits, '_', '.', '-')")
    save.add_argument("-s", "--system", metavar="TEXT", help="the system prompt (Responses: instructions)")
    save.add_argument("-m", "--model", help="the model")
    save.add_argument("-o", "--option", nargs=2, action="append", metavar=("NAME", "VALUE"),
                      help="a provider option, as chat's -o; repeatable")
    save.set_defaults(func=cmd_templates_save)
    listing = tsub.add_parser("list", help="list the templates", description="List the saved templates.")
    listing.add_argument("--json", action="store_true", help="print them as JSON")
    listing.set_defaults(func=cmd_templates_list)
    for name, what, func in (("show", "print a template as JSON", cmd_templates_show),
                             ("remove", "delete a template", cmd_templates_remove)):
        found = tsub.add_parser(name, help=what, description=what[0].upper() + what[1:] + ".")
        found.add_argument("name", metavar="NAME", help="the template's name")
        found.set_defaults(func=func)
    tsub.add_parser("path", help="print the path of the templates file",
                    description="Print the templates file's path.").set_defaults(func=cmd_templates_path)
