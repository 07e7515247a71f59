from datetime import date

import pytest

from freshrag.builders.cutoffs import KNOWN_CUTOFFS, CutoffError, created_after, resolve_cutoff


def test_cutoff_given_as_a_date_wins_over_the_model():
    assert resolve_cutoff("2023-04-30", "gpt-4-0613") == (date(2023, 4, 30), "--cutoff")


def test_the_papers_model_is_in_the_table():
    cutoff, source = resolve_cutoff(None, "gpt-4-0613")
    assert cutoff == date.fromisoformat(KNOWN_CUTOFFS["gpt-4-0613"]) and "gpt-4-0613" in source


@pytest.mark.parametrize("text", ["September 2021", "2021-13-01", "", "2021/09/30"])
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
