"""The labelling page of `freshrag report --html F --label` (docs/reports.md#labelling-answers):
answers shown one at a time for people to grade, blind to the system and to the judge.

The page is the report's viewer in another mode: one self-contained file, offline, its data in a
`<script type="application/json">` element (viewer.py `json_script`) that its script
(assets/labelling.js) puts on the page as text only. It carries, per answer, only what a person
grades by: the question, its reference answer, its gold articles' titles and the article the
judge read (stored once per question), and the answer, with the answer's `answer_sha256` and its
`key` on this page (reporting/labels.py `page_key`: a digest of the page's random salt and of
what the page shows, nothing of a system). No system's name, model, run directory, grade, judge's
reason, token count or anything else that tells systems apart is in the page, and no value is
derived from one: an answer is a text given to a question, so a text that several systems (or
runs) gave to one question is shown once, and the order is the answers sorted by what the page
shows, then shuffled by `seed`, so that undoing the shuffle gives back nothing hidden.
Failed pairs have no answer to grade.
"""

from __future__ import annotations

import hashlib
import random
import secrets
from pathlib import Path
from typing import Any

from freshrag.core.files import write_text
from freshrag.core.records import SampleRow
from freshrag.core.summary import summary_of
from freshrag.reporting.labels import FORMAT, answer_of, page_key
from freshrag.reporting.render.viewer import ASSETS, gold_passage, json_script

REPORT_ID_CHARS = 16  # of the page's id: its labels' place in the browser's storage


def label_items(rows: list[SampleRow], seed: int, salt: str, sample: int | None = None
                ) -> tuple[list[dict[str, Any]], list[str]]:
    """The answers to label, in the seeded order, the first `sample` of them (None: all), and
    the gold articles' texts they refer to by number (`passage`)."""
    groups: dict[tuple[str, str, str], list[SampleRow]] = {}
    for row in rows:
        if row["status"] != "failed":
            groups.setdefault(answer_of(summary_of(row)), []).append(row)
    chosen = sorted(groups)  # by what the page shows: the rows' order follows the systems
    random.Random(seed).shuffle(chosen)
    passages: dict[str, int] = {}
    items = []
    for answer in chosen[:sample]:
        row = groups[answer][0]
        passage = next((found for held in groups[answer]
                        if (found := gold_passage(held)) is not None), None)
        dataset, question_id, text_sha256 = answer
        items.append({
            "dataset": dataset, "question_id": question_id,
            "question": row.get("question") or "", "reference": row.get("reference"),
            "gold_titles": row.get("gold_titles") or [t for t in [row.get("gold_title")] if t],
            "passage": None if passage is None else passages.setdefault(passage, len(passages)),
            "answer": row.get("answer") or "",
            "key": page_key(salt, dataset, question_id, text_sha256),
            "answer_sha256": text_sha256})
    return items, list(passages)


def report_id(items: list[dict[str, Any]], seed: int) -> str:
    """The page's own id: the same answers in the same order give the same id (whatever the
    salt), so a page made again keeps its labels in the browser, and two other pages never mix
    theirs."""
    text = f"{seed}\n" + "".join(f"{i['dataset']}\n{i['question_id']}\n{i['answer_sha256']}\n"
                                 for i in items)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:REPORT_ID_CHARS]


def render_label_page(rows: list[SampleRow], seed: int, sample: int | None = None,
                      salt: str | None = None) -> tuple[str, int]:
    """The whole page as a string (see the module docstring), and how many answers it holds;
    `salt` a new random one unless given (32 hex digits)."""
    salt = salt or secrets.token_hex(16)
    items, passages = label_items(rows, seed, salt, sample)
    data = {"format": FORMAT, "report": report_id(items, seed), "seed": seed, "salt": salt,
            "items": items, "passages": passages}
    page = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>freshrag labelling</title>\n<style>{_asset('labelling.css')}</style>\n"
            f"</head>\n<body>\n{_asset('labelling.html')}\n{json_script('label-data', data)}\n"
            f"<script>{_asset('counted.js')}{_asset('labelling.js')}</script>\n</body>\n</html>\n")
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
