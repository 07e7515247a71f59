"""The `freshrag` command: build, run, index, report, agreement, import-legacy, demo and serve.

The only place that wires registries.

Every option has its help text here; the work is done by the runner, the report and the plots.
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
from datetime import date
from pathlib import Path
from typing import Iterator

from builders.cutoffs import CutoffError, resolve_cutoff
from builders.dump import DumpError, DumpSource
from builders.mediawiki import DEFAULT_USER_AGENT, WIKIPEDIA_API, MediaWikiSource, SourceError
from builders.stages import (STAGES, STYLES, BuildConfig, BuildError, check_settings,
                             classify_recency, filter_created, generate_questions, sample_articles,
                             titles_path, update_manifest)
from harness import agreement, analysis, judge, plots, probes, report
from harness.options import MAX_SEED, header, iso_date, name, out_dir, share, url, whole
from harness.cache import ResponseCache
from harness.config import (DEFAULT_CONFIG_FILE, ConfigError, LLMSettings, config_table,
                            load_settings)
from harness.dataset import (Dataset, DatasetError, example_dir, load_articles, load_dataset,
                             load_dataset_dir)
from harness.demo import DEMO_QUESTIONS, run_demo
from harness.html_report import write_html
from harness.judge_check import judge_checks
from harness.legacy import PAPER_MODEL, LegacyError, import_legacy
from harness.prices import price_table
from harness.llm import EndpointError, LLMClient
from harness.local_server import LocalServer, LocalServerError
from harness.results import ResultsError
from harness.rundir import INDEX_SETTINGS, RUN_ROLES
from harness.runner import RunConfig, check_resume, run
from systems import SYSTEMS, uses_index
from systems.embeddings import embedder_for
from systems.index import DEFAULT_DIRECTORY, IndexConfig, RetrievalError, open_index
from systems.prompts import PROMPTS

CACHE_FILE = ".llm-cache.sqlite"
ANALYSIS = "analysis.json"  # retrieval quality, attribution, decisions, intervals, paired tests
INDEX_DIR = ".index"  # embedded Qdrant storage beside the run directories, shared by them
PAPER_CUTOFF = "2021-09-30"  # GPT-4-0613's knowledge cutoff, the model of the paper's datasets
# Ranges of the numeric options, stated in their messages.
MAX_CONCURRENCY = 256  # threads; endpoints rate-limit far below this
MAX_QUESTIONS = 1_000_000_000
MAX_CHUNK = 10_000_000  # characters


class UsageError(Exception):
    """Options that do not fit together or name nothing known."""


USER_ERRORS = (UsageError, ConfigError, DatasetError, ResultsError, EndpointError, LocalServerError,
               RetrievalError, CutoffError, SourceError, DumpError, BuildError, LegacyError)


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
    config = BuildConfig(out=args.out, cutoff=cutoff, n=args.n,
                         questions_per_article=args.questions_per_article, style=args.style,
                         questions_from=args.questions_from, concurrency=args.concurrency,
                         seed=args.seed)
    check_settings(config)
    stages = STAGES[STAGES.index(args.stage):STAGES.index(args.stage) + 1] if args.stage else STAGES
    sampled = titles_path(args.out, "A_r").exists()
    if "A_r" in stages and not sampled and args.n is None and not args.dump:
        raise UsageError("--n is required when sampling a wiki (how many articles A_r should hold)")
    settings = load_settings(args.config)
    cache = None if args.no_cache else args.out.parent / CACHE_FILE
    llm = None
    with contextlib.ExitStack() as stack:
        for stage in stages:
            source = None
            if stage in ("A_f", "questions") and llm is None:
                llm = stack.enter_context(_llm_client(settings, cache, args.seed,
                                                      roles=("builder",)))
            if stage == "A_r":
                source = None if sampled else _page_source(args, config_file)
                done = f"{len(sample_articles(source, config))} articles"
            elif stage == "A_d":
                done = f"{len(filter_created(config))} articles"
            elif stage == "A_f":
                done = f"{len(classify_recency(llm, config))} articles"
            else:
                done = f"{generate_questions(llm, config)} questions"
            update_manifest(config, source and source.description, cutoff_source, llm, stage)
            print(f"{stage}: {done}", flush=True)
    manifest = json.loads((args.out / "manifest.json").read_text(encoding="utf-8"))
    print(json.dumps(manifest["funnel"], indent=2))
    print(f"dataset written to {args.out}/ (articles.jsonl, questions.jsonl, manifest.json); "
          f"run it with: freshrag run --dataset {args.out}")
    return 0


def _page_source(args: argparse.Namespace, config_file: Path | None) -> DumpSource | MediaWikiSource:
    if args.dump:
        return DumpSource(args.dump)
    user_agent = (args.user_agent
                  or config_table(config_file, "build").get("user_agent", DEFAULT_USER_AGENT))
    return MediaWikiSource(args.wiki_api or WIKIPEDIA_API, user_agent=user_agent,
                           concurrency=args.concurrency, max_lag=args.max_lag)


def _default_config() -> Path | None:
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.exists() else None


def cmd_run(args: argparse.Namespace) -> int:
    systems = tuple(name.strip() for name in args.systems.split(",") if name.strip())
    unknown = [name for name in systems if name not in SYSTEMS]
    if unknown or not systems:
        raise UsageError(f"unknown system(s) {unknown}; valid systems: {', '.join(SYSTEMS)}")
    dataset = _dataset(args)
    out = args.out or Path("results") / dataset.name
    config = RunConfig(out=out, systems=systems, limit=args.limit,
                       concurrency=args.concurrency, use_cache=not args.no_cache,
                       today=args.today, knowledge_cutoff=args.knowledge_cutoff,
                       context_tokens=args.context_tokens,
                       probe=None if args.no_probe else probes.ProbeSettings(
                           args.probe_k, args.probe_seed, args.probe_threshold))
    settings = load_settings(args.config)
    prompts = {**PROMPTS, "judge": judge.JUDGE_PROMPT, "judge_tool": json.dumps(judge.GRADE_TOOL)}
    index = _index_config(args, out.parent) if any(uses_index(name) for name in systems) else None
    # Refused before a server starts or an index is built; `run` checks again, holding the lock.
    check_resume(dataset, config, LLMClient(settings, seed=args.seed), SYSTEMS, prompts,
                 index and {name: getattr(index, name) for name in INDEX_SETTINGS})
    with _llm_client(settings, None if args.no_cache else out.parent / CACHE_FILE,
                     args.seed) as llm, contextlib.ExitStack() as stack:
        retriever = None
        if index:
            retriever = open_index(dataset.articles, index, embedder_for(llm))
            stack.callback(retriever.close)
        rows = run(dataset, config, llm, SYSTEMS, prompts, retriever)
    summary = report.summarise(rows)
    report.write_summary(out, summary)
    print(report.render(summary, "markdown"))
    _print_unscored(rows)
    print("\n" + "\n".join(judge_checks([out], rows)["lines"]))
    print(f"\nrun written to {out}/ (samples.jsonl, manifest.json, summary.json)")
    return 1 if any(row["status"] == "failed" for row in rows) else 0


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


def cmd_report(args: argparse.Namespace) -> int:
    prices = price_table(args.config or _default_config())  # refused before anything is written
    rows = report.load_runs(args.run_dirs)
    summary = report.summarise(rows)
    out = args.out or (args.run_dirs[0] if len(args.run_dirs) == 1 else Path("results") / "report")
    report.write_summary(out, summary)
    details = analysis.analyse(rows, prices)
    details["judge"] = judge_checks(args.run_dirs, rows)
    (out / ANALYSIS).write_text(json.dumps(details, indent=2) + "\n", encoding="utf-8")
    figures = plots.write_figures(rows, out, details["cost"])
    notes = report.run_notes(args.run_dirs, rows)
    # the judge's verdict first, then the notes; on stderr when stdout carries JSON or CSV
    for line in details["judge"]["lines"] + notes:
        print(line, file=sys.stdout if args.format == "markdown" else sys.stderr)
    print(report.render(summary, args.format, judge=details["judge"]))
    if args.format == "markdown":
        _print_unscored(rows)
        print("\n" + report.render_analysis(details))
        print(f"\nsummary.json, {ANALYSIS} and {len(figures)} figures written to {out}/")
    if args.html:
        page = write_html(rows, summary, details, figures, args.html,
                          sources=[str(run_dir) for run_dir in args.run_dirs], notes=notes)
        # stderr when stdout carries JSON or CSV, so that output stays parseable
        print(f"HTML report written to {page}",
              file=sys.stdout if args.format == "markdown" else sys.stderr)
    return 0


def cmd_agreement(args: argparse.Namespace) -> int:
    document = agreement.compare_runs(args.run_a, args.run_b, args.top)
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
                       chunk_overlap=args.chunk_overlap, top_k=args.top_k)


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


def _add_dataset_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataset", type=Path, help="directory with questions.jsonl and articles.jsonl "
                   "(default: the example dataset shipped with freshrag)")
    p.add_argument("--questions", type=Path, help="questions JSON Lines file (title, question)")
    p.add_argument("--articles", type=Path, help="articles JSON Lines file (title, content)")


def _add_probe_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--probe-k", dest="probe_k", type=whole(1, 1_000_000), default=probes.PROBES,
                   help="questions whose probes the judge grades (default: %(default)s)")
    p.add_argument("--probe-seed", type=whole(0, MAX_SEED), default=0,
                   help="seed of the probes' questions (default: %(default)s)")
    p.add_argument("--probe-threshold", dest="probe_threshold", type=share, default=probes.THRESHOLD,
                   help="discrimination below which the judge's scores are reported as not "
                        "informative (default: %(default)s; 0.5 is chance)")


def _add_index_options(p: argparse.ArgumentParser) -> None:
    defaults = IndexConfig()
    p.add_argument("--qdrant-url", type=url, help="Qdrant server URL (default: embedded Qdrant on disk)")
    p.add_argument("--index-dir", type=Path, help="embedded Qdrant's directory "
                   f"(default: {INDEX_DIR} beside the run directories, e.g. {DEFAULT_DIRECTORY})")
    p.add_argument("--chunk-size", type=whole(1, MAX_CHUNK), default=defaults.chunk_size,
                   help="characters per chunk (default: %(default)s)")
    p.add_argument("--chunk-overlap", type=whole(0, MAX_CHUNK - 1), default=defaults.chunk_overlap,
                   help="characters shared by neighbouring chunks (default: %(default)s)")
    p.add_argument("--top-k", type=whole(1, 1000), default=defaults.top_k,
                   help="chunks retrieved per query (default: %(default)s)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="freshrag", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(required=True, metavar="COMMAND")

    p = sub.add_parser("build", help="build a dataset of post-cutoff Wikipedia articles and "
                       "questions (section III.A)")
    p.add_argument("--out", type=out_dir, required=True,
                   help="dataset directory; building into it again resumes")
    p.add_argument("--n", type=whole(1, 100_000_000), help="articles in the random sample A_r (required for a "
                   "wiki; with --dump, a seeded random sample of the dump, else all of it)")
    p.add_argument("--cutoff", help="knowledge cutoff YYYY-MM-DD: A_d holds articles created after it")
    p.add_argument("--model", type=name, help="take the cutoff of this model from the table (built-in, "
                   "extended by [cutoffs] in freshrag.toml), e.g. gpt-4-0613")
    p.add_argument("--wiki-api", type=url, help=f"MediaWiki api.php to sample (default: {WIKIPEDIA_API})")
    p.add_argument("--dump", type=Path, help="MediaWiki XML dump (.xml, .xml.bz2, .xml.gz) "
                   "instead of a wiki; a history dump gives creation dates")
    p.add_argument("--user-agent", type=header, help="User-Agent naming you and a contact, as Wikimedia asks "
                   "(default: [build] user_agent in freshrag.toml, else a generic freshrag one)")
    p.add_argument("--max-lag", type=whole(1, 3600), default=5,
                   help="maxlag sent to the wiki, in seconds (default: %(default)s)")
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=4,
                   help="pages fetched, and LLM calls made, at once (default: %(default)s)")
    p.add_argument("--stage", choices=STAGES, help="run only this stage (the earlier ones must "
                   "have finished); default: every stage not finished yet")
    p.add_argument("--questions-per-article", type=whole(1, 100), default=1,
                   help="questions written per article (default: %(default)s)")
    p.add_argument("--style", choices=STYLES, default="creative", help="question prompt: "
                   "creative (the paper's) or recent (about facts after the cutoff; harder)")
    p.add_argument("--questions-from", choices=STAGES[:3], default="A_f",
                   help="the stage whose articles get questions (default: %(default)s)")
    p.add_argument("--seed", type=whole(0, MAX_SEED), default=0, help="seed of the dump's random sample and of "
                   "every LLM request (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.set_defaults(handler=cmd_build)

    p = sub.add_parser("run", help="answer, judge and account every (question, system) pair")
    _add_dataset_options(p)
    p.add_argument("--systems", default="baseline,oracle,naive,advanced",
                   help=f"comma-separated systems, from: {', '.join(SYSTEMS)} (default: %(default)s)")
    p.add_argument("--out", type=out_dir, help="run directory (default: results/DATASET_NAME); "
                   "running again into it resumes")
    p.add_argument("--limit", type=whole(1, MAX_QUESTIONS), help="only the first N questions")
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=8,
                   help="pairs in flight at once; 1 runs serially (default: %(default)s)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--seed", type=whole(0, MAX_SEED), help="seed sent with every LLM request")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.add_argument("--knowledge-cutoff", type=iso_date, default=PAPER_CUTOFF,
                   help="the answering model's knowledge cutoff, stated by dated-boolean "
                        "(default: %(default)s, GPT-4-0613's)")
    p.add_argument("--today", type=iso_date, default=date.today().isoformat(),
                   help="today's date as dated-boolean states it (default: today)")
    p.add_argument("--context-tokens", type=whole(1, 10_000_000), default=8192,
                   help="the answering model's context window; retrieved text is cut to fit "
                        "(default: %(default)s)")
    p.add_argument("--no-probe", action="store_true", help="do not probe the judge before "
                   "grading (the report then says that nothing checked the judge)")
    _add_probe_options(p)
    _add_index_options(p)
    p.set_defaults(handler=cmd_run)

    p = sub.add_parser("index", help="build the retrieval index ahead of a run (or check it)")
    p.add_argument("--articles", type=Path, required=True,
                   help="articles JSON Lines file (title, content)")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    _add_index_options(p)
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser("report", help="tables and figures from one or more run directories")
    p.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR")
    p.add_argument("--format", choices=("markdown", "json", "csv"), default="markdown",
                   help="table format printed (default: %(default)s)")
    p.add_argument("--out", type=out_dir, help="where summary.json and the PNGs go "
                   "(default: the run directory, or results/report for several)")
    p.add_argument("--html", type=Path, metavar="PATH", help="also write the whole report (tables, "
                   "figures, every answer) as one self-contained HTML file")
    p.add_argument("--config", type=Path, help="TOML file whose [prices] table adds or overrides "
                   "model prices for the cost analysis (default: ./freshrag.toml)")
    p.set_defaults(handler=cmd_report)

    p = sub.add_parser("agreement", help="how alike two judges (or two repeats of one) grade the "
                       "same answers: agreement, weighted kappa, Spearman, confusion matrices")
    p.add_argument("run_a", type=Path, metavar="RUN_A", help="run directory A (rows of the matrix)")
    p.add_argument("run_b", type=Path, metavar="RUN_B", help="run directory B (columns; "
                   "differences are B - A)")
    p.add_argument("--format", choices=("markdown", "json"), default="markdown",
                   help="what is printed (default: %(default)s)")
    p.add_argument("--out", type=Path, help=f"where {agreement.AGREEMENT} goes "
                   "(default: results/agreement-A-vs-B, A and B the directories' names)")
    p.add_argument("--top", type=whole(1, 10_000), default=agreement.TOP,
                   help="pairs that disagree most, listed per field (default: %(default)s)")
    p.set_defaults(handler=cmd_agreement)

    p = sub.add_parser("import-legacy", help="import a run file released with the paper (a "
                       "pickled list of dicts) into a run directory")
    p.add_argument("pickle", type=Path, metavar="PICKLE")
    p.add_argument("--dataset", type=name, required=True, help="dataset name for the tables, e.g. A_f")
    p.add_argument("--system", type=name, required=True, help="system name for the tables, e.g. naive")
    p.add_argument("--out", type=out_dir, required=True, help="run directory to write (or add to)")
    p.add_argument("--model", type=name, default=PAPER_MODEL, help="the model that answered, for the cost "
                   "analysis (default: %(default)s, the paper's)")
    p.set_defaults(handler=cmd_import_legacy)

    p = sub.add_parser("demo", help="the whole workflow offline on the example corpus: build "
                       "from a dump, index, every system, judge, report")
    p.add_argument("--out", type=out_dir, default=Path("results") / "demo",
                   help="where the dataset, the run and report.html go (default: %(default)s)")
    p.add_argument("--questions", type=whole(1, MAX_QUESTIONS), default=DEMO_QUESTIONS,
                   help="questions run through every system (default: %(default)s)")
    p.set_defaults(handler=cmd_demo)

    p = sub.add_parser("probe-judge", help="check that the judge tells right from wrong: grade "
                       "answers made from the dataset (grounded, wrong, abstaining); exit 1 if not")
    _add_dataset_options(p)
    _add_probe_options(p)
    p.add_argument("--concurrency", type=whole(1, MAX_CONCURRENCY), default=4,
                   help="probes graded at once (default: %(default)s)")
    p.add_argument("--seed", type=whole(0, MAX_SEED), help="seed sent with every LLM request")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the response cache")
    p.add_argument("--config", type=Path, help="TOML file with role endpoints (default: ./freshrag.toml)")
    p.set_defaults(handler=cmd_probe_judge)

    p = sub.add_parser("serve", help="run the embedded llama.cpp server in the foreground")
    p.add_argument("--port", type=whole(1, 65_535), help="port on 127.0.0.1 (default: a free one)")
    p.set_defaults(handler=cmd_serve)
    return parser
