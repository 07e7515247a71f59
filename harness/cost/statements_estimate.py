"""`freshrag build --dry-run` for `--style statements` (builders/styles/statement_questions.py): per
article, the statement extraction (theme, facts, summaries, conclusions) unless
`statements.jsonl` has it, then each of its slots without a line in `candidates.jsonl`: the
question, its critique, and the labeller's label for a question the critique keeps. Walked
through the builder's own functions, so a made-up reply's lists (empty, or a few items long)
decide which later calls happen: the range. docs/costs.md#dry-run.
"""

from __future__ import annotations

from typing import Any

from freshrag.builders.labels.labeller import Item, label_one
from freshrag.builders.styles.statement_questions import (
    CANDIDATES_FILE,
    drop_reason,
    write_candidate,
)
from freshrag.builders.styles.statements import STATEMENTS_FILE, Slot, extract, plan
from freshrag.core.jsonl import read_jsonl
from freshrag.cost.plan import Planner


class StatementsWalk:
    """What the statements style still asks about each article of `titles`."""

    def __init__(self, config: Any, titles: list[str], articles: dict[str, dict[str, Any]]):
        self.config, self.articles = config, articles
        self.records = {row["title"]: row for row in read_jsonl(config.out / STATEMENTS_FILE)}
        done = {row["id"] for row in read_jsonl(config.out / CANDIDATES_FILE)}
        self.slots: dict[str, list[Slot]] = {}
        for slot in plan(titles, config.labels, config.questions_per_article, config.seed,
                         config.questions_from):
            self.slots.setdefault(slot.title, []).append(slot)
        self.todo = {title: [slot for slot in slots if slot.id not in done]
                     for title, slots in self.slots.items()}

    def run(self, planner: Planner, title: str) -> None:
        """One article's calls, as the live build makes them (labels: every statements build
        labels its questions)."""
        if title not in self.slots:
            return
        article = self.articles[title]
        record = self.records.get(title) or extract(planner, title, article["content"])
        for slot in self.todo[title]:
            row = write_candidate(planner, slot, article, record, self.config)
            if row["status"] == "ok" and drop_reason(row, self.config.min_critique) is None:
                label_one(planner, Item(slot.id, title, row["question"]), article["content"])
