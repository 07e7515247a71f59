"""The effective cutoff from changed facts, by month of change (docs/cutoff.md#from-changed-facts).
It is the second signal, beside harness/reporting/cutoff.py's new articles.

A changed-fact question (docs/building.md#changed-facts) belongs to the month its value now was
set (`changed_at`). A model that last saw the page before that month answers the value then
(`stale`), one that saw it after answers the value now (`current`): stale answers to the changes
after a month and current ones to those before place the cutoff at that month. Per month, from
the staleness scorer's verdicts (harness/scoring/staleness.py) on the closed book (`baseline`):
the answers current, stale, other and abstained, and the share current of current and stale with
its 95% bootstrap interval; the open book's (`oracle`) share as the ceiling; and the month from
which that share falls, by the same step fit and tests (harness/reporting/breakpoint.py) on 1
for a current answer and 0 for a stale one. Other and abstained answers are counted, not fitted:
they say the model does not know the fact, not which version of it it saw.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from freshrag.core.dataset import Dataset
from freshrag.core.errors import CutoffError
from freshrag.core.stats import CONFIDENCE, mean
from freshrag.core.summary import AnswerSummary
from freshrag.reporting import breakpoint
from freshrag.reporting.cutoff import (
    ARTICLES,
    CHANGES,
    CLOSED,
    OPEN,
    SEED,
    SETTINGS,
    SYSTEMS,
    cell,
    check_dated,
    fall_record,
    headline,
    interval,
    month_of,
    month_range,
    section,
    spans,
    stated_record,
    title,
)

SCORER = "staleness"
VERDICTS = ("current", "stale", "other", "abstained")  # the scorer's
CHOICES = (ARTICLES, CHANGES, "both")  # --signal
PNG = "cutoff-changes.png"
NO_VERDICT = "without a staleness verdict"
HEADINGS = {ARTICLES: "## From new articles (month each article was created)\n\n",
            CHANGES: "## From changed facts (month each value now was set)\n\n"}


def signals(data: Dataset, asked: str | None) -> tuple[str, ...]:
    """The signals to estimate: `asked` (--signal: one of CHOICES), else every one the set has
    questions for; a signal asked of a set without its questions is refused, naming the set."""
    changed = [q for q in data.questions if q.value_then is not None]
    if asked is None:
        chosen = tuple(name for name, present in (
            (ARTICLES, len(changed) < len(data.questions)), (CHANGES, bool(changed))) if present)
    else:
        chosen = (ARTICLES, CHANGES) if asked == "both" else (asked,)
    if CHANGES in chosen:
        if not changed:
            raise CutoffError(f"{data.files['questions']}: no question of set {data.name!r} is "
                              f"about a changed fact (`value_then`), so it gives no change "
                              f"signal; build one with `freshrag build --style changed`, or "
                              f"give --signal articles")
        if not any(q.changed_at for q in changed):
            raise CutoffError(f"{data.files['questions']}: no changed fact of set "
                              f"{data.name!r} records when its value now was set "
                              f"(`changed_at`), so none has a month; build it again with "
                              f"`freshrag build --style changed`")
    if ARTICLES in chosen:
        if len(changed) == len(data.questions):
            raise CutoffError(f"{data.files['questions']}: every question of set {data.name!r} "
                              f"is about a changed fact, so it gives no new-article signal; "
                              f"give --signal changes")
        check_dated(data)
    return chosen


def analyse(data: Dataset, rows: list[AnswerSummary], stated: str | None,
            stated_from: str) -> dict[str, Any]:
    """The change signal of a run's `rows`, each carrying its `scores` as loading.load_summaries
    attaches them; `stated` and `stated_from` as cutoff.analyse takes them."""
    month = {q.id: month_of(q.changed_at) if q.changed_at else None
             for q in data.questions if q.value_then is not None}
    asked = {row.question_id for row in rows if row.question_id in month}
    undated = [qid for qid in asked if month[qid] is None]
    verdicts: dict[str, dict[str, str]] = {system: {} for system in SYSTEMS}
    left_out: dict[str, Counter] = {system: Counter() for system in SYSTEMS}
    for row in rows:
        if row.system in SYSTEMS and month.get(row.question_id) is not None:
            given = _verdict(row)
            if given in VERDICTS:
                verdicts[row.system][row.question_id] = given
            else:
                left_out[row.system][given] += 1
    dated = sorted({month[qid] or "" for found in verdicts.values() for qid in found})
    months = month_range(dated[0], dated[-1]) if dated else []
    table = [_month_row(name, verdicts, month) for name in months]
    index = {name: i for i, name in enumerate(months)}
    fitted = sorted((index[month[q] or ""], float(v == "current"))
                    for q, v in verdicts[CLOSED].items() if v in ("current", "stale"))
    fall = breakpoint.fit_fall([m for m, _ in fitted], [s for _, s in fitted],
                               months or ["none"], seed=SEED)
    return {"dataset": data.name, "signal": CHANGES,
            "systems": {"closed_book": CLOSED, "open_book": OPEN}, "scorer": SCORER,
            "confidence": CONFIDENCE,
            "questions": {"asked": len(asked), "undated": len(undated),
                          "left_out": {s: dict(left_out[s]) for s in SYSTEMS}},
            "months": table,
            "fall": fall_record(fall, months, [row["closed_book"]["n"] for row in table]),
            "stated_cutoff": stated_record(stated, stated_from),
            "settings": SETTINGS, "notes": _notes(len(undated), left_out, table)}


def _month_row(name: str, verdicts: dict[str, dict[str, str]],
               month: dict[str, str | None]) -> dict[str, Any]:
    """One month's verdicts closed and open book, counted and as a share current."""
    return {"month": name, **{part: _shares([v for q, v in verdicts[system].items()
                                             if month[q] == name])
                              for part, system in (("closed_book", CLOSED), ("open_book", OPEN))}}


def _verdict(row: AnswerSummary) -> str:
    """The staleness verdict of the row's answer, else why it has none."""
    if row.status != "ok":
        return row.status
    score = row.scores.get(SCORER)
    if score is None:
        return NO_VERDICT
    if score["status"] != "scored":
        return "unscored"
    return str((score.get("details") or {}).get("verdict"))


def _shares(given: list[str]) -> dict[str, Any]:
    """A month's verdicts counted, and its share current of current and stale (`n` of them)."""
    decided = [float(v == "current") for v in given if v in ("current", "stale")]
    return {"n": len(decided), "mean": mean(decided, 4), "interval": interval(decided),
            **{name: given.count(name) for name in VERDICTS}}


def _notes(undated: int, left_out: dict[str, Counter], table: list[dict]) -> list[str]:
    notes = []
    if undated:
        notes.append(f"{undated} changed fact(s) without a `changed_at` are left out")
    for system, counts in left_out.items():
        if counts:
            said = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
            notes.append(f"{system}: {said} answer(s) left out")
    if any(counts.get(NO_VERDICT) for counts in left_out.values()):
        notes.append(f"`freshrag score RUN --scorers {SCORER}` gives the missing verdicts")
    if any(0 < row["closed_book"]["n"] < 2 for row in table):
        notes.append("a month with one current or stale answer has no interval")
    return notes


def with_changes(document: dict[str, Any], chosen: tuple[str, ...], data: Dataset,
                 rows: list[AnswerSummary]) -> dict[str, Any]:
    """cutoff.analyse's `document` with the signals `chosen` named and, if chosen, the change
    signal's analysis under `changes`."""
    document = {**document, "signals": list(chosen)}
    if CHANGES in chosen:
        stated = document["stated_cutoff"]
        document[CHANGES] = analyse(data, rows, stated and stated["date"],
                                    stated["from"] if stated else "")
    return document


def render(document: dict[str, Any]) -> str:
    """The signals chosen in markdown: one alone as cutoff.render writes it, both each under
    its heading."""
    chosen = document.get("signals", [ARTICLES])
    parts = {ARTICLES: lambda: section(document), CHANGES: lambda: _section(document[CHANGES])}
    if len(chosen) == 1:
        return title(document) + parts[chosen[0]]()
    return title(document) + "\n".join(HEADINGS[name] + parts[name]() for name in chosen)


def _section(document: dict[str, Any]) -> str:
    lines = [headline(document), "",
             "| month | n | current | stale | other | abstained | closed-book share current | "
             "n open | open-book share current |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |"]
    rows = document["months"]
    empty = [not any(row[part][v] for part in ("closed_book", "open_book") for v in VERDICTS)
             for row in rows]
    for first, last in spans(empty):
        closed, opened = rows[first]["closed_book"], rows[first]["open_book"]
        if first != last:
            lines.append(f"| {rows[first]['month']} to {rows[last]['month']} "
                         f"({last - first + 1} months without changes) | 0 | | | | | | 0 | |")
            continue
        counts = " | ".join(str(closed[v]) for v in VERDICTS)
        lines.append(f"| {rows[first]['month']} | {closed['n']} | {counts} | "
                     f"{cell(closed, 'mean', 'interval')} | {opened['n']} | "
                     f"{cell(opened, 'mean', 'interval')} |")
    if not rows:
        lines.append("| (no dated changes with a verdict) | 0 | | | | | | 0 | |")
    lines += ["", "Month: when the fact's value now was set (`changed_at`). Share current: of "
              "the answers giving the value now or the value then, those giving the value now, "
              "with 95% bootstrap intervals; other and abstained answers are counted, not in "
              "the share. Closed book is `baseline` (no retrieval), open book is `oracle` (the "
              "page as it is now)."]
    lines += [f"- {note}" for note in document["notes"]]
    return "\n".join(lines) + "\n"

