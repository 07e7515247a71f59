"""An answer's trajectory as a samples.jsonl row holds it (docs/run-format.md#steps): each
`Step` of a `SystemAnswer` becomes a `StepRecord` here, once, where the row is made
(core/samples.py sample_row), so that no system computes what the row says of its steps: the
step's tokens per role and latency from its calls, and whether a search repeats an earlier one.
Titles are written in NFC (core/titles.py), the form gold titles are read in.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, cast

from freshrag.core.records import ChunkRecord, StepRecord
from freshrag.core.titles import title_form
from freshrag.core.types import STOPS, LLMResponse, RetrievedChunk, Step, sum_usage_by_role


def best_chunks(chunks: list[RetrievedChunk]) -> list[RetrievedChunk]:
    """The chunks of several searches, each once (by article and place, at its best score),
    best first: what an agent gathered."""
    best: dict[tuple[str, int], RetrievedChunk] = {}
    for chunk in chunks:
        key = (chunk.title, chunk.index)
        if key not in best or chunk.score > best[key].score:
            best[key] = chunk
    return sorted(best.values(), key=lambda chunk: -chunk.score)


def chunk_records(chunks: list[RetrievedChunk]) -> list[dict[str, Any]]:
    """What a row keeps of each chunk an answer saw (`details.retrieved`): where it is from, its
    score and its text (the report's viewer shows it; a light read leaves the text out,
    core/samples.py)."""
    return [{"title": title_form(c.title), "index": c.index, "score": round(c.score, 6),
             "text": c.text} for c in chunks]


def step_records(steps: list[Step]) -> list[StepRecord]:
    """The steps in order; a search whose query an earlier search of the same answer asked
    is `repeated` (an agent that loops on one query spends without learning)."""
    searched: set[str] = set()
    records = []
    for step in steps:
        repeated = step.kind == "search" and step.query in searched
        if step.kind == "search" and step.query is not None:
            searched.add(step.query)
        records.append(step_record(step, repeated))
    return records


def step_record(step: Step, repeated: bool = False) -> StepRecord:
    # cast: the kind is one of STEP_KINDS (Step checks it when made)
    return cast(StepRecord, {
        "kind": step.kind, "query": step.query,
        "retrieved": [ChunkRecord(title=title_form(c.title), index=c.index,
                                  score=round(c.score, 6)) for c in step.retrieved],
        "title": title_form(step.title) if isinstance(step.title, str) else step.title, "text": step.text, "repeated": repeated, "calls": len(step.calls),
        "usage": {role: asdict(usage) for role, usage in sum_usage_by_role(list(step.calls)).items()},
        "latency_s": round(sum(call.latency_s for call in step.calls), 4),
    })


def stopped_problem(stopped: object) -> str | None:
    """What keeps a system's `stopped` from being written, or None: one of STOPS, or None."""
    if stopped is None or stopped in STOPS:
        return None
    return f"stopped {stopped!r:.80}, not one of {', '.join(STOPS)} or None"


def steps_problem(steps: object) -> str | None:
    """What keeps a system's `steps` from being written, or None: a list of `Step`s whose fields
    hold what their types say. A user's system may return anything; the runner asks this before
    a row is made of it."""
    if not isinstance(steps, list):
        return f"steps that are a {type(steps).__name__}, not a list of Step"
    for i, step in enumerate(steps):
        if not isinstance(step, Step):
            return f"steps[{i}] a {type(step).__name__}, not a Step"
        for name in ("query", "title", "text"):
            value = getattr(step, name)
            if not isinstance(value, (str, type(None))):
                return f"steps[{i}].{name} {value!r:.80}, not text or None"
        if not all(isinstance(chunk, RetrievedChunk) for chunk in step.retrieved):
            return f"steps[{i}].retrieved holding what is not a RetrievedChunk"
        if not all(isinstance(call, LLMResponse) for call in step.calls):
            return f"steps[{i}].calls holding what is not an LLMResponse"
    return None
