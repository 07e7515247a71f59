"""The `freshrag` command: build, label, needs, mix, run, index, scan-retrieval, report,
score, agreement, import-legacy, demo, probe-judge and serve.

The only place that wires registries. Each subcommand is one function here, but those that make
question sets (build, label, needs, mix), which are in harness/cli/build.py; their options, with
their help texts, are in harness/cli/parser.py; the work is done by the runner, the report and
the plots.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import signal
import sys
import time
from pathlib import Path
from typing import Callable

from freshrag.cli.build import cmd_build, cmd_label, cmd_mix, cmd_needs
from freshrag.cli.common import CACHE_FILE, UsageError, default_config, llm_client
from freshrag.cli.demo import run_demo
from freshrag.cli.parser import INDEX_DIR, build_parser
from freshrag.core.config import LLMSettings, load_settings
from freshrag.core.dataset import (
    Dataset,
    example_dir,
    load_articles,
    load_dataset,
    load_dataset_dir,
)
from freshrag.core.errors import UserError
from freshrag.core.results import SAMPLES, read_samples
from freshrag.core.rundir import INDEX_SETTINGS, RUN_ROLES, locked
from freshrag.core.types import Article
from freshrag.cost import batch, dry_run, plan
from freshrag.cost.budget import BudgetExceeded
from freshrag.llm.client import LLMClient
from freshrag.llm.local_server import LocalServer, LocalServerError
from freshrag.reporting import agreement, analysis, breakdown, report
from freshrag.reporting import scorers as scorer_report
from freshrag.reporting.judge_check import judge_checks
from freshrag.reporting.prices import price_table
from freshrag.reporting.render import plots, traffic_plots
from freshrag.reporting.render.html import write_html
from freshrag.run.legacy import import_legacy
from freshrag.run.runner import RunConfig, check_resume, run
from freshrag.scoring import SCORERS, judge, probes, scorepass
from freshrag.scoring.scorepass import score_inputs, scorer_names, scorer_roles
from freshrag.systems import SYSTEMS, uses_index
from freshrag.systems.prompts import PROMPTS
from freshrag.systems.retrieval import scan
from freshrag.systems.retrieval.embeddings import embedder_for
from freshrag.systems.retrieval.index import IndexConfig, open_index

ANALYSIS = "analysis.json"  # retrieval quality, attribution, decisions, intervals, paired tests


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # so the local server is stopped on kill too
    try:
        _check_options(args)
        return args.handler(args)
    except UserError as err:  # what the user can fix (freshrag.core.errors): no traceback
        print(f"freshrag: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a read-only directory, a full disk: named, what was written is kept
        print(f"freshrag: error: {_describe_os_error(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("freshrag: interrupted; finished pairs are kept, run the same command to resume",
              file=sys.stderr)
        return 130


def cmd_run(args: argparse.Namespace) -> int:
    systems = tuple(name.strip() for name in args.systems.split(",") if name.strip())
    unknown = [name for name in systems if name not in SYSTEMS]
    if unknown or not systems:
        raise UsageError(f"unknown system(s) {unknown}; valid systems: {', '.join(SYSTEMS)}")
    scorers = scorer_names(args.scorers)
    dataset = _dataset(args)
    out = args.out or Path("results") / dataset.name
    config = RunConfig(out=out, systems=systems, limit=args.limit, scorers=scorers,
                       concurrency=args.concurrency, use_cache=not args.no_cache,
                       today=args.today, knowledge_cutoff=args.knowledge_cutoff,
                       context_tokens=args.context_tokens,
                       probe=None if args.no_probe else probes.ProbeSettings(
                           args.probe_k, args.probe_seed, args.probe_threshold),
                       batch_poll=(args.batch_poll or batch.POLL_S) if args.batch else None)
    settings = load_settings(args.config)
    roles = tuple(dict.fromkeys(RUN_ROLES + scorer_roles(scorers)))
    if args.batch and not args.dry_run:
        _check_batch(args, settings, roles)
    prompts = {**PROMPTS, "judge": judge.JUDGE_PROMPT, "judge_tool": json.dumps(judge.GRADE_TOOL),
               "judge_general": judge.GENERAL_JUDGE_PROMPT}
    index = _index_config(args, out.parent) if any(uses_index(name) for name in systems) else None
    # Refused before a server starts or an index is built; `run` checks again, holding the lock.
    check_resume(dataset, config, LLMClient(settings, seed=args.seed), SYSTEMS, prompts,
                 index and {name: getattr(index, name) for name in INDEX_SETTINGS})
    cache = None if args.no_cache else out.parent / CACHE_FILE
    if args.dry_run:
        print(dry_run.dry_run(dataset, config, settings, cache, args.seed, index,
                            price_table(args.config or default_config()), SYSTEMS))
        return 0
    budget = args.max_cost and dry_run.budget(  # refused before any call if a price is missing
        args.max_cost, args.batch, settings, price_table(args.config or default_config()), roles)
    with llm_client(settings, cache, args.seed, roles=roles) as llm, \
            contextlib.ExitStack() as stack:
        llm.gate = budget or None
        retriever = None
        if index:
            retriever = open_index(dataset.articles, index, embedder_for(llm))
            stack.callback(retriever.close)
        embed = _embed_for(llm, scorers, retriever)
        try:
            rows = run(dataset, config, llm, SYSTEMS, prompts, retriever, embed)
        except BudgetExceeded as err:
            rows, capped = read_samples(out / SAMPLES), err
        else:
            capped = None
    summary = report.summarise(rows)
    report.write_summary(out, summary)
    print(report.render(summary, "markdown"))
    _print_unscored(rows)
    print("\n" + "\n".join(judge_checks([out], rows)["lines"]))
    print(f"\nrun written to {out}/ (samples.jsonl, manifest.json, summary.json)")
    if capped:
        print(f"\nCAPPED: {capped}; finished pairs are kept: run the same command without "
              f"--max-cost (or with a higher one) to finish")
        return 3
    return 1 if any(row["status"] == "failed" for row in rows) else 0


def _check_batch(args: argparse.Namespace, settings: LLMSettings,
                 roles: tuple[str, ...]) -> None:
    """--batch keeps its results in the response cache, on an endpoint with the Batch API."""
    if args.no_cache:
        raise UsageError("--batch hands its results to the run through the response cache: "
                         "drop --no-cache")
    local = [role for role in roles if settings.role(role).is_local]
    if local:
        raise UsageError(f"--batch needs an endpoint with the Batch API (/v1/files, /v1/batches), "
                         f"such as OpenAI's; the {', '.join(local)} role(s) use the embedded "
                         f"server, which has none")


def cmd_index(args: argparse.Namespace) -> int:
    articles = load_articles(args.articles)
    started = time.monotonic()
    index = open_index(articles, _index_config(args, Path("results")),
                       embedder_for(LLMClient(load_settings(args.config))))
    try:
        print(json.dumps({**index.record(), "articles": len(articles),
                          "seconds": round(time.monotonic() - started, 1)}, indent=2))
    finally:
        index.close()
    return 0


def cmd_scan_retrieval(args: argparse.Namespace) -> int:
    dataset = _dataset(args)
    index = open_index(dataset.articles, IndexConfig(
        directory=args.index_dir or Path("results") / INDEX_DIR, qdrant_url=args.qdrant_url,
        chunk_size=args.chunk_size, chunk_overlap=args.chunk_overlap, top_k=args.k),
        embedder_for(LLMClient(load_settings(args.config))))
    try:
        result = scan.scan(index, dataset.questions[:args.limit], args.weights,
                                     args.k, args.by)
    finally:
        index.close()
    out = args.out or Path("results") / f"scan-retrieval-{dataset.name}"
    out.mkdir(parents=True, exist_ok=True)
    document = json.dumps({"dataset": dataset.name, **result}, indent=2) + "\n"
    (out / scan.SCAN_FILE).write_text(document, encoding="utf-8")
    print(scan.render(result))
    print(f"\n{result['questions']:,} questions, {result['index']['chunks']:,} chunks, "
          f"{result['seconds']} s; {out / scan.SCAN_FILE} written")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    prices = price_table(args.config or default_config())  # refused before anything is written
    rows = report.load_runs(args.run_dirs)
    summary = report.summarise(rows)
    out = args.out or (args.run_dirs[0] if len(args.run_dirs) == 1 else Path("results") / "report")
    details = analysis.analyse(rows, prices, correct_at=args.correct_at, mixes=args.mix)
    details["judge"] = judge_checks(args.run_dirs, rows)
    breakdowns = {field: breakdown.breakdown(rows, field, prices) for field in args.by or ()}
    by_field = breakdown.summary_tables(breakdowns)
    report.write_summary(out, summary, by_field)
    if breakdowns:
        details["breakdowns"] = breakdowns
    (out / ANALYSIS).write_text(json.dumps(details, indent=2) + "\n", encoding="utf-8")
    figures = plots.write_figures(rows, out, details["cost"]) + traffic_plots.write(details, out)
    figures += scorer_report.write_histograms(rows, out)
    for field in breakdowns:
        figures += plots.histograms_by_field(rows, field, out)
    notes = report.run_notes(args.run_dirs, rows)
    # the judge's verdict first, then the notes; on stderr when stdout carries JSON or CSV
    for line in details["judge"]["lines"] + notes:
        print(line, file=sys.stdout if args.format == "markdown" else sys.stderr)
    print(report.render(summary, args.format, judge=details["judge"], breakdowns=by_field))
    if args.format == "markdown":
        _print_unscored(rows)
        print("\n" + report.render_analysis(details))
        if scored := scorer_report.render(details):
            print("\n" + scored)
        for document in breakdowns.values():
            print("\n" + breakdown.render(document))
        print(f"\nsummary.json, {ANALYSIS} and {len(figures)} figures written to {out}/")
    elif args.format == "csv" and breakdowns:
        print(f"the tables by {', '.join(breakdowns)} are in {out / report.SUMMARY} and "
              f"{out / ANALYSIS} (CSV holds the summary)", file=sys.stderr)
    if args.html:
        page = write_html(rows, summary, details, figures, args.html,
                          sources=[str(run_dir) for run_dir in args.run_dirs], notes=notes,
                          breakdowns=breakdowns)
        # stderr when stdout carries JSON or CSV, so that output stays parseable
        print(f"HTML report written to {page}",
              file=sys.stdout if args.format == "markdown" else sys.stderr)
    return 0


def cmd_score(args: argparse.Namespace) -> int:
    names = scorer_names(args.scorers)
    rows, articles = score_inputs(args.run_dir, _score_articles(args))
    problem = scorepass.missing_inputs(rows, names, articles)
    if problem:
        raise UsageError(f"{args.run_dir}: {problem}")
    settings = load_settings(args.config)
    cache = None if args.no_cache else args.run_dir.parent / CACHE_FILE
    prices = price_table(args.config or default_config()) if args.dry_run or args.max_cost else {}
    if args.dry_run:
        print(dry_run.dry_run_score(args.run_dir, rows, names, articles, args.repeats, settings,
                                  cache, args.seed, prices, args.batch, args.concurrency))
        return 0
    if args.batch:
        _check_batch(args, settings, scorer_roles(names))
    budget = args.max_cost and dry_run.budget(args.max_cost, args.batch, settings, prices,
                                            scorer_roles(names))
    capped = None
    with locked(args.run_dir), contextlib.ExitStack() as stack:
        llm = embed = None
        todo = scorepass.pending(args.run_dir, rows, names, args.repeats)
        if todo:  # else no server starts
            llm = stack.enter_context(llm_client(settings, cache, args.seed,
                                                 roles=scorer_roles(names)))
            llm.gate, embed = budget or None, _embed_for(llm, names)
        scorers = scorepass.make_scorers(names, embed)
        try:
            if todo and args.batch:  # chat calls only: answer-relevance's embeddings stay live
                scorepass.check_same_models(args.run_dir, scorers, llm)  # before any upload
                batch.prefill(llm, args.run_dir, plan.score_jobs(todo, names, articles),
                              args.batch_poll or batch.POLL_S, args.concurrency)
            counts = scorepass.score_rows(args.run_dir, rows, scorers, llm, articles,
                                          args.repeats, args.concurrency)
        except BudgetExceeded as err:
            capped = err
    if capped:
        print(f"CAPPED: {capped}; finished scores are kept in scores.jsonl: run the same "
              f"command without --max-cost (or with a higher one) to finish")
        return 3
    print(scorer_report.render_pass(counts, args.run_dir))
    if args.repeats > 1 and "judge" in names:
        print("\n" + scorer_report.render_spread(args.run_dir))
    return 0


def _score_articles(args: argparse.Namespace) -> dict[str, Article] | None:
    """The gold articles named on the command line, or None (the run's own, if it has them)."""
    if args.dataset or args.questions:
        return _dataset(args).articles
    return load_articles(args.articles) if args.articles else None


def _embed_for(llm: LLMClient, scorers: tuple[str, ...],
               retriever: object | None = None) -> Callable[[list[str]], list[list[float]]] | None:
    """The embeddings role's function, if a scorer needs it (the retrieval index's own model)."""
    if not any("embeddings" in SCORERS[name].needs for name in scorers):
        return None
    return (getattr(retriever, "embedder", None) or embedder_for(llm)).embed


def cmd_agreement(args: argparse.Namespace) -> int:
    document = agreement.compare_runs(args.run_a, args.run_b, args.top,
                                      repeats=(args.repeat_a, args.repeat_b))
    path = agreement.write_agreement(args.out or agreement.default_out(args.run_a, args.run_b),
                                     document)
    markdown = args.format == "markdown"
    print(agreement.render(document) if markdown else json.dumps(document, indent=2))
    # stderr when stdout carries JSON, so that output stays parseable
    print(f"\n{path} written", file=sys.stdout if markdown else sys.stderr)
    return 0


def cmd_import_legacy(args: argparse.Namespace) -> int:
    n = import_legacy(args.pickle, args.dataset, args.system, args.out, args.model)
    print(f"{n} rows of {args.pickle} imported into {args.out}/ as {args.dataset}/{args.system}; "
          f"see them with: freshrag report {args.out}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    return run_demo(args.out, args.questions, list(SYSTEMS), main)


def cmd_probe_judge(args: argparse.Namespace) -> int:
    dataset = _dataset(args)
    settings = load_settings(args.config)
    cache = None if args.no_cache else Path("results") / CACHE_FILE
    with llm_client(settings, cache, args.seed, roles=("judge",)) as llm:
        probe = probes.probe_judge(llm, dataset.questions, dataset.articles, k=args.probe_k,
                                   seed=args.probe_seed, threshold=args.probe_threshold,
                                   concurrency=args.concurrency)
    for name, field in probe["fields"].items():
        print(f"{name}: {report.format_value(field['discrimination'])} "
              f"{report.format_value(field['interval'])} over {field['pairs']} probe pairs "
              f"({field.get('compared', '')})")
    print(f"cost: {probe['calls']} judge calls ({probe['cache_hits']} from the cache), "
          f"{probe['usage']['input']:,} input and {probe['usage']['output']:,} output tokens, "
          f"{probe['seconds']} s")
    print("\n".join(probes.verdict_lines(probe)))
    return 0 if probe["informative"] else 1


def cmd_serve(args: argparse.Namespace) -> int:
    with LocalServer(port=args.port) as server:
        print(f"serving SmolLM2-135M-Instruct at {server.base_url} (Ctrl-C stops it)\n"
              f"point freshrag at it with: export FRESHRAG_BASE_URL={server.base_url}", flush=True)
        server.process.wait()
    raise LocalServerError(server.death())  # Ctrl-C ends serve by KeyboardInterrupt, not here


def _index_config(args: argparse.Namespace, results_dir: Path) -> IndexConfig:
    return IndexConfig(directory=args.index_dir or results_dir / INDEX_DIR,
                       qdrant_url=args.qdrant_url, chunk_size=args.chunk_size,
                       chunk_overlap=args.chunk_overlap, top_k=args.top_k,
                       text_weight=args.text_weight)


def _dataset(args: argparse.Namespace) -> Dataset:
    if args.dataset and (args.questions or args.articles):
        raise UsageError("give either --dataset or --questions/--articles, not both")
    if args.questions or args.articles:
        if not (args.questions and args.articles):
            raise UsageError("--questions and --articles go together")
        return load_dataset(args.questions, args.articles)
    return load_dataset_dir(args.dataset or example_dir())


def _check_options(args: argparse.Namespace) -> None:
    """Rules between options, which argparse checks one at a time."""
    size, overlap = getattr(args, "chunk_size", None), getattr(args, "chunk_overlap", None)
    if size is not None and overlap is not None and overlap >= size:
        raise UsageError(f"--chunk-overlap must be less than --chunk-size ({size:,}), "
                         f"got {overlap:,}")


def _describe_os_error(err: OSError) -> str:
    where = f"{err.filename}: " if err.filename else ""
    message = f"{where}{err.strerror or err}"
    if err.errno == errno.ENOSPC:
        message += ("; what was written before is kept: free some space and run the same command "
                    "again, which resumes")
    elif err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        message += "; choose a directory you can write to"
    return message


def _print_unscored(rows: list[dict]) -> None:
    reasons = report.unscored_reasons(rows)
    if reasons:
        print("\nunscored answers (system: reason × count):")
        for (system, reason), count in reasons.most_common():
            print(f"  {system}: {reason[:300]} × {count}")


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


COMMANDS = {"build": cmd_build, "label": cmd_label, "needs": cmd_needs, "run": cmd_run, "index": cmd_index, "report": cmd_report,
            "score": cmd_score, "agreement": cmd_agreement, "import-legacy": cmd_import_legacy, "demo": cmd_demo,
            "probe-judge": cmd_probe_judge, "serve": cmd_serve,
            "scan-retrieval": cmd_scan_retrieval, "mix": cmd_mix}


def parser() -> argparse.ArgumentParser:
    return build_parser(COMMANDS, __doc__.splitlines()[0])
