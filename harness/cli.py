"""The `freshrag` command: build, label, needs, mix, run, index, scan-retrieval, report,
score, agreement, import-legacy, demo, probe-judge and serve.

The only place that wires registries. Each subcommand is one function here; its options, with
their help texts, are in harness/cli_parser.py; the work is done by the runner, the report and
the plots.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import signal
import sqlite3
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

from builders.cutoffs import CutoffError, resolve_cutoff
from builders.dump import SUFFIXES as DUMP_SUFFIXES, DumpError, DumpSource
from builders.split_dump import SplitDumpSource, expand
from builders.facts import FACTS
from builders.templates import TemplateError, load_templates
from builders import needlog
from builders.needs import NeedsError, read_needs
from builders.label_report import label_report, render, write_report
from builders.labels import (LABELS_FILE, check_no_foreign_labels, label_dataset,
                             read_hand_labels)
from builders.mix import MixError, write_mix
from builders.mediawiki import DEFAULT_USER_AGENT, WIKIPEDIA_API, MediaWikiSource, SourceError
from builders.statements import parse_label_spec
from builders.stages import (STAGES, BuildConfig, BuildError, check_settings,
                             classify_recency, extract_facts, filter_created, generate_questions,
                             sample_articles, titles_path, update_manifest)
from harness.reporting import analysis, breakdown, plots, report, traffic_plots
from harness.scoring import SCORERS, agreement, judge, probes, scorepass
from harness.scoring.scorepass import score_inputs, scorer_names, scorer_roles
from harness.reporting import scorers as scorer_report
from builders.traffic import add_traffic
from harness.cli_parser import INDEX_DIR, build_parser
from harness.cache import ResponseCache
from harness.config import (DEFAULT_CONFIG_FILE, ConfigError, LLMSettings, config_table,
                            load_settings)
from harness.dataset import (Dataset, DatasetError, example_dir, load_articles, load_dataset,
                             load_dataset_dir)
from harness.demo import run_demo
from harness.reporting.html_report import write_html
from harness.reporting.judge_check import judge_checks
from harness.legacy import LegacyError, import_legacy
from harness.reporting.prices import price_table
from harness import batch, costs
from harness.budget import BudgetExceeded
from harness.llm import EndpointError, LLMClient
from harness.local_server import LocalServer, LocalServerError
from harness.results import SAMPLES, ResultsError, read_jsonl, read_manifest, read_samples
from harness.rundir import INDEX_SETTINGS, RUN_ROLES, locked
from harness.types import LABELS, Article
from harness.runner import RunConfig, check_resume, run
from systems import SYSTEMS, uses_index
from systems.embeddings import embedder_for
from systems.index import IndexConfig, RetrievalError, open_index
from systems import retrieval_scan
from systems.prompts import PROMPTS

CACHE_FILE = ".llm-cache.sqlite"
ANALYSIS = "analysis.json"  # retrieval quality, attribution, decisions, intervals, paired tests


class UsageError(Exception):
    """Options that do not fit together or name nothing known."""


USER_ERRORS = (UsageError, ConfigError, DatasetError, ResultsError, EndpointError, LocalServerError,
               RetrievalError, CutoffError, SourceError, DumpError, BuildError, LegacyError,
               NeedsError, MixError, TemplateError)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # so the local server is stopped on kill too
    try:
        _check_options(args)
        return args.handler(args)
    except USER_ERRORS as err:
        print(f"freshrag: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # a read-only directory, a full disk: named, what was written is kept
        print(f"freshrag: error: {_describe_os_error(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("freshrag: interrupted; finished pairs are kept, run the same command to resume",
              file=sys.stderr)
        return 130


def cmd_build(args: argparse.Namespace) -> int:
    config_file = args.config or _default_config()
    cutoff, cutoff_source = resolve_cutoff(args.cutoff, args.model, config_file)
    if args.dump and args.wiki_api:
        raise UsageError("give either --dump or --wiki-api, not both")
    if args.per_need and not args.needs:
        raise UsageError("--per-need caps the questions of --needs; give --needs too")
    if args.needs and (args.style != "creative" or args.questions_per_article != 1):
        raise UsageError("--needs asks one question per need and chunk with its own prompt; "
                         "it takes no --style or --questions-per-article")
    if args.stub_dump and not args.dump:
        raise UsageError("--stub-dump gives creation dates to the pages of a --dump: give both")
    config = BuildConfig(out=args.out, cutoff=cutoff, n=args.n,
                         questions_per_article=args.questions_per_article, style=args.style,
                         questions_from=args.questions_from, concurrency=args.concurrency,
                         seed=args.seed, labels=_label_spec(args), min_critique=args.min_critique,
                         needs=read_needs(args.needs) if args.needs else (),
                         per_need=args.per_need, control=args.control,
                         general=args.general, control_margin_days=args.control_margin,
                         templates=args.templates, criteria=args.criteria, groups=args.groups)
    check_settings(config)
    if args.templates:
        load_templates(args.templates)  # a bad file is refused before any source or model
    if args.dry_run:
        _check_build_estimable(args)
        print(costs.dry_run_build(config, load_settings(args.config), None if args.no_cache else
                                  args.out.parent / CACHE_FILE, args.seed,
                                  price_table(config_file)))
        return 0
    labelling = args.label or args.style == "statements"
    if args.stage == "labels" and not labelling:
        raise UsageError("--stage labels needs --label (or --style statements)")
    stages = STAGES[STAGES.index(args.stage):STAGES.index(args.stage) + 1] if args.stage else \
        tuple(stage for stage in STAGES if stage != "labels" or labelling)
    sampled = titles_path(args.out, "A_r").exists()
    if "A_r" in stages and not sampled and args.n is None and not args.dump:
        raise UsageError("--n is required when sampling a wiki (how many articles A_r should hold)")
    settings = load_settings(args.config)
    cache = None if args.no_cache else args.out.parent / CACHE_FILE
    llm = sampler = None
    with contextlib.ExitStack() as stack:
        for stage in stages:
            source = None
            if (stage in ("A_f", "questions", "labels") or stage == "traffic" and config.control) \
                    and llm is None:
                llm = stack.enter_context(_llm_client(
                    settings, cache, args.seed,
                    roles=("builder", "labeller") if labelling else ("builder",)))
            if stage == "A_r":
                source = sampler = None if sampled else _page_source(args, config_file)
                done = f"{len(sample_articles(source, config))} articles"
            elif stage == "facts":
                source = None if (args.out / FACTS).exists() else (
                    sampler or _sampled_source(args, config_file))
                done = ", ".join(f"{value} {key}" for key, value in
                                 extract_facts(source, config).items())
            elif stage == "A_d":
                done = f"{len(filter_created(config))} articles"
            elif stage == "A_f":
                done = f"{len(classify_recency(llm, config))} articles"
            elif stage == "labels":  # a critique threshold may have dropped every question
                done = _label_and_report(llm, args.out, args.concurrency, None) \
                    if read_jsonl(args.out / "questions.jsonl") else "no questions to label"
            elif stage == "questions":
                done = f"{generate_questions(llm, config)} questions"
            else:
                done = add_traffic(llm, config) or "no control or general questions asked for"
            update_manifest(config, source and source.description, cutoff_source, llm, stage)
            print(f"{stage}: {done}", flush=True)
    manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
    print(json.dumps(manifest["funnel"], indent=2))
    print(f"dataset written to {args.out}/ (articles.jsonl, questions.jsonl, manifest.json); "
          f"run it with: freshrag run --dataset {args.out}")
    return 0


def _check_build_estimable(args: argparse.Namespace) -> None:
    """A build dry run counts the recency classifier and the creative and recent question
    prompts (builders/estimate.py); it refuses what it would leave out rather than under-count."""
    extra = [name for name, given in (
        (f"--style {args.style}", args.style not in ("creative", "recent")),
        ("--needs", bool(args.needs)), ("--label", args.label),
        ("--control", bool(args.control))) if given]
    if extra:
        raise UsageError(f"--dry-run estimates the recency classifier and the creative and recent "
                         f"question styles only; it cannot count the calls of {', '.join(extra)} "
                         f"yet: leave them out to estimate the rest")


def _label_spec(args: argparse.Namespace):
    """The statements style's labels (equal shares unless --labels); refused with another style."""
    if args.style != "statements":
        if args.labels or args.min_critique:
            raise UsageError("--labels and --min-critique go with --style statements")
        return None
    return args.labels or parse_label_spec(",".join(f"{label}=0.25" for label in LABELS))


def cmd_label(args: argparse.Namespace) -> int:
    dataset = load_dataset_dir(args.dataset)  # every input checked before a server starts
    hand = read_hand_labels(args.hand_labels, {q.id for q in dataset.questions}) \
        if args.hand_labels else None
    check_no_foreign_labels(dataset.files["questions"], args.dataset / LABELS_FILE)
    cache = None if args.no_cache else args.dataset.parent / CACHE_FILE
    with _llm_client(load_settings(args.config), cache, args.seed, roles=("labeller",)) as llm:
        print(f"labels: {_label_and_report(llm, args.dataset, args.concurrency, hand)}")
    return 0


def _label_and_report(llm: LLMClient, directory: Path, concurrency: int,
                      hand: dict[str, str] | None) -> str:
    """Label the dataset, print the composition (and agreements), write the report files."""
    rows = label_dataset(llm, directory, concurrency)
    details = label_report(rows, hand)
    paths = write_report(directory, details)
    print(render(details), flush=True)
    return f"{len(rows)} questions labelled ({', '.join(path.name for path in paths)} written)"


def _page_source(args: argparse.Namespace, config_file: Path | None
                 ) -> DumpSource | SplitDumpSource | MediaWikiSource:
    if args.dump:
        paths = expand(args.dump)
        if len(paths) == 1 and not args.stub_dump:
            return DumpSource(paths[0])
        return SplitDumpSource(paths, args.out, expand(args.stub_dump or []), args.dump_processes)
    user_agent = (args.user_agent
                  or config_table(config_file, "build").get("user_agent", DEFAULT_USER_AGENT))
    return MediaWikiSource(args.wiki_api or WIKIPEDIA_API, user_agent=user_agent,
                           concurrency=args.concurrency, max_lag=args.max_lag)


def _sampled_source(args: argparse.Namespace, config_file: Path | None
                    ) -> DumpSource | SplitDumpSource | MediaWikiSource:
    """The source A_r was sampled from, for the facts stage of a resumed build: the one the
    manifest names, which --dump or --wiki-api, if given, must be."""
    recorded = (read_manifest(args.out) or {}).get("source")
    given = _page_source(args, config_file) if args.dump or args.wiki_api else None
    if recorded and given and given.description != recorded:
        raise UsageError(f"{args.out}: its articles were sampled from {recorded}, not "
                         f"{given.description}; the facts stage reads the same source (give it, "
                         f"or neither option)")
    if recorded and not given:
        if not recorded.endswith(DUMP_SUFFIXES):
            return _page_source(argparse.Namespace(**{**vars(args), "wiki_api": recorded}),
                                config_file)
        if " (creation dates from " in recorded or ", " in recorded:
            raise UsageError(f"{args.out}: its articles were sampled from the split dump "
                             f"{recorded}; give the same --dump (and --stub-dump) for the facts "
                             f"stage")
        return DumpSource(Path(recorded))
    return given or _page_source(args, config_file)


def _default_config() -> Path | None:
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None


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
    if args.batch and not args.dry_run:
        _check_batch(args, settings)
    prompts = {**PROMPTS, "judge": judge.JUDGE_PROMPT, "judge_tool": json.dumps(judge.GRADE_TOOL),
               "judge_general": judge.GENERAL_JUDGE_PROMPT}
    index = _index_config(args, out.parent) if any(uses_index(name) for name in systems) else None
    # Refused before a server starts or an index is built; `run` checks again, holding the lock.
    check_resume(dataset, config, LLMClient(settings, seed=args.seed), SYSTEMS, prompts,
                 index and {name: getattr(index, name) for name in INDEX_SETTINGS})
    cache = None if args.no_cache else out.parent / CACHE_FILE
    if args.dry_run:
        print(costs.dry_run(dataset, config, settings, cache, args.seed, index,
                            price_table(args.config or _default_config()), SYSTEMS))
        return 0
    budget = args.max_cost and costs.budget(  # refused before any call if a price is missing
        args.max_cost, args.batch, settings, price_table(args.config or _default_config()))
    with _llm_client(settings, cache, args.seed, roles=RUN_ROLES + scorer_roles(scorers)) as llm, \
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


def _check_batch(args: argparse.Namespace, settings: LLMSettings) -> None:
    """--batch keeps its results in the response cache, on an endpoint with the Batch API."""
    if args.no_cache:
        raise UsageError("--batch hands its results to the run through the response cache: "
                         "drop --no-cache")
    local = [role for role in RUN_ROLES if settings.role(role).is_local]
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
        result = retrieval_scan.scan(index, dataset.questions[:args.limit], args.weights,
                                     args.k, args.by)
    finally:
        index.close()
    out = args.out or Path("results") / f"scan-retrieval-{dataset.name}"
    out.mkdir(parents=True, exist_ok=True)
    document = json.dumps({"dataset": dataset.name, **result}, indent=2) + "\n"
    (out / retrieval_scan.SCAN_FILE).write_text(document, encoding="utf-8")
    print(retrieval_scan.render(result))
    print(f"\n{result['questions']:,} questions, {result['index']['chunks']:,} chunks, "
          f"{result['seconds']} s; {out / retrieval_scan.SCAN_FILE} written")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    prices = price_table(args.config or _default_config())  # refused before anything is written
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
    with locked(args.run_dir), contextlib.ExitStack() as stack:
        llm = embed = None
        if scorepass.pending(args.run_dir, rows, names, args.repeats):  # else no server starts
            llm = stack.enter_context(_llm_client(settings, cache, args.seed,
                                                  roles=scorer_roles(names)))
            embed = _embed_for(llm, names)
        counts = scorepass.score_rows(args.run_dir, rows, scorepass.make_scorers(names, embed),
                                      llm, articles, args.repeats, args.concurrency)
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
    with _llm_client(settings, cache, args.seed, roles=("judge",)) as llm:
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


def cmd_needs(args: argparse.Namespace) -> int:
    if args.out.is_dir():
        raise UsageError(f"--out {args.out} is a directory; give the needs file to write")
    queries = needlog.read_queries(args.queries)  # refused before a model loads
    config = needlog.NeedLogConfig(args.distance_threshold, args.min_size, args.examples,
                                   args.max_queries, args.seed, args.concurrency)
    cache = None if args.no_cache else Path("results") / CACHE_FILE
    with _llm_client(load_settings(args.config), cache, args.seed, roles=("builder",)) as llm:
        document = needlog.derive_needs(queries, llm, embedder_for(llm).embed, config)
    document["queries_file"] = str(args.queries)
    paths = needlog.write_needs(document, args.out)
    print(needlog.render(document))
    print(f"\n{', '.join(map(str, paths))} written; build questions for these needs with: "
          f"freshrag build ... --needs {paths[0]}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    with LocalServer(port=args.port) as server:
        print(f"serving SmolLM2-135M-Instruct at {server.base_url} (Ctrl-C stops it)\n"
              f"point freshrag at it with: export FRESHRAG_BASE_URL={server.base_url}", flush=True)
        server.process.wait()
    raise LocalServerError(server.death())  # Ctrl-C ends serve by KeyboardInterrupt, not here


@contextlib.contextmanager
def _llm_client(settings: LLMSettings, cache_path: Path | None, seed: int | None,
                roles: tuple[str, ...] = RUN_ROLES) -> Iterator[LLMClient]:
    """The client, with the embedded server running if any of `roles` needs it."""
    try:
        cache = ResponseCache(cache_path) if cache_path else None
    except sqlite3.Error as err:
        raise UsageError(f"{cache_path}: cannot open the response cache ({err}); give --no-cache "
                         f"or run where that directory is writable") from None
    needs_local = any(settings.role(role).is_local for role in roles)
    with contextlib.ExitStack() as stack:
        local = stack.enter_context(LocalServer()) if needs_local else None
        if cache:
            stack.callback(cache.close)
        yield LLMClient(settings, cache, local=local, seed=seed)


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


def cmd_mix(args: argparse.Namespace) -> int:
    shares = {"fresh": args.fresh, "control": args.control, "general": args.general}
    print(write_mix(args.dataset, shares, args.n, args.seed, args.out))
    return 0


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


COMMANDS = {"build": cmd_build, "label": cmd_label, "needs": cmd_needs, "run": cmd_run, "index": cmd_index, "report": cmd_report,
            "score": cmd_score, "agreement": cmd_agreement, "import-legacy": cmd_import_legacy, "demo": cmd_demo,
            "probe-judge": cmd_probe_judge, "serve": cmd_serve,
            "scan-retrieval": cmd_scan_retrieval, "mix": cmd_mix}


def _parser() -> argparse.ArgumentParser:
    return build_parser(COMMANDS, __doc__.splitlines()[0])
