"""The printed report and summary.json, summary.md (docs/reports.md): the summary table
(harness/reporting/summary_table.py) rendered as markdown, the narrow table of
render/terminal.py (to be read at 80 columns), JSON or CSV, with what the answer model knows
without retrieval under it (harness/reporting/freshness.py); the whole table written beside
summary.json as summary.md (`write_summary`); every table of the printed report as markdown
(`markdown_table`). The JSON printed (`render`) can hold every answer's trajectory too
(`trajectories`: its steps and why it stopped), which summary.json leaves out. A statistic that
is no finite number is written as null, and a note says so (`made_finite`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import msgspec
from msgspec import Struct

from freshrag.core import tables
from freshrag.core.files import dumps, write_text
from freshrag.core.light_steps import whole_steps
from freshrag.core.runfiles import SUMMARY, SUMMARY_MD
from freshrag.core.summary import AnswerSummary
from freshrag.core.wording import counted
from freshrag.reporting.freshness import known_lines
from freshrag.reporting.identity import RUN, group_rows, models_label, row_labels
from freshrag.reporting.outcomes import MIN_PAIRED
from freshrag.reporting.render.terminal import cell_value, format_value, terminal_table
from freshrag.reporting.summary_table import COLUMNS


def finite(value: Any) -> Any:
    """`value` with every number that is not finite (NaN, ±infinity) made None: what JSON can
    hold (core/files.py writes it strictly). A mean of imported scores near 1e308 overflows to
    infinity; it is written as null, and `non_finite_notes` says so."""
    if isinstance(value, (dict, list)) and _strict(value):
        return value
    return _finite(value)


def made_finite(what: str, document: Any) -> tuple[Any, list[str]]:
    """`finite(document)` and `non_finite_notes(what, document)`, the document encoded once to
    find it finite (twice, the analysis of 100,000 answers took near a second)."""
    if _strict(document):
        return document, []
    return _finite(document), non_finite_notes(what, document)


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    # a container copied only where something in it changes: the analysis of 100,000 answers
    # holds a dict per answer, and nearly always nothing to change
    if isinstance(value, dict):
        changed = {key: new for key, item in value.items() if (new := _finite(item)) is not item}
        return {**value, **changed} if changed else value
    if isinstance(value, list) or type(value) is tuple:  # a tuple kept a tuple: an interval
        made = [_finite(item) for item in value]  # is shown as a list only
        if all(new is old for new, old in zip(made, value)):
            return value
        return made if isinstance(value, list) else tuple(made)
    return value


def non_finite_notes(what: str, document: Any) -> list[str]:
    """A line naming the statistics of `document` that are not finite numbers, if any."""
    found = [] if _strict(document) else list(_non_finite(document))
    if not found:
        return []
    shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
    return [f"{what}: {counted(len(found), 'statistic')} not a finite number, written as null (a mean "
            f"overflows when imported scores are out of range): {shown}"]


def _strict(value: Any) -> bool:
    """Whether `value` holds only finite numbers, as json's C encoder finds (allow_nan=False
    refuses the others): the walks above, in Python, took seconds over the analysis of 100,000
    answers. A long list is encoded a slice at a time, never as one text. False too where the
    encoder takes something only the walks can (a key that is not text)."""
    parts = value.values() if isinstance(value, dict) else [value]
    try:
        for part in parts:
            for start in range(0, len(part), 1_000) if isinstance(part, list) else [None]:
                json.dumps(part if start is None else part[start:start + 1_000],
                           allow_nan=False, default=_builtins)
    except (ValueError, TypeError):
        return False
    return True


def _builtins(value: Any) -> Any:
    if isinstance(value, Struct):  # a summary's record (core/summary.py)
        return msgspec.to_builtins(value)
    raise TypeError(type(value).__name__)


def _non_finite(value: Any, path: str = "") -> Iterator[str]:
    """The dotted path of every number that is not finite; a table's row by its dataset and
    system (`intervals.A_f/naive.truthfulness`), another list's item by its index."""
    if isinstance(value, float) and not math.isfinite(value):
        yield path or "the value"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            named = isinstance(item, dict) and "system" in item
            step = f"{item.get('dataset')}/{item['system']}" if named else f"[{index}]"
            yield from _non_finite(item, f"{path}.{step}" if path else step)


def trajectories(answers: list[AnswerSummary]) -> Iterator[dict[str, Any]]:
    """Every answer's trajectory, as the JSON report lists it (`answers`): its identity (the
    summary row's fields: dataset, system, models, and run when needed), question, status, why
    an agent stopped (null: it answered when it chose) and its steps as the row holds them
    (retrieved chunks without text), read again from the run's file one answer at a time
    (core/light_steps.py whole_steps: a summary keeps of its steps only what the tables read).
    Rows written before steps existed have no trajectory and are left out."""
    listed = [(fields, answer, answer.steps) for key, group in group_rows(answers).items()
              for fields in [key.fields()] for answer in group if answer.steps is not None]
    for (fields, answer, _), steps in zip(listed, whole_steps([s for _, _, s in listed])):
        yield {**fields, "question_id": answer.question_id, "status": answer.status,
               "stopped": answer.stopped, "steps": steps}


def columns_for(columns: Sequence[str], rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """The columns of a table, with `run` (and, in the decision table, `against`: the reference
    runs) when its rows carry them, i.e. when they are needed to tell rows apart, and in the cost
    table `batch_calls` when some calls were priced at the Batch API's rate."""
    optional = (RUN, "against", "batch_calls")
    return tuple(columns) + tuple(c for c in optional if any(row.get(c) for row in rows))


def render(summary: list[dict[str, Any]], fmt: str, judge: dict[str, Any] | None = None,
           breakdowns: dict[str, list[dict[str, Any]]] | None = None,
           known: list[dict[str, Any]] | None = None,
           answers: Iterable[dict[str, Any]] | None = None) -> str:
    """The summary table as printed: markdown, the narrow table of render/terminal.py; as JSON
    with the judge's checks (harness/reporting/judge_check.py), the summary broken down by
    question fields (harness/reporting/breakdown.py), what the answer model knows without
    retrieval (harness/reporting/freshness.py) and every answer's trajectory (`trajectories`)
    if given; CSV, every column. In markdown, the lines of `known` follow the table."""
    return "".join(rendered(summary, fmt, judge, breakdowns, known, answers))


def rendered(summary: list[dict[str, Any]], fmt: str, judge: dict[str, Any] | None = None,
             breakdowns: dict[str, list[dict[str, Any]]] | None = None,
             known: list[dict[str, Any]] | None = None,
             answers: Iterable[dict[str, Any]] | None = None) -> Iterator[str]:
    """`render`'s text in parts, each answer one: printed part by part, a report of 100,000
    trajectories is never one string of hundreds of megabytes."""
    columns = columns_for(COLUMNS, summary)
    if fmt == "json":  # strict JSON: a statistic that is no finite number is null (`finite`)
        yield from _with_answers(dumps(finite({
            "rows": summary, **({"judge": judge} if judge else {}),
            **({"breakdowns": breakdowns} if breakdowns else {}),
            **({"known": known} if known else {})}), indent=2), answers or [])
    elif fmt == "csv":  # through the csv module, formulas defused (core/tables.py)
        yield tables.csv_text([{k: models_label(v) if isinstance(v, dict) else v
                                for k, v in row.items()} for row in summary], columns)
    elif fmt == "markdown":
        yield (terminal_table(summary) + _known_text(known) + _few_text(summary)
               + f"\n\nthe whole table, with unscored and failed pairs, retrievals and models: "
               f"{SUMMARY_MD}")
    else:
        raise ValueError(f"unknown format {fmt!r}; choose markdown, json or csv")


def _few_text(summary: list[dict[str, Any]]) -> str:
    """Under the first screen's table, where some system has fewer than MIN_PAIRED scored
    answers: that its paired tests give no interval or p-value (outcomes.untested)."""
    few = [row for row in summary if (row.get("scored") or 0) < MIN_PAIRED]
    if not few:
        return ""
    return (f"\n\nfewer than {MIN_PAIRED} scored answers for {len(few)} of "
            f"{counted(len(summary), 'system')} (n above): too few for a paired test; their comparisons say so instead "
            f"of an interval or p-value")


def _with_answers(document: str, answers: Iterable[dict[str, Any]]) -> Iterator[str]:
    """The JSON `document` with `answers` added, one answer a line, each made as it is
    written: a run's trajectories are most of the report, and JSON without indentation is
    written by json's C encoder, several times faster than its indenting one. Read from strict
    JSON rows, they hold no NaN."""
    listed = iter(answers)
    first = next(listed, None)
    if first is None:
        yield document
        return
    # `dumps`, made once; rows read from JSON hold no cycle for its check to find
    encode = json.JSONEncoder(allow_nan=False, check_circular=False, default=_builtins).encode
    yield f'{document[:-2]},\n  "answers": [\n    ' + encode(first)
    for answer in listed:
        yield ",\n    " + encode(answer)
    yield "\n  ]\n}"


def _known_text(known: list[dict[str, Any]] | None) -> str:
    """The lines on what the answer model knows, after a blank line; "" when there are none."""
    lines = known_lines(known or [], tables.cell)
    return "\n\n" + "\n".join(lines) if lines else ""


def markdown_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    """Every table of the printed report: each value as `format_value` shows it, escaped so that
    no value leaves its cell (core/tables.py)."""
    lines = tables.header(columns)
    # the system cell names the row as the figures do (identity.labels), as on the HTML page
    names = row_labels(rows) if "system" in columns and any(
        isinstance(row.get("models"), dict) for row in rows) else None
    lines += [tables.row(format_value(names[i] if names and c == "system"
                                      else cell_value(row, c), c)
                         for c in columns) for i, row in enumerate(rows)]
    return "\n".join(lines)


def write_summary(out_dir: Path, summary: list[dict[str, Any]],
                  breakdowns: dict[str, list[dict[str, Any]]] | None = None,
                  known: list[dict[str, Any]] | None = None, more: str = "") -> Path:
    """summary.json, and the whole table (every column) as markdown in summary.md, each with
    what the answer model knows without retrieval (`known`) if given; `more`, markdown sections
    after the table in summary.md (a run's Epochs section)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_text(out_dir / SUMMARY_MD, markdown_table(summary, columns_for(COLUMNS, summary))
               + _known_text(known) + (f"\n\n{more}" if more else "") + "\n")
    return write_text(out_dir / SUMMARY, render(summary, "json", breakdowns=breakdowns,
                                                known=known) + "\n")
