"""`freshrag run`: answer, judge and account every (question, system) pair of a dataset into a run
directory, resumably (docs/running.md); the runner is harness/run/runner.py."""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from freshrag.cli.options import (
    add_command,
    add_concurrency,
    add_cost_options,
    add_dataset_options,
    add_index_options,
    add_limit,
    add_models,
    add_no_cache,
    add_probe_options,
    add_scorers,
    add_seed,
    iso_date,
    out_dir,
    whole,
)
from freshrag.systems import SYSTEMS

if TYPE_CHECKING:
    from freshrag.core.config import LLMSettings
    from freshrag.core.dataset import Dataset
    from freshrag.cost.budget import Budget
    from freshrag.run.runner import RunConfig
    from freshrag.systems.external.plugins import SystemSource
    from freshrag.systems.retrieval.index import IndexConfig

HELP = "answer, judge and account every (question, system) pair"
PAPER_CUTOFF = "2021-09-30"  # GPT-4-0613's knowledge cutoff, the model of the paper's datasets


DESCRIPTION = ("Every system answers every question of the dataset; the judge grades each answer, "
               "and tokens, dollars and latency are counted per role. The rows go to "
               "RUN/samples.jsonl as they finish, so running the same command again resumes. "
               "Before the first call it prints, on stderr, which model each role calls.")
EXAMPLES = ("freshrag run --limit 3 --systems baseline,naive   # the example dataset, no key",
            "export FRESHRAG_API_KEY=sk-...",
            "freshrag run --dataset DIR --base-url https://api.openai.com/v1 --model gpt-4o-mini",
            "freshrag run --dataset DIR --model gpt-4o-mini --model-role judge=gpt-4o --dry-run")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "run", HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    add_dataset_options(inputs)
    add_systems(inputs)
    add_run_options(p)
    p.set_defaults(handler=handle)


def add_systems(p: argparse._ArgumentGroup) -> None:
    p.add_argument("--systems", default="baseline,oracle,naive,advanced",
                   help=f"comma-separated systems: built-in ({', '.join(SYSTEMS)}), your own as "
                        f"FILE.py:NAME or MODULE:NAME, a service as NAME=URL or a [systems.NAME] "
                        f"of freshrag.toml, answers made elsewhere as FILE.jsonl or FILE.csv, any "
                        f"prefixed with NAME= to name it; `freshrag systems` lists what is "
                        f"installed (default: %(default)s)")


def add_run_options(p: argparse.ArgumentParser, index: bool = True) -> None:
    """Every option of a run but the dataset and the systems (`freshrag import` shares them), in
    named groups; the retrieval index's only with `index` (a command whose systems never
    retrieve shows none)."""
    add_models(p)
    control = p.add_argument_group("run control")
    add_limit(control)
    add_concurrency(control, "pairs in flight at once; 1 runs serially")
    add_no_cache(control)
    add_seed(control)
    p.add_argument_group("output").add_argument(
        "--out", type=out_dir, help="run directory (default: results/DATASET_NAME); running "
        "again into it resumes")
    _answering_options(p.add_argument_group("answering"))
    judging = p.add_argument_group("judging and scoring")
    judging.add_argument("--no-probe", action="store_true", help="do not probe the judge before "
                         "grading (the report then says that nothing checked the judge)")
    add_scorers(judging, "judge", "; the judge grades every pair, the others score the answers "
                "into scores.jsonl after the pairs (default: %(default)s)")
    add_probe_options(judging)
    if index:
        add_index_options(p.add_argument_group("retrieval index"))
    add_cost_options(p.add_argument_group("cost"))


def _answering_options(p: argparse._ArgumentGroup) -> None:
    p.add_argument("--knowledge-cutoff", type=iso_date, default=PAPER_CUTOFF,
                   help="the answering model's knowledge cutoff, stated by dated-boolean "
                        "(default: %(default)s, GPT-4-0613's)")
    p.add_argument("--today", type=date_or_today, default="today", metavar="DATE",
                   help="today's date as dated-boolean states it, YYYY-MM-DD or today "
                        "(default: %(default)s)")
    p.add_argument("--context-tokens", type=whole(1, 10_000_000), default=8192,
                   help="the answering model's context window; retrieved text is cut to fit "
                        "(default: %(default)s)")


def date_or_today(text: str) -> str:
    """A date YYYY-MM-DD, or `today` for today's."""
    return date.today().isoformat() if text == "today" else iso_date(text)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import dataset

    data = dataset(args)
    out = args.out or Path("results") / data.path_name()
    answered = run_pairs(args, data, args.systems, out)
    if answered is None:  # a dry run, printed
        return 0
    rows, capped, systems = answered
    return _summarise(out, rows, capped, systems)


def run_pairs(args: argparse.Namespace, data: Dataset, systems: str, out: Path,
              written: tuple[str, ...] = ()
              ) -> tuple[list[dict], Exception | None, tuple[str, ...]] | None:
    """Every (question, system) pair of `systems` (as --systems names them) answered and judged
    into `out` with the run options of `args` (add_run_options), resuming what is there: the
    rows, the cap if --max-cost stopped it, and the systems' names; None for a dry run, whose
    estimate is printed.
    `written` names the files of `out` that the caller writes besides the run's own."""
    from freshrag.cli.common import (
        CACHE_FILE,
        check_batch,
        default_config,
        embed_for_needed,
        index_config,
        load_settings,
        print_roles,
        system_sources,
    )
    from freshrag.core.rundir import INDEX_SETTINGS, RUN_ROLES
    from freshrag.cost import dry_run
    from freshrag.llm.client import LLMClient
    from freshrag.reporting.prices import price_table
    from freshrag.run.runner import check_resume
    from freshrag.scoring.scorepass import scorer_names, scorer_roles
    from freshrag.systems.retrieval.embeddings import embedder_for

    scorers = scorer_names(args.scorers)
    sources = system_sources(systems, data, args.config)
    # Every built-in, so that a resume knows which of the systems run before stated a date (their
    # classes say `uses_date`), and the user's, built and checked.
    factories = {**SYSTEMS, **{source.name: source.build for source in sources
                               if source.origin != "built-in"}}
    _check_outputs(args, out, data, sources, written)
    config = _run_config(args, out, tuple(source.name for source in sources), scorers,
                         {source.name: source.record() for source in sources})
    settings = load_settings(args)
    roles = tuple(dict.fromkeys(RUN_ROLES + scorer_roles(scorers)))
    if args.batch and not args.dry_run:
        check_batch(args, settings, roles)
    prompts = _prompts()
    index = index_config(args, out.parent) if any(s.uses_index for s in sources) else None
    # Refused before a server starts or an index is built; `run` checks again, holding the lock.
    llm = LLMClient(settings, seed=args.seed)
    check_resume(data, config, llm, factories, prompts, index and {
        **{name: getattr(index, name) for name in INDEX_SETTINGS if hasattr(index, name)},
        "embedding_model": embedder_for(llm).name})  # names the model without loading it
    cache = None if args.no_cache else out.parent / CACHE_FILE
    print_roles(settings, roles, embeddings=bool(index) or embed_for_needed(scorers))
    if args.dry_run:
        print(dry_run.dry_run(data, config, settings, cache, args.seed, index,
                              price_table(args.config or default_config()), factories))
        return None
    budget = args.max_cost and dry_run.budget(  # refused before any call if a price is missing
        args.max_cost, args.batch, settings, price_table(args.config or default_config()), roles)
    rows, capped = _answer(data, config, settings, cache, args.seed, roles, budget, index,
                           prompts, factories)
    return rows, capped, config.systems


def _check_outputs(args: argparse.Namespace, out: Path, data: Dataset,
                   sources: list[SystemSource], also: tuple[str, ...] = ()) -> None:
    """No file the run writes is one it reads (core/outputs.py): the dataset's files, the
    config, a system's file or answers file (`freshrag import`'s ANSWERS)."""
    from freshrag.cli.common import CACHE_FILE, cache_output, default_config
    from freshrag.core.manifest import MANIFEST
    from freshrag.core.outputs import check_outputs, files_in
    from freshrag.core.rundir import LOCK
    from freshrag.core.samples import SAMPLES
    from freshrag.cost.batch import BATCHES
    from freshrag.reporting.report import SUMMARY, SUMMARY_MD
    from freshrag.run.runner import PROBES_FILE
    from freshrag.scoring.store import SCORES

    written = (SAMPLES, MANIFEST, SUMMARY, SUMMARY_MD, PROBES_FILE, BATCHES, SCORES, LOCK, *also)
    cache = None if args.no_cache else out.parent / CACHE_FILE
    check_outputs(files_in(out, written, "--out") + cache_output(cache),
                  [(f"the dataset's {kind} file", path) for kind, path in data.files.items()]
                  + [(f"the file of system {source.name}", Path(source.where))
                     for source in sources if source.origin in ("file", "answers file")]
                  + [("--config", args.config or default_config())])


def _run_config(args: argparse.Namespace, out: Path, systems: tuple[str, ...],
                scorers: tuple[str, ...], sources: dict[str, dict]) -> RunConfig:
    from freshrag.cost import batch
    from freshrag.run.runner import RunConfig
    from freshrag.scoring import probes

    return RunConfig(out=out, systems=systems, limit=args.limit, scorers=scorers,
                     concurrency=args.concurrency, use_cache=not args.no_cache,
                     today=args.today, knowledge_cutoff=args.knowledge_cutoff,
                     context_tokens=args.context_tokens,
                     probe=None if args.no_probe else probes.ProbeSettings(
                         args.probe_k, args.probe_seed, args.probe_threshold),
                     batch_poll=(args.batch_poll or batch.POLL_S) if args.batch else None,
                     system_sources=sources)


def _prompts() -> dict[str, str]:
    """The prompts a run records in its manifest: the systems' and the judge's."""
    import json

    from freshrag.scoring import judge
    from freshrag.systems.prompts import PROMPTS

    return {**PROMPTS, "judge": judge.JUDGE_PROMPT, "judge_tool": json.dumps(judge.GRADE_TOOL),
            "judge_general": judge.GENERAL_JUDGE_PROMPT}


def _answer(data: Dataset, config: RunConfig, settings: LLMSettings, cache: Path | None,
            seed: int | None, roles: tuple[str, ...], budget: Budget | None,
            index: IndexConfig | None, prompts: dict[str, str],
            factories: dict) -> tuple[list[dict], Exception | None]:
    """Every pair answered, or as many as --max-cost allowed: the rows, and the cap if it was hit."""
    import contextlib

    from freshrag.cli.common import embed_for, llm_client
    from freshrag.core.samples import SAMPLES, read_samples
    from freshrag.cost.budget import BudgetExceeded
    from freshrag.run.runner import run
    from freshrag.systems.retrieval.embeddings import embedder_for
    from freshrag.systems.retrieval.index import open_index

    with llm_client(settings, cache, seed, roles=roles) as llm, contextlib.ExitStack() as stack:
        llm.gate = budget or None
        retriever = None
        if index:
            retriever = open_index(data.articles, index, embedder_for(llm))
            stack.callback(retriever.close)
        embed = embed_for(llm, config.scorers, retriever)
        try:
            return run(data, config, llm, factories, prompts, retriever, embed, light=True), None
        except BudgetExceeded as err:
            return read_samples(config.out / SAMPLES, light=True), err


def _summarise(out: Path, rows: list[dict], capped: Exception | None,
               systems: tuple[str, ...]) -> int:
    """The run's tables (systems in the order --systems gave them) and notes; exit 3 when
    capped, 1 when a pair failed."""
    from freshrag.cli.common import print_unscored
    from freshrag.reporting import report
    from freshrag.reporting.freshness import known_without_retrieval
    from freshrag.reporting.judge_check import judge_checks

    summary = report.summarise(report.in_systems_order(rows, systems))
    known = known_without_retrieval(rows)  # how much of the set the answer model knows
    report.write_summary(out, summary, known=known)
    print(report.render(summary, "markdown", known=known))
    print_unscored(rows)
    print("\n" + "\n".join(judge_checks([out], rows)["lines"]))
    print(f"\nrun written to {out}/ (samples.jsonl, manifest.json, summary.json, and the whole "
          f"table in {report.SUMMARY_MD})")
    return exit_status(rows, capped, "finished pairs are kept")


def exit_status(rows: list[dict], capped: Exception | None, kept: str) -> int:
    """3 when --max-cost stopped the run (said, with `kept`: what the finished pairs give), 1
    when a pair failed, else 0."""
    if capped:
        print(f"\nCAPPED: {capped}; {kept}: run the same command without --max-cost (or with a "
              f"higher one) to finish")
        return 3
    return 1 if any(row["status"] == "failed" for row in rows) else 0
