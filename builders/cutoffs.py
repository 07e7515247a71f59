"""Knowledge cutoffs: the date after which a model cannot know anything, by model name.

`--cutoff DATE` wins; `--cutoff-model NAME` looks the model up in the built-in table, extended or
overridden by a `[cutoffs]` table in `freshrag.toml` (`"my-model" = "2024-06-30"`). An article is
*after* the cutoff when its first revision is later than the end of the cutoff day (UTC).

A cutoff is written YYYY-MM-DD (harness/core/dates.py) and lies from 1990-01-01 to yesterday
(UTC), docs/building.md#dates: a later one leaves A_d empty by construction (no article can have
been created after a day that has not ended), and an earlier one is no model's; the range also
keeps the traffic stage's date arithmetic (the cutoff less up to 100,000 days of
`--control-margin`) inside the calendar, whose first day is 0001-01-01.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from freshrag.core.config import config_table
from freshrag.core.dates import DATE_FORM, TIMESTAMP_FORM, parse_date, parse_timestamp, utc_today
from freshrag.core.errors import CutoffError

# Dates as the providers document them; a month-only cutoff is given as that month's last day.
KNOWN_CUTOFFS = {
    "gpt-4-0613": "2021-09-30",  # the paper's model (section III.A)
    "gpt-4-0314": "2021-09-30",
    "gpt-3.5-turbo-0613": "2021-09-30",
    "gpt-3.5-turbo-1106": "2021-09-30",
    "gpt-4-1106-preview": "2023-04-30",
    "gpt-4-turbo-2024-04-09": "2023-12-31",
    "gpt-4o-2024-05-13": "2023-10-31",
    "gpt-4o-2024-08-06": "2023-10-31",
    "gpt-4o-mini-2024-07-18": "2023-10-31",
}


EARLIEST = date(1990, 1, 1)  # before the web: no model's knowledge ends there


def parse_cutoff(text: str, where: str = "--cutoff") -> date:
    try:
        return parse_date(text)
    except ValueError:
        raise CutoffError(f"{where}: {text!r} is not a date (expected {DATE_FORM})") from None


def check_range(cutoff: date, where: str) -> date:
    """`cutoff` if it lies from EARLIEST to yesterday (UTC); else a CutoffError naming `where`,
    today's date and the range."""
    today = utc_today()
    allowed = f"give a date from {EARLIEST} to {today - timedelta(days=1)}"
    if cutoff >= today:
        raise CutoffError(f"{where}: {cutoff} is not in the past (today is {today}, UTC): no "
                          f"article can have been created after it, so A_d would be empty; "
                          f"{allowed}")
    if cutoff < EARLIEST:
        raise CutoffError(f"{where}: {cutoff} is before {EARLIEST}, and no model's knowledge "
                          f"ends that early; {allowed}")
    return cutoff


def cutoff_table(config_file: Path | None) -> dict[str, str]:
    """The built-in table with the config file's `[cutoffs]` on top."""
    table = dict(KNOWN_CUTOFFS)
    for model, value in config_table(config_file, "cutoffs").items():
        parse_cutoff(str(value), f"{config_file}: [cutoffs] {model}")
        table[model] = str(value)
    return table


def resolve_cutoff(cutoff: str | None, model: str | None,
                   config_file: Path | None = None) -> tuple[date, str]:
    """The cutoff date and where it came from, for the manifest."""
    if cutoff is not None:
        return check_range(parse_cutoff(cutoff), "--cutoff"), "--cutoff"
    if model is None:
        raise CutoffError("give --cutoff YYYY-MM-DD or --cutoff-model NAME (a model of the "
                          "cutoff table)")
    table = cutoff_table(config_file)
    if model not in table:
        raise CutoffError(f"--cutoff-model {model!r}: no known cutoff; give --cutoff YYYY-MM-DD, "
                          f"or add it under [cutoffs] in freshrag.toml "
                          f"(known: {', '.join(sorted(table))})")
    where = f"--cutoff-model {model}: the cutoff of {model}"
    return check_range(parse_cutoff(table[model], where), where), f"table entry for {model}"


def created_after(created: str, cutoff: date, where: str = "created") -> bool:
    """True if the timestamp `created` falls after the whole cutoff day (UTC); a CutoffError
    naming `where` if it is not a timestamp."""
    try:
        moment = parse_timestamp(created)
    except ValueError:
        raise CutoffError(f"{where}: {created!r:.80} is not a creation time (expected "
                          f"{TIMESTAMP_FORM})") from None
    return moment.date() > cutoff
