"""The labelling page of `freshrag report --html F --label` (docs/reports.md#labelling-answers):
answers shown one at a time for people to grade, blind to the system and to the judge.

The page is the report's viewer in another mode: one self-contained file, offline, its data in a
`<script type="application/json">` element (viewer.py `json_script`) that its script
(assets/labelling.js) puts on the page as text only. It carries, per answer, only what a person
grades by: the question, its reference answer, its gold articles' titles and the article the
judge read (stored once per question), and the answer, with the answer's opaque `key` and
`answer_sha256` (reporting/labels.py). No system's name, model, run directory, grade, judge's
reason, token count or anything else that tells systems apart is in the page, and the answers
come in an order shuffled by `seed`, so that not even their order tells.

An answer that two rows hold under one key (the same system over the same questions in two run
directories) is shown once: its label pairs with both. Failed pairs have no answer to grade.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

from freshrag.core.files import write_text
from freshrag.core.records import SampleRow
from freshrag.reporting.labels import FORMAT, row_key
from freshrag.reporting.render.viewer import ASSETS, gold_passage, json_script
from freshrag.scoring.store import answer_sha256

REPORT_ID_CHARS = 16  # of the page's id: its labels' place in the browser's storage


def label_items(rows: list[SampleRow], seed: int, sample: int | None = None
                ) -> tuple[list[dict[str, Any]], list[str]]:
    """The answers to label, in the seeded order, the first `sample` of them (None: all), and
    the gold articles' texts they refer to by number (`passage`)."""
    seen: set[tuple[str, str]] = set()
    chosen = []
    for row in rows:
        ident = (row_key(row), answer_sha256(row.get("answer")))
        if row["status"] != "failed" and ident not in seen:
            seen.add(ident)
            chosen.append(row)
    random.Random(seed).shuffle(chosen)
    chosen = chosen[:sample]
    passages: dict[str, int] = {}
    items = []
    for row in chosen:
        passage = gold_passage(row)
        items.append({
            "dataset": row.get("dataset") or "", "question_id": str(row["question_id"]),
            "question": row.get("question") or "", "reference": row.get("reference"),
            "gold_titles": row.get("gold_titles") or [t for t in [row.get("gold_title")] if t],
            "passage": None if passage is None else passages.setdefault(passage, len(passages)),
            "answer": row.get("answer") or "", "key": row_key(row),
            "answer_sha256": answer_sha256(row.get("answer"))})
    return items, list(passages)


def report_id(items: list[dict[str, Any]], seed: int) -> str:
    """The page's own id: the same answers in the same order give the same id, so a page made
    again keeps its labels in the browser, and two other pages never mix theirs."""
    text = f"{seed}\n" + "".join(f"{i['key']}:{i['answer_sha256']}\n" for i in items)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:REPORT_ID_CHARS]


def render_label_page(rows: list[SampleRow], seed: int, sample: int | None = None
                      ) -> tuple[str, int]:
    """The whole page as a string (see the module docstring), and how many answers it holds."""
    items, passages = label_items(rows, seed, sample)
    data = {"format": FORMAT, "report": report_id(items, seed), "seed": seed,
            "items": items, "passages": passages}
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>freshrag labelling</title>\n<style>{_asset('labelling.css')}</style>\n"
            f"</head>\n<body>\n{_asset('labelling.html')}\n{json_script('label-data', data)}\n"
            f"<script>{_asset('labelling.js')}</script>\n</body>\n</html>\n")
    return page, len(items)


def write_label_page(rows: list[SampleRow], path: Path, seed: int,
                     sample: int | None = None) -> int:
    """Write the page to `path` (parents created); how many answers it holds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    page, count = render_label_page(rows, seed, sample)
    write_text(path, page)
    return count


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")
