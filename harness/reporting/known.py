"""What each model already knew, and each decider against it
(docs/reports.md#decisions-against-what-the-model-knew).

For every question set, from a closed-book run of the same questions (the `baseline` system,
no retrieval), a question is *known* to that model where the baseline's answer was right, and
retrieval was needed where it was not:

- a changed fact (a question the staleness scorer saw, harness/reporting/staleness.py
  `changed_score`): its verdict is `current`, the value now;
- any other question: the judge found the answer correct, truthfulness at least `correct_at`
  (outcomes.answered_well: the correct answer of the costs per correct answer and the gate).

A baseline answer with neither (unscored, failed, a changed fact without a verdict) labels
nothing. Every system that decides (its declared kind, outcomes.decides) and is comparable with
the baseline (identity.comparable: same dataset, judge and shared models) is judged over the
questions both answered (same id, same text) that it answered with its retrievals known:
`known`, `retrieved`, the `precision` and `recall` of its retrievals against that need with 95%
Wilson intervals, `wasted_tokens` (every role's but the judge's, on the questions it retrieved
for though the model knew them) and, where its answers have staleness verdicts,
`stale_unretrieved` (stale answers given without retrieving; None otherwise). No model is
called: the labels come from the runs' rows. The need by construction (the questions' own
`need`) is harness/reporting/decisions.py; the need from a baseline below naive,
harness/reporting/needed.py.
"""

from __future__ import annotations

from typing import Any

from freshrag.core.samples import answer_tokens, judge_scores
from freshrag.core.summary import AnswerSummary
from freshrag.reporting.answers import Answers
from freshrag.reporting.decisions import wilson
from freshrag.reporting.identity import comparable, labels
from freshrag.reporting.outcomes import (
    CORRECT_AT,
    answered_well,
    by_question,
    decides,
    shared_questions,
)
from freshrag.reporting.staleness import BASELINE, changed_score


def knew(row: AnswerSummary, correct_at: int = CORRECT_AT) -> bool | None:
    """Whether the closed-book answer `row` was right (module docstring); None where it says
    nothing: no verdict, no grade."""
    score = changed_score(row)
    if score is not None:
        return _verdict(score) == "current" if score["status"] == "scored" else None
    return answered_well(row, correct_at) if judge_scores(row) is not None else None


def known_decisions(answers: Answers, correct_at: int = CORRECT_AT) -> list[dict[str, Any]]:
    """Per baseline identity, each comparable decider against what it knew; `against` names
    the baseline where the report has more than one of it."""
    groups = answers.groups()
    names = labels(groups)
    table = []
    for base in [key for key in groups if key.system == BASELINE]:
        closed = by_question(groups[base])
        known = {q: label for q, row in closed.items()
                 if (label := knew(row, correct_at)) is not None}
        against = {} if names[base] == BASELINE else {"against": names[base]}
        for key, group in groups.items():
            if key.system == BASELINE or not decides(group) or not comparable(key, base):
                continue
            theirs = by_question(group)
            rows = [theirs[q] for q in shared_questions(closed, theirs) if q in known
                    and theirs[q].status == "ok" and theirs[q].retrievals is not None]
            if rows:
                table.append({**key.fields(), **against, **judged(rows, known)})
    return table


def judged(rows: list[AnswerSummary], known: dict[str, bool]) -> dict[str, Any]:
    """A decider's answers (retrievals known) against `known`, by question id."""
    retrieved = [(row.retrievals or 0) > 0 for row in rows]
    needed = [not known[row.question_id] for row in rows]
    hits = sum(r and n for r, n in zip(retrieved, needed))
    verdicts = [(r, _verdict(score)) for row, r in zip(rows, retrieved)
                if (score := changed_score(row)) is not None and score["status"] == "scored"]
    return {"questions": len(rows), "known": len(rows) - sum(needed),
            "retrieved": sum(retrieved),
            "precision": wilson(hits, sum(retrieved)), "recall": wilson(hits, sum(needed)),
            "wasted_tokens": sum(sum(answer_tokens(row))
                                 for row, r, n in zip(rows, retrieved, needed) if r and not n),
            "stale_unretrieved": sum(not r and verdict == "stale" for r, verdict in verdicts)
            if verdicts else None}


def _verdict(score: dict[str, Any]) -> Any:
    return (score.get("details") or {}).get("verdict")
