"""The report workflow as a library service (docs/api.md, docs/reports.md): tables, analysis and
figures from one or more run directories, optionally broken down by a question field, at other
traffic compositions, and as one HTML page, or instead a page for people to label the answers
on. `freshrag report` parses its options and calls `run_report`, which prints what the command
prints; `freshrag.report` takes the same options by name and returns what was printed. Reading
only the runs' files, it makes no call."""

from __future__ import annotations

import contextlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Sequence

from freshrag.core.config import DEFAULT_CONFIG_FILE
from freshrag.core.wording import counted
from freshrag.reporting import loading, summary_table
from freshrag.reporting.summary_table import unscored_reasons
from freshrag.run.inputs import InputError
from freshrag.workflows.arguments import check_arguments

if TYPE_CHECKING:
    from freshrag.core.summary import AnswerSummary

ANALYSIS = "analysis.json"  # retrieval quality, attribution, decisions, intervals, paired tests


@dataclass(frozen=True)
class ReportResult:
    """What a report gives back; its files are in `out` (and at `html`)."""

    printed: str  # what `freshrag report` prints on stdout
    out: Path | None  # where summary.json, analysis.json and the figures went; None: --label
    html: Path | None


def report(run_dirs: str | Path | Sequence[str | Path], *, out: str | Path | None = None,
           format: str = "markdown", by: Sequence[str] | None = None,
           correct_at: int | None = None, human: Sequence[str | Path] | None = None,
           mix: Sequence[tuple[float, float, float]] | None = None,
           html: str | Path | None = None, label: bool = False, label_seed: int | None = None,
           label_sample: int | None = None, config: str | Path | None = None) -> ReportResult:
    """The report of `run_dirs`, as `freshrag report` makes it with the options of the same
    names: its files written, what it prints returned. `correct_at` None: the CRAG default;
    `mix`: (fresh, control, general) shares. An argument that cannot be used is refused, naming
    it, before anything is read."""
    from freshrag.reporting.scorers import CORRECT_AT

    check_arguments({"run_dirs": run_dirs, "out": out, "format": format, "by": by,
                     "correct_at": correct_at, "human": human, "mix": mix, "html": html,
                     "label": label, "label_seed": label_seed, "label_sample": label_sample,
                     "config": config})

    given: Sequence[Any] = run_dirs if isinstance(run_dirs, (list, tuple)) else [run_dirs]
    dirs = [Path(d) for d in given]
    labels: Sequence[Any] = human if isinstance(human, (list, tuple)) else \
        [human] if human is not None else []
    args = SimpleNamespace(
        run_dirs=dirs, out=Path(out) if out is not None else None, format=format,
        by=list(by) if by else None, correct_at=correct_at or CORRECT_AT,
        human=[Path(h) for h in labels] if labels else None,
        mix=[dict(zip(("fresh", "control", "general"), shares)) for shares in mix] if mix
        else None,
        html=Path(html) if html is not None else None, label=label, label_seed=label_seed,
        label_sample=label_sample, config=Path(config) if config is not None else None)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        run_report(args)
    written = None if label else (args.out or _default_out(dirs))
    return ReportResult(printed.getvalue(), written, args.html)


def _default_out(run_dirs: list[Path]) -> Path:
    """The report's directory: the run's own, or results/report for several."""
    return run_dirs[0] if len(run_dirs) == 1 else Path("results") / "report"


def _default_config() -> Path | None:
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None


def print_unscored(rows: list[AnswerSummary]) -> None:
    """The pairs that failed, by system and error, and the answers the judge could not score, by
    system and reason, as the run and the report print them."""
    unscored, failed = unscored_reasons(rows)
    for heading, reasons in (("failed pairs (system: error × count; error_detail in "
                              "samples.jsonl holds a system's traceback)", failed),
                             ("unscored answers (system: reason × count)", unscored)):
        if reasons:
            print(f"\n{heading}:")
            for (system, reason), count in reasons.most_common():
                print(f"  {system}: {reason[:300]} × {count}")


@dataclass
class Computed:
    """What a report computes of its rows, before anything is written or printed: the summary,
    what the answer model knows, the analysis (with the judge's checks) and the breakdowns
    (with their summary tables), every statistic made finite, and the notes naming those that
    were not."""

    summary: list[dict[str, Any]]
    known: list[dict[str, Any]]
    details: dict[str, Any]
    breakdowns: dict[str, Any]
    by_field: dict[str, list[dict[str, Any]]]
    unfinite: list[str]


def run_report(args: Any) -> int:
    """`freshrag report` with its parsed options: the tables computed, written, printed."""
    from freshrag.reporting import epochs
    from freshrag.reporting.labels import read_labels
    from freshrag.reporting.prices import price_table

    if args.label or args.label_seed is not None or args.label_sample is not None:
        return _label_page(args)
    out = args.out or _default_out(args.run_dirs)
    _check_outputs(args, out)
    prices = price_table(args.config or _default_config())  # refused before anything is written
    labelled = read_labels(args.human) if args.human else None  # so are bad labels
    runs = loading.read_runs(args.run_dirs)  # each manifest read once, for all that asks it
    # every table reads the answers' summaries: the first epoch's, the epochs section all
    every = loading.summaries_of(runs, every_epoch=True)
    rows = epochs.first_epoch(every)
    if args.mix and not any(row.kind for row in rows):
        raise InputError(f"--mix: no question of {', '.join(map(str, args.run_dirs))} has a "
                         f"traffic kind (fresh, control, general) to recombine; a set of them "
                         f"comes from the traffic stage and freshrag mix (docs/traffic.md)")
    made = _tables(args, runs, every, rows, prices, labelled)
    _write(out, made)
    figures = _figures(rows, out, made.details, made.breakdowns)
    notes = loading.run_notes(runs, rows) + made.unfinite
    # the judge's verdict first, then the notes; on stderr when stdout carries JSON or CSV
    side = sys.stdout if args.format == "markdown" else sys.stderr
    for line in made.details["judge"]["lines"] + notes:
        print(line, file=side)
    _print(args, rows, made, out, len(figures))
    if args.html:
        from freshrag.reporting.render.html import write_html

        # the viewer shows whole rows (their calls): the samples read again, whole, for the
        # page alone, with the manifests read at load
        page = write_html(loading.rows_of(runs), made.summary, made.details, figures, args.html,
                          sources=[str(run_dir) for run_dir in args.run_dirs], notes=notes,
                          breakdowns=made.breakdowns, known=made.known)
        print(f"HTML report written to {page}", file=side)  # stderr keeps JSON or CSV parseable
    return 0


def _tables(args: Any, runs: list[loading.Run], every: list[AnswerSummary],
            rows: list[AnswerSummary], prices: Any, labelled: Any) -> Computed:
    """Every table of the report of `runs`: `every` epoch's rows for the epochs section, the
    first epoch's (`rows`) for the rest; `labelled`, people's labels (--human) or None."""
    from freshrag.reporting import analysis, breakdown, epochs, report
    from freshrag.reporting.freshness import known_without_retrieval
    from freshrag.reporting.human import judge_section
    from freshrag.reporting.judge_check import judge_checks

    summary = summary_table.summarise(rows, prices, args.correct_at)  # dollars per correct answer
    known = known_without_retrieval(rows)  # how much of the set the answer model knows
    details = analysis.analyse(rows, prices, correct_at=args.correct_at, mixes=args.mix)
    details["judge"] = judge_checks({run.name: run.manifest for run in runs}, rows)
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
    return Computed(summary, known, details, breakdowns, breakdown.summary_tables(breakdowns),
                  [note for _, notes in checked for note in notes])


def _write(out: Path, made: Computed) -> None:
    """summary.json, summary.md and analysis.json (its notes with those on what is not
    finite), in `out`."""
    from freshrag.core.files import write_json
    from freshrag.reporting import report

    report.write_summary(out, made.summary, made.by_field, made.known)
    if made.breakdowns:
        made.details["breakdowns"] = made.breakdowns
    write_json(out / ANALYSIS, {**made.details,
                                "notes": (made.details.get("notes") or []) + made.unfinite},
               ensure_ascii=True)


def _print(args: Any, rows: list[AnswerSummary], made: Computed, out: Path, figures: int) -> None:
    """What the report prints on stdout after the judge's lines and the notes: the summary in
    --format, then in markdown the analysis, and where the files went."""
    from freshrag.reporting import report

    sys.stdout.writelines(report.rendered(  # part by part: every answer's steps in JSON
        made.summary, args.format, judge=made.details["judge"], breakdowns=made.by_field,
        known=made.known, answers=report.trajectories(rows) if args.format == "json" else None))
    print()
    if args.format == "markdown":
        _print_analysis(rows, made.details, made.breakdowns)
        print(f"\nsummary.json, {ANALYSIS} and {figures} figures written to {out}/")
    elif args.format == "csv" and made.breakdowns:
        print(f"the tables by {', '.join(made.breakdowns)} are in {out / report.SUMMARY} and "
              f"{out / ANALYSIS} (CSV holds the summary)", file=sys.stderr)


def _label_page(args: Any) -> int:
    """--label: the labelling page alone, and one line saying where; no table is printed (the
    person who labels may be the one who runs this)."""
    from freshrag.reporting.render.labelling import write_label_page

    if not args.label:
        raise InputError("--label-seed and --label-sample only apply with --label (the "
                         "labelling page)")
    if not args.html:
        raise InputError("--label: give --html PATH, the file the labelling page is written to")
    if args.human:
        raise InputError("--label makes a page blind to the judge, --human a report of the judge "
                         "against people's labels: give one of them")
    _check_outputs(args, None)
    rows = loading.load_runs(args.run_dirs)  # whole calls: the gold article the judge read
    count = write_label_page(rows, args.html, 0 if args.label_seed is None else args.label_seed,
                             args.label_sample)
    print(f"labelling page of {counted(count, 'answer')} written to {args.html}")
    return 0


def _check_outputs(args: Any, out: Path | None) -> None:
    """No file the report writes is one it reads (core/outputs.py): --html is no run's file;
    `out` None: the labelling page is the only file written."""
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
                  + [("--config", args.config or _default_config())])


def _figures(rows: list[AnswerSummary], out: Path, details: dict, breakdowns: dict) -> list[Path]:
    from freshrag.reporting import scorers as scorer_report
    from freshrag.reporting.render import plots, traffic_plots

    figures = plots.write_figures(rows, out, details["cost"]) + traffic_plots.write(details, out)
    figures += scorer_report.write_histograms(rows, out)
    for field in breakdowns:
        figures += plots.histograms_by_field(rows, field, out)
    return figures


def _print_analysis(rows: list[AnswerSummary], details: dict, breakdowns: dict) -> None:
    from freshrag.reporting import breakdown, epochs, sections, staleness
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
    if stale := staleness.render(details):
        print("\n" + stale)
    shown = tables() + tables("scorers")
    if empty := sections.nothing_to_show(details, shown):
        print("\n" + empty + "\n" + needs_lines(details, shown))
    for document in breakdowns.values():
        print("\n" + breakdown.render(document))
