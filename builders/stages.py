"""The four stages of section III.A, each written to disk as it goes, so that any of them resumes.

1. `A_r`: the random sample; pages that are redirects, disambiguation pages, gone or of at most
   1,000 characters are dropped, each reason counted. Every examined page is a line of
   `sample.jsonl`; every kept one a line of `articles.jsonl` (the retrieval database). A set
   dated by month samples per creation month instead (builders/dated.py, docs/living.md).
2. `A_d`: the A_r articles created after the cutoff.
3. `A_f`: the A_d articles the `builder` model judges to be mostly about events after the cutoff
   (a forced boolean call, temperature 0); an unparseable verdict is `unknown`, excluded and
   counted. One line of `recency.jsonl` per verdict.
4. Questions about the chosen stage's articles (default A_f), in the build's question style
   (builders/styles/, docs/building.md#question-styles): the paper's prompt
   (builders/styles/prompted.py) unless `--style` names another; with `--needs`, questions per
   information need (builders/styles/needs.py).
5. Labels (with `--label`, and always for the `statements` style): builders/labels/labeller.py.
6. Traffic (with `--control` / `--general`): control questions and general queries
   (builders/traffic/kinds.py).

Stage `facts`, between A_r and A_d, reads their infoboxes into `facts.sqlite` (builders/styles/facts.py).

A stage's title list (`A_r.txt`, `A_d.txt`, `A_f.txt`) is written when the stage has finished;
`manifest.json` holds the funnel, recomputed from the files so that it always adds up
(builders/manifest.py).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path
from typing import Any, Iterable

from freshrag.builders.cutoffs import created_after
from freshrag.builders.dated import (
    MonthRange,
    SampleFiles,
    sample_dump_by_month,
    sample_wiki_by_month,
)
from freshrag.builders.prompts import (
    ARTICLE_CHARS,
    RECENCY_MAX_TOKENS,
    RECENCY_TOOL,
    recency_messages,
)
from freshrag.builders.records import read_records, read_title_list
from freshrag.builders.sources.pages import BuildError, Page, PageSource, Reservoir, classify
from freshrag.builders.styles import DEFAULT_STYLE, style_of
from freshrag.builders.styles.base import read_articles
from freshrag.builders.styles.facts import WikitextSource, facts_stage
from freshrag.builders.styles.needs import NeedsPlan, generate_need_questions, needs_digest
from freshrag.core.concurrency import map_with_progress
from freshrag.core.files import write_text
from freshrag.core.jsonl import JsonlWriter, replace_jsonl
from freshrag.core.types import UNKNOWN, LLMResponse
from freshrag.llm.client import LLMClient
from freshrag.llm.errors import ContextTooLong
from freshrag.llm.fitting import chat_fitting
from freshrag.llm.toolcall import ReplyError, tool_arguments

STAGES = ("A_r", "facts", "A_d", "A_f", "questions", "labels", "traffic")  # traffic: builders/traffic/kinds.py
ARTICLE_STAGES = ("A_r", "A_d", "A_f")  # the stages that end in a title list
SAMPLE, ARTICLES, RECENCY, QUESTIONS = "sample.jsonl", "articles.jsonl", "recency.jsonl", \
    "questions.jsonl"
SAMPLE_PARTIAL = SAMPLE + ".partial"  # a dump's reservoir sample, until it has read the dump
RECENCY_FUNCTION = RECENCY_TOOL["function"]["name"]


@dataclass(frozen=True)
class BuildConfig:
    out: Path
    cutoff: date
    n: int | None = None  # articles in A_r; None takes every article of a dump
    questions_per_article: int = 1
    style: str = DEFAULT_STYLE  # a name of builders/styles (STYLES, or an installed style's)
    questions_from: str = "A_f"
    concurrency: int = 4
    seed: int = 0
    needs: tuple[str, ...] = ()  # --needs: questions per information need (builders/styles/needs.py)
    per_need: int | None = None
    control: int = 0  # control questions about A_r articles created well before the cutoff
    general: int = 0  # general queries from the shipped list (builders/traffic/kinds.py)
    control_margin_days: int = 365  # "well before": created at least this long before the cutoff
    # a set dated by month (builders/dated.py): the range, articles a month, in place of `n`
    months: MonthRange | None = None
    per_month: int | None = None
    parent: dict[str, Any] | None = None  # --since: the version this build extends (versions.py)
    # the chosen style's own options (its `options` type, declared with it: builders/styles/);
    # None: the style's defaults
    style_options: Any = None

    def settings(self) -> dict[str, Any]:
        """What a dataset directory is tied to: resuming with other values is refused. `n` and
        `seed` decide the sample (and the seed every builder call), so they belong here too;
        `concurrency` only decides how fast."""
        return {"cutoff": self.cutoff.isoformat(), "n": self.n, "seed": self.seed,
                "questions_per_article": self.questions_per_article, "style": self.style,
                "questions_from": self.questions_from,
                "labels": None,  # the statements style's settings fill it
                "needs": needs_digest(self.needs) if self.needs else None,
                "per_need": self.per_need, "control": self.control,
                "general": self.general, "control_margin_days": self.control_margin_days,
                **style_of(self.style).settings(self),
                **({"created": self.months.text(), "per_month": self.per_month,
                    "after": self.months.after} if self.months else {})}


def titles_path(out: Path, stage: str) -> Path:
    return out / f"{stage}.txt"


def read_titles(out: Path, stage: str) -> list[str]:
    path = titles_path(out, stage)
    if not path.exists():
        raise BuildError(f"{path}: stage {stage} has not finished; run it first "
                         f"(freshrag build --stage {stage} ...)")
    return read_title_list(path)


def write_titles(out: Path, stage: str, titles: Iterable[str]) -> None:
    # the list appears whole or not at all: it marks the stage finished
    write_text(titles_path(out, stage), "".join(f"{title}\n" for title in titles))


# --------------------------------------------------------------------------- stage 1: A_r


def sample_articles(source: PageSource | None, config: BuildConfig) -> list[str]:
    """A_r. From a random-order source (the API) pages are taken until `n` are kept; from a dump,
    every page (n None), or a seeded reservoir sample of `n` over the whole dump. `source` may be
    None when the stage has finished."""
    from tqdm import tqdm  # here, not above: `freshrag build --help` imports this module

    out = config.out
    if titles_path(out, "A_r").exists():
        return read_titles(out, "A_r")
    if source is None:
        raise BuildError(f"{out}: stage A_r has not finished and no source was given")
    out.mkdir(parents=True, exist_ok=True)
    if config.months is not None:
        if config.per_month is None:
            raise BuildError("--created needs --per-month N (articles sampled per month)")
        sample = sample_wiki_by_month if source.random_order else sample_dump_by_month
        kept = sample(source, SampleFiles(out / SAMPLE, out / ARTICLES, out / SAMPLE_PARTIAL),
                      config.months, config.per_month, config.seed)
        write_titles(out, "A_r", kept)
        return kept
    if config.n is not None and not source.random_order:
        return _reservoir_sample(source, config, config.n)
    examined = {row["title"]: row for row in read_records(out / SAMPLE)}
    kept = [row["title"] for row in read_records(out / ARTICLES)]
    samples, articles = JsonlWriter(out / SAMPLE), JsonlWriter(out / ARTICLES)
    try:
        for title in kept:  # an article written just before a kill, its sample line not yet
            if title not in examined:
                samples.write({"title": title, "discard": None})
        with tqdm(total=config.n, initial=len(kept), desc="A_r", unit="article") as bar:
            pages, read = source.pages(set(examined) | set(kept)), {t: t for t in kept}
            while config.n is None or len(kept) < config.n:
                page = next(pages, None)
                if page is None:
                    break  # the dump ended, or the wiki has no unseen pages left
                page = classify(page, read)
                if page.discard is None:
                    articles.write(page.article_row())  # the article first, then its sample line
                    kept.append(page.title)
                    bar.update(1)
                samples.write(_sample_row(page))
            pages.close()  # lets a source stop its fetches in flight
    finally:
        samples.close()
        articles.close()
    write_titles(out, "A_r", kept)
    return kept


def _reservoir_sample(source: PageSource, config: BuildConfig, n: int) -> list[str]:
    """A uniform random sample of `n` articles from a dump in one pass (Algorithm R), holding
    only the sample in memory; discards stream to a partial file. Written when the dump has been
    read to its end."""
    from tqdm import tqdm

    reservoir: Reservoir[Page] = Reservoir(n, random.Random(config.seed))
    partial = config.out / SAMPLE_PARTIAL
    partial.unlink(missing_ok=True)
    discards, read = JsonlWriter(partial), dict[str, str]()
    try:
        for page in tqdm(source.pages(set()), desc="A_r (reading the whole dump)", unit="page"):
            page = classify(page, read)
            if page.discard is not None:
                discards.write(_sample_row(page))
            elif (left := reservoir.offer(page)) is not None:
                discards.write({"title": left.title, "discard": "not_sampled"})
        for page in reservoir.items:
            discards.write(_sample_row(page))
    finally:
        discards.close()
    replace_jsonl(config.out / ARTICLES, (page.article_row() for page in reservoir.items))
    partial.replace(config.out / SAMPLE)
    titles = [page.title for page in reservoir.items]
    write_titles(config.out, "A_r", titles)
    return titles


def _sample_row(page: Page) -> dict[str, Any]:
    return {"title": page.title, "discard": page.discard}


def extract_facts(source: WikitextSource | None, config: BuildConfig) -> dict[str, int]:
    """Stage `facts`: the A_r articles' infoboxes (builders/styles/facts.py)."""
    return facts_stage(source, config.out, set(read_titles(config.out, "A_r")))


# --------------------------------------------------------------------------- stage 2: A_d


def filter_created(config: BuildConfig) -> list[str]:
    """A_d: the A_r articles whose first revision is after the cutoff day."""
    if titles_path(config.out, "A_d").exists():
        return read_titles(config.out, "A_d")
    a_r = set(read_titles(config.out, "A_r"))
    a_d = [row["title"] for row in read_records(config.out / ARTICLES)
           if row["title"] in a_r and row.get("created")
           and created_after(row["created"], config.cutoff,
                             f"{config.out / ARTICLES}: {row['title']!r}: created")]
    write_titles(config.out, "A_d", a_d)
    return a_d


# --------------------------------------------------------------------------- stage 3: A_f


def classify_recency(llm: LLMClient, config: BuildConfig) -> list[str]:
    """A_f: the A_d articles judged mostly about events after the cutoff."""
    out = config.out
    if titles_path(out, "A_f").exists():
        return read_titles(out, "A_f")
    a_d = read_titles(out, "A_d")
    articles = read_articles(out)
    done = {row["title"]: row for row in read_records(out / RECENCY)}
    writer = JsonlWriter(out / RECENCY)
    cutoff = config.cutoff.isoformat()

    def judge(title: str) -> dict[str, Any]:
        row: dict[str, Any]
        try:
            fitted = chat_fitting(llm, "builder", articles[title]["content"][:ARTICLE_CHARS],
                                  lambda text: recency_request(title, text, cutoff))
        except ContextTooLong as err:
            row = {"title": title, "verdict": UNKNOWN, "reason": f"article {err}", "raw": None,
                   "model": None, "usage": None}
        else:
            response = fitted.response
            verdict, reason = parse_verdict(response)
            row = {"title": title, "verdict": verdict, "reason": reason,
                   "raw": response.tool_arguments if response.tool_name else response.text,
                   "model": response.model, "usage": _usage(response),
                   "content_chars": fitted.chars}
        writer.write(row)
        return row

    try:
        rows = map_with_progress(judge, [t for t in a_d if t not in done], config.concurrency,
                                 desc="A_f", unit="article")
    finally:
        writer.close()
    done.update((row["title"], row) for row in rows)
    a_f = [title for title in a_d if done[title]["verdict"] is True]
    write_titles(out, "A_f", a_f)
    return a_f


def recency_request(title: str, text: str, cutoff: str) -> dict[str, Any]:
    """The classifier's call about one article (also what `build --dry-run` counts)."""
    return dict(messages=recency_messages(title, text, cutoff), tools=[RECENCY_TOOL],
                temperature=0.0, tool_choice=RECENCY_FUNCTION, max_tokens=RECENCY_MAX_TOKENS)


def parse_verdict(response: LLMResponse) -> tuple[bool | str, str | None]:
    """True/False from a `report_recency` call, or (`unknown`, why)."""
    try:
        value = tool_arguments(response, RECENCY_FUNCTION).get("mostly_after_cutoff")
    except ReplyError as err:
        return UNKNOWN, str(err)
    if not isinstance(value, bool):
        return UNKNOWN, f"mostly_after_cutoff is {value!r}, not true or false"
    return value, None


# --------------------------------------------------------------------------- stage 4: questions


def generate_questions(llm: LLMClient, config: BuildConfig) -> int:
    """The questions about each article of `questions_from`, written by the build's style (or,
    with `--needs`, per information need); returns how many exist. Resumable as every stage."""
    titles = read_titles(config.out, config.questions_from)
    if config.needs:
        return generate_need_questions(llm, config.out, config.questions_from, titles, NeedsPlan(
            config.needs, config.per_need, config.seed), config.concurrency)
    return style_of(config.style).write_questions(llm, config, titles)


def _usage(response: LLMResponse) -> dict[str, Any]:
    return asdict(response.usage)
