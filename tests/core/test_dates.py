"""The one written form of a date and of a timestamp (harness/core/dates.py): what Python's
fromisoformat also reads since 3.11 (week, ordinal and compact dates) is refused."""

from datetime import date, datetime, timezone

import pytest

from freshrag.core.dates import parse_date, parse_timestamp


@pytest.mark.parametrize("text, day", [("2024-01-31", date(2024, 1, 31)),
                                       ("0001-01-01", date(1, 1, 1)),
                                       ("2024-02-29", date(2024, 2, 29))])
def test_a_date_is_yyyy_mm_dd(text, day):
    assert parse_date(text) == day


@pytest.mark.parametrize("text", [
    "2024-W05-1", "2024W051", "20240131", "2024-031", "2024031",  # fromisoformat reads these
    "2024-01-31T00:00:00", "2024-01-31 ", " 2024-01-31", "2024-01-31\n",
    "２０２４-０１-３１",  # digits, but not ASCII ones
    "2024-1-31", "24-01-31", "", None, 20240131])
def test_any_other_form_of_a_date_is_refused(text):
    with pytest.raises(ValueError, match="is not a date written YYYY-MM-DD"):
        parse_date(text)


@pytest.mark.parametrize("text", ["2023-02-29", "2024-13-01", "0000-01-01", "2024-04-31"])
def test_a_day_the_calendar_does_not_have_is_refused(text):
    with pytest.raises(ValueError, match="is no day of the calendar"):
        parse_date(text)


@pytest.mark.parametrize("text, moment", [
    ("2021-09-30T23:59:59Z", datetime(2021, 9, 30, 23, 59, 59, tzinfo=timezone.utc)),
    ("2021-10-01T01:00:00+02:00", datetime(2021, 9, 30, 23, 0, tzinfo=timezone.utc)),
    ("2021-10-01T01:00:00.250", datetime(2021, 10, 1, 1, 0, 0, 250000, tzinfo=timezone.utc)),
    ("2021-10-01", datetime(2021, 10, 1, tzinfo=timezone.utc)),
])
def test_a_timestamp_is_a_date_with_a_time_and_zone(text, moment):
    assert parse_timestamp(text) == moment


@pytest.mark.parametrize("text", [
    "2024-W05-1T10:00:00Z", "20240131T101500Z", "2024-031T10:00:00Z",  # fromisoformat reads these
    "2024-01-31 10:15:00", "2024-01-31T10:15", "2024-01-31T10:15:00z",
    "2024-01-31T10:15:00+0100", "", None])
def test_any_other_form_of_a_timestamp_is_refused(text):
    with pytest.raises(ValueError, match="is not a timestamp written YYYY-MM-DDTHH:MM:SSZ"):
        parse_timestamp(text)


@pytest.mark.parametrize("text", ["2024-01-31T25:00:00Z", "2023-02-29T10:00:00Z"])
def test_a_moment_the_calendar_does_not_have_is_refused(text):
    with pytest.raises(ValueError, match="is no moment of the calendar"):
        parse_timestamp(text)


@pytest.mark.parametrize("text", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:00:00-05:00"])
def test_a_timestamp_outside_the_calendar_in_utc_is_refused_not_an_overflow(text):
    with pytest.raises(ValueError, match="falls outside the calendar in UTC"):
        parse_timestamp(text)
