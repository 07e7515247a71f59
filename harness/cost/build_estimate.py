"""`freshrag build --dry-run`: the builder calls that stages A_f (the recency classifier) and
questions would still make, for `freshrag.cost.estimate` to count and price without calling.

An article's job classifies it (unless `recency.jsonl` has its verdict) and, when the verdict
lets it into the question stage, writes its questions, with the requests the stages send
(`stages.recency_request`, `stages.question_request`). Under the estimate's two scenarios the
classifier says "before the cutoff" for every article (no questions from A_f) or "after" for
every one: the range. With `--needs` an article's job asks, instead of its questions, every
(need, chunk) pair of its chunks that `needs.jsonl` has not answered (builders/styles/needs.py);
`--control` adds a job per control question still to write (builders/traffic/kinds.py). With
`--label` (or `--style statements`) each question written is labelled, and so is each one of
questions.jsonl that labels.jsonl lacks (builders/labels/labeller.py). With `--style grounded` an
article's job writes the text forms of the groups about it (builders/styles/grounded.py), once the
facts stage is built; with `--style statements`, harness/cost/statements_estimate.py. A_r and A_d
make no LLM call; until they are built there is nothing to count, and the dry run says to
build them first (`--stage A_r`, `--stage A_d`). docs/costs.md#dry-run;
docs/methods.md#dataset-workflow.
"""

from __future__ import annotations

from dataclasses import replace
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
    _question_id,
    clean_question,
    parse_verdict,
    question_request,
    read_titles,
    recency_request,
    titles_path,
)
from freshrag.builders.styles.facts import FACTS
from freshrag.builders.styles.grounded import (
    QUERIES,
    fill_queries,
    form_id,
    write_form,
    write_queries,
)
from freshrag.builders.styles.needs import QUESTION, NeedsPlan, ask_need, need_todo
from freshrag.builders.styles.templates import Query
from freshrag.builders.traffic.kinds import CONTROL, choose_control
from freshrag.core.jsonl import read_jsonl
from freshrag.cost.plan import Job, Planner
from freshrag.cost.statements_estimate import StatementsWalk


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
    forms = grounded_forms(config, sources, done) if config.style == "grounded" else {}
    statements = StatementsWalk(config, sources, articles) if config.style == "statements" \
        else None
    pairs = need_pairs(config, sources, articles) if config.needs else {}

    def job(position: int, title: str) -> Job:
        content_all = articles[title]["content"]  # the labeller cuts it its own way
        content = content_all[:ARTICLE_CHARS]

        def run(planner: Planner) -> None:
            if not classified and title not in verdicts and title in a_d:
                verdict, _ = parse_verdict(planner.chat("builder", **recency_request(
                    title, content, cutoff)))
                if config.questions_from == "A_f" and verdict is not True:
                    return
            for query, criterion in forms.get(title, []):
                write_form(planner, query, criterion)
            if statements:
                statements.run(planner, title)
                return
            if config.needs:
                for need, text in pairs.get(title, []):
                    record = ask_need(planner, need, text)
                    if label and record["outcome"] == QUESTION:  # the labels stage's call
                        label_one(planner, Item("", title, record["question"]), content_all)
                return
            for i in range(0 if config.style == "grounded" else config.questions_per_article):
                qid = _question_id(config, position, i)
                if not source_known or qid not in done:
                    question = clean_question(planner.chat("builder", **question_request(
                        title, content, config.style, cutoff, i)).text or "")
                    if label and question:
                        label_one(planner, Item(qid, title, question), content_all)
        return Job(title, run)

    return [job(position, title) for position, title in enumerate(sources)] + \
        (written_label_jobs(out, articles) if label else []) + \
        control_jobs(config, articles, done)


def _require(out: Path, stage: str, how: str) -> None:
    built = (out / FACTS).exists() if stage == "facts" else titles_path(out, stage).exists()
    if not built:
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
        return Job(f"label {item.id}", lambda planner: label_one(
            planner, item, articles[item.title]["content"]))

    return [job(Item(qid, row["title"], row["question"]))
            for qid, row in question_rows(out / QUESTIONS)
            if row.get("title") is not None
            and records.get(qid, {}).get("question") != row["question"]]


def grounded_forms(config: BuildConfig, sources: list[str], done: set[str]
                   ) -> dict[str, list[tuple[Query, str]]]:
    """`--style grounded`: per gold article, the (query, criterion) forms not written yet, of
    the groups queries.jsonl keeps (or would keep, chosen without writing it)."""
    _require(config.out, "facts", "build --stage facts first (it makes no LLM call)")
    if (config.out / QUERIES).exists():
        kept = write_queries(config.out, sources, config.templates, config.groups, config.seed)
    else:
        queries, groups = fill_queries(config.out, sources, config.templates, config.groups,
                                       config.seed)
        kept = [query for query in queries if query.group in groups]
    forms: dict[str, list[tuple[Query, str]]] = {}
    for query in kept:
        for criterion in config.criteria:
            if form_id(query, criterion) not in done:
                forms.setdefault(query.gold_title, []).append((query, criterion))
    return forms


def control_jobs(config: BuildConfig, articles: dict[str, dict[str, Any]],
                 done: set[str]) -> list[Job]:
    """A job per `--control` question not written yet (builders/traffic/kinds.py): the same question
    writer, style `creative`, about articles chosen as the build would (general queries make no
    call)."""
    if not config.control:
        return []
    control = replace(config, questions_from=CONTROL)
    titles = read_titles(config.out, CONTROL) if titles_path(config.out, CONTROL).exists() \
        else choose_control(config)
    cutoff = config.cutoff.isoformat()

    def job(title: str) -> Job:
        def run(planner: Planner) -> None:
            planner.chat("builder", **question_request(
                title, articles[title]["content"][:ARTICLE_CHARS], "creative", cutoff, 0))
        return Job(f"control {title}", run)

    return [job(title) for position, title in enumerate(titles)
            if _question_id(control, position, 0) not in done]
