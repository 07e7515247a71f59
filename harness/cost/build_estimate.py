"""`freshrag build --dry-run`: the builder calls that stages A_f (the recency classifier) and
questions would still make, for `freshrag.cost.estimate` to count and price without calling.

An article's job classifies it (unless `recency.jsonl` has its verdict) and, when the verdict
lets it into the question stage, makes the calls its question style would make about it: the
style's own walk (`walk` of builders/styles/base.py), through the requests the stages send
(`stages.recency_request`; the paper's writer's `prompted.question_request`). Under the
estimate's two scenarios the classifier says "before the cutoff" for every article (no questions
from A_f) or "after" for every one: the range. With `--needs` an article's job asks, instead of
its questions, every (need, chunk) pair of its chunks that `needs.jsonl` has not answered
(builders/styles/needs.py); `--control` adds a job per control question still to write
(builders/traffic/kinds.py). With `--label` (or a style that always labels) each question
written is labelled, and so is each one of questions.jsonl that labels.jsonl lacks
(builders/labels/labeller.py). A_r and A_d make no LLM call; until they are built there is
nothing to count, and the dry run says to build them first (`--stage A_r`, `--stage A_d`).
docs/costs.md#dry-run; docs/methods.md#dataset-workflow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freshrag.builders.labels.labeller import (
    LABELS_FILE,
    Item,
    label_one,
    latest_records,
    question_rows,
)
from freshrag.builders.prompts import ARTICLE_CHARS
from freshrag.builders.stages import (
    ARTICLES,
    QUESTIONS,
    RECENCY,
    BuildConfig,
    BuildError,
    parse_verdict,
    read_titles,
    recency_request,
    titles_path,
)
from freshrag.builders.styles import style_of
from freshrag.builders.styles.needs import QUESTION, NeedsPlan, ask_need, need_todo
from freshrag.builders.styles.prompted import CREATIVE, question_id, question_request
from freshrag.builders.traffic.kinds import CONTROL, choose_control
from freshrag.core.jsonl import read_jsonl
from freshrag.cost.plan import Job, Planner


def build_jobs(config: BuildConfig, label: bool = False) -> list[Job]:
    """A job per A_d article still to classify or to write questions about (and, with `label`,
    to label them), a job per question already written but not labelled, per control question."""
    out = config.out
    _require(out, "A_d", "build --stage A_r and --stage A_d first (they make no LLM call)")
    articles = {row["title"]: row for row in read_jsonl(out / ARTICLES)}
    verdicts = {row["title"]: row["verdict"] for row in read_jsonl(out / RECENCY)}
    classified = titles_path(out, "A_f").exists()
    a_d = set(read_titles(out, "A_d"))  # what A_f classifies (questions may come from A_r)
    source_known = config.questions_from != "A_f" or classified
    sources = read_titles(out, config.questions_from) if source_known else read_titles(out, "A_d")
    done = {row["id"] for row in read_jsonl(out / QUESTIONS)}
    cutoff = config.cutoff.isoformat()
    pairs = need_pairs(config, sources, articles) if config.needs else {}
    walk = None if config.needs else style_of(config.style).walk(config, sources, articles, done,
                                                                 source_known)

    def job(position: int, title: str) -> Job:
        content_all = articles[title]["content"]  # the labeller cuts it its own way

        def run(planner: Planner) -> None:
            if not classified and title not in verdicts and title in a_d:
                verdict, _ = parse_verdict(planner.chat("builder", **recency_request(
                    title, content_all[:ARTICLE_CHARS], cutoff)))
                if config.questions_from == "A_f" and verdict is not True:
                    return
            if walk is not None:
                walk(planner, position, title, label)
                return
            for need, text in pairs.get(title, []):
                record = ask_need(planner, need, text)
                if label and record["outcome"] == QUESTION:  # the labels stage's call
                    label_one(planner, Item("", title, record["question"]), content_all)
        return Job(title, run)

    return [job(position, title) for position, title in enumerate(sources)] + \
        (written_label_jobs(out, articles) if label else []) + \
        control_jobs(config, articles, done)


def _require(out: Path, stage: str, how: str) -> None:
    if not titles_path(out, stage).exists():
        raise BuildError(f"{out}: {stage} is not built yet, so there is nothing to count: "
                         f"{how}, then --dry-run again")


def need_pairs(config: BuildConfig, sources: list[str], articles: dict[str, dict[str, Any]]
               ) -> dict[str, list[tuple[str, str]]]:
    """`--needs`: per article, the (need, chunk text) pairs still to ask."""
    pairs: dict[str, list[tuple[str, str]]] = {}
    for i, chunk in need_todo(config.out, sources, NeedsPlan(config.needs, config.per_need,
                                                             config.seed), articles):
        pairs.setdefault(chunk.title, []).append((config.needs[i], chunk.text))
    return pairs


def written_label_jobs(out: Path, articles: dict[str, dict[str, Any]]) -> list[Job]:
    """A job per question of questions.jsonl with a gold article that labels.jsonl has not
    labelled as it reads now (builders/labels/labeller.py `label_questions`)."""
    if not (out / QUESTIONS).exists():
        return []
    records = latest_records(out / LABELS_FILE)

    def job(item: Item) -> Job:
        def run(planner: Planner) -> None:
            label_one(planner, item, articles[item.title]["content"])
        return Job(f"label {item.id}", run)

    return [job(Item(qid, row["title"], row["question"]))
            for qid, row in question_rows(out / QUESTIONS)
            if row.get("title") is not None
            and records.get(qid, {}).get("question") != row["question"]]


def control_jobs(config: BuildConfig, articles: dict[str, dict[str, Any]],
                 done: set[str]) -> list[Job]:
    """A job per `--control` question not written yet (builders/traffic/kinds.py): the same question
    writer, style `creative`, about articles chosen as the build would (general queries make no
    call)."""
    if not config.control:
        return []
    titles = read_titles(config.out, CONTROL) if titles_path(config.out, CONTROL).exists() \
        else choose_control(config)
    cutoff = config.cutoff.isoformat()

    def job(title: str) -> Job:
        def run(planner: Planner) -> None:
            planner.chat("builder", **question_request(
                title, articles[title]["content"][:ARTICLE_CHARS], CREATIVE.name, cutoff, 0))
        return Job(f"control {title}", run)

    return [job(title) for position, title in enumerate(titles)
            if question_id(CONTROL, position, 0) not in done]
