"""An answer's trajectory as a samples.jsonl row holds it (docs/run-format.md#steps): each
`Step` of a `SystemAnswer` becomes a `StepRecord` here, once, where the row is made
(core/samples.py sample_row), so that no system computes what the row says of its steps: the
step's tokens per role and latency from its calls, and whether a search repeats an earlier one.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import cast

from freshrag.core.records import ChunkRecord, StepRecord
from freshrag.core.types import Step, sum_usage_by_role


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
        "retrieved": [ChunkRecord(title=c.title, index=c.index, score=round(c.score, 6))
                      for c in step.retrieved],
        "title": step.title, "text": step.text, "repeated": repeated, "calls": len(step.calls),
        "usage": {role: asdict(usage) for role, usage in sum_usage_by_role(list(step.calls)).items()},
        "latency_s": round(sum(call.latency_s for call in step.calls), 4),
    })
