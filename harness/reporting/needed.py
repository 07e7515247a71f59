"""Retrieval decisions against the need reference runs show. For each
`baseline` and `naive` run of one dataset that are comparable (same judge and answering models;
harness/reporting/identity.py), retrieval was *needed* for a question where the baseline scored
below naive (truthfulness + relevance). The oracle router (retrieve exactly when needed, the
upper bound of any adaptive system), then every comparable system that decides, with its
confusion matrix, precision and recall (docs/reports.md#what-a-report-holds). Need by
construction, from the questions' own `need`, is harness/reporting/decisions.py.
"""

from __future__ import annotations

from typing import Any

from freshrag.core.samples import answer_tokens, is_scored, judge_scores
from freshrag.core.stats import mean
from freshrag.core.summary import AnswerSummary
from freshrag.reporting.answers import Answers
from freshrag.reporting.identity import Identity, comparable, labels, models_label
from freshrag.reporting.outcomes import (
    by_question,
    decides,
    retrievals,
    shared_questions,
    total_score,
)


def decision_quality(answers: Answers, baseline: str = "baseline",
                     naive: str = "naive") -> list[dict[str, Any]]:
    """The table of `decisions_and_notes`."""
    return decisions_and_notes(answers, baseline, naive)[0]


def decisions_and_notes(answers: Answers, baseline: str = "baseline",
                        naive: str = "naive") -> tuple[list[dict[str, Any]], list[str]]:
    """For each `baseline` and `naive` run of one dataset that are comparable (same judge and
    answering models): the oracle router, then every comparable system that decides (its declared
    kind, outcomes.decides) judged against "needed". Notes say what could not be judged, and why."""
    groups = answers.groups()
    names = labels(groups)
    table, judged = [], set()
    for base, rag in [(b, n) for b in groups if b.system == baseline
                      for n in groups if n.system == naive and comparable(b, n)]:
        by_base, by_rag = by_question(groups[base]), by_question(groups[rag])
        needed = _needed(by_base, by_rag)
        if not needed:
            continue
        against = ({} if (names[base], names[rag]) == (baseline, naive)
                   else {"against": f"{names[base]} vs {names[rag]}"})
        routed = [by_rag[q] if needed[q] else by_base[q] for q in needed]
        table.append({"dataset": base.dataset, "system": "oracle-router",
                      "models": {**base.model_map, **rag.model_map}, **against,
                      "questions": len(needed), "needed": sum(needed.values()),
                      **_router_scores(routed)})
        for key, group in groups.items():
            if key.system in (baseline, naive) or not decides(group) \
                    or not (comparable(key, base) and comparable(key, rag)):
                continue
            judged.add(key)
            theirs = by_question(group)
            asked = [theirs[q] for q in needed if q in theirs and is_scored(theirs[q])]
            table.append({**key.fields(), **against, **_confusion(theirs, needed),
                          **_router_scores(asked)})
    return table, _decision_notes(groups, names, judged, baseline, naive)


def _needed(base: dict[str, AnswerSummary], rag: dict[str, AnswerSummary]) -> dict[str, bool]:
    """Per question both scored: did naive score above the baseline (retrieval was needed)?"""
    scores = {q: (total_score(base[q]), total_score(rag[q])) for q in shared_questions(base, rag)}
    return {q: rag_score > base_score for q, (base_score, rag_score) in scores.items()
            if base_score is not None and rag_score is not None}


def _decision_notes(groups: dict[Identity, list[AnswerSummary]], names: dict[Identity, str],
                    judged: set[Identity], baseline: str, naive: str) -> list[str]:
    notes = []
    for dataset in dict.fromkeys(key.dataset for key in groups):
        mine = [key for key in groups if key.dataset == dataset]
        bases = [k for k in mine if k.system == baseline]
        rags = [k for k in mine if k.system == naive]
        if bases and rags and not any(comparable(b, n) for b in bases for n in rags):
            notes.append(f"{dataset}: no decision analysis: {baseline} and {naive} differ in "
                         f"models ({baseline} [{models_label(bases[0].model_map)}] vs {naive} "
                         f"[{models_label(rags[0].model_map)}])")
        for key in mine:
            if key.system in (baseline, naive) or key in judged or not decides(groups[key]):
                continue
            why = (f"no {baseline} and {naive} run with the same models and scored answers to "
                   f"the same questions" if bases and rags else
                   f"it needs a {baseline} and a {naive} run on the same questions")
            notes.append(f"{dataset} / {names[key]} ({models_label(key.model_map)}): decisions "
                         f"not judged: {why}")
    return notes


def _router_scores(rows: list[AnswerSummary]) -> dict[str, Any]:
    tokens = [answer_tokens(row) for row in rows]
    scored = [scores for row in rows if (scores := judge_scores(row)) is not None]
    return {"truthfulness": mean([s["truthfulness"] for s in scored], places=4),
            "relevance": mean([s["relevance"] for s in scored], places=4),
            "input_tokens": sum(t[0] for t in tokens), "output_tokens": sum(t[1] for t in tokens),
            "retrievals": retrievals(rows)}


def _confusion(rows: dict[str, AnswerSummary], needed: dict[str, bool]) -> dict[str, Any]:
    pairs = [(count > 0, needed[q]) for q in needed
             if q in rows and (count := rows[q].retrievals) is not None]
    tp = sum(r and n for r, n in pairs)
    fp = sum(r and not n for r, n in pairs)
    fn = sum(n and not r for r, n in pairs)
    tn = sum(not r and not n for r, n in pairs)
    return {"questions": len(pairs), "needed": tp + fn, "retrieved": tp + fp,
            "true_positive": tp, "false_positive": fp, "false_negative": fn, "true_negative": tn,
            "precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / (tp + fn), 4) if tp + fn else None}
