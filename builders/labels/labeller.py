"""Question labels by the `labeller` role (docs/methods.md#question-labels): for each (gold article,
question) pair one forced `assign_label` call, strictly parsed; a reply that names no known label
(after one more attempt) is `unknown`, kept with its reason and raw replies.

`labels.jsonl` in the dataset directory is the stage file: one record per labelled question (id,
question, label, reason, raw replies, tokens), appended as each finishes, so an interrupted
labelling resumes where it stopped and a finished one makes no call at all. A question whose text
changed since it was labelled is labelled again (the last record of an id wins). When every
question has its label, `questions.jsonl` is rewritten (atomically, line for line, every other
field kept) with the `label` field that `freshrag.core.dataset` loads into `Question.label`. A label in
`questions.jsonl` that the labeller did not give (a hand label) is never overwritten: the
labelling is refused before any call, naming the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freshrag.builders.forced import ReplyError, forced_call
from freshrag.builders.labels.prompts import LABEL_TOOL, LABELLER_PROMPT, messages
from freshrag.builders.prompts import article_text
from freshrag.builders.records import read_records
from freshrag.core.concurrency import map_with_progress

# the loader's own line reader and id rule, so that ids here are the ids a run records
from freshrag.core.dataset import DatasetError, dataset_rows, load_dataset_dir, question_id
from freshrag.core.files import atomic_open, dumps
from freshrag.core.jsonl import JsonlWriter
from freshrag.core.textfile import lines
from freshrag.core.types import ARTICLE_CHARS, LABELS, LLM, UNKNOWN

LABELS_FILE = "labels.jsonl"
LABEL_MAX_TOKENS = 48  # one enum value: a bound keeps a padding local model from running on


@dataclass(frozen=True)
class Item:
    id: str
    title: str
    question: str


def parse_label(values: dict[str, Any]) -> str:
    label = values.get("label")
    if label not in LABELS:
        raise ReplyError(f"label is {str(label)[:100]!r}, not one of {', '.join(LABELS)}")
    return label


def label_one(llm: LLM, item: Item, content: str) -> dict[str, Any]:
    """The label record of one (article, question) pair."""
    outcome = forced_call(
        llm, "labeller", LABEL_TOOL,
        lambda text: messages(LABELLER_PROMPT, f"Question: {item.question}\n\nWikipedia "
                                               f"article:\n{article_text(item.title, text)}"),
        parse_label, text=content[:ARTICLE_CHARS], max_tokens=LABEL_MAX_TOKENS)
    return {"id": item.id, "title": item.title, "question": item.question,
            "label": outcome.value if outcome.ok else UNKNOWN,
            "model": outcome.calls[-1].model if outcome.calls else None, **outcome.record()}


def label_questions(llm: LLM, items: list[Item], contents: dict[str, str], path: Path,
                    concurrency: int) -> dict[str, dict[str, Any]]:
    """The label record of every item, asking only for those `path` does not hold yet."""
    records = latest_records(path)
    todo = [item for item in items if records.get(item.id, {}).get("question") != item.question]
    writer = JsonlWriter(path)

    def one(item: Item) -> dict[str, Any]:
        record = label_one(llm, item, contents[item.title])
        writer.write(record)
        return record

    try:
        for record in map_with_progress(one, todo, concurrency, desc="labels", unit="question"):
            records[record["id"]] = record
    finally:
        writer.close()
    return {item.id: records[item.id] for item in items}


def latest_records(path: Path) -> dict[str, dict[str, Any]]:
    return {record["id"]: record for record in read_records(path)}


def label_dataset(llm: LLM, directory: Path, concurrency: int) -> list[dict[str, Any]]:
    """Label every question of a dataset directory that has a gold article and write the labels
    into its questions.jsonl. Returns one row per labelled question, in file order: id, label,
    requested_label (or None)."""
    dataset = load_dataset_dir(directory)
    questions_path, path = dataset.files["questions"], directory / LABELS_FILE
    check_no_foreign_labels(questions_path, path)
    # a general query (mixed traffic) has no gold article: a label says how an article
    # answers, so it gets none
    questions = [q for q in dataset.questions if q.gold_title is not None]
    records = label_questions(
        llm, [Item(q.id, q.gold_title, q.text) for q in questions if q.gold_title is not None],
        {title: article.content for title, article in dataset.articles.items()}, path,
        concurrency)
    write_labels(questions_path, {qid: record["label"] for qid, record in records.items()})
    requested = {qid: row.get("requested_label") for qid, row in question_rows(questions_path)}
    return [{"id": q.id, "label": records[q.id]["label"], "requested_label": requested[q.id]}
            for q in questions]


def question_rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(id, row) of every question line, with the loader's ids."""
    return [(question_id(row, path, line_no), row) for line_no, row in dataset_rows(path)]


def check_no_foreign_labels(questions_path: Path, labels_path: Path) -> None:
    given = {(record["id"], record["label"]) for record in read_records(labels_path)}
    for line_no, row in dataset_rows(questions_path):
        qid = question_id(row, questions_path, line_no)
        if row.get("label") is not None and (qid, row["label"]) not in given:
            raise DatasetError(
                f"{questions_path}:{line_no}: question {qid!r} already has the label "
                f"{row['label']!r}, which the labeller did not give; freshrag label would "
                f"overwrite it: move such labels into a file for --hand-labels (JSON Lines: "
                f"id, label) and remove them from {questions_path.name}")


def write_labels(path: Path, labels: dict[str, str]) -> None:
    """Set `label` on every question line whose id is in `labels`, all else kept as it was;
    blank lines too, since ids made from line numbers must not move."""
    with atomic_open(path) as out:  # whole or not at all
        for line_no, line in lines(path, DatasetError):
            if line.strip():
                row = json.loads(line)
                qid = question_id(row, path, line_no)
                if qid in labels:
                    row["label"] = labels[qid]
                line = dumps(row, ensure_ascii=False)
            out.write(line + "\n")


def read_hand_labels(path: Path, ids: set[str]) -> dict[str, str]:
    """`{"id", "label"}` lines; any bad line is refused naming the file and line."""
    hand: dict[str, str] = {}
    for line_no, row in dataset_rows(path):
        qid, label = row.get("id"), row.get("label")
        if isinstance(qid, bool) or not isinstance(qid, (str, int)) or not str(qid).strip():
            raise DatasetError(f"{path}:{line_no}: field 'id' must be a question's id (a "
                               f"non-empty string or a whole number), got {qid!r:.80}")
        qid = str(qid)
        if qid not in ids:
            raise DatasetError(f"{path}:{line_no}: id {qid!r:.80} is not a question of the dataset")
        if label not in LABELS:
            raise DatasetError(f"{path}:{line_no}: field 'label' is {label!r:.80}; it must be one "
                               f"of {', '.join(LABELS)}")
        if qid in hand:
            raise DatasetError(f"{path}:{line_no}: id {qid!r:.80} is labelled twice")
        hand[qid] = label
    if not hand:
        raise DatasetError(f"{path}: no hand labels")
    return hand
