"""`freshrag datasets`: the dataset directories under a folder, each with its version, parent,
counts and creation-date range, in lineage order (docs/living.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from freshrag.cli.options import add_command

NAME = "datasets"
HELP = "list the dataset versions under a folder"


DESCRIPTION = ("Finds every dataset directory (one holding questions.jsonl and articles.jsonl) "
               "at PATH and below it, and prints each with its version number and id, the "
               "version it extends, its article and question counts and the first and last "
               "creation time of its articles; each first version is followed by the versions "
               "`freshrag build --since` made from it. A set built before versions existed "
               "shows no version.")
EXAMPLES = ("freshrag datasets datasets/",
            "freshrag datasets datasets/monthly --format json",
            "freshrag datasets   # the example dataset, and its folder")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    p.add_argument_group("inputs").add_argument(
        "path", type=Path, metavar="PATH", nargs="?",
        help="a dataset directory or a folder holding some (default: the example dataset "
             "shipped with freshrag, whose folder is printed first: on stderr with JSON)")
    p.add_argument_group("output").add_argument(
        "--format", choices=("markdown", "json"), default="markdown",
        help="a table to read, or JSON for scripts (default: %(default)s)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import json

    from freshrag.builders.versions import find_datasets
    from freshrag.reporting.report import markdown_table

    if args.path is None:  # the commands' default dataset: say where it is, to read or copy
        from freshrag.core.dataset import example_dir

        args.path = example_dir()
        print(f"the example dataset shipped with freshrag: {args.path}",
              file=sys.stderr if args.format == "json" else sys.stdout)
    rows = find_datasets(args.path)
    if args.format == "json":
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"no dataset directory at or below {args.path}")
        return 0
    table = [{"dataset": row["path"],
              "version": f"v{row['number']} {row['id']}" if row["id"] else "none",
              "parent": row["parent"]["id"] if row["parent"] else "",
              "articles": row["articles"], "questions": row["questions"],
              "created from": row["created"]["first"] or "",
              "created to": row["created"]["last"] or ""} for row in rows]
    print(markdown_table(table, ("dataset", "version", "parent", "articles", "questions",
                                 "created from", "created to")))
    return 0
