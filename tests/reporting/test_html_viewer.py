"""The HTML report's sample viewer, driven in headless Chromium (Playwright on Debian's chromium
package; tests/run.sh installs both): filter, sort, open an answer, compare two answers to one
question, or two runs of one system; and the summary table at three page widths. Screenshots of each step are kept in
results/artefacts/viewer/.

The run is the HTML report's (tests/support/runs.py: a `<script>` answer, an `<img>` title),
with the records a real run holds on question q1: the calls with their prompts, the chunks' texts,
the judge's reason, boolean's decision reply and first answer, and a judge pass of
`freshrag score` on boolean's answer, with its reason."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import JsonlWriter
from freshrag.scoring.store import SCORES, answer_sha256
from tests.support.dom import browser, report_url, viewer_tab
from tests.support.runs import EVIL_TITLE, SCRIPT_ANSWER, sample_rows, write_run

ARTEFACTS = Path(__file__).resolve().parents[2] / "results" / "artefacts" / "viewer"
ARTICLE = "Gold q1 is a bridge over the Foo, opened in 2024 after nine years of work."
CHUNKS = {"Gold q1": "The Gold q1 bridge opened on 3 May 2024.",
          EVIL_TITLE: "<b>bold</b> text that must stay text",
          "Other": "Nothing to do with bridges."}
CHUNK_SCORES = (0.875, 0.5, 0.125)  # boolean's chunks' retrieval scores, in CHUNKS' order
REASON = "The answer names the opening year the article gives."
PASS_REASON = "A second judge pass: the year is right, the day is missing."

pytestmark = pytest.mark.integration


def call(role: str, messages: list[dict[str, str]], *, text: str | None = None,
         tool: tuple[str, dict[str, Any]] | None = None, tokens: tuple[int, int] = (100, 10),
         latency: float = 0.25) -> dict[str, Any]:
    return {"role": role, "model": f"{role}-model", "text": text,
            "tool_name": tool[0] if tool else None,
            "tool_arguments": json.dumps(tool[1]) if tool else None,
            "usage": {"input": tokens[0], "output": tokens[1], "estimated": False},
            "latency_s": latency, "cache_hit": False, "messages": messages}


def judge_call(row: dict[str, Any]) -> dict[str, Any]:
    user = (f"Query: {row['question']}\n\nChatbot's answer: {row['answer']}\n\n"
            f"Wikipedia article:\n{ARTICLE}")
    grade = {"truthfulness": row["grade"]["truthfulness"], "relevance": row["grade"]["relevance"],
             "reason": REASON}
    return call("judge", [{"role": "system", "content": "You evaluate the answer."},
                          {"role": "user", "content": user}],
                tool=("submit_grade", grade), tokens=(999, 99), latency=0.5)


def viewer_rows() -> list[dict[str, Any]]:
    """sample_rows, q1's naive and boolean answers with their whole records."""
    rows = sample_rows()
    for row in rows:
        if row["question_id"] != "q1" or row["system"] == "baseline":
            continue
        for chunk in row["details"]["retrieved"]:
            chunk["text"] = CHUNKS[chunk["title"]]
        prompt = "Answer from these extracts:\n\n" + "\n\n".join(
            CHUNKS[c["title"]] for c in row["details"]["retrieved"])
        row["calls"] = [call("answer", [{"role": "system", "content": prompt},
                                        {"role": "user", "content": row["question"]}],
                             text=row["answer"], tokens=(500, 12)),
                        judge_call(row)]
        row["grade"]["reason"] = REASON
        row["answer_latency_s"] = 1.5
        if row["system"] == "boolean":
            row["details"].update(decision_raw='{"retrieve": true}',
                                  first_answer="I first thought it opened in 2023.",
                                  retrieved=[{"title": title, "index": 0, "score": score,
                                              "text": CHUNKS[title]}
                                             for title, score in zip(CHUNKS, CHUNK_SCORES)])
            row["calls"].insert(0, call("decision", [{"role": "user", "content": "Retrieve?"}],
                                        tool=("retrieve", {"retrieve": True})))
    return rows


def judge_pass(row: dict[str, Any]) -> dict[str, Any]:
    """A scores.jsonl row of a `freshrag score` judge pass, its reason in its details."""
    return {"dataset": row["dataset"], "question_id": row["question_id"], "system": row["system"],
            "answer_sha256": answer_sha256(row["answer"]), "scorer": "judge", "repeat": 0,
            "status": "scored", "metrics": {"truthfulness": 4, "relevance": 3},
            "details": {"reason": PASS_REASON}, "reason": None, "raw": [],
            "usage": {"judge": {"input": 800, "output": 60, "estimated": False}}, "calls": [],
            "latency_s": 0.7, "finished_at": None}


@pytest.fixture(scope="module")
def page_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    rows = viewer_rows()
    run_dir = write_run(tmp_path_factory.mktemp("run"), rows)
    writer = JsonlWriter(run_dir / SCORES)
    writer.write(judge_pass(next(r for r in rows if (r["question_id"], r["system"]) == (
        "q1", "boolean"))))
    writer.close()
    return report_url(run_dir)


@pytest.fixture
def page(page_url: str):
    """The report in Chromium (tests/support/dom.py viewer_tab: offline, no script error, no
    dialog)."""
    with viewer_tab(page_url) as tab:
        yield tab


def listed(tab) -> list[dict[str, str]]:
    """The list's rendered rows (all of them: this list fits its box), top to bottom."""
    return tab.eval_on_selector_all(
        "#viewer-spacer .vrow",
        "rows => rows.sort((a, b) => a.offsetTop - b.offsetTop).map(r => ({...r.dataset}))")


def count(tab) -> str:
    return tab.text_content("#viewer-count")


def shot(tab, name: str) -> None:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(ARTEFACTS / f"{name}.png"), full_page=False)


def test_filtering_by_system_and_status_shows_exactly_those_answers(page):
    rows = viewer_rows()
    assert count(page) == f"{len(rows)} of {len(rows)} answers"
    assert len(listed(page)) == len(rows)
    page.select_option("#f-system", "naive")
    page.select_option("#f-status", "scored")
    wanted = [r for r in rows if r["system"] == "naive" and r["status"] == "ok"]
    shown = listed(page)
    assert count(page) == f"{len(wanted)} of {len(rows)} answers"
    assert len(shown) == len(wanted)
    assert {(r["system"], r["status"]) for r in shown} == {("naive", "scored")}
    shot(page, "filtered-naive-scored")
    page.select_option("#f-status", "failed")
    assert [r["status"] for r in listed(page)] == ["failed"]  # q4's naive pair
    page.click("#f-reset")
    page.fill("#f-search", "(r2)")  # the question text
    assert {r["system"] for r in listed(page)} == {"baseline", "naive", "boolean"}
    assert count(page) == f"3 of {len(rows)} answers"


def test_the_disagreement_and_score_filters(page):
    rows = viewer_rows()
    spread: dict[str, list[int]] = {}
    for r in rows:
        if r["grade"] and r["grade"]["truthfulness"] is not None:
            spread.setdefault(r["question_id"], []).append(
                r["grade"]["truthfulness"] + r["grade"]["relevance"])
    differ = {q for q, s in spread.items() if max(s) - min(s) >= 4}
    page.select_option("#f-disagree", "4")
    assert count(page) == f"{sum(r['question_id'] in differ for r in rows)} of {len(rows)} answers"
    page.select_option("#f-disagree", "0")
    page.fill("#f-min", "9")
    assert {r["score"] for r in listed(page)} == {"9"}
    page.fill("#f-max", "8")
    assert listed(page) == []


def test_sorting_by_score_orders_the_list_and_keeps_unscored_last(page):
    page.click("#viewer-head button[data-sort=score]")
    scores = [r["score"] for r in listed(page)]
    known = [int(s) for s in scores if s != "–"]
    assert known == sorted(known) and known[0] < known[-1]
    assert scores[len(known):] == ["–"] * (len(scores) - len(known))
    shot(page, "sorted-by-score")
    page.click("#viewer-head button[data-sort=score]")
    scores = [r["score"] for r in listed(page)]
    known = [int(s) for s in scores if s != "–"]
    assert known == sorted(known, reverse=True) and scores[-1] == "–"


def test_opening_an_answer_shows_its_whole_record(page):
    page.select_option("#f-system", "boolean")
    page.fill("#f-search", "(q1)")
    page.click("#viewer-spacer .vrow")
    detail = page.locator("#viewer-detail")
    for folded in detail.locator("details > summary").all():  # the gold passage, each call
        folded.click()
    text = detail.inner_text()
    for expected in (REASON, ARTICLE, "I first thought it opened in 2023.", "Answer from these",
                     '"retrieve": true', *CHUNKS.values(), "500 in / 12 out", "1.5 s (answer)"):
        assert expected in text, expected
    boolean = next(r for r in viewer_rows() if (r["question_id"], r["system"]) == ("q1", "boolean"))
    for message in boolean["calls"][-1]["messages"]:  # the judge's prompt, as it was sent
        assert message["content"] in text
    calls = detail.locator(".viewer-call summary").all_inner_texts()
    assert [c.split(" · ")[0] for c in calls] == ["1. decision", "2. answer", "3. judge"]
    assert "999 in / 99 out" in calls[2] and "0.5 s" in calls[2]
    chunks = detail.locator(".viewer-chunks").first.locator("tbody tr").all()
    assert [row.locator("td").all_inner_texts() for row in chunks] == [
        [str(rank), title, str(score), text]
        for rank, ((title, text), score) in enumerate(zip(CHUNKS.items(), CHUNK_SCORES), start=1)]
    # the <img> title and the <b> chunk are text: no element was made of them
    assert detail.locator("img, b:text('bold')").count() == 0
    assert EVIL_TITLE in text and "<b>bold</b>" in text
    scorers = detail.locator(".viewer-part", has_text="Scorers")
    scorer = scorers.locator("tbody td").all_inner_texts()
    assert scorer == ["judge", "scored", "truthfulness 4, relevance 3", "800 in / 60 out",
                      PASS_REASON]
    shot(page, "sample-boolean-q1")


def test_the_script_answer_is_shown_as_text(page):
    page.select_option("#f-system", "baseline")
    page.fill("#f-search", "(q2)")
    page.click("#viewer-spacer .vrow")
    assert page.text_content("#viewer-detail .viewer-answer") == SCRIPT_ANSWER
    assert page.locator("script").count() == 3  # the data, one block, the viewer: nothing added


def test_two_systems_side_by_side_on_one_question(page):
    page.select_option("#f-system", "naive")
    page.fill("#f-search", "(q1)")
    page.click("#viewer-spacer .vrow")
    page.select_option("#viewer-compare-with", label="boolean")
    sides = page.locator("#viewer-compare .viewer-side")
    assert sides.count() == 2
    assert [sides.nth(i).locator("h3").inner_text() for i in range(2)] == [
        "naive · A_f / q1", "boolean · A_f / q1"]
    left, right = (sides.nth(i).bounding_box() for i in range(2))
    assert left["x"] + left["width"] <= right["x"] and abs(left["y"] - right["y"]) < 1
    assert "decision" not in sides.nth(0).locator(".viewer-call summary").all_inner_texts()[0]
    assert "I first thought" in sides.nth(1).inner_text()
    page.locator("#viewer-compare").scroll_into_view_if_needed()
    shot(page, "compare-naive-boolean-q1")


@pytest.mark.parametrize("width", [1400, 2400, 800])
def test_the_summary_table_is_never_clipped(page, width):
    """The wide table fits or scrolls inside a box that itself fits the page."""
    page.set_viewport_size({"width": width, "height": 900})
    box = page.evaluate("""() => {
        const t = document.getElementById('summary-table'), b = t.parentElement;
        return {right: b.getBoundingClientRect().right, page: document.documentElement.clientWidth,
                table: t.scrollWidth, inner: b.clientWidth, scroll: b.scrollWidth,
                overflow: getComputedStyle(b).overflowX};
    }""")
    assert box["right"] <= box["page"]
    assert box["table"] <= box["inner"] or (box["overflow"] == "auto"
                                            and box["scroll"] >= box["table"])
    page.locator("#summary").scroll_into_view_if_needed()
    shot(page, f"summary-{width}px")


def test_two_runs_of_one_system_side_by_side(tmp_path):
    """Two runs of naive that differ by their answer model: one question's two answers, each
    headed by the label that tells its run apart."""
    runs = []
    for name, model in (("one", "model-a"), ("two", "model-b")):
        rows = [r for r in viewer_rows() if r["system"] == "naive" and r["dataset"] == "A_f"]
        for row in rows:
            row["calls"] = [{"role": "answer", "model": model}]
            row["answer"] = f"{model} says so"
        runs.append(str(write_run(tmp_path / name, rows)))
    page = tmp_path / "report.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", *runs, "--out", str(tmp_path / "out"), "--html", str(page)]) == 0
    with browser() as chromium:
        tab = chromium.new_page(viewport={"width": 1400, "height": 1000})
        tab.goto(page.as_uri())
        tab.fill("#f-search", "(q1)")
        rows = listed(tab)
        assert [r["system"] for r in rows] == ["naive [answer: model-a]", "naive [answer: model-b]"]
        tab.click("#viewer-spacer .vrow >> nth=0")
        tab.select_option("#viewer-compare-with", label="naive [answer: model-b]")
        sides = tab.locator("#viewer-compare .viewer-side .viewer-answer").all_inner_texts()
        assert sides == ["model-a says so", "model-b says so"]
        tab.locator("#viewer-compare").scroll_into_view_if_needed()
        shot(tab, "compare-two-runs")


def test_a_multi_article_question_shows_every_gold_title_and_marks_a_chunk_of_any(tmp_path):
    """boolean's q1 made a two-article question: both titles shown, in hop order, and the chunks
    of both gold articles marked gold, the other chunk not."""
    rows = [r for r in viewer_rows() if r["system"] == "boolean"]
    for row in rows:
        if row["question_id"] == "q1":
            row.update(gold_titles=["Gold q1", "Other"], hops=2, multihop="bridge")
    page = tmp_path / "report.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(write_run(tmp_path / "run", rows)), "--out",
                     str(tmp_path / "out"), "--html", str(page)]) == 0
    with browser() as chromium:
        tab = chromium.new_page(viewport={"width": 1400, "height": 1000})
        tab.goto(page.as_uri())
        tab.fill("#f-search", "(q1)")
        tab.click("#viewer-spacer .vrow >> nth=0")
        detail = tab.locator("#viewer-detail")
        text = detail.inner_text()
        assert "gold titles" in text and "Gold q1 · Other" in text and "bridge" in text
        marked = detail.locator(".viewer-chunks").first.locator("tbody tr.gold td:nth-child(2)")
        assert marked.all_inner_texts() == ["Gold q1", "Other"]
        shot(tab, "multi-article-question")
