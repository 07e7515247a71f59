"""`freshrag run`: answer, judge and account every (question, system) pair of a dataset into a run
directory, resumably (docs/running.md). It parses its options, calls the run service
(harness/run/service.py, which `freshrag.evaluate` is too) and prints the tables."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from freshrag.cli.options import (
    add_command,
    add_concurrency,
    add_cost_options,
    add_dataset_options,
    add_executor_options,
    add_index_options,
    add_limit,
    add_models,
    add_no_cache,
    add_probe_options,
    add_run_option,
    add_scorers,
    add_seed,
)
from freshrag.cli.values import out_dir, url
from freshrag.core.runfiles import MANIFEST, RESULTS, SAMPLES, SUMMARY, SUMMARY_MD
from freshrag.executors.choice import DEFAULT_EXECUTOR
from freshrag.run.options import (
    DEFAULT_SYSTEMS,
    EXECUTOR_HELP,
    OTLP_HELP,
    RUN_OPTIONS,
    SHARD_HELP,
)

if TYPE_CHECKING:
    from freshrag.core.dataset import Dataset
    from freshrag.core.summary import AnswerSummary
    from freshrag.run.inputs import RunOptions
    from freshrag.run.service import RunResult
    from freshrag.run.shard import Shard

NAME = "run"
HELP = "answer, judge and account every (question, system) pair"


DESCRIPTION = ("Every system answers every question of the dataset; the judge grades each answer, "
               "and tokens, dollars and latency are counted per role. The rows go to "
               "RUN/samples.jsonl as they finish, so running the same command again resumes. "
               "Before the first call it prints, on stderr, which model each role calls.")
EXAMPLES = ("freshrag run --limit 3 --systems baseline,naive   # the example dataset, no key",
            "export FRESHRAG_API_KEY=sk-...",
            "freshrag run --dataset datasets/recent --base-url https://api.openai.com/v1 "
            "--model gpt-4o-mini",
            "freshrag run --dataset datasets/recent --base-url https://api.openai.com/v1 "
            "--model gpt-4o-mini --model-role judge=gpt-4o --dry-run",
            "freshrag run --limit 6 --systems baseline,oracle --shard 2/3 --out results/shard-2   "
            "# task 2 of 3; `freshrag merge` joins")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    add_dataset_options(inputs)
    add_systems(inputs)
    add_run_options(p)
    add_executor_options(p.add_argument_group("executor"), EXECUTOR_HELP)
    p.add_argument_group("sharding (docs/running.md#on-a-slurm-array-or-kubernetes-jobs)"
                         ).add_argument("--shard", type=shard_arg, metavar="I/N", help=SHARD_HELP)
    p.set_defaults(handler=handle)


def shard_arg(text: str) -> Shard:
    """--shard i/N, refused as a usage error that names the option."""
    from freshrag.run.shard import ShardError, parse_shard

    try:
        return parse_shard(text)
    except ShardError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def add_systems(p: argparse._ArgumentGroup) -> None:
    from freshrag.systems import SYSTEMS

    p.add_argument("--systems", default=DEFAULT_SYSTEMS,
                   help=f"comma-separated systems: built-in ({', '.join(SYSTEMS)}), your own as "
                        f"FILE.py:NAME or MODULE:NAME, a service as NAME=URL or a [systems.NAME] "
                        f"of freshrag.toml, answers made elsewhere as FILE.jsonl or FILE.csv, an "
                        f"agent's traces as FILE.json (OTLP/JSON or Phoenix's spans), any "
                        f"prefixed with NAME= to name it; `freshrag systems` lists what is "
                        f"installed (default: %(default)s)")


def add_run_options(p: argparse.ArgumentParser, index: bool = True) -> None:
    """Every option of a run but the dataset and the systems (`freshrag import` shares them), in
    named groups; the retrieval index's only with `index` (a command whose systems never
    retrieve shows none). The run's own options are run/options.py's table."""
    add_models(p)
    control = p.add_argument_group("run control")
    add_limit(control)
    add_concurrency(control, "pairs in flight at once; 1 runs serially")
    add_no_cache(control)
    add_seed(control)
    add_run_option(control, RUN_OPTIONS["epochs"])
    output = p.add_argument_group("output")
    output.add_argument("--out", type=out_dir, help="run directory (default: "
                        "results/DATASET_NAME); running again into it resumes")
    output.add_argument("--otlp-endpoint", type=url, metavar="URL", help=OTLP_HELP)
    answering = p.add_argument_group("answering")
    for name in ANSWERING:
        add_run_option(answering, RUN_OPTIONS[name])
    judging = p.add_argument_group("judging and scoring")
    judging.add_argument("--no-probe", action="store_true", help="do not probe the judge before "
                         "grading (the report then says that nothing checked the judge)")
    add_scorers(judging, "judge", "; the judge grades every pair, the others score the answers "
                "into scores.jsonl after the pairs (default: %(default)s)")
    add_probe_options(judging)
    if index:
        add_index_options(p.add_argument_group("retrieval index"))
    add_cost_options(p.add_argument_group("cost"))


ANSWERING = ("knowledge_cutoff", "today", "context_tokens", "max_steps", "token_budget")


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import dataset

    data = dataset(args)
    out = args.out or RESULTS / data.path_name()
    answered = run_pairs(args, data, args.systems, out)
    if answered is None:  # a dry run, printed
        return 0
    return _summarise(out, answered.answers, answered.capped, answered.systems)


def run_pairs(args: argparse.Namespace, data: Dataset, systems: str, out: Path,
              written: tuple[str, ...] = ()) -> RunResult | None:
    """Every (question, system) pair of `systems` (as --systems names them) answered and judged
    into `out` with the run options of `args` (add_run_options) by the run service
    (harness/run/service.py), resuming what is there; None for a dry run, whose estimate is
    printed. `written` names the files of `out` that the caller writes besides the run's own."""
    from freshrag.cli.common import print_roles
    from freshrag.core.config import CommandLine
    from freshrag.run.service import prepare
    from freshrag.workflows.evaluate import evaluated

    models = CommandLine(args.model, args.base_url, tuple(args.model_role or ()))
    prepared = prepare(data, systems, models, out, run_options(args, out), written=written,
                       dry_run=args.dry_run)
    print_roles(prepared.settings, prepared.roles, embeddings=prepared.embeddings)
    if args.dry_run:
        print(prepared.estimate())
        return None
    return evaluated(prepared)


def run_options(args: argparse.Namespace, out: Path) -> RunOptions:
    """The typed options of a run from those of the command line (add_run_options)."""
    from freshrag.cli.common import index_config
    from freshrag.run.inputs import RunOptions
    from freshrag.scoring import probes

    # each of run/options.py's by its name, the flag's stand-in for None (--token-budget 0) as None
    declared: dict[str, Any] = {name: None if getattr(args, name) == option.unset
                                else getattr(args, name) for name, option in RUN_OPTIONS.items()}
    return RunOptions(
        scorers=tuple(args.scorers.split(",")), concurrency=args.concurrency, seed=args.seed,
        cache=not args.no_cache, **declared,
        probe=None if args.no_probe else probes.ProbeSettings(
            args.probe_k, args.probe_seed, args.probe_threshold, args.probe_context),
        index=index_config(args, out.parent) if hasattr(args, "top_k") else None,
        max_cost=args.max_cost, batch=args.batch, batch_poll=args.batch_poll, config=args.config,
        shard=getattr(args, "shard", None),  # `freshrag import` and `cutoff` take none
        executor=getattr(args, "executor", DEFAULT_EXECUTOR), address=getattr(args, "address", None),
        corpus=getattr(args, "corpus", None), otlp_endpoint=getattr(args, "otlp_endpoint", None))


def _summarise(out: Path, rows: list[AnswerSummary], capped: Exception | None,
               systems: tuple[str, ...]) -> int:
    """The run's summary written (as `freshrag.evaluate` writes it) and its tables and notes
    printed; exit 3 when capped, 1 when a pair failed."""
    from freshrag.core.manifest import read_manifest
    from freshrag.reporting.judge_check import judge_checks
    from freshrag.reporting.run_summary import write_run_summary
    from freshrag.systems.external.reply import unread_lines
    from freshrag.workflows.report import print_unscored

    summary = write_run_summary(out, rows, systems)
    print(summary.table)
    print_unscored(rows)
    if unread := unread_lines(rows):  # what a service replied that no path of it read
        print("\n" + "\n".join(unread))
    if summary.spread:
        print("\n" + summary.spread)
    print("\n" + "\n".join(judge_checks({str(out): read_manifest(out) or {}}, rows)["lines"]))
    print(f"\nrun written to {out}/ ({SAMPLES}, {MANIFEST}, {SUMMARY}, and the whole table in "
          f"{SUMMARY_MD})")
    return exit_status(rows, capped, "finished pairs are kept")


def exit_status(rows: list[AnswerSummary], capped: Exception | None, kept: str) -> int:
    """3 when --max-cost stopped the run (said, with `kept`: what the finished pairs give), 1
    when a pair failed, else 0."""
    if capped:
        print(f"\nCAPPED: {capped}; {kept}: run the same command without --max-cost (or with a "
              f"higher one) to finish")
        return 3
    return 1 if any(row.status == "failed" for row in rows) else 0
