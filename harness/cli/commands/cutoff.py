"""`freshrag cutoff`: a model's effective knowledge cutoff (docs/cutoff.md). It is a run of the
systems `baseline` (closed book) and `oracle` (open book) into a run directory of their own,
with everything a run has (cache, resume, dry run, cap, batch: harness/cli/commands/run.py),
followed by the analysis by creation month (harness/reporting/cutoff.py), by month of change
for changed facts (harness/reporting/cutoff_changes.py), and their figures
(harness/reporting/render/cutoff_plot.py)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from freshrag.cli.commands import run
from freshrag.cli.options import add_command, add_dataset_options
from freshrag.cli.values import iso_date

if TYPE_CHECKING:
    from freshrag.core.summary import AnswerSummary

NAME = "cutoff"
HELP = "where a model's knowledge really ends, by creation month"


DESCRIPTION = ("The answer model answers every question twice, without retrieval (baseline, "
               "closed book) and with the gold article (oracle, open book), and the judge "
               "grades both, as `freshrag run --systems baseline,oracle` would. Then, per "
               "month in which the questions' articles were created: the closed-book mean "
               "truthfulness and the share answered well, and the open-book mean as the "
               "ceiling, with 95% intervals; and the month where closed-book quality falls "
               "(a step fit with a bootstrap interval), beside the stated cutoff. It writes "
               "RUN/cutoff.json, cutoff.md and cutoff.png; running it again resumes. On "
               "changed facts (a set built with --style changed) the same, by the month each "
               "value now was set: the share of closed-book answers giving the value now "
               "rather than the value then (cutoff-changes.png).")
# --base-url: a model named without an endpoint would be asked of the embedded server
EXAMPLES = ("freshrag cutoff --dataset datasets/monthly --base-url https://api.openai.com/v1 "
            "--model gpt-4o-mini --stated-cutoff 2023-10-31",
            "freshrag cutoff --dataset datasets/monthly --base-url https://api.openai.com/v1 "
            "--model gpt-4o-mini --dry-run",
            "freshrag cutoff --dataset datasets/monthly --model-role judge=gpt-4o "
            "--out results/mini-cutoff --max-cost 5")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    add_dataset_options(inputs)
    inputs.add_argument("--stated-cutoff", type=iso_date, metavar="DATE",
                        help="the cutoff the model's maker states, YYYY-MM-DD, shown beside the "
                             "estimate (default: --knowledge-cutoff's date)")
    inputs.add_argument("--signal", choices=("articles", "changes", "both"),
                        help="what dates the questions: the month each article was created "
                             "(articles), the month each changed fact's value now was set "
                             "(changes: a set built with --style changed, scored by the "
                             "staleness scorer, which is added to --scorers), or both side by "
                             "side (default: every signal the set has questions for)")
    run.add_run_options(p, index=False)  # baseline and oracle retrieve nothing
    # the run's own --out, whose default here is a directory beside the dataset's run
    out = next(action for action in p._actions if action.dest == "out")
    out.help = ("run directory of baseline and oracle alone (default: "
                "results/DATASET_NAME-cutoff); running again into it resumes")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import dataset
    from freshrag.reporting import cutoff, cutoff_changes

    data = dataset(args)
    # before any call: without months there is nothing to estimate
    chosen = cutoff_changes.signals(data, args.signal)
    if cutoff.CHANGES in chosen and cutoff_changes.SCORER not in args.scorers.split(","):
        args.scorers += f",{cutoff_changes.SCORER}"  # the change signal reads its verdicts
    out = args.out or Path("results") / f"{data.path_name()}-cutoff"
    _check_systems(out)
    answered = run.run_pairs(args, data, ",".join(cutoff.SYSTEMS), out,
                             written=(cutoff.CUTOFF_JSON, cutoff.CUTOFF_MD, cutoff.CUTOFF_PNG,
                                      cutoff_changes.PNG))
    if answered is None:  # a dry run, printed
        return 0
    rows, capped = answered.answers, answered.capped
    stated = ((args.stated_cutoff, "--stated-cutoff") if args.stated_cutoff else
              (args.knowledge_cutoff, "--knowledge-cutoff"))
    document = cutoff_changes.with_changes(cutoff.analyse(data, rows, *stated), chosen, data,
                                           _with_scores(out, rows))
    return _write(out, document, rows, capped)


def _with_scores(out: Path, answers: list[AnswerSummary]) -> list[AnswerSummary]:
    """The answers with their `scores` from scores.jsonl, as reports read them."""
    from freshrag.scoring.store import answer_scores, scores_of

    found = answer_scores(out)
    for answer in answers:
        answer.scores = scores_of(found, answer.dataset, answer.question_id, answer.system,
                                  answer.answer)
    return answers


def _check_systems(out: Path) -> None:
    """A run directory holding other systems is refused: its rows are not this estimate's."""
    from freshrag.core.manifest import read_manifest
    from freshrag.reporting.cutoff import SYSTEMS, CutoffError

    manifest = read_manifest(out) or {}
    others = [name for name in manifest.get("systems", []) if name not in SYSTEMS]
    if others:
        raise CutoffError(f"{out}: holds a run of other systems ({', '.join(others)}); the "
                          f"cutoff runs baseline and oracle alone: give another --out")


def _write(out: Path, document: dict, rows: list[AnswerSummary],
           capped: Exception | None) -> int:
    """cutoff.json, cutoff.md and cutoff.png written, the table and notes printed; exit 3 when
    capped, 1 when a pair failed."""
    from freshrag.core.files import write_json, write_text
    from freshrag.core.manifest import read_manifest
    from freshrag.reporting import cutoff, cutoff_changes
    from freshrag.reporting.judge_check import judge_checks
    from freshrag.reporting.render.cutoff_plot import write_cutoff_plot
    from freshrag.workflows.report import print_unscored

    table = cutoff_changes.render(document)
    write_json(out / cutoff.CUTOFF_JSON, document)
    write_text(out / cutoff.CUTOFF_MD, table)
    figures = {cutoff.ARTICLES: cutoff.CUTOFF_PNG, cutoff.CHANGES: cutoff_changes.PNG}
    for signal in document["signals"]:
        write_cutoff_plot(document if signal == cutoff.ARTICLES else document[signal],
                          out / figures[signal])
    print(table)
    print_unscored(rows)
    print("\n".join(judge_checks({str(out): read_manifest(out) or {}}, rows)["lines"]))
    named = ", ".join([cutoff.CUTOFF_JSON, cutoff.CUTOFF_MD,
                       *(figures[signal] for signal in document["signals"])])
    print(f"\ncutoff written to {out}/ ({named}); `freshrag report {out}` reports the run "
          f"itself")
    return run.exit_status(rows, capped, "the estimate covers the finished pairs only")
