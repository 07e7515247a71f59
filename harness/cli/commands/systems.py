"""`freshrag systems`: every system a run can name without a path, where it comes from and what it
does: the built-in strategies, the ones installed packages register under the entry-point group
`freshrag.systems`, and the services of freshrag.toml's `[systems]` (docs/own-system.md)."""

from __future__ import annotations

import argparse

from freshrag.cli.options import add_command, add_config

NAME = "systems"
HELP = "list the systems a run can name"


DESCRIPTION = ("Prints a table of every name --systems takes without a path: the built-in "
               "strategies, the systems installed packages register, and the services of "
               "freshrag.toml's [systems]; and how to name your own without installing it.")
EXAMPLES = ("freshrag systems",)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    add_config(p.add_argument_group("inputs"), "whose [systems] services are listed too")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import default_config
    from freshrag.core.config import config_table
    from freshrag.reporting.report import markdown_table
    from freshrag.systems import SYSTEMS
    from freshrag.systems.external.plugins import available, resolve, services_from

    file = args.config or default_config()
    services = services_from(config_table(file, "systems"), str(file), SYSTEMS) if file else {}
    listed = available(SYSTEMS) + [resolve(name, SYSTEMS, services) for name in services]
    rows = [{"system": source.name, "from": source.origin,
             "where": source.where + (f" {source.version}" if source.version else ""),
             "what it does": source.description} for source in listed]
    print(markdown_table(rows, ("system", "from", "where", "what it does")))
    print("\nYour own, without installing: --systems FILE.py:NAME, MODULE:NAME, NAME=URL, or an "
          "answers file FILE.jsonl / FILE.csv (docs/own-system.md)")
    return 0
