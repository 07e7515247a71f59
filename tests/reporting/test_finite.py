"""`report.finite` (harness/reporting/report.py): every number that is not finite becomes null,
at any depth, a tuple stays a tuple, and a container where nothing changes is the object given,
not a copy (the analysis of 100,000 answers holds a dict per answer)."""

import math

import pytest

from freshrag.reporting.report import finite, non_finite_notes


@pytest.mark.parametrize("value, expected", [
    pytest.param(math.inf, None, id="infinity"),
    pytest.param(-math.inf, None, id="minus-infinity"),
    pytest.param(math.nan, None, id="nan"),
    pytest.param(1.5, 1.5, id="finite-number"),
    pytest.param({"a": {"b": [1, math.nan]}}, {"a": {"b": [1, None]}}, id="nested"),
    pytest.param((0.5, math.inf), (0.5, None), id="tuple-kept-a-tuple"),
    pytest.param([{"x": 1}, {"y": -math.inf}], [{"x": 1}, {"y": None}], id="one-of-many"),
    pytest.param([{"x": 1.0}] * 2_500 + [{"x": math.nan}], [{"x": 1.0}] * 2_500 + [{"x": None}],
                 id="past-the-first-slices"),
    pytest.param({("a", 1): math.inf}, {("a", 1): None}, id="key-json-cannot-hold"),
])
def test_what_is_not_finite_is_null(value, expected):
    made = finite(value)
    assert made == expected and type(made) is type(expected)


@pytest.mark.parametrize("document, named", [
    pytest.param({"rows": [{"dataset": "A", "system": "s", "score": math.inf}]},
                 "rows.A/s.score", id="table-row"),
    pytest.param({"trajectory_by_answer": [{"x": 1.0}] * 1_500 + [{"x": math.nan}]},
                 "trajectory_by_answer.[1500].x", id="past-the-first-slice"),
])
def test_the_note_names_the_statistic(document, named):
    [note] = non_finite_notes("analysis", document)
    assert note.startswith("analysis: 1 statistic not a finite number") and named in note


def test_no_note_when_every_number_is_finite():
    assert non_finite_notes("analysis", {"rows": [{"score": 1.0, "interval": (0.5, 2.0)}]}) == []


def test_a_container_without_anything_to_change_is_not_copied():
    inner = {"evidence_any": 1.0, "first_gold_step": None}
    document = {"trajectory_by_answer": [inner], "interval": (0.1, 0.2)}
    assert finite(document) is document


def test_only_the_path_to_a_change_is_copied():
    kept, changed = {"a": 1.0}, {"b": math.inf}
    document = {"rows": [kept, changed]}
    made = finite(document)
    assert made["rows"][0] is kept and made["rows"][1] == {"b": None}
    assert document == {"rows": [kept, changed]} and changed["b"] == math.inf  # not mutated
