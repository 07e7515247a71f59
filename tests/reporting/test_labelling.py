"""The labelling page of `freshrag report --html F --label` (docs/reports.md#labelling-answers):
its data holds only what a person grades by, in a seeded order; and a session driven in headless
Chromium (tests/support/dom.py: Playwright on Debian's chromium) with the keyboard, labels that
survive a reload, a download read back by reporting/labels.py and resolved to the run's rows,
two labellers' files merged, two pages' labels kept apart, and no system's name, model, run
directory or judge's reason ever in the page's text or its HTML source.

The runs are written here by hand, their names made so that no text meets them by chance."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.reporting.labels import read_labels, resolve
from freshrag.reporting.loading import load_runs
from freshrag.reporting.render.labelling import render_label_page
from tests.support.dom import browser
from tests.support.labelling import (
    ALPHA,
    ARTICLE,
    BETA,
    GAMMA,
    ITEM_FIELDS,
    RUNS,
    SECRETS,
    labelling_tab,
    page_data,
    pressed,
    row,
    saved,
)
from tests.support.rows import summaries
from tests.support.runs import SCRIPT_ANSWER, write_run

# answer text -> (run, system, question): each answer says nothing of who gave it
ANSWERS = {
    "It opened in May 2024.": (0, ALPHA, "q1"), "In 2023, I believe.": (0, BETA, "q1"),
    SCRIPT_ANSWER: (0, ALPHA, "q2"), "I do not know.": (0, BETA, "q2"),
    "Some time in 2024.": (0, ALPHA, "q3"), "Never, it is still being built.": (0, BETA, "q3"),
    # the second run: alpha again, one answer the same (shown once), one answered anew
    "In 2019, after a delay.": (1, ALPHA, "q2"),
}


def runs(tmp_path: Path) -> list[Path]:
    rows: list[list[dict[str, Any]]] = [[], []]
    for answer, (run, system, question) in ANSWERS.items():
        rows[run].append(row(question, system, answer,
                             reference="It opened on 3 May 2024." if question == "q1" else None))
    rows[0].append(row("q1", GAMMA, None, status="failed"))  # no answer to grade
    rows[1].append(row("q1", ALPHA, "It opened in May 2024."))  # as the first run's
    return [write_run(tmp_path / name, mine) for name, mine in zip(RUNS, rows)]


def test_the_page_holds_only_what_a_person_grades_by(tmp_path: Path) -> None:
    page, count = render_label_page(load_runs(runs(tmp_path)), seed=0)
    for secret in SECRETS:
        assert secret not in page
    data = page_data(page)
    items = data["items"]
    assert count == len(items) == len(ANSWERS)  # the failed pair left out, the repeat shown once
    assert all(set(item) == ITEM_FIELDS for item in items)
    assert sorted(item["answer"] for item in items) == sorted(ANSWERS)
    assert data["passages"] == [ARTICLE]  # the article the judge read, stored once
    q1 = [item for item in items if item["question_id"] == "q1"]
    assert {item["reference"] for item in q1} == {"It opened on 3 May 2024."}
    assert all(item["gold_titles"] == [f"Gold {item['question_id']}"] for item in items)


def test_the_order_follows_the_seed_and_a_sample_is_its_head(tmp_path: Path) -> None:
    rows = load_runs(runs(tmp_path))
    order = [item["answer"] for item in page_data(render_label_page(rows, seed=0)[0])["items"]]
    again = page_data(render_label_page(rows, seed=0)[0])
    other = page_data(render_label_page(rows, seed=1)[0])
    head = page_data(render_label_page(rows, seed=0, sample=3)[0])
    assert [item["answer"] for item in again["items"]] == order
    assert [item["answer"] for item in other["items"]] != order
    assert [item["answer"] for item in head["items"]] == order[:3]
    assert order != list(ANSWERS)  # not the rows' order, which follows the systems
    assert again["report"] != other["report"] != head["report"]
    assert (again["seed"], other["seed"]) == (0, 1)


def test_the_command_writes_the_page_and_nothing_else(tmp_path: Path, capsys) -> None:
    run_dirs = runs(tmp_path)
    page = tmp_path / "label.html"
    assert main(["report", *map(str, run_dirs), "--html", str(page), "--label",
                 "--label-seed", "5", "--label-sample", "4"]) == 0
    said = capsys.readouterr().out
    assert said == f"labelling page of 4 answers written to {page}\n"
    data = page_data(page.read_text(encoding="utf-8"))
    assert data["seed"] == 5 and len(data["items"]) == 4
    assert sorted(p.name for p in run_dirs[0].iterdir()) == ["samples.jsonl"]


@pytest.mark.parametrize(("extra", "message"), [
    pytest.param(["--label"], "--label: give --html PATH", id="label-without-html"),
    pytest.param(["--html", "x.html", "--label-seed", "3"], "only apply with --label",
                 id="seed-without-label"),
    pytest.param(["--html", "x.html", "--label-sample", "2"], "only apply with --label",
                 id="sample-without-label"),
    pytest.param(["--html", "x.html", "--label", "--human", "ada.jsonl"], "give one of them",
                 id="label-with-human"),
])
def test_labelling_options_out_of_place_are_refused(tmp_path: Path, capsys, extra: list[str],
                                                    message: str) -> None:
    run_dir = runs(tmp_path)[0]
    with contextlib.chdir(tmp_path):
        assert main(["report", str(run_dir), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


# --------------------------------------------------------------------------- in Chromium


def blind(tab) -> None:
    """Neither the page's text nor its HTML source names a system, model, run or reason."""
    text, source = tab.evaluate("document.body.innerText"), tab.content()
    for secret in SECRETS:
        assert secret not in text and secret not in source


@pytest.mark.integration
def test_a_labelling_session_by_keyboard_survives_a_reload_and_saves_labels(tmp_path: Path,
                                                                            capsys):
    run_dirs = runs(tmp_path)
    rows = load_runs(run_dirs)
    page = tmp_path / "label.html"
    assert main(["report", *map(str, run_dirs), "--html", str(page), "--label",
                 "--label-seed", "3"]) == 0
    other = tmp_path / "other.html"
    assert main(["report", *map(str, run_dirs), "--html", str(other), "--label",
                 "--label-seed", "9"]) == 0
    total = len(ANSWERS)
    with browser() as chromium, labelling_tab(chromium, page.as_uri()) as tab:
        assert tab.is_hidden("#label-card")
        tab.fill("#label-name", "ada")
        tab.keyboard.press("Enter")
        tab.wait_for_selector("#label-card", state="visible")
        blind(tab)
        shown = [tab.text_content("#label-answer")]
        tab.keyboard.press("3")
        tab.keyboard.press("Shift+Digit4")
        assert (pressed(tab, "truthfulness"), pressed(tab, "relevance")) == (["3"], ["4"])
        tab.keyboard.press("n")
        tab.keyboard.type("smells off; 2023?")
        tab.keyboard.press("Escape")
        tab.keyboard.press("ArrowRight")
        shown.append(tab.text_content("#label-answer"))
        tab.keyboard.press("5")
        tab.keyboard.press("w")  # the row under the digits: relevance 2
        tab.keyboard.press("Enter")
        tab.keyboard.press("2")  # one score only: not saved
        assert tab.text_content("#label-progress") == f"2 of {total} labelled"
        assert tab.text_content("#label-position") == f"Answer 3 of {total}"

        tab.reload()
        tab.wait_for_selector("#label-card", state="visible")  # the name was kept
        blind(tab)
        assert tab.text_content("#label-position") == f"Answer 3 of {total}"
        assert (pressed(tab, "truthfulness"), pressed(tab, "relevance")) == (["2"], [])
        tab.keyboard.press("ArrowLeft")
        tab.keyboard.press("ArrowLeft")
        assert tab.text_content("#label-answer") == shown[0]
        assert (pressed(tab, "truthfulness"), pressed(tab, "relevance")) == (["3"], ["4"])
        assert tab.input_value("#label-note") == "smells off; 2023?"

        ada = saved(tab, tmp_path / "ada.jsonl")
        labels = read_labels([ada])
        assert [(x.truthfulness, x.relevance, x.note) for x in labels] == \
            [(3, 4, "smells off; 2023?"), (5, 2, "")]
        assert all((x.labeller, x.seed) == ("ada", 3) for x in labels)
        resolved = resolve(labels, summaries(rows))
        assert (resolved.unknown, resolved.changed) == (0, 0)
        for label, answer in zip(labels, shown):
            run, system, question = ANSWERS[answer]
            matched = [r for r, x in resolved.pairs if x is label]
            # the answer both runs hold is shown once, and its label pairs with both rows
            assert len(matched) == (2 if answer == "It opened in May 2024." else 1)
            assert {(r.system, r.question_id, r.answer) for r in matched} == \
                {(system, question, answer)}

        every = [tab.text_content("#label-answer")]
        for _ in range(total):  # every answer shown as its text, a script too; the last stays
            tab.keyboard.press("ArrowRight")
            every.append(tab.text_content("#label-answer"))
        assert sorted(every[:-1]) == sorted(ANSWERS) and every[-2] == every[-1]

        tab.fill("#label-name", "bob")  # a second person on the same page
        tab.keyboard.press("Enter")
        assert tab.text_content("#label-progress") == f"0 of {total} labelled"
        assert tab.text_content("#label-answer") == shown[0]
        tab.keyboard.press("1")
        tab.keyboard.press("q")
        bob = saved(tab, tmp_path / "bob.jsonl")
        merged = read_labels([ada, bob])
        assert [(x.labeller, x.truthfulness) for x in merged] == [("ada", 3), ("ada", 5),
                                                                   ("bob", 1)]
        assert merged[0].key == merged[2].key
        capsys.readouterr()
        assert main(["agreement", str(run_dirs[0]), "--human", str(ada), str(bob),
                     "--format", "json", "--out", str(tmp_path / "agreement")]) == 0
        counts = json.loads(capsys.readouterr().out)["labels"]
        assert (counts["read"], counts["labellers"], counts["matched"]) == (3, ["ada", "bob"], 3)
        assert (counts["unknown"], counts["changed"]) == (0, 0)

        tab.goto(other.as_uri())  # another page: bob's name, none of this page's labels
        tab.wait_for_selector("#label-card", state="visible")
        assert tab.text_content("#label-progress") == f"0 of {total} labelled"
        assert tab.text_content("#label-whoami").startswith("Labelling as bob")


@pytest.mark.integration
def test_a_browser_that_keeps_nothing_still_labels_and_says_to_save(tmp_path: Path) -> None:
    page = tmp_path / "label.html"
    page.write_text(render_label_page(load_runs(runs(tmp_path)), seed=0)[0], encoding="utf-8")
    with browser() as chromium, labelling_tab(chromium, page.as_uri()) as tab:
        tab.add_init_script("Object.defineProperty(window, 'localStorage', {get() { "
                            "throw new DOMException('storage is off', 'SecurityError'); }});")
        tab.reload()
        tab.fill("#label-name", "ada")
        tab.keyboard.press("Enter")
        tab.keyboard.press("4")
        tab.keyboard.press("Shift+Digit2")
        assert "does not keep labels across reloads (SecurityError)" in \
            tab.text_content("#label-saved")
        labels = read_labels([saved(tab, tmp_path / "ada.jsonl")])
        assert [(x.truthfulness, x.relevance) for x in labels] == [(4, 2)]
