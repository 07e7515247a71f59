"""`freshrag score`: add scorers to a finished (or imported) run without answering again, into its
scores.jsonl, resumably (docs/scoring.md); the pass itself is harness/scoring/scorepass.py."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from freshrag.cli.options import (
    UsageError,
    add_command,
    add_concurrency,
    add_cost_options,
    add_dataset_options,
    add_models,
    add_no_cache,
    add_scorers,
    add_seed,
    whole,
)

if TYPE_CHECKING:
    from freshrag.core.config import LLMSettings
    from freshrag.core.records import SampleRow
    from freshrag.core.types import LLM, Article
    from freshrag.cost.budget import Budget
    from freshrag.llm.client import LLMClient

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
    from freshrag.cli.common import CACHE_FILE, check_batch, default_config, load_settings
    from freshrag.reporting import scorers as scorer_report
    from freshrag.reporting.epochs import first_epoch_note
    from freshrag.reporting.prices import price_table
    from freshrag.run import dry_run
    from freshrag.scoring import scorepass

    names = scorepass.scorer_names(args.scorers)
    rows, articles = scorepass.score_inputs(args.run_dir, _score_articles(args))
    problem = scorepass.missing_inputs(rows, names, articles)
    if problem:
        raise UsageError(f"{args.run_dir}: {problem}")
    if note := first_epoch_note([args.run_dir], "the scorers score the answers of"):
        print(note)
    settings = load_settings(args)
    cache = None if args.no_cache else args.run_dir.parent / CACHE_FILE
    prices = price_table(args.config or default_config()) if args.dry_run or args.max_cost else {}
    if args.dry_run:
        print(dry_run.dry_run_score(args.run_dir, rows, names, articles, args.repeats, settings,
                                    cache, args.seed, prices, args.batch, args.concurrency))
        return 0
    if args.batch:
        check_batch(args, settings, scorepass.scorer_roles(names))
    budget = args.max_cost and dry_run.budget(args.max_cost, args.batch, settings, prices,
                                              scorepass.scorer_roles(names))
    counts, capped = _score(args, rows, names, articles, settings, cache, budget)
    if counts is None:
        print(f"CAPPED: {capped}; finished scores are kept in scores.jsonl: run the same "
              f"command without --max-cost (or with a higher one) to finish")
        return 3
    print(scorer_report.render_pass(counts, args.run_dir))
    if args.repeats > 1 and "judge" in names:
        print("\n" + scorer_report.render_spread(args.run_dir))
    return 0


def _score(args: argparse.Namespace, rows: list[SampleRow], names: tuple[str, ...],
           articles: dict[str, Article], settings: LLMSettings, cache: Path | None,
           budget: Budget | None) -> tuple[dict[str, Any] | None, Exception | None]:
    """The pass over the run, holding its directory: the counts, or the cap if it was hit."""
    import contextlib

    from freshrag.cli.common import embed_for, embed_for_needed, llm_client, print_roles
    from freshrag.core.rundir import locked
    from freshrag.cost import batch, plan
    from freshrag.cost.budget import BudgetExceeded
    from freshrag.scoring import scorepass

    with locked(args.run_dir), contextlib.ExitStack() as stack:
        llm: LLMClient | None = None
        embed = None
        todo = scorepass.pending(args.run_dir, rows, names, args.repeats)
        if todo:  # else no server starts
            roles = scorepass.scorer_roles(names)
            print_roles(settings, roles, embeddings=embed_for_needed(names))
            llm = stack.enter_context(llm_client(settings, cache, args.seed, roles=roles))
            llm.gate, embed = budget or None, embed_for(llm, names)
        scorers = scorepass.make_scorers(names, embed)
        try:
            if llm is not None and args.batch:  # chat calls only: embeddings stay live
                scorepass.check_same_models(args.run_dir, scorers, llm)  # before any upload
                batch.prefill(llm, args.run_dir, plan.score_jobs(todo, names, articles),
                              args.batch_poll or batch.POLL_S, args.concurrency)
            # without a model only when nothing is pending: the pass then makes no call
            return scorepass.score_rows(args.run_dir, rows, scorers, cast("LLM", llm), articles,
                                        args.repeats, args.concurrency), None
        except BudgetExceeded as err:
            return None, err


def _score_articles(args: argparse.Namespace) -> dict[str, Article] | None:
    """The gold articles named on the command line, or None (the run's own, if it has them)."""
    from freshrag.cli.common import dataset
    from freshrag.core.dataset import load_articles

    if args.dataset or args.questions:
        return dataset(args).articles
    return load_articles(args.articles) if args.articles else None
