"""`freshrag agreement`: how alike two judges (or two repeats of one) grade the same answers:
agreement, weighted kappa, Spearman, confusion matrices (docs/scoring.md); the statistics are
harness/reporting/agreement.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import add_command, whole
from freshrag.reporting import agreement

HELP = "how alike two judges grade the same answers"


DESCRIPTION = ("Pairs the grades two run directories gave the same answers (the same questions "
               "answered by the same systems, graded by two judges) and prints how alike they "
               "are, with the pairs that disagree most. No model is called.")
EXAMPLES = ("freshrag agreement results/judge-gpt-4o results/judge-mini",
            "freshrag agreement results/recent results/recent --repeat-a 0 --repeat-b 1")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "agreement", HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("run_a", type=Path, metavar="RUN_A",
                        help="run directory A (rows of the matrix)")
    inputs.add_argument("run_b", type=Path, metavar="RUN_B", help="run directory B (columns; "
                        "differences are B - A)")
    for side in ("a", "b"):
        inputs.add_argument(f"--repeat-{side}", type=whole(0, 99), metavar="K",
                            help=f"compare the grades of `freshrag score --scorers judge` repeat "
                                 f"K in RUN_{side.upper()}'s scores.jsonl instead of its run's "
                                 "own grades")
    output = p.add_argument_group("output")
    output.add_argument("--format", choices=("markdown", "json"), default="markdown",
                        help="what is printed (default: %(default)s)")
    output.add_argument("--out", type=Path, help=f"where {agreement.AGREEMENT} goes "
                        "(default: results/agreement-A-vs-B, A and B the directories' names)")
    output.add_argument("--top", type=whole(1, 10_000), default=agreement.TOP,
                        help="pairs that disagree most, listed per field and over both fields "
                             "with the judges' reasons (default: %(default)s)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import sys

    from freshrag.core.files import dumps
    from freshrag.core.outputs import check_outputs, files_in

    out = args.out or agreement.default_out(args.run_a, args.run_b)
    check_outputs(files_in(out, (agreement.AGREEMENT,), "--out"), [])  # before the runs are read
    document = agreement.compare_runs(args.run_a, args.run_b, args.top,
                                      repeats=(args.repeat_a, args.repeat_b))
    path = agreement.write_agreement(out, document)
    markdown = args.format == "markdown"
    print(agreement.render(document) if markdown else dumps(document, indent=2))
    # stderr when stdout carries JSON, so that output stays parseable
    print(f"\n{path} written", file=sys.stdout if markdown else sys.stderr)
    return 0
