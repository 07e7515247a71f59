"""`freshrag report`: tables, analysis and figures from one or more run directories, optionally
broken down by a question field, at other traffic compositions, and as one HTML page, or instead
a page for people to label the answers on (docs/reports.md). Reading only the runs' files, it
makes no call."""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from freshrag.cli.options import UsageError, add_command, add_config, mix_shares, out_dir, whole
from freshrag.core.fields import FIELDS

if TYPE_CHECKING:
    from freshrag.core.records import SampleRow

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
    if args.format != "markdown" or width is None:
        return _report(args)
    from freshrag.reporting.render.terminal import fit

    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            return _report(args)
    finally:
        sys.stdout.write(fit(printed.getvalue(), width))


def _report(args: argparse.Namespace) -> int:
    from freshrag.cli.common import default_config
    from freshrag.core.files import write_json
    from freshrag.reporting import analysis, breakdown, epochs, report
    from freshrag.reporting.freshness import known_without_retrieval
    from freshrag.reporting.human import judge_section
    from freshrag.reporting.judge_check import judge_checks
    from freshrag.reporting.labels import read_labels
    from freshrag.reporting.prices import price_table

    if args.label or args.label_seed is not None or args.label_sample is not None:
        return _label_page(args)
    out = args.out or (args.run_dirs[0] if len(args.run_dirs) == 1 else Path("results") / "report")
    _check_outputs(args, out)
    prices = price_table(args.config or default_config())  # refused before anything is written
    labelled = read_labels(args.human) if args.human else None  # so are bad labels
    # the viewer shows whole calls; every table reads the first epoch, the epochs section all
    every = report.load_runs(args.run_dirs, light=not args.html, every_epoch=True)
    rows = epochs.first_epoch(every)
    if args.mix and not any(row.get("kind") for row in rows):
        raise UsageError(f"--mix: no question of {', '.join(map(str, args.run_dirs))} has a "
                         f"traffic kind (fresh, control, general) to recombine; a set of them "
                         f"comes from the traffic stage and freshrag mix (docs/traffic.md)")
    summary = report.summarise(rows, prices, args.correct_at)  # dollars per correct answer
    known = known_without_retrieval(rows)  # how much of the set the answer model knows
    details = analysis.analyse(rows, prices, correct_at=args.correct_at, mixes=args.mix)
    details["judge"] = judge_checks(args.run_dirs, rows)
    if spread := epochs.epoch_table(every):
        details[epochs.KEY] = spread
    if labelled is not None:  # the judge against people, and the means they correct
        details["judge"] = judge_section(details["judge"], labelled, rows)
    breakdowns = {field: breakdown.breakdown(rows, field, prices) for field in args.by or ()}
    # A statistic that is no finite number (a mean of imported scores near 1e308 overflows) is
    # null in every table and file, and a note names it: JSON cannot hold it.
    checked = [report.made_finite(what, document) for what, document in
               (("summary", summary), ("analysis", details), ("breakdowns", breakdowns))]
    (summary, _), (details, _), (breakdowns, _) = checked
    unfinite = [note for _, notes in checked for note in notes]
    by_field = breakdown.summary_tables(breakdowns)
    report.write_summary(out, summary, by_field, known)
    if breakdowns:
        details["breakdowns"] = breakdowns
    write_json(out / ANALYSIS, {**details, "notes": (details.get("notes") or []) + unfinite},
               ensure_ascii=True)
    figures = _figures(rows, out, details, breakdowns)
    notes = report.run_notes(args.run_dirs, rows) + unfinite
    # the judge's verdict first, then the notes; on stderr when stdout carries JSON or CSV
    side = sys.stdout if args.format == "markdown" else sys.stderr
    for line in details["judge"]["lines"] + notes:
        print(line, file=side)
    sys.stdout.writelines(report.rendered(  # part by part: every answer's steps in JSON
        summary, args.format, judge=details["judge"], breakdowns=by_field, known=known,
        answers=report.trajectories(rows) if args.format == "json" else None))
    print()
    if args.format == "markdown":
        _print_analysis(rows, details, breakdowns)
        print(f"\nsummary.json, {ANALYSIS} and {len(figures)} figures written to {out}/")
    elif args.format == "csv" and breakdowns:
        print(f"the tables by {', '.join(breakdowns)} are in {out / report.SUMMARY} and "
              f"{out / ANALYSIS} (CSV holds the summary)", file=sys.stderr)
    if args.html:
        from freshrag.reporting.render.html import write_html

        page = write_html(rows, summary, details, figures, args.html,
                          sources=[str(run_dir) for run_dir in args.run_dirs], notes=notes,
                          breakdowns=breakdowns, known=known)
        print(f"HTML report written to {page}", file=side)  # stderr keeps JSON or CSV parseable
    return 0


def _label_page(args: argparse.Namespace) -> int:
    """--label: the labelling page alone, and one line saying where; no table is printed (the
    person who labels may be the one who runs this)."""
    from freshrag.reporting import report
    from freshrag.reporting.render.labelling import write_label_page

    if not args.label:
        raise UsageError("--label-seed and --label-sample only apply with --label (the "
                         "labelling page)")
    if not args.html:
        raise UsageError("--label: give --html PATH, the file the labelling page is written to")
    if args.human:
        raise UsageError("--label makes a page blind to the judge, --human a report of the judge "
                         "against people's labels: give one of them")
    _check_outputs(args, None)
    rows = report.load_runs(args.run_dirs)  # whole calls: the gold article the judge read
    count = write_label_page(rows, args.html, 0 if args.label_seed is None else args.label_seed,
                             args.label_sample)
    print(f"labelling page of {count:,} answers written to {args.html}")
    return 0


def _check_outputs(args: argparse.Namespace, out: Path | None) -> None:
    """No file the report writes is one it reads (core/outputs.py): --html is no run's file;
    `out` None: the labelling page is the only file written."""
    from freshrag.cli.common import default_config
    from freshrag.core.manifest import MANIFEST
    from freshrag.core.outputs import Output, check_outputs, files_in
    from freshrag.core.samples import SAMPLES
    from freshrag.reporting import report
    from freshrag.scoring.store import SCORES

    read = (SAMPLES, MANIFEST, SCORES)
    html = [Output(args.html, "--html", "give another --html")] if args.html else []
    written = [] if out is None else files_in(out, (report.SUMMARY, report.SUMMARY_MD, ANALYSIS),
                                              "--out")
    check_outputs(written + html,
                  [(f"RUN_DIR {run_dir}'s {name}", run_dir / name)
                   for run_dir in args.run_dirs for name in read]
                  + [("--human", path) for path in args.human or ()]
                  + [("--config", args.config or default_config())])


def _figures(rows: list[SampleRow], out: Path, details: dict, breakdowns: dict) -> list[Path]:
    from freshrag.reporting import scorers as scorer_report
    from freshrag.reporting.render import plots, traffic_plots

    figures = plots.write_figures(rows, out, details["cost"]) + traffic_plots.write(details, out)
    figures += scorer_report.write_histograms(rows, out)
    for field in breakdowns:
        figures += plots.histograms_by_field(rows, field, out)
    return figures


def _print_analysis(rows: list[SampleRow], details: dict, breakdowns: dict) -> None:
    from freshrag.cli.common import print_unscored
    from freshrag.reporting import breakdown, epochs, sections
    from freshrag.reporting import scorers as scorer_report
    from freshrag.reporting.empty import needs_lines
    from freshrag.reporting.table import tables

    print_unscored(rows)
    print("\n" + sections.render_analysis(details))
    if labelled := details["judge"].get("human"):
        from freshrag.reporting.human import render

        print("\n" + render(labelled))
    if scored := scorer_report.render(details):
        print("\n" + scored)
    if spread := epochs.render(details):
        print("\n" + spread)
    shown = tables() + tables("scorers")
    if empty := sections.nothing_to_show(details, shown):
        print("\n" + empty + "\n" + needs_lines(details, shown))
    for document in breakdowns.values():
        print("\n" + breakdown.render(document))
