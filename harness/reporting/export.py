"""Run directories' answers exported for the tools users already have (docs/export.md): Ragas'
multi-turn samples (`ragas`), one per answered row, flat records for pandas (`jsonl`), one
per row, OpenTelemetry traces (`otel`), one per answered row (made in reporting/otel.py,
which imports the SDK only when that format runs), and the one-document formats: an inspect_ai
eval log (`inspect`, reporting/inspect_log.py) and RAGChecker's input (`ragchecker`,
reporting/ragchecker.py). Reading only the runs' files, it makes no call.

A Ragas sample is the answer's trajectory as Ragas' messages (`ragas.messages`): the question as
a human message, each search as an ai message calling `search` with {"query"} followed by a tool
message holding what it found (a JSON list of {title, index, score}, with the chunk's `text` where
the row kept it: `details.retrieved` holds the texts of the chunks the answer saw; the steps'
chunks have none), a read as a call of `read` with {"title"}, a decision, a reasoning step and an
earlier answer as ai text, and the row's answer as the last ai message. The sample is written
as Ragas' own `EvaluationDataset.to_jsonl` writes one (the keys of each message in pydantic's
order, None left out, `json.dumps(..., ensure_ascii=False)`), so that Ragas reads it back and
writes the same bytes again. freshrag's own fields (run, dataset, system, question id, gold
titles, grade) go in the human message's `metadata`: Ragas keeps a message's metadata, while it
drops a sample's unknown keys on reading, and freshrag's answers-file importer refuses them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from freshrag.core.errors import UserError
from freshrag.core.outputs import Output, check_outputs, check_outside_runs
from freshrag.core.records import SampleRow
from freshrag.core.samples import judge_scores
from freshrag.core.summary import summary_of
from freshrag.reporting.export_rows import (
    READ_TOOL,
    SEARCH_TOOL,
    answered,
    chunk_texts,
    gold_titles,
)

FORMATS = ("ragas", "jsonl", "otel", "inspect", "ragchecker")
# written as one JSON document (one line) holding every pair, not a record a pair
DOCUMENTS = ("inspect", "ragchecker")
# the OpenTelemetry SDK, its encoder and OpenInference's names
TRACES_EXTRA = "pip install 'freshrag[traces]'"
# the flat record's token columns, roles in this order first, then any other as first met
ROLE_ORDER = ("answer", "decision", "judge")
JUDGE = "judge"
# the names of the .json logs `inspect view` lists: a time first, as inspect_ai names its own
LISTED = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*\.json$")
LISTED_EXAMPLE = "2026-01-31T12-00-00_freshrag.json"


class ExportError(UserError, ValueError):
    """An export that cannot be written as asked: the message names what and the way out."""


# --------------------------------------------------------------------------- choosing the rows

def check_out(out: Path, run_dirs: Iterable[Path]) -> None:
    """Refuse an output that is no regular file (a link, a directory, a device) or is inside a
    run directory (core/outputs.py)."""
    given = [Output(out, "--out", "give another --out")]
    check_outputs(given, [])
    check_outside_runs(given, run_dirs)


def chosen(rows: list[SampleRow], systems: Sequence[str] | None) -> list[SampleRow]:
    """The rows of `systems` (None: all); a system no run answered with is refused by name."""
    if systems is None:
        return rows
    present = list(dict.fromkeys(row["system"] for row in rows))
    if missing := [name for name in systems if name not in present]:
        raise ExportError(f"--systems: no answers of {', '.join(missing)} in the run "
                          f"directories; their systems: {', '.join(present) or 'none'}")
    return [row for row in rows if row["system"] in systems]


def records(rows: list[SampleRow], fmt: str, openinference: bool = False
            ) -> tuple[list[SampleRow], Iterator[dict[str, Any]]]:
    """The rows `fmt` exports (ragas, otel, ragchecker: the answered ones; jsonl, inspect: all)
    and their records, each made as it is written (inspect, ragchecker: one record, the whole
    document); `openinference`: the traces' OpenInference attributes too."""
    if openinference and fmt != "otel":
        raise ExportError(f"--openinference is for --format otel, not {fmt}")
    if fmt == "otel":
        kept = [row for row in rows if answered(row)]
        if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            raise ExportError("--format otel: OTEL_SDK_DISABLED=true turns the OpenTelemetry "
                              "SDK off, which then makes no span; unset it for the export")
        try:
            from freshrag.reporting.otel import trace_records
        except ImportError as error:
            raise ExportError(f"--format otel needs the OpenTelemetry SDK ({error.name} is not "
                              f"installed): {TRACES_EXTRA}") from error
        return kept, trace_records(kept, openinference)
    if fmt == "inspect":
        from freshrag.reporting.inspect_log import eval_log
        return rows, iter([eval_log(rows)] if rows else [])
    if fmt == "ragchecker":
        from freshrag.reporting.ragchecker import ragchecker_input
        kept = [row for row in rows if answered(row)]
        return kept, iter([ragchecker_input(kept)] if kept else [])
    if fmt == "ragas":
        kept = [row for row in rows if answered(row)]
        return kept, map(ragas_sample, kept)
    roles = roles_of(rows)
    return rows, (flat_record(row, roles) for row in rows)


def notes(fmt: str, kept: Sequence[SampleRow], out: str) -> list[str]:
    """What a user should know of the file written: an inspect log `inspect view` will not list
    by its name, RAGChecker input whose questions have no reference answer."""
    if fmt == "inspect" and out != "-" and not LISTED.match(Path(out).name):
        return [f"note: inspect view lists a .json log only when its name starts with a time "
                f"(e.g. {LISTED_EXAMPLE}); read_eval_log reads it by any name"]
    if fmt == "ragchecker" and (lacking := sum(not isinstance(row.get("reference"), str)
                                               for row in kept)):
        return [f"note: {lacking} of {len(kept)} questions have no reference answer: their "
                f"gt_answer is empty, which RAGChecker's recall and precision need"]
    return []


# --------------------------------------------------------------------------- Ragas


def ragas_sample(row: SampleRow) -> dict[str, Any]:
    """The answered row as a Ragas MultiTurnSample's dict: `user_input` the conversation,
    `reference` the question's reference answer when it has one. No `reference_tool_calls`:
    freshrag knows the articles that answer a question, not the searches that should find them
    (docs/export.md#no-reference-tool-calls)."""
    steps = list(row.get("steps") or [])
    if steps and steps[-1]["kind"] == "answer":
        steps.pop()  # the row's answer, the last message
    texts = chunk_texts(row)
    messages = [_message("human", row.get("question") or "", metadata=_identity(row))]
    for step in steps:
        messages += _step_messages(step, texts)
    messages.append(_message("ai", row.get("answer") or ""))
    sample: dict[str, Any] = {"user_input": messages}
    if isinstance(row.get("reference"), str):
        sample["reference"] = row["reference"]
    return sample


def _message(kind: str, content: str, metadata: dict[str, Any] | None = None,
             tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A message as Ragas' model_dump(exclude_none=True) gives it: content, metadata, type,
    tool_calls, the ones that are None left out."""
    message: dict[str, Any] = {"content": content}
    if metadata is not None:
        message["metadata"] = metadata
    message["type"] = kind
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return message


def _step_messages(step: Mapping[str, Any], texts: dict[tuple[str, int], str]
                   ) -> list[dict[str, Any]]:
    """A step as messages: a search or a read as the ai's call and the tool's result, any other
    step with text as ai text (a decision as `decide: LABEL`); a step without text, none."""
    if step["kind"] == "search":
        found = [_chunk(chunk, texts) for chunk in step.get("retrieved") or []]
        return [_message("ai", "", tool_calls=[_call(SEARCH_TOOL, query=step.get("query") or "")]),
                _message("tool", json.dumps(found, ensure_ascii=False))]
    if step["kind"] == "read" and step.get("title"):
        return [_message("ai", "", tool_calls=[_call(READ_TOOL, title=step["title"])]),
                _message("tool", json.dumps([{"title": step["title"]}], ensure_ascii=False))]
    text = step.get("text")
    if not text:
        return []
    return [_message("ai", f"decide: {text}" if step["kind"] == "decide" else text)]


def _call(name: str, **args: str) -> dict[str, Any]:
    return {"name": name, "args": args}


def _chunk(chunk: dict[str, Any], texts: dict[tuple[str, int], str]) -> dict[str, Any]:
    found = {"title": chunk["title"], "index": chunk.get("index"), "score": chunk.get("score")}
    text = texts.get((chunk["title"], chunk.get("index", -1)))
    return {**found, "text": text} if text is not None else found


def _identity(row: SampleRow) -> dict[str, Any]:
    """freshrag's fields of a sample, in its human message's metadata."""
    grade = row.get("grade")
    return {"run": row.get("run"), "dataset": row.get("dataset"), "system": row["system"],
            "question_id": row["question_id"], "epoch": row.get("epoch") or 1,
            "gold_titles": gold_titles(row),
            "grade": None if grade is None else {
                "truthfulness": grade["truthfulness"], "relevance": grade["relevance"],
                "unscored_reason": grade["unscored_reason"]}}


# --------------------------------------------------------------------------- flat records

def roles_of(rows: Iterable[SampleRow]) -> list[str]:
    """Every role that spent tokens in `rows`: answer, decision, judge first, then as first met."""
    met = dict.fromkeys(role for row in rows for role in row.get("usage") or {})
    return [role for role in ROLE_ORDER if role in met] + [r for r in met if r not in ROLE_ORDER]


def flat_record(row: SampleRow, roles: Sequence[str]) -> dict[str, Any]:
    """One row as a flat record (docs/export.md#jsonl-for-pandas): a column a value, but `steps`
    and `gold_titles`, which are lists."""
    grade: Mapping[str, Any] = row.get("grade") or {}
    scores = judge_scores(summary_of(row)) or {}
    steps = row.get("steps")
    searches = [step for step in steps or [] if step["kind"] == "search"]
    details = row.get("details") or {}
    retrieved = details.get("retrieved")
    return {
        "run": row.get("run"), "dataset": row.get("dataset"), "system": row["system"],
        "question_id": row["question_id"], "epoch": row.get("epoch") or 1,
        "question": row.get("question"),
        "gold_titles": gold_titles(row), "reference": row.get("reference"),
        "status": row["status"], "answer": row.get("answer"), "error": row.get("error"),
        "truthfulness": scores.get("truthfulness"), "relevance": scores.get("relevance"),
        "unscored_reason": grade.get("unscored_reason"), "stopped": row.get("stopped"),
        **_tokens(row, roles),
        "retrievals": row["retrievals"], "decision": details.get("decision"),
        "retrieved_titles": None if retrieved is None else [c["title"] for c in retrieved],
        # unknown (null), not 0, for a row that recorded no steps
        "searches": len(searches) if steps else None,
        "repeated_searches": sum(s.get("repeated") is True for s in searches) if steps else None,
        "latency_s": row.get("latency_s"), "answer_latency_s": row.get("answer_latency_s"),
        "steps": steps or [],
    }


def _tokens(row: SampleRow, roles: Sequence[str]) -> dict[str, Any]:
    """`tokens_ROLE_input` and `_output` for every role (0 where the row made no call of it),
    and the system's totals, every role but the judge's; null where a system outside freshrag
    did not report them (`details.unknown`)."""
    usage: Mapping[str, Mapping[str, Any]] = row.get("usage") or {}
    unknown = set((row.get("details") or {}).get("unknown") or ())
    lost = {side: f"{side}_tokens" in unknown for side in ("input", "output")}
    columns: dict[str, Any] = {}
    for role in roles:
        for side in ("input", "output"):
            spent = usage.get(role, {}).get(side, 0)
            columns[f"tokens_{role}_{side}"] = None if lost[side] and role != JUDGE else spent
    for side in ("input", "output"):
        columns[f"tokens_{side}"] = None if lost[side] else sum(
            counts[side] for role, counts in usage.items() if role != JUDGE)
    columns["tokens_estimated"] = any(counts.get("estimated") for counts in usage.values())
    return columns
