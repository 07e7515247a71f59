"""The `statements` question style (docs/labels.md#the-statements-style), the second half: for each
planned slot (builders/styles/statements.py) a question written to be answered by one statement of the
wanted kind, or for `unanswerable` a question on the article's subject that it cannot answer; the
question's critique (builders/styles/critiques.py); then the dataset's `questions.jsonl`.

Each slot is one line of `candidates.jsonl`, written when its question and critique are done,
failed ones included with the reason and raw replies (`failure`: `no_statements`, `no_question`,
`too_long`), so a resumed build asks only for slots it has no line of. `questions.jsonl` is then
rebuilt from the candidates: those written and not dropped by the critique thresholds, each with
`requested_label`, the statement as `reference`, its `critique` ratings, and the labeller's `label`
where `labels.jsonl` has one. Thresholds only filter, so changing `--min-critique` rebuilds the
question set without a call.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freshrag.builders.forced import TRIES, forced_call, text_field, usage_record
from freshrag.builders.labels.labeller import LABELS_FILE, Item, label_one, latest_records
from freshrag.builders.labels.prompts import (
    QUESTION_PROMPT,
    QUESTION_TOOL,
    UNANSWERABLE_PROMPT,
    messages,
)
from freshrag.builders.prompts import article_text
from freshrag.builders.records import read_records
from freshrag.builders.styles import critiques
from freshrag.builders.styles.base import Articles, Config, Plain, Walk, options_of, read_articles
from freshrag.builders.styles.statements import (
    STATEMENTS_FILE,
    LabelSpec,
    Slot,
    extract,
    parse_label_spec,
    pick_statement,
    plan,
)
from freshrag.core.concurrency import map_with_progress
from freshrag.core.jsonl import JsonlWriter, replace_jsonl
from freshrag.core.records import Manifest
from freshrag.core.types import ARTICLE_CHARS, LABELS, LLM

CANDIDATES_FILE = "candidates.jsonl"
QUESTION_MAX_TOKENS = 128
QUESTION_TEMPERATURE = 1.0  # as the paper's question writer: varied wording across samples


@dataclass(frozen=True)
class StatementOptions:
    """`--style statements`' options: the labels aimed for (`Statements.labels` of --labels) and
    the critique's thresholds (--min-critique)."""

    labels: LabelSpec | None = None
    min_critique: tuple[tuple[str, int], ...] = ()  # (criterion, minimum)


class Statements(Plain):
    """The style object (builders/styles/base.py): its builds always label their questions,
    `--labels` (equal shares of the four by default) and `--min-critique` are its options."""

    name = "statements"
    description = "label-targeted from extracted statements, critiqued, labelled"
    files = (STATEMENTS_FILE, CANDIDATES_FILE)
    always_labels = True
    takes_labels = True
    options = StatementOptions

    def labels(self, given: LabelSpec | None) -> LabelSpec:
        return given or parse_label_spec(",".join(f"{label}=0.25" for label in LABELS))

    def settings(self, config: Config) -> dict[str, Any]:
        labels = options_of(config, StatementOptions).labels
        return {"labels": labels.text() if labels else None}

    def manifest(self, config: Config) -> Manifest:
        # a filter: changing it rebuilds
        return {"min_critique": dict(options_of(config, StatementOptions).min_critique)}

    def write_questions(self, llm: LLM, config: Config, titles: list[str]) -> int:
        return build_statement_questions(llm, config.out, titles, read_articles(config.out),
                                         config)

    def walk(self, config: Config, titles: list[str], articles: Articles, done: set[str],
             known: bool) -> Walk:
        return StatementsWalk(config, titles, articles).run


STATEMENTS = Statements()


def build_statement_questions(llm: LLM, out: Path, titles: list[str],
                              articles: dict[str, dict[str, Any]], config: Config) -> int:
    """Statements, candidates and `questions.jsonl` for `titles`; returns the questions kept.
    `config` is the build's BuildConfig (labels, seed, thresholds, concurrency)."""
    given = options_of(config, StatementOptions)
    slots = plan(titles, STATEMENTS.labels(given.labels), config.questions_per_article,
                 config.seed, config.questions_from)
    records = _statements(llm, out, sorted({slot.title for slot in slots}, key=titles.index),
                          articles, config.concurrency)
    done = {row["id"] for row in read_records(out / CANDIDATES_FILE)}
    writer = JsonlWriter(out / CANDIDATES_FILE)
    try:
        map_with_progress(lambda slot: writer.write(write_candidate(
            llm, slot, articles[slot.title], records[slot.title], config)),
            [slot for slot in slots if slot.id not in done], config.concurrency,
            desc="questions", unit="question")
    finally:
        writer.close()
    return assemble(out, slots, given.min_critique)


def _statements(llm: LLM, out: Path, titles: list[str], articles: dict[str, dict[str, Any]],
                concurrency: int) -> dict[str, dict[str, Any]]:
    path = out / STATEMENTS_FILE
    records = {row["title"]: row for row in read_records(path)}
    writer = JsonlWriter(path)

    def one(title: str) -> dict[str, Any]:
        record = extract(llm, title, articles[title]["content"])
        writer.write(record)
        return record

    try:
        for record in map_with_progress(one, [t for t in titles if t not in records],
                                        concurrency, desc="statements", unit="article"):
            records[record["title"]] = record
    finally:
        writer.close()
    return records


def write_candidate(llm: LLM, slot: Slot, article: dict[str, Any], record: dict[str, Any],
                    config: Config) -> dict[str, Any]:
    """One slot's candidate line: the question, its statement and critique, or why it failed."""
    content = article["content"][:ARTICLE_CHARS]
    row: dict[str, Any] = {
        "id": slot.id, "title": slot.title, "requested_label": slot.label, "question": None,
        "reference": None, "status": "failed", "failure": None, "reason": None,
        "question_raw": [], "critique": None, "critique_reason": None, "critique_raw": [],
        "revision_id": article.get("revision_id"), "created": article.get("created"),
        "month": article.get("month"), "generator": None, "style": "statements",
        "stage": config.questions_from, "usage": usage_record([])}
    theme = record.get("theme") or slot.title
    if slot.label == "unanswerable":
        outcome = forced_call(llm, "builder", QUESTION_TOOL, lambda text: messages(
            UNANSWERABLE_PROMPT, f"Subject: {theme}\n\nWikipedia article:\n"
                                 f"{article_text(slot.title, text)}"),
            _question, text=content, max_tokens=QUESTION_MAX_TOKENS,
            temperature=QUESTION_TEMPERATURE, first_attempt=slot.nth * TRIES)
    else:
        statement, why_not = pick_statement(record, slot, config.seed)
        if statement is None:
            return {**row, "failure": "no_statements", "reason": why_not}
        row["reference"] = statement
        outcome = forced_call(llm, "builder", QUESTION_TOOL, lambda _: messages(
            QUESTION_PROMPT, f"Subject: {theme}\n\nStatement: {statement}"), _question,
            max_tokens=QUESTION_MAX_TOKENS, temperature=QUESTION_TEMPERATURE,
            first_attempt=slot.nth * TRIES)
    row.update(question_raw=outcome.raw, generator=outcome.calls[-1].model if outcome.calls
               else None, usage=usage_record(outcome.calls))
    if not outcome.ok:
        failure = "too_long" if (outcome.reason or "").startswith("article ") else "no_question"
        return {**row, "failure": failure, "reason": outcome.reason}
    rated = critiques.critique(llm, slot.title, content, outcome.value, row["reference"])
    return {**row, "question": outcome.value, "status": "ok", "critique": rated.value,
            "critique_reason": rated.reason, "critique_raw": rated.raw,
            "usage": usage_record(outcome.calls + rated.calls)}


def _question(values: dict[str, Any]) -> str:
    return text_field(values, "question", 1_000)


def assemble(out: Path, slots: list[Slot], thresholds: tuple[tuple[str, int], ...]) -> int:
    """Rewrite `questions.jsonl` from the candidates (in plan order) that are kept."""
    order = {slot.id: k for k, slot in enumerate(slots)}
    candidates = sorted((row for row in read_records(out / CANDIDATES_FILE) if row["id"] in order),
                        key=lambda row: order[row["id"]])
    labels = latest_records(out / LABELS_FILE)
    kept = [question_row(row, labels.get(row["id"])) for row in candidates
            if row["status"] == "ok" and drop_reason(row, thresholds) is None]
    return replace_jsonl(out / "questions.jsonl", kept)  # whole or not at all


def question_row(candidate: dict[str, Any], label: dict[str, Any] | None) -> dict[str, Any]:
    fresh = label is not None and label["question"] == candidate["question"]
    return {key: candidate[key] for key in ("id", "title", "question", "requested_label",
                                            "reference", "critique", "revision_id", "generator",
                                            "style", "stage")} | {
        "created": candidate.get("created"), "month": candidate.get("month"),
        "label": label["label"] if fresh and label is not None else None}


def drop_reason(candidate: dict[str, Any], thresholds: tuple[tuple[str, int], ...]) -> str | None:
    return critiques.drop_reason(candidate["critique"], thresholds,
                                 candidate["requested_label"] == "unanswerable")


def statements_funnel(out: Path, thresholds: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    """The style's part of the funnel: candidates = written + not written (by failure);
    written = kept + dropped (by reason); statement steps that failed, per step."""
    candidates = read_records(out / CANDIDATES_FILE)
    written = [row for row in candidates if row["status"] == "ok"]
    records = read_records(out / STATEMENTS_FILE)
    steps = [(kind, step) for record in records for kind, step in record["steps"].items()
             if step["reason"]]  # asked and unusable, or not asked (no facts to build on)
    return {"statement_articles": len(records),
            "statement_steps_failed": dict(Counter(kind for kind, step in steps if step["raw"])),
            "statement_steps_not_asked": dict(Counter(kind for kind, step in steps
                                                      if not step["raw"])),
            "candidates": len(candidates), "written": len(written),
            "not_written": dict(Counter(row["failure"] for row in candidates
                                        if row["status"] != "ok")),
            "dropped": dict(Counter(reason for row in written
                                    if (reason := drop_reason(row, thresholds)))),
            "requested": dict(Counter(row["requested_label"] for row in candidates))}


class StatementsWalk:
    """What the style still asks about each article of `titles`, for `build --dry-run`: the
    statement extraction (unless `statements.jsonl` has it), then each of its slots without a
    line in `candidates.jsonl`: the question, its critique, and the labeller's label for a
    question the critique keeps. Walked through the functions above, so a made-up reply's lists
    (empty, or a few items long) decide which later calls happen: the range."""

    def __init__(self, config: Config, titles: list[str], articles: Articles):
        self.config, self.articles = config, articles
        self.records = {row["title"]: row for row in read_records(config.out / STATEMENTS_FILE)}
        done = {row["id"] for row in read_records(config.out / CANDIDATES_FILE)}
        self.slots: dict[str, list[Slot]] = {}
        given = options_of(config, StatementOptions)
        for slot in plan(titles, STATEMENTS.labels(given.labels), config.questions_per_article,
                         config.seed, config.questions_from):
            self.slots.setdefault(slot.title, []).append(slot)
        self.todo = {title: [slot for slot in slots if slot.id not in done]
                     for title, slots in self.slots.items()}

    def run(self, llm: LLM, position: int, title: str, label: bool) -> None:
        """One article's calls, as the live build makes them (every statements build labels its
        questions, `label` or not)."""
        if title not in self.slots:
            return
        article = self.articles[title]
        record = self.records.get(title) or extract(llm, title, article["content"])
        thresholds = options_of(self.config, StatementOptions).min_critique
        for slot in self.todo[title]:
            row = write_candidate(llm, slot, article, record, self.config)
            if row["status"] == "ok" and drop_reason(row, thresholds) is None:
                label_one(llm, Item(slot.id, title, row["question"]), article["content"])
