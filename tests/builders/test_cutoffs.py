from datetime import date, timedelta

import pytest

from freshrag.builders.cutoffs import (
    EARLIEST,
    KNOWN_CUTOFFS,
    CutoffError,
    created_after,
    resolve_cutoff,
)
from freshrag.core.dates import utc_today


def test_cutoff_given_as_a_date_wins_over_the_model():
    assert resolve_cutoff("2023-04-30", "gpt-4-0613") == (date(2023, 4, 30), "--cutoff")


def test_the_papers_model_is_in_the_table():
    cutoff, source = resolve_cutoff(None, "gpt-4-0613")
    assert cutoff == date.fromisoformat(KNOWN_CUTOFFS["gpt-4-0613"]) and "gpt-4-0613" in source


@pytest.mark.parametrize("text", ["September 2021", "2021-13-01", "", "2021/09/30",
                                  "2021-W39-4", "20210930", "2021-273"])  # fromisoformat's forms
def test_a_cutoff_that_is_not_a_date_says_so(text):
    with pytest.raises(CutoffError, match=rf"--cutoff: {text!r} is not a date"):
        resolve_cutoff(text, None)


def test_an_unknown_model_names_the_way_out():
    with pytest.raises(CutoffError, match=r"'my-model': no known cutoff; give --cutoff"):
        resolve_cutoff(None, "my-model")


def test_neither_cutoff_nor_model():
    with pytest.raises(CutoffError, match="give --cutoff"):
        resolve_cutoff(None, None)


def test_the_config_file_extends_and_overrides_the_table(tmp_path):
    config = tmp_path / "freshrag.toml"
    config.write_text('[cutoffs]\n"my-model" = "2024-06-30"\n"gpt-4-0613" = "2021-12-31"\n')
    assert resolve_cutoff(None, "my-model", config)[0] == date(2024, 6, 30)
    assert resolve_cutoff(None, "gpt-4-0613", config)[0] == date(2021, 12, 31)


def test_a_bad_date_in_the_config_file_names_the_file_and_model(tmp_path):
    config = tmp_path / "freshrag.toml"
    config.write_text('[cutoffs]\n"my-model" = "mid 2024"\n')
    with pytest.raises(CutoffError, match=r"freshrag.toml: \[cutoffs\] my-model: 'mid 2024'"):
        resolve_cutoff(None, "my-model", config)


@pytest.mark.parametrize("created, after", [
    ("2021-09-30T23:59:59Z", False), ("2021-10-01T00:00:00Z", True),
    ("2021-10-01T01:00:00+02:00", False),  # 23:00 on the 30th in UTC
    ("2019-01-01T00:00:00Z", False), ("2024-02-29T12:00:00Z", True),
])
def test_after_means_after_the_whole_cutoff_day_in_utc(created, after):
    assert created_after(created, date(2021, 9, 30)) is after


def test_a_cutoff_from_1990_to_yesterday_is_taken():
    yesterday = utc_today() - timedelta(days=1)
    assert resolve_cutoff(yesterday.isoformat(), None)[0] == yesterday
    assert resolve_cutoff(EARLIEST.isoformat(), None)[0] == date(1990, 1, 1)


@pytest.mark.parametrize("days", [0, 1, 365 * 100])
def test_a_cutoff_of_today_or_later_is_refused_naming_today(days):
    today = utc_today()
    cutoff = (today + timedelta(days=days)).isoformat()
    with pytest.raises(CutoffError, match=rf"--cutoff: {cutoff} is not in the past \(today is "
                                          rf"{today}, UTC\).*A_d would be empty"):
        resolve_cutoff(cutoff, None)


@pytest.mark.parametrize("cutoff", ["0001-01-01", "1989-12-31"])
def test_a_cutoff_before_1990_is_refused(cutoff):
    with pytest.raises(CutoffError, match=rf"--cutoff: {cutoff} is before 1990-01-01.*give a "
                                          rf"date from 1990-01-01 to"):
        resolve_cutoff(cutoff, None)


def test_a_cutoff_of_the_config_file_outside_the_range_names_the_model(tmp_path):
    config = tmp_path / "freshrag.toml"
    config.write_text('[cutoffs]\n"next-year" = "2999-01-01"\n')
    with pytest.raises(CutoffError, match=r"--cutoff-model next-year: the cutoff of next-year: "
                                          r"2999-01-01 is not in the past"):
        resolve_cutoff(None, "next-year", config)


@pytest.mark.parametrize("created", ["2021-W40-1T00:00:00Z", "20211001T000000Z", "yesterday"])
def test_a_creation_time_in_another_form_is_refused_naming_where(created):
    with pytest.raises(CutoffError, match=r"articles.jsonl: 'Town': created: .* is not a creation "
                                          r"time \(expected YYYY-MM-DDTHH:MM:SSZ\)"):
        created_after(created, date(2021, 9, 30), "articles.jsonl: 'Town': created")
