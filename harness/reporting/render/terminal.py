"""The summary as printed on a terminal: its key columns in an aligned markdown table that reads
at 80 columns (docs/reports.md#what-a-report-holds), and `format_value`, how every report shows
a value in a cell (this table, report.py's `markdown_table` for the whole tables, the HTML page).
"""

from __future__ import annotations

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
    """A table cell, as every report shows it: `–` for missing, 2 decimals (3 significant digits
    for small amounts such as dollars), thousands separators, `value [low, high]` for intervals,
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
        shown = [format_value(v) for v in value]
        return f"{shown[0]} [{shown[1]}, {shown[2]}]" if len(value) == 3 else \
            f"[{shown[0]}, {shown[1]}]"
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value) or "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if 0 < abs(value) < 0.005 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def is_interval(value: list[Any]) -> bool:
    """[value, low, high] or [low, high] of numbers (the analysis's intervals)."""
    return len(value) in (2, 3) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
