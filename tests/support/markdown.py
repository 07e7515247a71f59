"""Markdown tables read back as a renderer (GitHub's, CommonMark's GFM tables) reads them: a row
split at every `|` that no backslash escapes, each cell's escapes and entities undone."""

from __future__ import annotations

import html


def cells(line: str) -> list[str]:
    """The cells of one table row, as a reader sees them (stripped, unescaped)."""
    assert line.startswith("|") and line.endswith("|"), line
    found, current, escaped = [], "", False
    for char in line[1:-1]:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            found.append(current)
            current = ""
        else:
            current += char
    found.append(current)
    return [html.unescape(cell.strip()) for cell in found]


def table_rows(text: str) -> list[list[str]]:
    """Every table row of `text` (its lines starting with `|`), delimiter rows left out."""
    return [cells(line) for line in text.splitlines()
            if line.startswith("|") and not set(line) <= set("|-: ")]
