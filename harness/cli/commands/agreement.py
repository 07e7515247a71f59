"""`freshrag agreement`: how alike two judges (or two repeats of one) grade the same answers:
agreement, weighted kappa, Spearman, confusion matrices (docs/scoring.md); with `--human`, the
judge against people's labels and people against each other (docs/human-labels.md). The
statistics are harness/reporting/agreement.py and human.py."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from freshrag.cli.options import UsageError, add_command
from freshrag.cli.values import whole

NAME = "agreement"
HELP = "how alike two judges, or a judge and people, grade answers"


DESCRIPTION = ("Pairs the grades two run directories gave the same answers (the same questions "
               "answered by the same systems, graded by two judges) and prints how alike they "
               "are, with the pairs that disagree most. With --human, compares people's labels "
               "(the report's labelling page saves them) with a run's judge, and the people "
               "with each other. No model is called.")
EXAMPLES = ("freshrag agreement results/judge-gpt-4o results/judge-mini",
            "freshrag agreement results/recent results/recent --repeat-a 0 --repeat-b 1",
            "freshrag agreement --human ana.jsonl ben.jsonl results/recent")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from freshrag.reporting import agreement

    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("run_a", type=Path, metavar="RUN_A", nargs="?",
                        help="run directory A (rows of the matrix); with --human, the run "
                             "whose judge is compared with the people")
    inputs.add_argument("run_b", type=Path, metavar="RUN_B", nargs="?", help="run directory B "
                        "(columns; differences are B - A)")
    for side in ("a", "b"):
        inputs.add_argument(f"--repeat-{side}", type=whole(0, 99), metavar="K",
                            help=f"compare the grades of `freshrag score --scorers judge` repeat "
                                 f"K in RUN_{side.upper()}'s scores.jsonl instead of its run's "
                                 "own grades")
    inputs.add_argument("--human", type=Path, nargs="+", metavar="LABELS",
                        help="people's labels files (JSON Lines, as the report's labelling page "
                             "saves them; several people's merge): the judge of the one run "
                             "directory given (it may follow the files) against the people, "
                             "and the people against each other")
    output = p.add_argument_group("output")
    output.add_argument("--format", choices=("markdown", "json"), default="markdown",
                        help="what is printed (default: %(default)s)")
    output.add_argument("--out", type=Path, help=f"where {agreement.AGREEMENT} goes "
                        "(default: results/agreement-A-vs-B, A and B the directories' names; "
                        "with --human, results/agreement-human[-RUN])")
    output.add_argument("--top", type=whole(1, 10_000), default=agreement.TOP,
                        help="pairs that disagree most, listed per field and over both fields "
                             "with the judges' reasons (default: %(default)s)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.reporting import agreement
    from freshrag.reporting.epochs import first_epoch_note

    if args.human:
        document, out, markdown = _human(args)
    else:
        if args.run_a is None or args.run_b is None:
            raise UsageError("give two run directories (RUN_A RUN_B), or --human LABELS...")
        document = agreement.compare_runs(args.run_a, args.run_b, args.top,
                                          repeats=(args.repeat_a, args.repeat_b))
        out = args.out or agreement.default_out(args.run_a, args.run_b)
        markdown = agreement.render(document)
    runs = [Path(run) for run in (document.get("run"), args.run_a, args.run_b) if run]
    note = first_epoch_note(runs, "agreement pairs the grades of")
    _print(document, agreement.write_agreement(out, document), markdown, args.format, note)
    return 0


def _human(args: argparse.Namespace) -> tuple[dict[str, Any], Path, str]:
    """The document of `agreement --human`, where it goes and its markdown. A run directory
    among the files (`--human a.jsonl RUN`, where the files' list ran on) is the run."""
    from freshrag.reporting import human, labels
    from freshrag.reporting.loading import load_summaries

    runs = [path for path in (args.run_a, args.run_b) if path is not None]
    runs += [path for path in args.human if path.is_dir()]
    if len(runs) > 1:
        raise UsageError(f"--human compares people with one run's judge: give one run "
                         f"directory, not {len(runs)} ({', '.join(map(str, runs))})")
    if args.repeat_a is not None or args.repeat_b is not None:
        raise UsageError("--repeat-a and --repeat-b compare two gradings; --human compares "
                         "people with the run's own grades")
    read = labels.read_labels([path for path in args.human if not path.is_dir()])
    rows = load_summaries(runs) if runs else None
    resolved = labels.resolve(read, rows) if rows is not None else None
    document = human.human_document(read, resolved, rows, args.top)
    if runs:
        document = {"run": str(runs[0]), **document}
    name = f"agreement-human-{runs[0].resolve().name}" if runs else "agreement-human"
    return document, args.out or Path("results") / name, human.render(document)


def _print(document: dict[str, Any], path: Path, markdown: str, fmt: str,
           note: str | None) -> None:
    import sys

    from freshrag.core.files import dumps

    print(markdown if fmt == "markdown" else dumps(document, indent=2))
    # stderr when stdout carries JSON, so that output stays parseable
    notes = sys.stdout if fmt == "markdown" else sys.stderr
    if note:
        print("\n" + note, file=notes)
    print(f"\n{path} written", file=notes)
