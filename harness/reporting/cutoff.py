"""A model's effective knowledge cutoff from a run of `baseline` (closed book) and `oracle` (open
book) over a dataset dated by month (docs/cutoff.md): per creation month of each question's
article (a multi-article question's newest: it dates from the newest article it needs), the
closed-book mean truthfulness and the share answered well, the open-book mean as
the ceiling, each with a 95% bootstrap interval; and the month where closed-book quality falls
(harness/reporting/breakpoint.py), beside the cutoff the user states. A changed fact's
question is about an older page: harness/reporting/cutoff_changes.py dates it by its change.

`analyse` makes the document (every number, written as RUN/cutoff.json), `render` its table
(RUN/cutoff.md, and what the command prints); the figure is harness/reporting/render/cutoff_plot.py.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any, Sequence

from freshrag.core.dataset import Dataset
from freshrag.core.dates import parse_date, parse_timestamp
from freshrag.core.errors import CutoffError
from freshrag.core.samples import judge_scores
from freshrag.core.stats import CONFIDENCE, bootstrap_interval, mean
from freshrag.core.summary import AnswerSummary
from freshrag.core.wording import counted
from freshrag.reporting import breakpoint

CUTOFF_JSON = "cutoff.json"
CUTOFF_MD = "cutoff.md"
CUTOFF_PNG = "cutoff.png"
CLOSED, OPEN = "baseline", "oracle"
ARTICLES, CHANGES = "articles", "changes"  # the two signals (docs/cutoff.md#two-signals)
# what falls, and the level each side of the fall is, in the headline of each signal
FALLING = {ARTICLES: ("closed-book quality", "mean truthfulness"),
           CHANGES: ("the share of current answers", "share current of current and stale")}
SYSTEMS = (CLOSED, OPEN)
WELL = 4  # truthfulness from which an answer counts as answered well
SEED = 0  # every interval and test is drawn from it, so that the same run gives the same numbers


def month_of(created: str) -> str:
    """The month (YYYY-MM) of a creation timestamp."""
    return parse_timestamp(created).strftime("%Y-%m")


def check_dated(data: Dataset) -> None:
    """Refuse a dataset none of whose articles has a creation date: no month to order by."""
    if not any(article.created for article in data.articles.values()):
        raise CutoffError(f"{data.files['articles']}: no article has a `created` date, so no "
                          f"question has a month; build the dataset with `freshrag build` "
                          f"(which records each article's creation) or add the field")


def month_range(first: str, last: str) -> list[str]:
    """Every month from `first` to `last` (YYYY-MM), both included."""
    year, month = map(int, first.split("-"))
    months = []
    while f"{year:04d}-{month:02d}" <= last:
        months.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return months


def analyse(data: Dataset, rows: list[AnswerSummary], stated: str | None,
            stated_from: str) -> dict[str, Any]:
    """The whole analysis of a run's `rows`; `stated` is the cutoff the user states (YYYY-MM-DD),
    `stated_from` the option that gave it."""
    month = {q.id: _created_month(data.created(q)) for q in data.questions if q.value_then is None}
    asked = {row.question_id for row in rows if row.question_id in month}
    undated = sorted(qid for qid in asked if month[qid] is None)
    dated_month = {qid: name for qid, name in month.items() if name is not None}
    # system -> question -> truthfulness
    scored: dict[str, dict[str, float]] = {system: {} for system in SYSTEMS}
    left_out: dict[str, Counter] = {system: Counter() for system in SYSTEMS}
    for row in rows:
        if row.system not in SYSTEMS or row.question_id not in dated_month:
            continue
        if (scores := judge_scores(row)) is not None:
            scored[row.system][row.question_id] = scores["truthfulness"]
        else:
            left_out[row.system][row.status if row.status != "ok" else "unscored"] += 1
    dated = sorted({dated_month[qid] for system in SYSTEMS for qid in scored[system]})
    months = month_range(dated[0], dated[-1]) if dated else []
    table = [_month_row(name, scored, dated_month) for name in months]
    closed = sorted(scored[CLOSED].items(), key=lambda item: dated_month[item[0]])
    index = {name: i for i, name in enumerate(months)}
    fall = breakpoint.fit_fall([index[dated_month[qid]] for qid, _ in closed],
                               [value for _, value in closed], months or ["none"], seed=SEED)
    return {
        "dataset": data.name, "signal": ARTICLES,
        "systems": {"closed_book": CLOSED, "open_book": OPEN},
        "well_at": WELL, "confidence": CONFIDENCE,
        "questions": {"asked": len(asked), "undated": len(undated),
                      "left_out": {s: dict(left_out[s]) for s in SYSTEMS}},
        "months": table,
        "fall": fall_record(fall, months, [row["closed_book"]["n"] for row in table]),
        "stated_cutoff": stated_record(stated, stated_from),
        "settings": SETTINGS,
        "notes": _notes(len(undated), left_out, table),
    }


SETTINGS = {"min_side": breakpoint.MIN_SIDE, "permutations": breakpoint.PERMUTATIONS,
            "bootstrap_samples": breakpoint.BOOTSTRAP_SAMPLES,
            "significance": breakpoint.SIGNIFICANCE, "seed": SEED}


def _created_month(created: str | None) -> str | None:
    """The month a question's newest gold article was created in (Dataset.created); None
    without an article or its date."""
    return month_of(created) if created else None


def _month_row(name: str, scored: dict[str, dict[str, float]],
               month: dict[str, str]) -> dict[str, Any]:
    """One month's closed-book and open-book figures (null where the month has no answers)."""
    closed = [value for qid, value in scored[CLOSED].items() if month[qid] == name]
    opened = [value for qid, value in scored[OPEN].items() if month[qid] == name]
    well = [int(value >= WELL) for value in closed]
    return {"month": name,
            "closed_book": {"n": len(closed), **_mean_and_interval(closed),
                            "well_share": mean(well, 4),
                            "well_interval": interval(well)},
            "open_book": {"n": len(opened), **_mean_and_interval(opened)}}


def _mean_and_interval(values: list[float]) -> dict[str, Any]:
    return {"mean": mean(values, 4), "interval": interval(values)}


def interval(values: Sequence[float]) -> list[float] | None:
    """The 95% bootstrap interval of the mean; none for fewer than two values, whose
    resamples are all the one value (an interval of no width that says nothing)."""
    return list(bootstrap_interval(values, mean, seed=SEED)) if len(values) >= 2 else None


def fall_record(fall: breakpoint.Fall, months: list[str], counts: list[int]) -> dict[str, Any]:
    """The fit with its months by name (the fit found none when there are no months). Its
    interval starts at the first month the data cannot tell from its low end: a step fitted at
    a month after months without questions fits as well at any of them."""
    interval = None
    if fall.interval is not None:
        low, high = fall.interval
        while low > 0 and counts[low - 1] == 0:
            low -= 1
        interval = [months[low], months[high]]
    return {"found": fall.month is not None,
            "month": None if fall.month is None else months[fall.month],
            "interval": interval,
            "level_before": fall.before, "level_after": fall.after, "p_value": fall.p_value,
            "bootstrap_share": fall.bootstrap_share, "reason": fall.reason}


def stated_record(stated: str | None, source: str) -> dict[str, Any] | None:
    """The stated cutoff and the month its knowledge would fall from (the next day's month)."""
    if stated is None:
        return None
    after = (parse_date(stated) + timedelta(days=1)).strftime("%Y-%m")
    return {"date": stated, "from": source, "falls_from": after}


def _notes(undated: int, left_out: dict[str, Counter], table: list[dict]) -> list[str]:
    notes = []
    if undated:
        notes.append(f"{counted(undated, 'question')} without a gold article that has a "
                     f"`created` date left out")
    for system, counts in left_out.items():
        if counts:
            said = ", ".join(f"{n:,} {what}" for what, n in sorted(counts.items()))
            total = sum(counts.values())
            notes.append(f"{system}: {said} {'answer' if total == 1 else 'answers'} left out "
                         "(`freshrag report` lists why)")
    if any(0 < row["closed_book"]["n"] < 2 for row in table):
        notes.append("a month with one question has no interval")
    return notes


def months_apart(later: str, earlier: str) -> int:
    """How many months `later` (YYYY-MM) is after `earlier`."""
    (y1, m1), (y0, m0) = map(int, later.split("-")), map(int, earlier.split("-"))
    return (y1 - y0) * 12 + m1 - m0


def headline(document: dict[str, Any]) -> str:
    """The estimate in one sentence, beside the stated cutoff."""
    fall, stated = document["fall"], document["stated_cutoff"]
    what, level = FALLING[document["signal"]]
    if fall["found"]:
        low, high = fall["interval"]
        said = (f"{what} falls from {fall['month']} (95% interval {low} to {high}; "
                f"{level} {fall['level_before']:.2f} before, "
                f"{fall['level_after']:.2f} from then on; permutation p = {fall['p_value']})")
    else:
        said = fall["reason"]
    if stated:
        said += (f". Stated cutoff {stated['date']} ({stated['from']}): knowledge would fall from "
                 f"{stated['falls_from']}")
        if fall["found"]:
            gap = months_apart(fall["month"], stated["falls_from"])
            said += (f"; the estimate is {counted(abs(gap), 'month')} "
                     f"{'later' if gap > 0 else 'earlier'}"
                     if gap else ", the month estimated")
    return said + "."


def cell(part: dict[str, Any], value: str, interval: str) -> str:
    if part[value] is None:
        return ""
    bounds = part[interval]
    return f"{part[value]:.2f}" + (f" [{bounds[0]:.2f}, {bounds[1]:.2f}]" if bounds else "")


def spans(empty: list[bool]) -> list[tuple[int, int]]:
    """A table's rows as (first, last) indices into its months (`empty`: whether each has no
    questions): each month with questions alone, each run of two or more without collapsed."""
    spans: list[tuple[int, int]] = []
    for i, blank in enumerate(empty):
        if blank and spans and empty[spans[-1][0]] and spans[-1][1] == i - 1:
            spans[-1] = (spans[-1][0], i)
        else:
            spans.append((i, i))
    return spans


def title(document: dict[str, Any]) -> str:
    return f"# Effective knowledge cutoff: {document['dataset']}\n\n"


def render(document: dict[str, Any]) -> str:
    """The table by month in markdown, headed by the title and the estimate, followed by the
    notes."""
    return title(document) + section(document)


def section(document: dict[str, Any]) -> str:
    """The estimate, the table by month and the notes."""
    lines = [headline(document), "",
             "| month | n | closed-book truthfulness | answered well (>= 4) | n open | "
             "open-book truthfulness |", "| --- | ---: | --- | --- | ---: | --- |"]
    empty = [row["closed_book"]["n"] == 0 and row["open_book"]["n"] == 0
             for row in document["months"]]
    for first, last in spans(empty):
        row = document["months"][first]
        closed, opened = row["closed_book"], row["open_book"]
        if first != last:
            lines.append(f"| {row['month']} to {document['months'][last]['month']} "
                         f"({last - first + 1} months without questions) | 0 | | | 0 | |")
            continue
        lines.append(f"| {row['month']} | {closed['n']} | {cell(closed, 'mean', 'interval')} "
                     f"| {cell(closed, 'well_share', 'well_interval')} | {opened['n']} | "
                     f"{cell(opened, 'mean', 'interval')} |")
    if not document["months"]:
        lines.append("| (no dated, scored answers) | 0 | | | 0 | |")
    lines += ["", "Truthfulness from 1 to 5, means with 95% bootstrap intervals; closed book is "
              "`baseline` (no retrieval), open book is `oracle` (the gold article)."]
    lines += [f"- {note}" for note in document["notes"]]
    return "\n".join(lines) + "\n"
