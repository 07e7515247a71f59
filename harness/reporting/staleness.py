"""Stale answers to changed facts (docs/reports.md#stale-answers), from the `staleness` scorer's
verdicts (harness/scoring/staleness.py) that loading.load_summaries attaches to each answer:

- `staleness`: per run identity, the answers with a verdict, the shares current, stale, other
  and abstained, each with its 95% Wilson interval, and the verdicts it could not get
  (`unscored`); `fixed`: of the questions the `baseline` identity (no retrieval, same dataset,
  like with like) answered stale, the share this one answered current; `memory_over_context`:
  of its answers whose retrieved context states the value now, the share that gives the value
  then all the same, the model's memory winning over the passage.
- `staleness_paired`: every two identities of one dataset and judge over the questions both
  have a verdict for, the stale share of a minus b, its paired-bootstrap interval, p-value
  (Holm-adjusted over the table) and minimum detectable difference, as the paired comparisons.

A report of runs without changed-fact verdicts has none of these tables, not even in the line
of empty tables: they are their own section (`changed`), printed by `render`. What the model
already knew of them, and each decider against it, is the analysis's table of every question
set (harness/reporting/known.py), which reads a verdict with `changed_score`.
"""

from __future__ import annotations

from typing import Any

from freshrag.core.stats import with_holm
from freshrag.core.summary import AnswerSummary
from freshrag.reporting.answers import Answers
from freshrag.reporting.decisions import wilson
from freshrag.reporting.identity import Identity, comparable, judged_alike, labels
from freshrag.reporting.report import columns_for, markdown_table
from freshrag.reporting.savings import paired_test
from freshrag.reporting.table import tables

SCORER = "staleness"
VERDICTS = ("current", "stale", "other", "abstained")  # the scorer's
BASELINE = "baseline"  # the system that answers with no retrieval
SECTION = "changed"
NOTE = ("Stale: the answer gives the value the fact had at the cutoff, not the value now. "
        "Memory over context: of the answers whose retrieved context states the value now, the "
        "share that gave the value then all the same.")
Verdicts = dict[str, dict[str, Any]]  # question id -> the scorer's details


def analyse(answers: Answers, seed: int = 0) -> dict[str, Any]:
    """The two tables, for analysis.json; nothing at all where no row has a verdict."""
    judged = {key: _verdicts(group) for key, group in answers.groups().items()}
    judged = {key: found for key, found in judged.items() if found[0] or found[1]}
    if not judged:
        return {}
    return {"staleness": staleness_rows(judged),
            "staleness_paired": paired_rows({key: found[0] for key, found in judged.items()},
                                            seed)}


def _verdicts(group: list[AnswerSummary]) -> tuple[Verdicts, int]:
    """The scored verdicts of a group by question, and how many it could not get."""
    verdicts, missing = {}, 0
    for row in group:
        score = changed_score(row)
        if score is None:
            continue
        if score["status"] == "scored":
            verdicts[row.question_id] = score.get("details") or {}
        else:
            missing += 1
    return verdicts, missing


def changed_score(row: AnswerSummary) -> dict[str, Any] | None:
    """The row's staleness score where its question is a changed fact (scored, or why not),
    None for any other question (or an answer the scorer did not see)."""
    score = row.scores.get(SCORER)
    return None if score is None or score["status"] == "not_applicable" else score


def staleness_rows(judged: dict[Identity, tuple[Verdicts, int]]) -> list[dict[str, Any]]:
    table = []
    for key, (verdicts, missing) in judged.items():
        shown = [details.get("verdict") for details in verdicts.values()]
        with_new = [details.get("verdict") for details in verdicts.values()
                    if details.get("new_in_context")]
        table.append({**key.fields(), "answers": len(shown),
                      **{name: wilson(shown.count(name), len(shown)) for name in VERDICTS},
                      "unscored": missing, "fixed": _fixed(key, verdicts, judged),
                      "new_retrieved": len(with_new),
                      "memory_over_context": wilson(with_new.count("stale"), len(with_new))})
    return table


def _fixed(key: Identity, verdicts: Verdicts,
           judged: dict[Identity, tuple[Verdicts, int]]) -> list[float] | None:
    """Of the questions the comparable baseline answered stale, the share `key` answered
    current; None for the baseline itself or without one."""
    if key.system == BASELINE:
        return None
    base = next((found for other, (found, _) in judged.items()
                 if other.system == BASELINE and comparable(other, key)), None)
    if base is None:
        return None
    stale = [question for question, details in base.items()
             if details.get("verdict") == "stale" and question in verdicts]
    return wilson(sum(verdicts[q].get("verdict") == "current" for q in stale), len(stale))


def paired_rows(judged: dict[Identity, Verdicts], seed: int = 0) -> list[dict[str, Any]]:
    names = labels(judged)
    table = []
    for a, b in judged_alike(judged):
        shared = sorted(judged[a].keys() & judged[b].keys())
        if len(shared) < 2:
            continue
        first = [float(judged[a][q].get("verdict") == "stale") for q in shared]
        second = [float(judged[b][q].get("verdict") == "stale") for q in shared]
        diffs = sorted(x - y for x, y in zip(first, second))
        table.append({"dataset": a.dataset, "a": names[a], "b": names[b],
                      "questions": len(shared),
                      "stale_a": round(sum(first) / len(shared), 4),
                      "stale_b": round(sum(second) / len(shared), 4),
                      "difference": round(sum(diffs) / len(diffs), 4),
                      **paired_test(diffs, seed)})
    return with_holm(table)


def render(analysis: dict[str, Any]) -> str:
    """The section's tables as markdown, then NOTE; "" where neither has rows."""
    parts = [f"### {table.title}\n\n" + markdown_table(rows, columns_for(table.columns, rows))
             for table in tables(SECTION) if (rows := analysis.get(table.key))]
    return "\n\n".join(parts + [NOTE]) if parts else ""


