"""Reference matching of grounded answers (harness/core/reference.py): the normalised forms the
fact table stores, and whether an answer states a reference value."""

import pytest

from freshrag.core.reference import matches, normalise


@pytest.mark.parametrize("value, expected", [
    pytest.param("14 March 2026", "2026-03-14", id="day-month-year"),
    pytest.param("March 14, 2026", "2026-03-14", id="month-day-year"),
    pytest.param("2026-03-14", "2026-03-14", id="iso"),
    pytest.param("4,812", "4812", id="thousands-separator"),
    pytest.param("14.6 km", "14.6 km", id="number-with-unit"),
    pytest.param("Composer, organist", "composer organist", id="words-punctuation"),
    pytest.param("Porto Sarrão", "porto sarrao", id="accents-folded"),
    pytest.param("14–23 August 2026", "14 23 august 2026", id="date-range-is-not-one-date"),
    pytest.param("The North Sea", "north sea", id="article-dropped"),
    pytest.param("31 February 2026", "31 february 2026", id="impossible-date-is-text"),
])
def test_normalise(value, expected):
    assert normalise(value) == expected


@pytest.mark.parametrize("answer, reference, expected", [
    pytest.param("It opened on the 14th of March, 2026.", "14 March 2026", True, id="date-ordinal"),
    pytest.param("On March 14, 2026.", "2026-03-14", True, id="iso-reference"),
    pytest.param("In March 2026.", "14 March 2026", False, id="date-without-day"),
    pytest.param("On 15 March 2026.", "14 March 2026", False, id="other-day"),
    pytest.param("4812 runners finished.", "4,812", True, id="number-separator"),
    pytest.param("About 4,800 runners.", "4,812", False, id="other-number"),
    pytest.param("It is 14.6 kilometres long.", "14.6 km", True, id="unit-not-compared"),
    pytest.param("It is a cable stayed bridge.", "Cable-stayed bridge", True, id="hyphen"),
    pytest.param("He was a composer.", "Composer, organist", False, id="every-word-needed"),
    pytest.param("The Tarnholt Marathon of 2026.", "2026 Tarnholt Marathon", True, id="name-words"),
    pytest.param("Something in 2026.", "2026 Tarnholt Marathon", False,
                 id="name-with-number-is-text"),
    pytest.param("", "1887", False, id="empty-answer"),
    pytest.param(None, "1887", False, id="no-answer"),
    pytest.param("Born around 1612.", "c. 1612", True, id="circa"),
])
def test_matches(answer, reference, expected):
    assert matches(answer, reference) is expected
