"""Run directories' answers as RAGChecker's input (docs/export.md#ragchecker-input): the JSON
document its checking pipeline reads, `{"results": [{"query_id", "query", "gt_answer",
"response", "retrieved_context": [{"doc_id", "text"}]}]}` (RAGChecker's `RAGResults`). Reading
only the runs' rows, it makes no call.

One result per answered pair (a failed pair has no response to check). `gt_answer` is the
question's reference answer; `retrieved_context` the chunks the answer saw with their text
(`details.retrieved`), each `doc_id` its article's title and its place in it (`TITLE#INDEX`, as
the traces name a document). RAGChecker's metrics average over the file as over one RAG system,
so a file holds one system's answers: several are refused, naming them. `query_id` is the
question id, after the run, dataset and epoch where the pairs hold several.
"""

from __future__ import annotations

from typing import Any, Sequence

from freshrag.core.errors import UserError
from freshrag.core.records import SampleRow
from freshrag.reporting.export_rows import pair_ids


class RagcheckerError(UserError, ValueError):
    """Answers that make no RAGChecker input: the message says which and the way out."""


def ragchecker_input(rows: Sequence[SampleRow]) -> dict[str, Any]:
    """The answered rows of one system as RAGChecker's `RAGResults` document."""
    systems = list(dict.fromkeys(row["system"] for row in rows))
    if len(systems) > 1:
        raise RagcheckerError(f"--format ragchecker: RAGChecker's metrics are one system's; the "
                              f"answers are of {', '.join(systems)}: give --systems NAME, one "
                              f"file per system")
    ids = pair_ids(rows, ("run", "dataset", "epoch"))
    return {"results": [result(row, ident) for row, ident in zip(rows, ids)]}


def result(row: SampleRow, ident: str) -> dict[str, Any]:
    """One answered pair as a RAGChecker `RAGResult`."""
    reference = row.get("reference")
    retrieved = (row.get("details") or {}).get("retrieved") or []
    return {"query_id": ident, "query": row.get("question") or "",
            "gt_answer": reference if isinstance(reference, str) else "",
            "response": row.get("answer") or "",
            "retrieved_context": [{"doc_id": f"{chunk.get('title')}#{chunk.get('index')}",
                                   "text": chunk["text"]} for chunk in retrieved
                                  if isinstance(chunk.get("text"), str)]}
