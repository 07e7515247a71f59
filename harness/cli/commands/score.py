"""`freshrag score`: add scorers to a finished (or imported) run without answering again, into its
scores.jsonl, resumably (docs/scoring.md). It parses its options and calls the score service
(harness/workflows/score.py, which `freshrag.score` is too)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from freshrag.cli.options import (
    add_command,
    add_concurrency,
    add_cost_options,
    add_dataset_options,
    add_models,
    add_no_cache,
    add_scorers,
    add_seed,
)
from freshrag.cli.values import whole

if TYPE_CHECKING:
    from freshrag.core.dataset import Dataset

NAME = "score"
HELP = "add scorers to a finished or imported run, resumably"


DESCRIPTION = ("The scorers grade the answers already in RUN_DIR/samples.jsonl (the judge again, "
               "faithfulness, answer and context relevance, claims, abstention) into "
               "RUN_DIR/scores.jsonl; `freshrag report` shows them. Running it again resumes. "
               "Scorers that read the gold article take it from the run, or from --dataset when "
               "the run did not record it.")
EXAMPLES = ("freshrag score results/recent --scorers faithfulness,abstention",
            "freshrag score results/recent --scorers judge --repeats 3 --base-url "
            "https://api.openai.com/v1 --model-role judge=gpt-4o --model-role scorer=gpt-4o")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="the run directory to score")
    add_dataset_options(inputs, " with the gold articles of the run's questions (default: the "
                        "run's own, when it recorded them)")
    scoring = p.add_argument_group("scoring")
    add_scorers(scoring)
    scoring.add_argument("--repeats", type=whole(1, 100), default=1, help="ask each scorer this "
                         "many times per answer, each repeat with its own seeds and cache entries "
                         "(the judge's spread; default: %(default)s)")
    add_models(p)
    control = p.add_argument_group("run control")
    add_concurrency(control, "scores asked at once; 1 runs serially")
    add_seed(control, "sent with every request; repeat k of the judge sends seed + 2k")
    add_no_cache(control)
    add_cost_options(p.add_argument_group("cost"))
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import print_roles
    from freshrag.core.config import CommandLine
    from freshrag.reporting import scorers as scorer_report
    from freshrag.reporting.epochs import first_epoch_note
    from freshrag.workflows.score import prepare_score

    prepared = prepare_score(
        args.run_dir, args.scorers, dataset=_score_dataset(args), articles=None if (
            args.dataset or args.questions) else args.articles, repeats=args.repeats,
        roles=CommandLine(args.model, args.base_url, tuple(args.model_role or ())),
        concurrency=args.concurrency, seed=args.seed, cache=not args.no_cache,
        max_cost=args.max_cost, batch=args.batch, batch_poll=args.batch_poll, config=args.config)
    if note := first_epoch_note([args.run_dir], "the scorers score the answers of"):
        print(note)
    if args.dry_run:
        print(prepared.estimate())
        return 0
    if prepared.todo:  # else no server starts
        print_roles(prepared.settings, prepared.roles, embeddings=prepared.embeddings)
    result = prepared.score()
    if result.counts is None:
        print(f"CAPPED: {result.capped}; finished scores are kept in scores.jsonl: run the same "
              f"command without --max-cost (or with a higher one) to finish")
        return 3
    print(scorer_report.render_pass(result.counts, args.run_dir))
    if args.repeats > 1 and "judge" in result.scorers:
        print("\n" + scorer_report.render_spread(args.run_dir))
    return 0


def _score_dataset(args: argparse.Namespace) -> Dataset | None:
    """The dataset named on the command line for its gold articles, or None (--articles, or the
    run's own)."""
    from freshrag.cli.common import dataset

    return dataset(args) if args.dataset or args.questions else None
