"""The commands that make question sets: `build` (PAPER.md section III.A and the stages of
builders/stages.py), `label`, `needs` and `mix`; harness/cli/main.py wires them with the rest."""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

from freshrag.builders.cutoffs import resolve_cutoff
from freshrag.builders.labels.labeller import (
    LABELS_FILE,
    check_no_foreign_labels,
    label_dataset,
    read_hand_labels,
)
from freshrag.builders.labels.report import label_report, render, write_report
from freshrag.builders.manifest import check_settings, update_manifest
from freshrag.builders.sources.dump import SUFFIXES as DUMP_SUFFIXES
from freshrag.builders.sources.dump import DumpSource
from freshrag.builders.sources.mediawiki import DEFAULT_USER_AGENT, WIKIPEDIA_API, MediaWikiSource
from freshrag.builders.sources.split_dump import SplitDumpSource, expand
from freshrag.builders.stages import (
    STAGES,
    BuildConfig,
    classify_recency,
    extract_facts,
    filter_created,
    generate_questions,
    sample_articles,
    titles_path,
)
from freshrag.builders.styles.facts import FACTS
from freshrag.builders.styles.needs import read_needs
from freshrag.builders.styles.statements import parse_label_spec
from freshrag.builders.styles.templates import load_templates
from freshrag.builders.traffic import query_log
from freshrag.builders.traffic.kinds import add_traffic
from freshrag.builders.traffic.mix import write_mix
from freshrag.cli.common import CACHE_FILE, UsageError, default_config, llm_client
from freshrag.core.config import config_table, load_settings
from freshrag.core.dataset import load_dataset_dir
from freshrag.core.results import read_jsonl, read_manifest
from freshrag.core.rundir import locked
from freshrag.core.types import LABELS
from freshrag.cost import dry_run
from freshrag.llm.client import LLMClient
from freshrag.reporting.prices import price_table
from freshrag.systems.retrieval.embeddings import embedder_for


def cmd_build(args: argparse.Namespace) -> int:
    config_file = args.config or default_config()
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
        print(dry_run.dry_run_build(config, load_settings(args.config), None if args.no_cache else
                                  args.out.parent / CACHE_FILE, args.seed,
                                  price_table(config_file),
                                  args.label or args.style == "statements"))
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
        stack.enter_context(locked(args.out))  # one build of a directory at a time
        for stage in stages:
            source = None
            if (stage in ("A_f", "questions", "labels") or stage == "traffic" and config.control) \
                    and llm is None:
                llm = stack.enter_context(llm_client(
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
    """A build dry run counts every stage (harness/cost/build_estimate.py) but the control questions of a
    --needs build; it refuses what it would leave out rather than under-count."""
    if args.control and args.needs:
        raise UsageError("--dry-run cannot count the control questions of a --needs build yet: "
                         "leave --control out to estimate the rest")


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
    with locked(args.dataset), llm_client(load_settings(args.config), cache, args.seed,
                                          roles=("labeller",)) as llm:
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


def cmd_needs(args: argparse.Namespace) -> int:
    if args.out.is_dir():
        raise UsageError(f"--out {args.out} is a directory; give the needs file to write")
    queries = query_log.read_queries(args.queries)  # refused before a model loads
    config = query_log.NeedLogConfig(args.distance_threshold, args.min_size, args.examples,
                                   args.max_queries, args.seed, args.concurrency)
    cache = None if args.no_cache else Path("results") / CACHE_FILE
    with llm_client(load_settings(args.config), cache, args.seed, roles=("builder",)) as llm:
        document = query_log.derive_needs(queries, llm, embedder_for(llm).embed, config)
    document["queries_file"] = str(args.queries)
    paths = query_log.write_needs(document, args.out)
    print(query_log.render(document))
    print(f"\n{', '.join(map(str, paths))} written; build questions for these needs with: "
          f"freshrag build ... --needs {paths[0]}")
    return 0


def cmd_mix(args: argparse.Namespace) -> int:
    shares = {"fresh": args.fresh, "control": args.control, "general": args.general}
    print(write_mix(args.dataset, shares, args.n, args.seed, args.out))
    return 0
