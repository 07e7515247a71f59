"""What an answer came to, as every table of a report reads it: whether it was scored, its score,
whether it was correct, the tokens its pair spent, whether a system decided about retrieval or
searched in several steps, and which answers of two run identities answer the same questions
(docs/reports.md#what-a-report-holds).

Answers come as their summaries through loading.load_summaries, so an answer the run left
without a grade (an import, or a judge reply that could not be read) and that `freshrag score
--scorers judge` graded is judged by that pass in every table, as if the run's judge had graded
it (scoring/store.py `judged`); an answer's scores are read with core/samples.py
`judge_scores`.

The analysis (analysis.py), the decisions against need (decisions.py), the savings curve
(savings.py), the summary (report.py) and the figures all build on these, and on nothing of each
other's: imports among the reporting modules go one way.
"""

from __future__ import annotations

import math
from typing import Any

from freshrag.core.samples import answer_tokens, judge_scores
from freshrag.core.summary import AnswerSummary
from freshrag.core.types import SystemKind, system_kind
from freshrag.reporting.identity import Identity, comparable
from freshrag.reporting.retrieval_metrics import gold_set
from freshrag.systems import SYSTEMS

MIN_PAIRED = 10  # paired questions below which no interval or p-value is given (too few to test)
CORRECT_AT = 4  # judge truthfulness (1..5) at or above which an answer that did not abstain is correct


def answered_well(row: AnswerSummary, correct_at: int = CORRECT_AT) -> bool:
    """A scored answer whose truthfulness is at least `correct_at`: a correct answer, as the
    costs per correct answer and the oracle routers count it."""
    scores = judge_scores(row)
    return scores is not None and scores["truthfulness"] >= correct_at


def total_score(row: AnswerSummary) -> float | None:
    """Truthfulness + relevance (2..10), None for an answer that was not scored."""
    scores = judge_scores(row)
    return None if scores is None else scores["truthfulness"] + scores["relevance"]


def spent(rows: list[AnswerSummary], status: str = "ok") -> tuple[int, int]:
    """Input and output tokens (judge excluded) of the rows with this status: "ok" rows are what
    the tables call tokens, "failed" rows are counted apart."""
    tokens = [answer_tokens(row) for row in rows if row.status == status]
    return sum(t[0] for t in tokens), sum(t[1] for t in tokens)


def unreported(rows: list[AnswerSummary], name: str) -> bool:
    """Whether a system outside freshrag left `name` (input_tokens, output_tokens, retrievals,
    decision) unreported for any answered row: its totals are then unknown, never a sum of 0s."""
    return any(name in row.unknown for row in rows if row.status == "ok")


def retrievals(rows: list[AnswerSummary]) -> int | None:
    """The rows' retrievals, None (unknown) when some system did not say how many it made."""
    counts = [count for row in rows if (count := row.retrievals) is not None]
    return sum(counts) if len(counts) == len(rows) else None


def known_retrievals(rows: list[AnswerSummary]) -> list[AnswerSummary]:
    """The rows whose retrievals are known: what decisions against need can be judged on."""
    return [row for row in rows if row.retrievals is not None]


def latency(rows: list[AnswerSummary]) -> dict[str, Any] | None:
    """The median and 95th percentile of the answered rows' own answer latency, in seconds
    (nearest rank), None when no row records one."""
    values = sorted(value for row in rows
                    if row.status == "ok" and (value := row.answer_latency_s) is not None)
    if not values:
        return None
    rank = {q: values[max(0, math.ceil(q / 100 * len(values)) - 1)] for q in (50, 95)}
    return {"answers": len(values), "p50_s": round(rank[50], 3), "p95_s": round(rank[95], 3)}


def kind(group: list[AnswerSummary]) -> SystemKind:
    """What the group's system declares it is (`Declarations.kind`, docs/own-system.md), never
    what its rows happened to do: as its run's manifest records it (`system_kinds`, put on each
    answer as `system_kind` when it was loaded: loading.load_summaries), else (a run from
    before the record, rows made by hand) as the built-in system declares it; "fixed" for an
    import."""
    if group and group[0].system_kind is not None:
        return group[0].system_kind
    name = group[0].system if group else ""
    return system_kind(SYSTEMS[name]) if name in SYSTEMS else "fixed"


def decides(group: list[AnswerSummary]) -> bool:
    """A system that declares it decides per question whether to retrieve (a decider or a
    router), whatever its rows did: an agent that answered some question without searching is
    still the agent."""
    return kind(group) == "decides"


def untested(diffs: list[float]) -> str | None:
    """Why paired differences support no interval or p-value, as their cells say instead
    (docs/reports.md#how-sure-the-numbers-are): fewer than MIN_PAIRED questions, or no variance
    (every question differs by the same amount); None when they can be tested."""
    if len(diffs) < MIN_PAIRED:
        return f"n = {len(diffs)}, below {MIN_PAIRED}"
    if len(set(diffs)) < 2:
        return "no variance"
    return None


def hops(row: AnswerSummary) -> int:
    """The question's gold articles: its `hops`, else 1 for one gold article, 0 for none (a
    general query)."""
    return row.hops or len(gold_set(row))


def multi_step(group: list[AnswerSummary]) -> bool:
    """A multi-step agent (docs/reports.md#the-three-way-router): a system that declares itself
    one (`kind` "agent"); a system whose kind no manifest records (an import, a user's system of
    a run from before the record), from its rows: more than one search in some answer (its
    search steps, or its `retrievals` where it recorded no steps), or stopped at an agent's
    bound."""
    if group and (group[0].system in SYSTEMS or group[0].system_kind is not None):
        return kind(group) == "agent"
    return any(row.stopped or _searches(row) > 1 for row in group if row.status == "ok")


def _searches(row: AnswerSummary) -> int:
    if row.steps:
        return row.steps.searches
    return row.retrievals or 0


def by_question(group: list[AnswerSummary]) -> dict[str, AnswerSummary]:
    return {row.question_id: row for row in group}


def shared_questions(first: dict[str, AnswerSummary], second: dict[str, AnswerSummary]) -> list[str]:
    """Question ids both groups answered with the same question text, sorted (imported runs
    number questions by position, so one id may name two questions in two imports)."""
    return sorted(q for q in first.keys() & second.keys()
                  if first[q].question == second[q].question)


def references(groups: dict[Identity, list[AnswerSummary]], key: Identity
               ) -> tuple[dict[str, AnswerSummary], dict[str, AnswerSummary]] | None:
    """Rows by question of a `baseline` and a `naive` run comparable with `key` (same dataset,
    judge and shared models), or None when the report has no such pair."""
    for base in (k for k in groups if k.system == "baseline" and comparable(k, key)):
        for rag in (k for k in groups if k.system == "naive" and comparable(k, key)
                    and comparable(k, base)):
            return by_question(groups[base]), by_question(groups[rag])
    return None
