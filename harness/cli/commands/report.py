"""`freshrag report`: tables, analysis and figures from one or more run directories, optionally
broken down by a question field, at other traffic compositions, and as one HTML page, or instead
a page for people to label the answers on (docs/reports.md). Reading only the runs' files, it
makes no call. It parses its options and calls the report service (harness/workflows/report.py,
which `freshrag.report` is too)."""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from freshrag.cli.options import add_command, add_config
from freshrag.cli.values import mix_shares, out_dir, whole
from freshrag.core.fields import FIELDS

if TYPE_CHECKING:
    pass

NAME = "report"
HELP = "tables and figures from one or more run directories"
ANALYSIS = "analysis.json"  # retrieval quality, attribution, decisions, intervals, paired tests


DESCRIPTION = ("Reads the run directories' samples.jsonl, manifest.json and scores.jsonl and "
               "prints the summary table, the analysis (retrieval, decisions, costs, intervals, "
               "paired tests) and the scorers' results; writes summary.json, analysis.json and "
               "the figures, and with --html one page holding all of it. No model is called.")
EXAMPLES = ("freshrag report results/recent --html report.html",
            "freshrag report results/gpt-4o results/mini --by label --format csv",
            "freshrag report results/recent --html label.html --label --label-sample 150")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                        help="run directories, one or more")
    add_config(inputs, "whose [prices] table adds or overrides model prices for the cost "
               "analysis")
    _analysis_options(p.add_argument_group("analysis"))
    output = p.add_argument_group("output")
    output.add_argument("--format", choices=("markdown", "json", "csv"), default="markdown",
                        help="table format printed (default: %(default)s)")
    output.add_argument("--out", type=out_dir, help="where summary.json and the PNGs go "
                        "(default: the run directory, or results/report for several)")
    output.add_argument("--html", type=Path, metavar="PATH", help="also write the whole report "
                        "(tables, figures, every answer) as one self-contained HTML file")
    output.add_argument("--width", type=whole(40, 10_000), metavar="COLUMNS",
                        help="fit the printed markdown to this many columns, wide tables split "
                             "(default: the terminal's width when printing to one; piped or "
                             "redirected, every table whole)")
    _label_options(p.add_argument_group("labelling (docs/reports.md#labelling-answers)"))
    p.set_defaults(handler=handle)


def _label_options(p: argparse._ArgumentGroup) -> None:
    p.add_argument("--label", action="store_true", help="make --html a page for people to "
                   "grade the answers instead of the report: one at a time, blind to the system "
                   "and the judge, labels saved as a JSON Lines file; nothing else is written")
    p.add_argument("--label-seed", type=whole(0, 2**31 - 1), metavar="N", help="seed of the "
                   "answers' random order on the labelling page (default: 0); each label records "
                   "it")
    p.add_argument("--label-sample", type=whole(1, 10**9), metavar="K", help="the labelling "
                   "page holds the first K answers of that order (default: every answer)")


def _analysis_options(p: argparse._ArgumentGroup) -> None:
    from freshrag.reporting.scorers import CORRECT_AT

    p.add_argument("--by", action="append", choices=FIELDS, metavar="FIELD",
                   help="also break every table down by this question field (one of: "
                        f"{', '.join(FIELDS)}); may be given more than once")
    p.add_argument("--correct-at", type=whole(1, 5), default=CORRECT_AT, help="CRAG outcome: an "
                   "answer that did not abstain is correct when the judge's truthfulness is at "
                   "least this, else incorrect (default: %(default)s)")
    p.add_argument("--human", type=Path, nargs="+", metavar="LABELS",
                   help="people's labels files (the labelling page saves them; several "
                        "people's merge): the judge section adds the judge against the people "
                        "and per system the means the labels correct (docs/human-labels.md)")
    p.add_argument("--mix", type=mix_shares, action="append", metavar="F:C:G",
                   help="also estimate every system at this traffic composition (shares of "
                        "fresh, control and general questions), recombined from the runs' rows "
                        "without a call; repeatable")


def handle(args: argparse.Namespace) -> int:
    """The report; printed as markdown to a terminal (or with --width), fitted to its width as a
    whole (render/terminal.py `fit`), what was printed before an error too."""
    width = args.width or (shutil.get_terminal_size().columns if sys.stdout.isatty() else None)
    from freshrag.workflows.report import run_report

    if args.format != "markdown" or width is None:
        return run_report(args)
    from freshrag.reporting.render.terminal import fit

    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            return run_report(args)
    finally:
        sys.stdout.write(fit(printed.getvalue(), width))
