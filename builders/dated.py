"""Sets dated by month (docs/living.md): `--created START:END --per-month N` samples A_r stratified
by the month each article was created in, N a month, from a wiki's creation log or from a dump.

A month's window is its first instant to the next month's first (UTC); a `--since` build also
starts strictly after its parent's newest article (`after`). An article's creation date is its
first revision's timestamp as the source gives it today: a page the creation log names but whose
first revision lies outside the month's window (moved, deleted and made again) is discarded as
`created_outside_month`; a dump page with no creation date, or one outside the range, is not a
candidate at all (`created_unknown`, `outside_range`).

- A wiki: the month's creations in the main namespace (`list=logevents&letype=create`), put in an
  order seeded by the build's seed and the month, are fetched in that order until N are kept.
- A dump: one seeded reservoir (Algorithm R) per month, in one pass over the dump.

Every examined page is a line of `sample.jsonl` with its `month`; the funnel counts per month.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from freshrag.builders.cutoffs import EARLIEST
from freshrag.builders.records import read_records
from freshrag.builders.sources.pages import BuildError, Page, PageSource, Reservoir, classify
from freshrag.core.dates import parse_timestamp, utc_today
from freshrag.core.jsonl import JsonlWriter, replace_jsonl
from freshrag.core.titles import title_form

MONTH_FORM = "YYYY-MM:YYYY-MM"
OUTSIDE_MONTH = "created_outside_month"  # the log's month, but the first revision is elsewhen
OUTSIDE_RANGE = "outside_range"  # a dump page created before or after the range
CREATED_UNKNOWN = "created_unknown"  # a dump page without its first revision
NOT_SAMPLED = "not_sampled"


class MonthError(BuildError):
    """A `--created` range or `--per-month` that cannot be used; the message names the option."""


@dataclass(frozen=True)
class SampleFiles:
    """Where A_r's sampling writes (the stage's file names live in builders/stages.py)."""

    sample: Path  # a line per examined page
    articles: Path  # a line per kept article
    partial: Path  # a dump's sample lines until the dump has been read to its end


@dataclass(frozen=True)
class MonthRange:
    """Months `start` to `end` (inclusive, "YYYY-MM"), from strictly after `after` if given."""

    start: str
    end: str
    after: str | None = None  # a timestamp: the newest article of the parent version

    def text(self) -> str:
        return f"{self.start}:{self.end}"

    def months(self) -> list[str]:
        months, (year, month) = [], _year_month(self.start)
        while f"{year:04d}-{month:02d}" <= self.end:
            months.append(f"{year:04d}-{month:02d}")
            year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        return months

    def window(self, month: str) -> tuple[datetime, datetime]:
        """The month's first instant (or just after `after`) and the next month's first."""
        year, number = _year_month(month)
        start = datetime(year, number, 1, tzinfo=timezone.utc)
        end = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=timezone.utc)
        if self.after is not None:
            start = max(start, parse_timestamp(self.after) + timedelta(seconds=1))
        return start, end

    def holds(self, month: str, created: str | None) -> bool:
        """Whether a creation time falls in the month's window."""
        if not created:
            return False
        start, end = self.window(month)
        return start <= parse_timestamp(created) < end

    def first_day(self) -> date:
        year, month = _year_month(self.start)
        return date(year, month, 1)


def parse_months(text: str, where: str = "--created") -> MonthRange:
    """A range written START:END, each YYYY-MM, from 1990-01 to this month (UTC), END not before
    START; else a MonthError naming `where`."""
    match = re.fullmatch(r"([0-9]{4})-([0-9]{2}):([0-9]{4})-([0-9]{2})", text.strip())
    if not match:
        raise MonthError(f"{where} {text!r}: expected a month range written {MONTH_FORM}, "
                         f"e.g. 2024-01:2025-06")
    start, end = text.strip().split(":")
    for month in (start, end):
        if not 1 <= int(month[5:]) <= 12:
            raise MonthError(f"{where} {text!r}: {month} is not a month (months run 01-12)")
    if end < start:
        raise MonthError(f"{where} {text!r}: the end {end} is before the start {start}")
    this_month = utc_today().strftime("%Y-%m")
    if end > this_month:
        raise MonthError(f"{where} {text!r}: {end} is in the future (this month is {this_month}, "
                         f"UTC)")
    if start < EARLIEST.strftime("%Y-%m"):
        raise MonthError(f"{where} {text!r}: {start} is before {EARLIEST:%Y-%m}")
    return MonthRange(start, end)


def month_of(created: str | None) -> str | None:
    """The "YYYY-MM" (UTC) of a creation timestamp, None for none."""
    return Page("", "", created, None).month()


def default_cutoff(months: MonthRange) -> date:
    """The cutoff of a dated set given none: the day before its first month."""
    return months.first_day() - timedelta(days=1)


def check_cutoff(months: MonthRange, cutoff: date) -> None:
    """Refuse a cutoff that would leave A_d empty: on or after the range's last day."""
    year, month = _year_month(months.end)
    last_day = date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)
    if cutoff >= last_day:
        raise MonthError(f"--cutoff {cutoff} is not before the last day of --created "
                         f"{months.text()} ({last_day}): no article of the range is after it")


def _year_month(month: str) -> tuple[int, int]:
    return int(month[:4]), int(month[5:7])


def _month_rng(seed: int, month: str) -> random.Random:
    return random.Random(f"{seed}:{month}")  # one stream per month: resuming one keeps the rest


# --------------------------------------------------------------------------- a wiki's creation log


def sample_wiki_by_month(source: Any, files: SampleFiles, months: MonthRange, per_month: int,
                         seed: int) -> list[str]:
    """A_r from a wiki: per month, the logged creations in seeded order, fetched until
    `per_month` are kept (or the month runs out). Resumes from the sample file."""
    examined = {row["title"]: row["title"] for row in read_records(files.sample)}
    kept_rows = read_records(files.articles)
    kept = Counter(row.get("month") for row in kept_rows)
    logged = {month: source.created_titles(*months.window(month)) for month in months.months()}
    if not any(logged.values()):
        raise BuildError(f"{source.description}: its creation log names no main-namespace page "
                         f"created in {months.text()}" + (f" after {months.after}" if months.after
                                                         else "") +
                         " (a wiki filled by importDump.php has a creation log only where the "
                         "XML holds <logitem> entries)")
    samples, articles = JsonlWriter(files.sample), JsonlWriter(files.articles)
    try:
        for row in kept_rows:  # an article written just before a kill, its sample line not yet
            if row["title"] not in examined:
                samples.write({"title": row["title"], "discard": None, "month": row.get("month")})
                examined[row["title"]] = row["title"]
        for month, titles in logged.items():
            _month_rng(seed, month).shuffle(titles)
            todo = [title for title in titles if title_form(title) not in examined]
            pages = source.fetch_titles(todo)
            while kept[month] < per_month:
                page = next(pages, None)
                if page is None:
                    break
                page = _dated(classify(page, examined), months, month)
                if page.discard is None:
                    articles.write(page.article_row())
                    kept[month] += 1
                samples.write({"title": page.title, "discard": page.discard, "month": month})
            pages.close()
    finally:
        samples.close()
        articles.close()
    return [row["title"] for row in read_records(files.articles)]


def _dated(page: Page, months: MonthRange, month: str) -> Page:
    """The page, discarded if its first revision is not in the month it was logged in."""
    if page.discard is None and not months.holds(month, page.created):
        return Page(**{**page.record(), "discard": OUTSIDE_MONTH})
    return page


# --------------------------------------------------------------------------- a dump


def sample_dump_by_month(source: PageSource, files: SampleFiles, months: MonthRange,
                         per_month: int, seed: int) -> list[str]:
    """A_r from a dump: a seeded reservoir of `per_month` per month, in one pass."""
    from tqdm import tqdm

    wanted = months.months()
    reservoirs: dict[str, Reservoir[Page]] = {month: Reservoir(per_month, _month_rng(seed, month))
                                              for month in wanted}
    partial = files.partial
    partial.unlink(missing_ok=True)
    discards, read = JsonlWriter(partial), dict[str, str]()
    try:
        for page in tqdm(source.pages(set()), desc="A_r (reading the whole dump)", unit="page"):
            page = classify(page, read)  # its title in NFC, as the wiki's
            month, why = _dump_month(page, months, wanted)
            if why is not None or month is None:
                discards.write({"title": page.title, "discard": why, "month": month})
                continue
            if (left := reservoirs[month].offer(page)) is not None:
                discards.write({"title": left.title, "discard": NOT_SAMPLED, "month": month})
        chosen = [page for month in wanted for page in reservoirs[month].items]
        if not chosen:
            raise BuildError(f"{source.description}: no article of it was created in "
                             f"{months.text()}" + (f" after {months.after}" if months.after
                                                   else ""))
        for page in chosen:
            discards.write({"title": page.title, "discard": None, "month": month_of(page.created)})
    finally:
        discards.close()
    replace_jsonl(files.articles, (page.article_row() for page in chosen))
    partial.replace(files.sample)
    return [page.title for page in chosen]


def _dump_month(page: Page, months: MonthRange, wanted: list[str]) -> tuple[str | None, str | None]:
    """(the page's month if it is one of the range, why it is no candidate or None). A page
    outside the range has no month in sample.jsonl, so that the funnel per month adds up to the
    pages examined less those counted as outside_range or created_unknown."""
    if not page.created:
        return None, page.discard or CREATED_UNKNOWN
    month = month_of(page.created)
    if month not in wanted or not months.holds(month, page.created):
        return None, OUTSIDE_RANGE
    return month, page.discard


# --------------------------------------------------------------------------- the funnel


def month_funnel(samples: list[dict[str, Any]], articles: list[dict[str, Any]],
                 questions: list[dict[str, Any]],
                 stage_titles: dict[str, set[str]]) -> dict[str, dict[str, int]]:
    """Per month: pages examined (`samples`' rows), articles kept in each finished stage,
    questions."""
    result: dict[str, Counter] = defaultdict(Counter)
    for row in samples:
        if row.get("month"):
            result[row["month"]]["sampled"] += 1
    month = {row["title"]: row.get("month") for row in articles}
    for key, titles in stage_titles.items():
        for title in titles:
            result[month.get(title) or "unknown"][key] += 1
    for row in questions:
        result[row.get("month") or "unknown"]["questions"] += 1
    return {key: dict(result[key]) for key in sorted(result)}

