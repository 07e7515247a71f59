"""Dates and timestamps as freshrag reads them: one written form each (docs/building.md#dates).

Python's `date.fromisoformat` and `datetime.fromisoformat` (3.11 and later) also read week dates
(2024-W05-1), ordinal dates (2024-031) and compact ones (20240131), each of which would pass for
a day the user did not mean to write. Every date option (`--cutoff`, `--knowledge-cutoff`,
`--today`), every date of `freshrag.toml` and every timestamp of an articles file goes through
these two functions, which take the one form and refuse the rest with ValueError:

- a date is YYYY-MM-DD, ASCII digits;
- a timestamp is a date, optionally followed by `T`, HH:MM:SS (a fraction of up to six digits
  allowed) and `Z` or an offset ±HH:MM (none means UTC), as MediaWiki and its dumps write them.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timezone

DATE_FORM = "YYYY-MM-DD"
TIMESTAMP_FORM = "YYYY-MM-DDTHH:MM:SSZ"
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-][0-9]{2}:[0-9]{2})?"


def parse_date(text: object) -> date:
    """The day `text` writes as YYYY-MM-DD; ValueError for any other form or no such day."""
    if not isinstance(text, str) or not re.fullmatch(_DATE, text):
        raise ValueError(f"{text!r:.80} is not a date written {DATE_FORM}")
    try:
        return date.fromisoformat(text)
    except ValueError as err:  # 2023-02-29
        raise ValueError(f"{text!r} is no day of the calendar ({err})") from None


def parse_timestamp(text: object) -> datetime:
    """The moment `text` writes (a date alone is its midnight), in UTC; ValueError for any other
    form or no such moment."""
    if not isinstance(text, str) or not re.fullmatch(_DATE + f"(?:{_TIME})?", text):
        raise ValueError(f"{text!r:.80} is not a timestamp written {TIMESTAMP_FORM}")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as err:  # 2023-02-29, 25:00
        raise ValueError(f"{text!r} is no moment of the calendar ({err})") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00:00+01:00 falls before the calendar's first day
        raise ValueError(f"{text!r:.80} falls outside the calendar in UTC") from None


def utc_today() -> date:
    """Today in UTC, the calendar the creation dates of articles are compared in."""
    return datetime.now(timezone.utc).date()
