"""The effective cutoff from changed facts (harness/reporting/cutoff_changes.py) on synthetic
staleness verdicts: the share current of current and stale falls where the verdicts turn stale,
other and abstained answers are counted but not fitted, months without changes are one row, and
what has no verdict or no month is counted and said."""

from __future__ import annotations

import pytest

from freshrag.core.dataset import load_dataset_dir
from freshrag.reporting.cutoff import CutoffError, month_range
from freshrag.reporting.cutoff_changes import analyse, render, signals, with_changes
from tests.support.datasets import write_dataset
from tests.support.rows import summary
from tests.support.runs import sample

MONTHS = month_range("2022-01", "2022-12")


def changed_set(tmp_path, when, plain=0):
    """One changed fact per entry of `when` (its `changed_at`, or None), and `plain` questions
    about new articles."""
    articles = [{"title": f"Town {i}", "content": "text", "created": "2015-01-01T00:00:00Z"}
                for i in range(len(when) + plain)]
    questions = [{"title": f"Town {i}", "question": f"Q{i}?", "id": f"q{i}", "reference": "2",
                  "value_then": "1", "changed_at": at} for i, at in enumerate(when)]
    questions += [{"title": f"Town {i}", "question": f"Q{i}?", "id": f"q{i}"}
                  for i in range(len(when), len(when) + plain)]
    write_dataset(tmp_path, articles=articles, questions=questions)
    return load_dataset_dir(tmp_path)


def verdict_row(qid, system, verdict):
    """A row with its staleness score as reports attach it; verdict None: no score at all,
    "unscored": a score the scorer could not give."""
    row = sample(qid, system)
    if verdict is not None:
        row["scores"] = {"staleness": {"status": "unscored" if verdict == "unscored" else "scored",
                                       "details": {"verdict": verdict}}}
    return summary(row)


def test_the_share_current_falls_where_the_answers_turn_stale_and_others_are_not_fitted(
        tmp_path):
    """Three changes a month; from June on the closed book gives the value then, and in every
    month one answer is `other` or `abstained`: counted, but the share and the fit ignore them."""
    when = [f"{month}-0{k + 1}T00:00:00Z" for month in MONTHS for k in range(4)]
    data = changed_set(tmp_path, when)
    rows = []
    for i, at in enumerate(when):
        closed = ("other" if i % 8 == 3 else "abstained") if i % 4 == 3 else \
            "current" if at < "2022-06" else "stale"
        rows += [verdict_row(f"q{i}", "baseline", closed), verdict_row(f"q{i}", "oracle", "current")]
    document = analyse(data, rows, "2022-03-31", "--stated-cutoff")
    assert document["fall"]["found"] and document["fall"]["month"] == "2022-06"
    assert (document["fall"]["level_before"], document["fall"]["level_after"]) == (1, 0)
    may, june = document["months"][4]["closed_book"], document["months"][5]["closed_book"]
    assert (may["n"], may["current"], may["stale"], may["mean"]) == (3, 3, 0, 1)
    assert (june["n"], june["current"], june["stale"], june["mean"]) == (3, 0, 3, 0)
    assert sum(row["closed_book"]["other"] + row["closed_book"]["abstained"]
               for row in document["months"]) == len(MONTHS)
    assert "the share of current answers falls from 2022-06" in render(
        with_changes({**document, "signal": "articles"}, ("changes",), data, rows))


def test_months_without_changes_are_one_row_and_missing_verdicts_are_counted(tmp_path):
    when = ["2022-01-05T00:00:00Z"] * 4 + ["2022-06-05T00:00:00Z"] * 4 + [None]
    data = changed_set(tmp_path, when, plain=1)
    verdicts = ["current"] * 3 + [None] + ["stale"] * 3 + ["unscored", "current"]
    rows = [verdict_row(f"q{i}", "baseline", v) for i, v in enumerate(verdicts)]
    rows.append(verdict_row("q9", "baseline", "current"))  # about a new article: not a change
    document = analyse(data, rows, None, "--knowledge-cutoff")
    assert [row["month"] for row in document["months"]] == month_range("2022-01", "2022-06")
    assert document["questions"] == {"asked": 9, "undated": 1, "left_out": {
        "baseline": {"without a staleness verdict": 1, "unscored": 1}, "oracle": {}}}
    table = render({"dataset": "d", "signals": ["changes"], "changes": document})
    lines = [line for line in table.splitlines() if line.startswith("| 2022")]
    assert [line.split(" | ")[0] for line in lines] == [
        "| 2022-01", "| 2022-02 to 2022-05 (4 months without changes)", "| 2022-06"]
    assert "1 changed fact(s) without a `changed_at` are left out" in table
    assert "`freshrag score RUN --scorers staleness` gives the missing verdicts" in table


def test_the_signals_are_those_the_set_has_unless_asked(tmp_path):
    assert signals(changed_set(tmp_path / "c", ["2022-01-05T00:00:00Z"]), None) == ("changes",)
    mixed = changed_set(tmp_path / "m", ["2022-01-05T00:00:00Z"], plain=1)
    assert signals(mixed, None) == ("articles", "changes")
    assert signals(mixed, "articles") == ("articles",)


@pytest.mark.parametrize("when, plain, asked, said", [
    pytest.param([], 2, "changes", "no question of set 'x' is about a changed fact",
                 id="no-changes"),
    pytest.param([None], 0, "both", "no changed fact of set 'x' records when",
                 id="no-changed-at"),
    pytest.param(["2022-01-05T00:00:00Z"], 0, "articles",
                 "every question of set 'x' is about a changed fact", id="no-new-articles"),
])
def test_a_signal_asked_of_a_set_without_its_questions_is_named(tmp_path, when, plain, asked,
                                                                said):
    data = changed_set(tmp_path / "x", when, plain)
    with pytest.raises(CutoffError, match=f"{tmp_path / 'x' / 'questions.jsonl'}: {said}"):
        signals(data, asked)


def test_a_changed_at_that_is_no_timestamp_is_named_with_its_line(tmp_path):
    from freshrag.core.dataset import DatasetError

    with pytest.raises(DatasetError, match=r"questions.jsonl:1: field 'changed_at'"):
        changed_set(tmp_path, ["last spring"])
