"""The labelling page keeps every label and stays blind (docs/reports.md#labelling-answers): in
headless Chromium (tests/support/dom.py), twelve answers labelled by the documented keys alone,
whatever the focus was left on (the button that started, a score or a navigation button, the
article's fold); a grade replaced only in plain sight; the save saying what is not labelled yet;
leaving asking first. Then a labeller set on finding out tries to recover each answer's system
from the page, with the systems' names in hand, and cannot.

Two systems under built-in names answer six questions, so that the attack knows every name."""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from freshrag.reporting.labels import read_labels, resolve
from freshrag.reporting.loading import load_runs
from freshrag.reporting.render.labelling import render_label_page
from freshrag.systems import SYSTEMS
from tests.support.dom import browser
from tests.support.labelling import labelling_tab, page_data, pressed, row, saved
from tests.support.rows import summaries
from tests.support.runs import write_run

QUESTIONS = [f"q{i}" for i in range(6)]
NAMES = ("naive", "oracle")
GRADES = [(1 + i % 5, 1 + (i * 2) % 5) for i in range(12)]  # the i-th answer shown's grades
RELEVANCE_ROW = "qwert"  # the row under the digits, by position


def twelve(tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    rows = [row(q, system, f"{system} thinks {q} opened in {2010 + i}.")
            for i, (q, system) in enumerate(itertools.product(QUESTIONS, NAMES))]
    run = write_run(tmp_path / "run", rows)
    return run, load_runs([run])


def page_of(tmp_path: Path, rows: list[dict[str, Any]], seed: int = 0) -> Path:
    page = tmp_path / f"label-{seed}.html"
    page.write_text(render_label_page(rows, seed=seed)[0], encoding="utf-8")
    return page


def focused(tab) -> str:
    return tab.evaluate("document.activeElement.id || document.activeElement.tagName")


def grade_by_keys(tab, index: int) -> None:
    """The index-th answer's grades, truthfulness by digit, relevance by Shift+digit or the row
    under the digits (in turn), then Enter to the next."""
    truth, rel = GRADES[index]
    tab.keyboard.press(f"Digit{truth}")
    tab.keyboard.press(f"Shift+Digit{rel}" if index % 2 else RELEVANCE_ROW[rel - 1])
    tab.keyboard.press("Enter")


@pytest.mark.integration
@pytest.mark.parametrize("starting", ["click", "enter"])
def test_twelve_answers_by_keys_alone_twelve_labels_saved(tmp_path: Path, starting: str) -> None:
    _, rows = twelve(tmp_path)
    page = page_of(tmp_path, rows)
    with browser() as chromium, labelling_tab(chromium, page.as_uri()) as tab:
        tab.fill("#label-name", "ada")
        if starting == "click":  # the focus left on the button that started, as people do
            tab.click("#label-start")
        else:
            tab.keyboard.press("Enter")
        tab.wait_for_selector("#label-card", state="visible")
        assert focused(tab) == "label-answer"
        shown = []
        for index in range(12):
            shown.append(tab.text_content("#label-answer"))
            grade_by_keys(tab, index)
        assert tab.text_content("#label-progress") == "12 of 12 labelled"
        assert "last answer; 0 not labelled yet" in tab.text_content("#label-said")
        labels = read_labels([saved(tab, tmp_path / "ada.jsonl")])
        assert "every answer labelled" in tab.text_content("#label-saved")
    assert len(labels) == 12 and len(set(shown)) == 12
    by_answer = {label.answer_sha256: (label.truthfulness, label.relevance) for label in labels}
    assert [by_answer[hashlib.sha256(text.encode()).hexdigest()] for text in shown] == GRADES
    resolved = resolve(labels, summaries(rows))
    assert (len(resolved.pairs), resolved.unknown, resolved.changed) == (12, 0, 0)
    assert all(r.answer in shown for r, _ in resolved.pairs)


@pytest.mark.integration
def test_the_keys_work_wherever_the_mouse_left_the_focus(tmp_path: Path) -> None:
    _, rows = twelve(tmp_path)
    with browser() as chromium, labelling_tab(chromium, page_of(tmp_path, rows).as_uri()) as tab:
        tab.fill("#label-name", "ada")
        tab.click("#label-start")
        tab.click("#label-truthfulness button[data-score='2']")  # the focus on a score button
        tab.keyboard.press("Shift+Digit3")
        tab.keyboard.press("Enter")  # next, not that button's click again
        assert tab.text_content("#label-position") == "Answer 2 of 12"
        tab.click("#label-next")  # on a navigation button
        tab.keyboard.press("4")
        tab.keyboard.press("e")
        tab.keyboard.press("Enter")
        assert tab.text_content("#label-position") == "Answer 4 of 12"
        tab.click("#label-passage-box summary")  # on the article's fold
        tab.keyboard.press("5")
        tab.keyboard.press("t")
        tab.keyboard.press("ArrowLeft")
        assert tab.text_content("#label-position") == "Answer 3 of 12"
        tab.fill("#label-name", "ben")
        tab.click("#label-start")  # "Change name": the focus goes to the answer again
        assert focused(tab) == "label-answer"
        tab.keyboard.press("1")
        tab.keyboard.press("q")
        tab.keyboard.press("n")
        tab.keyboard.type("123 qwe")  # in the note, keys are text
        tab.keyboard.press("Escape")
        assert focused(tab) == "label-answer"
        tab.keyboard.press("Enter")
        ben = read_labels([saved(tab, tmp_path / "ben.jsonl")])
        tab.fill("#label-name", "ada")
        tab.keyboard.press("Enter")
        ada = read_labels([saved(tab, tmp_path / "ada.jsonl")])
    assert [(x.truthfulness, x.relevance) for x in ada] == [(2, 3), (4, 3), (5, 5)]
    assert [(x.truthfulness, x.relevance, x.note) for x in ben] == [(1, 1, "123 qwe")]


@pytest.mark.integration
def test_a_grade_is_replaced_only_in_plain_sight_and_unlabelled_answers_are_said(
        tmp_path: Path) -> None:
    _, rows = twelve(tmp_path)
    with browser() as chromium, labelling_tab(chromium, page_of(tmp_path, rows).as_uri()) as tab:
        tab.fill("#label-name", "ada")
        tab.keyboard.press("Enter")
        tab.keyboard.press("3")
        tab.keyboard.press("Shift+Digit4")
        assert tab.text_content("#label-said") == ""  # a first grade replaces nothing
        tab.keyboard.press("Enter")
        tab.keyboard.press("ArrowLeft")
        tab.keyboard.press("5")
        assert tab.text_content("#label-said") == "Answer 1: truthfulness changed from 3 to 5."
        assert (pressed(tab, "truthfulness"), pressed(tab, "relevance")) == (["5"], ["4"])
        tab.keyboard.press("ArrowRight")
        tab.keyboard.press("2")  # one score: not a label yet
        saved(tab, tmp_path / "ada.jsonl")
        assert "Saved 1 label as" in tab.text_content("#label-saved")
        assert "11 of 12 answers not labelled yet" in tab.text_content("#label-saved")
        tab.reload()  # leaving with answers unlabelled asks first
        tab.wait_for_selector("#label-card", state="visible")
        assert tab.warned == ["beforeunload"]
        assert tab.text_content("#label-progress") == "1 of 12 labelled"


@pytest.mark.integration
def test_leaving_with_every_answer_labelled_and_saved_asks_nothing(tmp_path: Path) -> None:
    _, rows = twelve(tmp_path)
    with browser() as chromium, labelling_tab(chromium, page_of(tmp_path, rows).as_uri()) as tab:
        tab.fill("#label-name", "ada")
        tab.keyboard.press("Enter")
        for index in range(12):
            grade_by_keys(tab, index)
        tab.reload()  # labelled, not saved: asks
        tab.wait_for_selector("#label-card", state="visible")
        saved(tab, tmp_path / "ada.jsonl")
        tab.reload()
        tab.wait_for_selector("#label-card", state="visible")
        assert tab.warned == ["beforeunload"]


# --------------------------------------------------------------------------- blind for real


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def guesses(item: dict[str, Any], system: str, strings: list[str]) -> set[str]:
    """Digests a labeller could try for an answer of `system`: its visible fields with the
    system's name, joined by line breaks or nothing, with any string of the page before them."""
    parts = [item["dataset"], item["question_id"], system]
    tried = set()
    for extra in [[], *([s] for s in strings)]:
        for fields in (parts, [*parts, item["answer_sha256"]], [*parts, item["answer"]]):
            for joiner in ("\n", "", ":", "|"):
                tried.add(sha(joiner.join(extra + fields)))
    return tried


def test_the_page_tells_no_system_to_a_labeller_set_on_finding_out(tmp_path: Path) -> None:
    _, rows = twelve(tmp_path)
    # a third system that gave naive's text to q0: one answer to a blind person, shown once
    rows.append({**rows[0], "system": "react"})
    page, _ = render_label_page(rows, seed=4)
    data = page_data(page)
    items = data["items"]
    assert len(items) == 12 and len({(i["question_id"], i["answer"]) for i in items}) == 12
    names = sorted(set(SYSTEMS.names()) | {"react"})
    assert set(NAMES) <= set(names)
    # every string of the page's data, the salt among them, as a possible salt or prefix
    strings = sorted({s for s in re.findall(r'"([^"\\]{1,200})"', json.dumps(data))})
    for item in items:
        keyed = {item["key"]}
        for system in names:
            assert not keyed & guesses(item, system, strings), (item["question_id"], system)
    # undoing the shuffle (the seed is on the page) gives the answers sorted by what the page
    # shows, not the rows' order, which follows the systems
    order = list(range(len(items)))
    random.Random(data["seed"]).shuffle(order)
    unshuffled = [items[order.index(i)] for i in range(len(items))]
    visible = [(i["dataset"], i["question_id"], i["answer_sha256"]) for i in unshuffled]
    assert visible == sorted(visible)
    # nothing else of the item varies with its system: its fields are the question's or the text's
    for item in items:
        assert set(item) == {"dataset", "question_id", "question", "reference", "gold_titles",
                             "passage", "answer", "key", "answer_sha256"}
    assert [i["answer"] for i in items].count(rows[0]["answer"]) == 1


def test_keys_are_salted_per_page_and_the_salt_goes_into_the_saved_labels(tmp_path: Path) -> None:
    _, rows = twelve(tmp_path)
    one, two = (page_data(render_label_page(rows, seed=0)[0]) for _ in range(2))
    assert re.fullmatch(r"[0-9a-f]{32}", one["salt"]) and one["salt"] != two["salt"]
    assert [i["answer"] for i in one["items"]] == [i["answer"] for i in two["items"]]
    assert not {i["key"] for i in one["items"]} & {i["key"] for i in two["items"]}
    assert one["report"] == two["report"]  # the browser keeps a page's labels made again
    fixed = page_data(render_label_page(rows, seed=0, salt="ab" * 16)[0])
    assert fixed["items"][0]["key"] == sha("ab" * 16 + "\n" + "\n".join(
        (fixed["items"][0][f] for f in ("dataset", "question_id", "answer_sha256"))))


@pytest.mark.integration
def test_the_salt_is_in_the_download_not_on_the_screen(tmp_path: Path) -> None:
    _, rows = twelve(tmp_path)
    page = page_of(tmp_path, rows)
    salt = page_data(page.read_text(encoding="utf-8"))["salt"]
    with browser() as chromium, labelling_tab(chromium, page.as_uri()) as tab:
        tab.fill("#label-name", "ada")
        tab.keyboard.press("Enter")
        tab.keyboard.press("2")
        tab.keyboard.press("w")
        tab.click("#label-passage-box summary")
        assert salt not in tab.evaluate("document.body.innerText")
        path = saved(tab, tmp_path / "ada.jsonl")
    (line,) = [json.loads(text) for text in path.read_text(encoding="utf-8").splitlines()]
    assert (line["freshrag_labels"], line["salt"]) == (2, salt)
    (label,) = read_labels([path])
    assert len(resolve([label], summaries(rows)).pairs) == 1
