"""A build of a dataset directory, start to end: the options that go together, which stages run,
where A_r's articles come from, and each stage in turn, recorded in the manifest as it finishes
(docs/building.md). The stages themselves are builders/stages.py; the kinds of source, each
recognising its own options, builders/sources/ (`Source`, `SOURCES`); `freshrag build` parses its
options into a BuildConfig and a Source and calls `build`.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Callable, ContextManager

from freshrag.builders.labels.labeller import LABELS_FILE, label_dataset
from freshrag.builders.labels.report import (
    CHART_FILE,
    REPORT_FILE,
    label_report,
    render,
    write_report,
)
from freshrag.builders.manifest import update_manifest
from freshrag.builders.records import read_records
from freshrag.builders.sources import Source
from freshrag.builders.sources.pages import BuildError, PageSource
from freshrag.builders.stages import (
    ARTICLE_STAGES,
    ARTICLES,
    QUESTIONS,
    RECENCY,
    SAMPLE,
    SAMPLE_PARTIAL,
    STAGES,
    BuildConfig,
    classify_recency,
    extract_facts,
    filter_created,
    generate_questions,
    sample_articles,
    titles_path,
)
from freshrag.builders.styles import DEFAULT_STYLE, STYLES, style_of, takes_labels
from freshrag.builders.styles.facts import FACTS
from freshrag.builders.styles.needs import NEEDS_FILE
from freshrag.builders.styles.statements import LabelSpec
from freshrag.builders.traffic.kinds import CONTROL, add_traffic
from freshrag.core.manifest import MANIFEST
from freshrag.core.records import Manifest
from freshrag.core.rundir import LOCK, locked
from freshrag.core.wording import counted
from freshrag.llm.client import LLMClient

# Every file a build may write in its dataset directory, whatever its stages and built-in style:
# `freshrag build` refuses an input given at one of these paths (core/outputs.py), and the
# builder tests check every build they run against the list (tests/support/builds.py).
WRITES = tuple(dict.fromkeys((  # each once: styles may share a file (the prompted ones do)
    MANIFEST, LOCK, SAMPLE, SAMPLE_PARTIAL, ARTICLES, RECENCY, QUESTIONS,
    *(titles_path(Path(), stage).name for stage in (*ARTICLE_STAGES, CONTROL)), FACTS,
    *(name for style in STYLES.values() for name in style.files), NEEDS_FILE,
    LABELS_FILE, REPORT_FILE, CHART_FILE)))

# The client for the given roles, with the embedded server running if one of them needs it.
OpenLLM = Callable[[tuple[str, ...]], ContextManager[LLMClient]]
say = functools.partial(print, flush=True)  # each stage's line as soon as it has finished


def check_options(source: Source, needs: Path | None, per_need: int | None, style: str,
                  questions_per_article: int) -> None:
    """Options that do not go together, refused before any file is read."""
    if source.dump and source.wiki_api:
        raise BuildError("give either --dump or --wiki-api, not both")
    if per_need and not needs:
        raise BuildError("--per-need caps the questions of --needs; give --needs too")
    if needs and (style != DEFAULT_STYLE or questions_per_article != 1):
        raise BuildError("--needs asks one question per need and chunk with its own prompt; "
                         "it takes no --style or --questions-per-article")
    if source.stub_dump and not source.dump:
        raise BuildError("--stub-dump gives creation dates to the pages of a --dump: give both")


def label_spec(style: str, labels: LabelSpec | None,
               min_critique: tuple[tuple[str, int], ...]) -> LabelSpec | None:
    """The labels the style aims for (the statements style: equal shares unless --labels);
    --labels and --min-critique are refused with a style that takes neither."""
    chosen = style_of(style)
    if not chosen.takes_labels and (labels or min_critique):
        raise BuildError(f"--labels and --min-critique go with --style "
                         f"{' or '.join(takes_labels())}")
    return chosen.labels(labels)


def labelling(label: bool, style: str) -> bool:
    """Whether the build labels its questions: when asked, and always for a style whose builds
    do (the statements style)."""
    return label or style_of(style).always_labels


def stages_to_run(config: BuildConfig, stage: str | None, labelled: bool,
                  source: Source) -> tuple[str, ...]:
    """The one stage asked for, else every stage (labels only when `labelled`); a stage that
    cannot run as asked is refused before anything starts."""
    if stage == "labels" and not labelled:
        raise BuildError("--stage labels needs --label (or --style statements)")
    stages = (stage,) if stage else tuple(name for name in STAGES
                                          if name != "labels" or labelled)
    sampled = titles_path(config.out, "A_r").exists()
    if ("A_r" in stages and not sampled and config.n is None and config.months is None
            and not source.dump):
        raise BuildError("--n is required when sampling a wiki (how many articles A_r should "
                         "hold), or --created with --per-month")
    return stages


def build(config: BuildConfig, stages: tuple[str, ...], source: Source,
          cutoff_source: str | None, open_llm: OpenLLM, labelled: bool) -> Manifest:
    """Run `stages` in order, holding the directory, each recorded in the manifest as it
    finishes and said in a line; the manifest at the end."""
    sampled = titles_path(config.out, "A_r").exists()
    style = style_of(config.style)
    roles = ("builder", "labeller") if labelled else ("builder",)
    roles += tuple(getattr(style, "roles", ()))  # the roles a style's own calls take (multihop)
    llm: LLMClient | None = None
    sampler: PageSource | None = None
    manifest: Manifest | None = None
    with contextlib.ExitStack() as stack:
        stack.enter_context(locked(config.out))  # one build of a directory at a time
        for stage in stages:
            if llm is None and (stage in ("A_f", "questions", "labels")
                                or stage == "traffic" and config.control):
                if hasattr(style, "before_calls"):  # a style that can tell it would write none
                    style.before_calls(config)
                llm = stack.enter_context(open_llm(roles))
            page_source = None
            if stage == "A_r":
                page_source = sampler = None if sampled else source.open(config.out)
                done = counted(len(sample_articles(page_source, config)), "article")
            elif stage == "facts":
                page_source = None if (config.out / FACTS).exists() else (
                    sampler or source.recorded(config.out))
                done = ", ".join(f"{value} {key}" for key, value in
                                 extract_facts(page_source, config).items())
            else:
                done = _run_stage(stage, config, llm)
            done += _style_step(style, stage, config, functools.cache(
                lambda: page_source or sampler or source.recorded(config.out)))
            manifest = update_manifest(config, page_source.description if page_source else None,
                                       cutoff_source, llm, stage)
            say(f"{stage}: {done}")
    if manifest is None:
        raise BuildError("no stage to run")
    return manifest


def _style_step(style: object, stage: str, config: BuildConfig,
                open_source: Callable[[], PageSource]) -> str:
    """What a style reads of the source itself after a stage (multihop: the links after facts,
    the distractors after questions), the source opened only if it asks; in a few words."""
    step = getattr(style, "source_step", None)
    said = step(stage, config, open_source) if step is not None and stage in ("facts",
                                                                             "questions") else None
    return f"; {said}" if said else ""


def _run_stage(stage: str, config: BuildConfig, llm: LLMClient | None) -> str:
    """A stage that reads only the directory (and the model); what it did, in a few words."""
    if stage == "A_d":
        return counted(len(filter_created(config)), "article")
    if stage == "A_f":
        return counted(len(classify_recency(_model(llm), config)), "article")
    if stage == "labels":  # a critique threshold may have dropped every question
        return label_and_report(_model(llm), config.out, config.concurrency, None) \
            if read_records(config.out / "questions.jsonl") else "no questions to label"
    if stage == "questions":
        return counted(generate_questions(_model(llm), config), "question")
    return add_traffic(llm, config) or "no control or general questions asked for"


def _model(llm: LLMClient | None) -> LLMClient:
    if llm is None:  # build() opens the model before any stage that calls it
        raise BuildError("this stage needs the builder model")
    return llm


def label_and_report(llm: LLMClient, directory: Path, concurrency: int,
                     hand: dict[str, str] | None) -> str:
    """Label the dataset, print the composition (and agreements), write the report files."""
    rows = label_dataset(llm, directory, concurrency)
    details = label_report(rows, hand)
    paths = write_report(directory, details)
    say(render(details))
    return f"{counted(len(rows), 'question')} labelled ({', '.join(path.name for path in paths)} written)"
