"""The effective cutoff's analysis (harness/reporting/cutoff.py) and its step fit
(harness/reporting/breakpoint.py) on synthetic per-question scores: the month of a fall is
recovered wherever it lies, its interval holds it, and a flat or too short series says so."""

from __future__ import annotations

import numpy as np
import pytest

from freshrag.core.dataset import load_dataset_dir
from freshrag.reporting.breakpoint import MIN_SIDE, fit_fall
from freshrag.reporting.cutoff import CutoffError, analyse, check_dated, month_range, render
from tests.support.datasets import write_dataset
from tests.support.rows import summaries
from tests.support.runs import sample

NAMES = month_range("2022-01", "2023-12")


def noisy_step(fall: int, per_month: int, seed: int, high=(3, 4, 5, 5), low=(1, 1, 2, 3)):
    """Scores per question: drawn from `high` before month index `fall`, from `low` after."""
    rng = np.random.default_rng(seed)
    months = [m for m in range(len(NAMES)) for _ in range(per_month)]
    return months, [float(rng.choice(high if m < fall else low)) for m in months]


@pytest.mark.parametrize("fall", [2, 7, 12, 18, 22])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_month_of_a_fall_is_recovered_wherever_it_lies(fall, seed):
    months, scores = noisy_step(fall, per_month=5, seed=seed)
    found = fit_fall(months, scores, NAMES, seed=seed)
    assert found.reason is None and abs(found.month - fall) <= 1
    low, high = found.interval
    assert low <= fall <= high and high - low <= 4
    assert found.before > found.after and found.p_value < 0.05


def test_a_sharp_fall_is_found_exactly_with_an_interval_of_one_month():
    months = [m for m in range(len(NAMES)) for _ in range(3)]
    found = fit_fall(months, [5.0 if m < 9 else 1.0 for m in months], NAMES)
    assert (found.month, found.interval, found.before, found.after) == (9, (9, 9), 5.0, 1.0)


def test_empty_months_are_skipped_and_the_fall_is_the_first_month_with_answers_after():
    months = [m for m in range(len(NAMES)) for _ in range(3) if not 8 <= m <= 10]
    found = fit_fall(months, [5.0 if m < 8 else 1.0 for m in months], NAMES)
    assert found.month == 11


@pytest.mark.parametrize("seed", range(5))
def test_a_flat_series_gives_no_fall(seed):
    months, scores = noisy_step(0, per_month=5, seed=seed, low=(1, 2, 3, 4, 5))
    found = fit_fall(months, scores, NAMES, seed=seed)
    assert found.month is None and found.reason.startswith("no fall")
    assert found.p_value >= 0.05


def test_a_rise_is_not_a_fall():
    months = [m for m in range(len(NAMES)) for _ in range(3)]
    found = fit_fall(months, [1.0 if m < 12 else 5.0 for m in months], NAMES)
    assert found.month is None and "no month has higher" in found.reason


def test_too_few_questions_give_no_fall():
    found = fit_fall([0, 5, 20], [5.0, 5.0, 1.0], NAMES)
    assert found.month is None and f"at least {MIN_SIDE}" in found.reason


def test_a_noisier_fall_has_a_wider_interval():
    """More noise, fewer questions a month: the interval widens, still holding the month."""
    widths = []
    for per_month, low in ((8, (1, 1, 1, 2)), (2, (1, 2, 3, 4))):
        months, scores = noisy_step(12, per_month=per_month, seed=3, low=low)
        found = fit_fall(months, scores, NAMES, seed=3)
        assert found.interval[0] <= 12 <= found.interval[1]
        widths.append(found.interval[1] - found.interval[0])
    assert widths[0] < widths[1]


def dated_dataset(tmp_path, created):
    """A dataset of one town per entry of `created` (a timestamp or None)."""
    articles = [{"title": f"Town {i}", "content": "text", "created": when}
                for i, when in enumerate(created)]
    questions = [{"title": f"Town {i}", "question": f"Q{i}?", "id": f"q{i}"}
                 for i in range(len(created))]
    write_dataset(tmp_path, articles=articles, questions=questions)
    return load_dataset_dir(tmp_path)


def test_the_table_has_every_month_with_intervals_and_the_notes_count_what_was_left_out(tmp_path):
    created = ["2023-01-05T00:00:00Z"] * 4 + ["2023-03-10T00:00:00Z", None]
    data = dated_dataset(tmp_path, created)
    truths = {"q0": 5, "q1": 4, "q2": 2, "q3": None, "q4": 1, "q5": 5}
    rows = [sample(qid, "baseline", truth=t) for qid, t in truths.items()]
    rows += [sample(qid, "oracle", truth=5) for qid in truths]
    rows[0]["status"] = "failed"  # q0's closed-book answer failed
    document = analyse(data, summaries(rows), "2022-12-31", "--stated-cutoff")
    months = {row["month"]: row for row in document["months"]}
    assert list(months) == ["2023-01", "2023-02", "2023-03"]  # February, empty, shown
    january = months["2023-01"]["closed_book"]
    assert january["n"] == 2 and january["mean"] == 3 and january["well_share"] == 0.5
    assert january["interval"][0] <= 3 <= january["interval"][1]
    assert months["2023-02"]["closed_book"] == {"n": 0, "mean": None, "interval": None,
                                                "well_share": None, "well_interval": None}
    assert months["2023-03"]["closed_book"]["interval"] is None  # one question: no interval
    assert months["2023-01"]["open_book"]["n"] == 4
    assert document["questions"]["undated"] == 1
    assert document["questions"]["left_out"]["baseline"] == {"failed": 1, "unscored": 1}
    assert not document["fall"]["found"] and "too few" in document["fall"]["reason"]
    assert document["stated_cutoff"] == {"date": "2022-12-31", "from": "--stated-cutoff",
                                         "falls_from": "2023-01"}
    table = render(document)
    assert "| 2023-02 | 0 |" in table and "1 question without a gold article that has a `created` date" in table
    assert "baseline: 1 failed, 1 unscored" in table


def test_a_dataset_without_dates_is_named(tmp_path):
    data = dated_dataset(tmp_path, [None, None])
    with pytest.raises(CutoffError, match=str(tmp_path / "articles.jsonl")):
        check_dated(data)


def test_no_answers_yet_give_an_empty_table_and_figure_not_an_error(tmp_path):
    """A run capped before its first pair finished still writes what it has."""
    from freshrag.reporting.render.cutoff_plot import write_cutoff_plot

    data = dated_dataset(tmp_path, ["2023-01-05T00:00:00Z"] * 3)
    document = analyse(data, [], None, "--knowledge-cutoff")
    assert document["months"] == [] and "too few" in document["fall"]["reason"]
    assert "(no dated, scored answers)" in render(document)
    figure = write_cutoff_plot(document, tmp_path / "cutoff.png")
    assert figure.read_bytes()[:4] == b"\x89PNG"


def test_a_multi_article_question_dates_from_its_newest_gold_article(tmp_path):
    """q0 needs a January and a March article: it is March's, whichever hop comes first; q2
    needs an undated one as well: undated."""
    created = ["2023-01-05T00:00:00Z", "2023-03-10T00:00:00Z", None]
    articles = [{"title": f"Town {i}", "content": "text", "created": when}
                for i, when in enumerate(created)]
    sets = {"q0": ["Town 0", "Town 1"], "q1": ["Town 1", "Town 0"], "q2": ["Town 0", "Town 2"]}
    questions = [{"id": qid, "title": titles[0], "question": f"{qid}?", "gold_titles": titles}
                 for qid, titles in sets.items()]
    write_dataset(tmp_path, articles=articles, questions=questions)
    rows = [sample(qid, system, truth=4) for qid in sets for system in ("baseline", "oracle")]
    document = analyse(load_dataset_dir(tmp_path), summaries(rows), None, "--knowledge-cutoff")
    months = {row["month"]: row["closed_book"]["n"] for row in document["months"]}
    assert months == {"2023-03": 2}
    assert document["questions"]["undated"] == 1


def gap_of_seven_years(tmp_path):
    """Five questions from 2019-02 answered well closed book, five from 2026-02 badly: nothing
    in between."""
    data = dated_dataset(tmp_path, ["2019-02-05T00:00:00Z"] * 5 + ["2026-02-05T00:00:00Z"] * 5)
    rows = [sample(f"q{i}", "baseline", truth=5 if i < 5 else 1) for i in range(10)]
    rows += [sample(f"q{i}", "oracle", truth=5) for i in range(10)]
    return analyse(data, summaries(rows), None, "--knowledge-cutoff")


def test_months_without_questions_are_one_row_of_the_table(tmp_path):
    table = render(gap_of_seven_years(tmp_path))
    rows = [line for line in table.splitlines() if line.startswith("| 20")]
    assert [row.split(" | ")[0] for row in rows] == [
        "| 2019-02", "| 2019-03 to 2026-01 (83 months without questions)", "| 2026-02"]


def test_the_falls_interval_spans_the_months_the_data_cannot_tell_apart(tmp_path):
    fall = gap_of_seven_years(tmp_path)["fall"]
    assert fall["found"] and fall["month"] == "2026-02"
    assert fall["interval"] == ["2019-03", "2026-02"]  # any month of the gap fits as well


def test_the_figure_draws_no_line_across_months_without_answers(tmp_path):
    import matplotlib.pyplot as plt

    from freshrag.reporting.render.cutoff_plot import _series

    document = gap_of_seven_years(tmp_path)
    fig, ax = plt.subplots()
    _series(ax, document["months"], "closed_book", "closed", "red", 0.0)
    heights = list(ax.lines[0].get_ydata())
    plt.close(fig)
    # a line joins two points only where no missing value (a gap) lies between them
    assert heights[0] == 5 and heights[-1] == 1 and len(heights) == 85
    assert all(np.isnan(h) for h in heights[1:-1])
