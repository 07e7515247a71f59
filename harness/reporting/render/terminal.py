"""The summary as printed on a terminal: its key columns in an aligned markdown table that reads
at 80 columns (docs/reports.md#what-a-report-holds), and `format_value`, how every report shows
a value in a cell (this table, report.py's `markdown_table` for the whole tables, the HTML page).
"""

from __future__ import annotations

import math
import re
import textwrap
from typing import Any

from freshrag.core import tables
from freshrag.reporting.identity import models_label, row_labels

TERMINAL_WIDTH = 80


def terminal_table(summary: list[dict[str, Any]], width: int = TERMINAL_WIDTH) -> str:
    """The summary's key columns as an aligned markdown table no wider than `width`: system
    (with the dataset when there are several), answers, mean truthfulness and relevance, tokens
    in and out (answered pairs, judge excluded; 12.3k for 12,300). Models and the run directory
    are in the name only where they tell two rows apart (identity.labels); a name too long is cut
    in the middle with `…`, keeping its end."""
    several = len({row["dataset"] for row in summary}) > 1
    named = row_labels(summary)
    cells = [[("" if not several else f"{row['dataset']} / ") + named[i],
              format_value(row["n"]), format_value(row["truthfulness"]),
              format_value(row["relevance"]),
              f"{_compact(row['input_tokens'])} / {_compact(row['output_tokens'])}"]
             for i, row in enumerate(summary)]
    header = ["dataset / system" if several else "system", "n", "truthfulness", "relevance",
              "tokens in / out"]
    widths = [max(len(tables.cell(line[i])) for line in [header, *cells])
              for i in range(len(header))]
    room = max(width - (sum(widths[1:]) + 3 * len(widths) + 1), len(header[0]))
    widths[0] = min(widths[0], room)  # cut the names, never the numbers
    escaped = [[_cut(line[0], room), *map(tables.cell, line[1:])] for line in [header, *cells]]
    lines = ["| " + " | ".join(value.ljust(w) if i == 0 else value.rjust(w)
                               for i, (value, w) in enumerate(zip(line, widths))) + " |"
             for line in escaped]
    rule = "|" + "|".join("-" * (w + 2) if i == 0 else "-" * (w + 1) + ":"
                          for i, w in enumerate(widths)) + "|"
    return "\n".join([lines[0], rule, *lines[1:]])


def _compact(count: int | None) -> str:
    """A token count in at most 5 characters: 9,660; 12.3k; 4.56M; 7.89B; `–` if unknown."""
    if count is None:
        return "–"
    if count < 10_000:
        return f"{count:,}"
    # 3 significant digits; a count that rounds up to the next unit (999,999) is shown in it
    unit, size = next((u, n) for u, n in (("B", 10 ** 9), ("M", 10 ** 6), ("k", 10 ** 3))
                      if count >= n * 0.9995 or u == "k")
    return f"{count / size:.3g}{unit}"


def _cut(text: str, width: int) -> str:
    """`text` escaped for a table cell (tables.cell), cut in the middle to `width` characters
    with `…` (its end tells two runs of a system apart: `naive…[run: b]`), before escaping, so
    that no escape is cut in two."""
    if len(tables.cell(text)) <= width:
        return tables.cell(text)
    for kept in range(min(len(text), width), -1, -1):
        head = (kept + 1) // 2
        cut = tables.cell(text[:head] + "…" + text[len(text) - (kept - head):])
        if len(cut) <= width:
            return cut
    return "…"


def format_value(value: Any, column: str = "") -> str:
    """A table cell, as every report shows it: `–` for missing, 2 decimals (`_decimal`: 3
    significant digits for costs and per-correct figures below 1 and for any value below
    0.005), thousands separators, `value [low, high]` for intervals,
    p-values below 0.001 as `< 0.001`, yes/no for flags, role -> model maps as
    `answer, decision: m1; judge: m2`."""
    if value is None:
        return "–"
    if isinstance(value, dict):
        return models_label(value)
    if column in ("p_value", "p_holm") and isinstance(value, (int, float)):
        # freshrag's own text, markdown as it is: a "<" before a space opens no HTML tag
        return tables.Markdown("< 0.001") if value < 0.001 else f"{value:.3f}"
    if isinstance(value, list) and is_interval(value):
        shown = [format_value(v, column) for v in value]
        return f"{shown[0]} [{shown[1]}, {shown[2]}]" if len(value) == 3 else \
            f"[{shown[0]}, {shown[1]}]"
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value) or "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return _decimal(value, column)
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


UNTESTED_CELLS = ("interval", "p_value")  # where a paired test's row says why it has none


def cell_value(row: dict[str, Any], column: str) -> Any:
    """What a table's cell shows of `row`: its value, or, in the interval and p-value cells of
    a paired comparison too small or too even to test, why there is none (outcomes.untested)."""
    why = row.get("untested")
    return why if why and column in UNTESTED_CELLS else row.get(column)


SIGNIFICANT = 3  # digits a cost or per-correct figure below 1 keeps: 0.0058 beside 0.0082


def _decimal(value: float, column: str) -> str:
    """A float with thousands separators and 2 decimals; a cost, per-question or per-correct
    figure (`cost_usd`, `tokens_per_correct`, ...) below 1, and any other value below 0.005,
    to SIGNIFICANT digits (trailing zeros past the second decimal dropped), so that neighbouring
    systems' costs are never rounded together."""
    small = 0 < abs(value) < (1 if _per_unit(column) else 0.005)
    if not small:
        return f"{value:,.2f}"
    places = SIGNIFICANT - 1 - math.floor(math.log10(abs(value)))
    shown = f"{value:.{places}f}"
    if places > 2:
        shown = shown.rstrip("0")
        shown += "0" * max(0, 2 - len(shown.partition(".")[2]))
    return shown


def _per_unit(column: str) -> bool:
    return "cost" in column or column.endswith(("_usd", "_per_correct", "_per_question"))


def is_interval(value: list[Any]) -> bool:
    """[value, low, high] or [low, high] of numbers (the analysis's intervals)."""
    return len(value) in (2, 3) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)


# --------------------------------------------------------------------------- the whole printout

# Leading columns that name a row: repeated in each part of a table split to fit.
KEY_COLUMNS = ("dataset", "system", "a", "b")


def fit(text: str, width: int = TERMINAL_WIDTH) -> str:
    """The printed report at `width` columns (docs/reports.md#what-a-report-holds): a markdown
    table wider than that is split into tables of as many columns as fit, each repeating the
    columns that name its rows (a dataset column holding one value is left out); any other line
    is wrapped, a list item's continuation indented. A table whose naming columns alone do not
    fit is printed as one wrapped line per row. The files (summary.md, analysis.json) keep
    every column in one table."""
    lines, out = text.split("\n"), []
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) and lines[end].startswith("|"):
            end += 1
        if end > start:
            out += _fit_table(lines[start:end], width)
            start = end
        else:
            out += _wrap(lines[start], width)
            start += 1
    return "\n".join(out)


def _wrap(line: str, width: int) -> list[str]:
    if len(line) <= width:
        return [line]
    indent = len(line) - len(line.lstrip(" "))
    hanging = " " * (indent + (2 if line.lstrip(" ").startswith("- ") else 0))
    return textwrap.wrap(line, width, subsequent_indent=hanging, break_on_hyphens=False)


def _cells(line: str) -> list[str]:
    """A markdown table row's cells as written (escapes kept): `|` ends a cell unless escaped."""
    cells, current, chars = [], "", iter(line.strip()[1:])
    for char in chars:
        if char == "\\":
            current += char + next(chars, "")
        elif char == "|":
            cells.append(current.strip())
            current = ""
        else:
            current += char
    return cells


def _fit_table(lines: list[str], width: int) -> list[str]:
    """A markdown table split into tables of the columns that fit (`fit`)."""
    if max(map(len, lines)) <= width or len(lines) < 3:
        return lines
    header, align, *body = map(_cells, lines)
    shown = [i for i, name in enumerate(header)
             if not (name == "dataset" and len({row[i] for row in body}) == 1)]
    keys = [i for i in shown[:len(KEY_COLUMNS)] if header[i] in KEY_COLUMNS] or shown[:1]
    for i in (i for i in shown if i not in keys):  # a column too wide alone: its cells cut
        room = width - _width(keys, [header, *body]) - 3
        if room >= max(len(header[i]), MIN_CELL):
            body = [[_cut_cell(c, room) if n == i else c for n, c in enumerate(row)]
                    for row in body]
    groups: list[list[int]] = []
    for i in (i for i in shown if i not in keys):
        if groups and _width([*keys, *groups[-1], i], [header, *body]) <= width:
            groups[-1].append(i)
        else:
            groups.append([i])
    if any(_width([*keys, *group], [header, *body]) > width for group in groups or [[]]):
        return [line for row in body for line in _record(header, row, keys, shown, width)]
    out: list[str] = []
    for group in groups or [[]]:
        columns = [*keys, *group]
        out += ([""] if out else []) + [_row(header, columns),
                                        "|" + "".join(f"{align[i]}|" for i in columns)]
        out += [_row(row, columns) for row in body]
    return out


MIN_CELL = 8  # the narrowest a cut cell gets; a table with less room prints its rows as lines
_UNIT = re.compile(r"\\.|&[a-z]+;|.")  # an escape or an entity is one character shown


def _cut_cell(cell: str, room: int) -> str:
    """A cell as written (escaped), cut in the middle to `room` characters, never inside an
    escape: a run directory keeps its name at the end."""
    if len(cell) <= room:
        return cell
    units = _UNIT.findall(cell)
    head: list[str] = []
    tail: list[str] = []
    while units:
        front = len(head) <= len(tail)  # alternately from the start and the end
        unit = units[0 if front else -1]
        if len("".join(head + tail)) + len(unit) + 1 > room:
            break
        if front:
            head.append(units.pop(0))
        else:
            tail.insert(0, units.pop())
    return "".join(head) + "…" + "".join(tail)


def _row(cells: list[str], columns: list[int]) -> str:
    return "| " + " | ".join(cells[i] if i < len(cells) else "" for i in columns) + " |"


def _width(columns: list[int], rows: list[list[str]]) -> int:
    return max(len(_row(row, columns)) for row in rows)


def _record(header: list[str], row: list[str], keys: list[int], shown: list[int],
            width: int) -> list[str]:
    """One row as a wrapped list item: its naming cells, then `column: value` for the rest."""
    named = " / ".join(row[i] for i in keys if i < len(row))
    rest = "; ".join(f"{header[i]}: {row[i]}" for i in shown if i not in keys and i < len(row))
    return _wrap(f"- {named}: {rest}", width)
