"""What every export format reads of a row the same way (docs/export.md): whether it has an
answer, the articles that answer its question, the texts of the chunks the answer saw, its id in
a document of every pair, and the names of the tools an exported trajectory calls."""

from __future__ import annotations

from typing import Sequence

from freshrag.core.records import SampleRow

SEARCH_TOOL, READ_TOOL = "search", "read"  # the tools an exported trajectory calls


def answered(row: SampleRow) -> bool:
    """A row with an answer to export (a failed pair has none)."""
    return row["status"] == "ok" and isinstance(row.get("answer"), str)


def gold_titles(row: SampleRow) -> list[str]:
    """The articles that answer the row's question, in hop order; none for a general query."""
    return list(row.get("gold_titles") or ([row["gold_title"]] if row["gold_title"] else []))


def chunk_texts(row: SampleRow) -> dict[tuple[str, int], str]:
    """The text of each chunk the answer saw, by (title, index): what `details.retrieved` keeps."""
    retrieved = (row.get("details") or {}).get("retrieved") or []
    return {(chunk["title"], chunk["index"]): chunk["text"] for chunk in retrieved
            if isinstance(chunk.get("index"), int) and isinstance(chunk.get("text"), str)}


def pair_ids(rows: Sequence[SampleRow], parts: Sequence[str]) -> list[str]:
    """Each row's id in a document of every pair: its question id after those of `parts` (run,
    dataset, system, epoch) whose value is not the same in every row, joined by `/`."""
    varying = [part for part in parts if len({str(row.get(part)) for row in rows}) > 1]
    return ["/".join([*(str(row.get(part)) for part in varying), str(row["question_id"])])
            for row in rows]
