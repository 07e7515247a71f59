"""The viewer's "Compare with" shows both answers side by side where the eye is
(docs/reports.md#the-viewer): choosing another answer puts the two in the viewport at once,
with no scrolling by the reader, in Chromium."""

from __future__ import annotations

import contextlib
import io

from freshrag.cli.main import main
from tests.support.dom import viewer_tab
from tests.support.runs import sample_rows, write_run


def in_view(tab, selector: str) -> list[bool]:
    """For each element `selector` finds: whether its top and some of it lie in the viewport."""
    return tab.eval_on_selector_all(selector, """elements => elements.map(e => {
        const box = e.getBoundingClientRect();
        return box.height > 0 && box.top >= 0 && box.top < window.innerHeight - 20;
    })""")


def test_choosing_an_answer_to_compare_shows_both_answers_in_view(tmp_path):
    rows = sample_rows()
    for row in rows:  # a long transcript: many retrieved chunks and calls above the fold
        row["answer"] = f"{row['system']} answers {row['question_id']}"
    run = write_run(tmp_path / "run", rows)
    page = tmp_path / "report.html"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(run), "--out", str(tmp_path / "out"), "--html",
                     str(page)]) == 0
    with viewer_tab(page.as_uri()) as tab:
        tab.set_viewport_size({"width": 1400, "height": 900})
        tab.select_option("#f-system", "naive")
        tab.fill("#f-search", "(q1)")
        tab.click("#viewer-spacer .vrow")
        tab.select_option("#viewer-compare-with", label="boolean")
        answers = "#viewer-compare .viewer-side .viewer-answer"
        assert tab.locator(answers).all_inner_texts() == ["naive answers q1",
                                                          "boolean answers q1"]
        assert in_view(tab, answers) == [True, True]
        left, right = (tab.locator(answers).nth(i).bounding_box() for i in range(2))
        assert left["x"] + left["width"] <= right["x"]  # side by side
        # the bar to choose another stays at hand, and closing hides both
        assert in_view(tab, "#viewer-compare-with") == [True]
        tab.click("#viewer-close")
        assert tab.locator("#viewer-compare").is_hidden()
