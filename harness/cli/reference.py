"""The CLI reference, generated from the argparse parser (docs/cli.md).

`python -m freshrag.cli.reference` prints the markdown; `--write` writes it to docs/cli.md (run
from the repository root). Every command gets its usage, its help and description, and a table of
its arguments with their help and default, walked from `freshrag.cli.main.parser()`. The walk
knows argparse only, not freshrag's commands, so it follows however the commands are declared;
tests/test_docs.py fails when docs/cli.md differs from what this prints.

Usage lines are composed here rather than by argparse's formatter, whose wrapping and option
syntax vary between Python versions and terminal widths: the page must be the same everywhere.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterator

from freshrag.core import tables
from freshrag.core.files import write_text

DOC = Path("docs") / "cli.md"
COMMAND = "python -m freshrag.cli.reference --write"
WIDTH = 100  # usage lines wrap here


def reference(parser: argparse.ArgumentParser) -> str:
    """The whole page: the program's usage, its commands in a table, then a section per command."""
    commands = list(_commands(parser))
    out = [f"<!-- Generated from the parser by `{COMMAND}`; do not edit by hand. -->", "",
           f"# `{parser.prog}` command reference", ""]
    if parser.description:
        out += [parser.description, ""]
    out += ["```text", _usage(parser), "```", ""]
    if parser.epilog:
        out += ["```text", parser.epilog, "```", ""]
    out += ["| command | what it does |", "|---|---|"]
    out += [f"| [`{sub.prog}`](#{slug(sub.prog)}) | {tables.cell(help_)} |"
            for sub, help_ in commands]
    for sub, help_ in commands:
        out += ["", *_section(sub, help_)]
    return "\n".join(out) + "\n"


def _commands(parser: argparse.ArgumentParser) -> Iterator[tuple[argparse.ArgumentParser, str]]:
    """Every subcommand at any depth, in declaration order, with the help its parent gives it."""
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if not isinstance(choices, dict):
            continue
        helps = {choice.dest: choice.help for choice in getattr(action, "_choices_actions", [])}
        seen: set[int] = set()
        for name, sub in choices.items():
            if not isinstance(sub, argparse.ArgumentParser) or id(sub) in seen:
                continue  # an alias names a parser already listed
            seen.add(id(sub))
            yield sub, helps.get(name) or ""
            yield from _commands(sub)


def _section(parser: argparse.ArgumentParser, help_: str) -> list[str]:
    out = [f"## {parser.prog}", ""]
    if text := parser.description or help_:  # a description starts with the summary
        out += [text, ""]
    out += ["```text", _usage(parser), "```"]
    for group in parser._action_groups:
        rows = [_row(action, parser.prog) for action in group._group_actions
                if action.help is not argparse.SUPPRESS and not _is_help(action)]
        if rows:
            out += ["", f"**{group.title}**", ""]
            if group.description:
                out += [tables.cell(group.description), ""]
            out += ["| argument | help |", "|---|---|", *rows]
    if parser.epilog:  # "examples:" and command lines, as --help prints them
        out += ["", "```text", parser.epilog, "```"]
    return out


def _usage(parser: argparse.ArgumentParser) -> str:
    """`usage: PROG [-h] [--option VALUE] ... POSITIONAL`, wrapped at WIDTH."""
    shown = [action for action in parser._actions if action.help is not argparse.SUPPRESS]
    # options first, then positionals, as argparse orders them; a part never breaks inside
    parts = [_usage_part(action).replace(" ", "\0") for action in
             sorted(shown, key=lambda action: not action.option_strings)]
    prefix = f"usage: {parser.prog} "
    return textwrap.fill(" ".join(parts), WIDTH, initial_indent=prefix,
                         subsequent_indent=" " * len(prefix), break_long_words=False,
                         break_on_hyphens=False).replace("\0", " ")


def _usage_part(action: argparse.Action) -> str:
    if not action.option_strings:
        return _values(action, _metavar(action))
    invocation = f"{action.option_strings[0]} {_values(action, _metavar(action))}".rstrip()
    return invocation if action.required else f"[{invocation}]"


def _row(action: argparse.Action, prog: str) -> str:
    if action.option_strings:
        values = _values(action, _metavar(action))
        name = ", ".join(f"{flag} {values}".rstrip() for flag in action.option_strings)
    else:
        name = _values(action, _metavar(action))
    help_ = _expanded_help(action, prog)
    if default := _default(action, help_):
        help_ = f"{help_} (default: {default})".lstrip()
    if action.required and action.option_strings:
        help_ = f"required; {help_}" if help_ else "required"
    return f"| `{name}` | {tables.cell(help_)} |"


def _metavar(action: argparse.Action) -> str:
    if isinstance(action.metavar, str):
        return action.metavar
    if isinstance(action.metavar, tuple):
        return " ".join(action.metavar)
    if action.choices is not None and not isinstance(action.choices, dict):
        return "{" + ",".join(map(str, action.choices)) + "}"
    if isinstance(action.choices, dict):
        return "COMMAND"
    return action.dest.upper() if action.option_strings else action.dest


def _values(action: argparse.Action, metavar: str) -> str:
    """What follows an option (or stands for a positional), by its nargs."""
    nargs = action.nargs
    if nargs == 0:
        return ""
    if nargs is None or nargs == 1:
        return metavar
    if nargs == argparse.OPTIONAL:
        return f"[{metavar}]"
    if nargs == argparse.ZERO_OR_MORE:
        return f"[{metavar} ...]"
    if nargs == argparse.ONE_OR_MORE:
        return f"{metavar} [{metavar} ...]"
    if nargs in (argparse.PARSER, argparse.REMAINDER):
        return f"{metavar} ..."
    return " ".join([metavar] * int(nargs))


def _expanded_help(action: argparse.Action, prog: str) -> str:
    """The help text with its `%(default)s`-style fields filled in, as `--help` prints it."""
    if not action.help:
        return ""
    params: dict[str, Any] = {**vars(action), "prog": prog}
    params = {key: value for key, value in params.items() if value is not argparse.SUPPRESS}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return " ".join((action.help % params).split())


def _default(action: argparse.Action, help_: str) -> str:
    """The default where the help does not state it already, and where there is one to state."""
    default = action.default
    if ("default" in help_ or action.required or action.nargs == 0
            or default is None or default is argparse.SUPPRESS or default in ((), [])):
        return ""
    if isinstance(default, (tuple, list)):
        return ",".join(map(str, default))
    return str(default)


def _is_help(action: argparse.Action) -> bool:
    return isinstance(action, argparse._HelpAction)




def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens
    (tests/test_docs.py checks every link's anchor with it)."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(
        prog="python -m freshrag.cli.reference",
        description="Print the markdown CLI reference generated from the freshrag parser.")
    args.add_argument("--write", action="store_true",
                      help=f"write it to {DOC} instead (run from the repository root)")
    options = args.parse_args(argv)
    from freshrag.cli.main import parser  # the commands' modules load only when asked for

    text = reference(parser())
    if not options.write:
        sys.stdout.write(text)
        return 0
    if not DOC.parent.is_dir():
        print(f"{DOC.parent}/ not found: run from the repository root", file=sys.stderr)
        return 2
    write_text(DOC, text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
