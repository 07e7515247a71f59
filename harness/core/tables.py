"""Values in the tables freshrag prints and writes: one escaper for markdown, one writer for CSV
(docs/reports.md#tables-as-text). The HTML page escapes its own way (reporting/render/html.py).

A value reaches a markdown table only through `cell` (or `row`, which calls it on each): a
question, an answer, a system, model or run name, a need the builder model wrote. Unescaped, a
`|` in one shifts every column after it, a line break ends the row, and `<script>` or an `<img>`
passes into any page the markdown is shown on. `cell` escapes the backslash and `|`, turns HTML's
special characters into entities (`&amp;`, `&lt;`, `&gt;`) and every line break into a space; a
cell that is markdown already, made from escaped cells (a total in bold), is a `Markdown` and
passes as it is. The same escaping serves text in a heading or a list line.

CSV is written with the csv module, which quotes what needs quoting. A spreadsheet runs a cell
that starts with `=`, `+`, `-` or `@` (or a tab or carriage return) as a formula, so such a text
cell gets a leading apostrophe, as OWASP recommends against CSV injection
(https://owasp.org/www-community/attacks/CSV_Injection); numbers are written as numbers.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any, Iterable, Sequence

BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")  # str.splitlines' line breaks
ESCAPES = (("\\", "\\\\"), ("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|"))
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


class Markdown(str):
    """Markdown made on purpose from escaped text (`**total**`): `cell` leaves it as it is."""


def cell(value: Any) -> str:
    """`value` as text that stays inside one markdown table cell and shows as written."""
    if isinstance(value, Markdown):
        return value
    text = BREAKS.sub(" ", str(value))
    for plain, escaped in ESCAPES:  # the backslash first, so no escape is escaped again
        text = text.replace(plain, escaped)
    return text


def row(cells: Iterable[Any]) -> str:
    """One markdown table row, every cell escaped."""
    return "| " + " | ".join(cell(value) for value in cells) + " |"


def header(columns: Sequence[Any], align: Sequence[str] | None = None) -> list[str]:
    """The header row and the delimiter row (`align`: "---", or "---:" for a right-aligned
    column; all left by default)."""
    return [row(columns), "|" + "".join(f"{a}|" for a in (align or ["---"] * len(columns)))]


def csv_cell(value: Any) -> Any:
    """A text value a spreadsheet would run as a formula, with a leading apostrophe."""
    return f"'{value}" if isinstance(value, str) and value.startswith(FORMULA_STARTS) else value


def csv_text(rows: Iterable[dict[str, Any]], columns: Sequence[str]) -> str:
    """`rows` as CSV with a header, through the csv module, every text cell `csv_cell`'s, each
    row ending in "\n". The writer ends rows in "\r\n" (so that it quotes a cell holding either
    character: it quotes only the characters of its line terminator), cut to "\n" after."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    lines = []
    for values in [columns, *([row.get(column) for column in columns] for row in rows)]:
        buffer.seek(0)
        buffer.truncate()
        writer.writerow([csv_cell(value) for value in values])
        lines.append(buffer.getvalue()[:-2] + "\n")
    return "".join(lines)
