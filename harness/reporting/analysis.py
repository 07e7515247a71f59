"""Why a system scored as it did, and how sure the numbers are; all from samples.jsonl rows.

- Retrieval quality over gold sets (harness/reporting/retrieval_metrics.py, trec_eval's code):
  hit@1, hit@k (any gold article among the first k), recall of all gold articles at k, nDCG@k
  and MRR at the article level from the retrieved chunks' titles, and the recall of any and of
  all over a multi-step answer's whole trajectory.
- Failure attribution: per answer, retrieval missed the gold article / gold retrieved but the
  answer still scored low (generation) / no retrieval and a low score (knowledge gap) / fine.
  Where the answer has scores beyond the judge (harness/reporting/scorers.py), they decide
  first: a context of which no sentence was needed is a retrieval miss, an answer its context
  does not support (faithfulness below 0.5) a generation failure. An answer to a multi-article
  question, of several searches or stopped at a bound is attributed by its gold set instead:
  stopped / no gold article in its trajectory / some but not all (partial retrieval) / all of
  them (generation).
- Decision quality of adaptive systems against a `baseline` and a `naive` run on the same
  questions: retrieval is *needed* where the baseline scored below naive (truthfulness +
  relevance). Confusion matrix, precision and recall per adaptive system, and the oracle router
  (retrieve exactly when needed), the upper bound of any adaptive system
  (harness/reporting/needed.py).
- Quality against cost: mean truthfulness + relevance against input tokens and dollars (from the
  price table, harness/reporting/prices.py), with the Pareto front marked.
- Uncertainty: percentile-bootstrap 95% intervals for means and token totals, and paired
  bootstrap tests between systems on the same questions.
- With questions that carry `kind` and `need`: decisions against need by construction, the
  threshold sweep and ROC (harness/reporting/decisions.py), and the savings curve and mixes
  (harness/reporting/savings.py), merged into the same result.
- Decisions against what the model knew, for every question set: a question is known where the
  comparable `baseline` answered it right (harness/reporting/known.py).

Every table is per run identity (harness/reporting/identity.py), and compares only like with like: the
paired tests, the decision analysis and the Pareto front pair identities of the same dataset and
judge model that agree on the model of every role both used; what could not be compared is said
in `notes`. Token totals and dollars are those of the answered (ok) pairs, as in the summary;
failed pairs' tokens are counted apart there (harness/reporting/report.py).
"""

from __future__ import annotations

from typing import Any

from freshrag.core.samples import answer_tokens, judge_scores
from freshrag.core.stats import (
    BOOTSTRAP_SAMPLES,
    CONFIDENCE,
    bootstrap_interval,
    mean,
    with_holm,
)
from freshrag.core.summary import AnswerSummary
from freshrag.reporting import decisions as by_need
from freshrag.reporting import savings, staleness, trajectory
from freshrag.reporting.answers import Answers
from freshrag.reporting.groups import analyse_groups
from freshrag.reporting.identity import (
    Identity,
    judged_alike,
    labels,
    mixed_notes,
)
from freshrag.reporting.known import known_decisions
from freshrag.reporting.needed import decisions_and_notes
from freshrag.reporting.outcomes import (
    by_question,
    latency,
    shared_questions,
    spent,
    total_score,
    unreported,
)
from freshrag.reporting.prices import batch_note, row_cost
from freshrag.reporting.retrieval_metrics import (
    METRICS,
    gold_set,
    retrieved_titles,
    trajectory_titles,
)
from freshrag.reporting.scorers import CORRECT_AT, scorer_attribution
from freshrag.reporting.scorers import analyse as scorer_tables
from freshrag.reporting.table import computed

LOW_SCORE = 8  # truthfulness + relevance below this (of 10) is a poor answer
GOLD_CONTEXT_SYSTEMS = {"oracle"}  # answer with the gold article itself: a low score is generation
ATTRIBUTIONS = ("fine", "retrieval_miss", "partial_retrieval", "generation", "knowledge_gap",
                "stopped", "unscored")


# --------------------------------------------------------------------------- retrieval quality


def retrieval_quality(answers: Answers, with_intervals: bool = False,
                      seed: int = 0) -> list[dict[str, Any]]:
    """Per run identity that retrieved at all, over its answers that retrieved a question with
    a gold set: the means of retrieval_metrics.METRICS (article level, trec_eval's code); each as
    [value, low, high] with its 95% bootstrap interval if `with_intervals`."""
    def shown(values: list[float]) -> Any:
        if not with_intervals:
            return mean(values, places=4)
        return [mean(values, places=4), *bootstrap_interval(values, mean, seed=seed)]

    table = []
    for key, group in answers.groups().items():
        measured = [(values, titles) for row, values in zip(group, answers.metrics(key))
                    if values is not None and (titles := retrieved_titles(row)) is not None]
        if not measured:  # general queries (no gold set) are not measured
            continue
        table.append({**key.fields(), "retrieved": len(measured),
                      "k": max(len(titles) for _, titles in measured),
                      **{name: shown([values[name] for values, _ in measured])
                         for name in METRICS}})
    return table


# --------------------------------------------------------------------------- failure attribution


def attribution(row: AnswerSummary, low: float = LOW_SCORE) -> str:
    """One of ATTRIBUTIONS. A one-article, single-search answer: by its scores where scored
    (scorers.scorer_attribution), else whether the gold article was retrieved; an answer to a
    multi-article question, or of several searches, or stopped at a bound: `_by_gold_set`."""
    score = total_score(row)
    if score is None:
        return "unscored"
    if score >= low:
        return "fine"
    gold = gold_set(row)
    if not gold:  # a general query: no document to miss, the answer failed
        return "generation"
    if len(gold) > 1 or (row.steps and row.steps.searches > 1) or row.stopped:
        return _by_gold_set(row, gold)
    titles = retrieved_titles(row)
    by_scores = scorer_attribution(row)  # faithfulness, context relevance where scored
    if by_scores:
        return by_scores
    if titles is not None:
        return "generation" if gold[0] in titles else "retrieval_miss"
    return _unretrieved(row)


def _by_gold_set(row: AnswerSummary, gold: list[str]) -> str:
    """Stopped at the bound (it never answered as it chose); else, over every search of its
    trajectory, no gold article found (retrieval_miss), some but not all (partial_retrieval),
    all of them and a wrong answer all the same (generation)."""
    if row.stopped:
        return "stopped"
    if retrieved_titles(row) is None and not (row.steps and row.steps.searches):
        return _unretrieved(row)
    found = set(gold) & set(trajectory_titles(row))
    if not found:
        return "retrieval_miss"
    return "generation" if len(found) == len(set(gold)) else "partial_retrieval"


def _unretrieved(row: AnswerSummary) -> str:
    return "generation" if row.system in GOLD_CONTEXT_SYSTEMS else "knowledge_gap"


def attributions(answers: Answers, low: float = LOW_SCORE) -> list[dict[str, Any]]:
    table = []
    for key, group in answers.groups().items():
        counts = {name: 0 for name in ATTRIBUTIONS}
        for row in group:
            counts[attribution(row, low)] += 1
        table.append({**key.fields(), **counts})
    return table


# --------------------------------------------------------------------------- quality against cost


def quality_and_cost(answers: Answers,
                     prices: dict[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """Per run identity: mean truthfulness + relevance, input tokens and dollars of the answered
    pairs (batch calls at the batch rate, counted in `batch_calls`; failed pairs are counted in
    `failed`; their tokens are in the summary), and whether it is on the Pareto front of its
    dataset and judge (no other scores at least as well for no more tokens / dollars, and
    better in one)."""
    table = []
    for key, group in answers.groups().items():
        answered = [row for row in group if row.status == "ok"]
        costs = [row_cost(row, prices) for row in answered]
        unpriced = sorted({model for row, cost in zip(answered, costs) if cost is None
                           for role, model in row.models.items()
                           if role != "judge" and role in row.usage and model not in prices})
        scores = [score for row in group if (score := total_score(row)) is not None]
        priced = [cost for cost in costs if cost is not None]
        unknown = unreported(group, "input_tokens") or unreported(group, "output_tokens")
        table.append({**key.fields(), "score": mean(scores, places=4),
                      "input_tokens": None if unknown else spent(group)[0],
                      "cost_usd": None if len(priced) < len(costs) or unknown
                      else round(sum(priced), 6),
                      "batch_calls": sum(len(row.calls.batched) for row in answered),
                      "failed": len(group) - len(answered), "unpriced_models": unpriced})
    for axis in ("input_tokens", "cost_usd"):
        for entry in table:
            entry[f"pareto_{axis}"] = _on_front(entry, table, axis)
    return table


def _on_front(entry: dict[str, Any], table: list[dict[str, Any]], axis: str) -> bool | None:
    if entry["score"] is None or entry[axis] is None:
        return None
    rivals = [other for other in table if other is not entry and other["score"] is not None
              and other[axis] is not None and same_front(other, entry)]
    return not any(other[axis] <= entry[axis] and other["score"] >= entry["score"]
                   and (other[axis] < entry[axis] or other["score"] > entry["score"])
                   for other in rivals)


def same_front(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two cost-table entries compete on one Pareto front: same dataset, same judge."""
    return a["dataset"] == b["dataset"] and a["models"].get("judge") == b["models"].get("judge")


# --------------------------------------------------------------------------- uncertainty


def intervals(answers: Answers, seed: int = 0) -> list[dict[str, Any]]:
    """Per run identity: 95% intervals of mean truthfulness, relevance and their sum (over
    scored answers) and of total input and output tokens (over answered pairs, as the summary
    counts them; None when none was answered)."""
    table = []
    for key, group in answers.groups().items():
        scored = [scores for row in group if (scores := judge_scores(row)) is not None]
        tokens = [answer_tokens(row) for row in group if row.status == "ok"]
        entry: dict[str, Any] = key.fields()
        if scored:
            for name, values in (("truthfulness", [g["truthfulness"] for g in scored]),
                                 ("relevance", [g["relevance"] for g in scored]),
                                 ("score", [g["truthfulness"] + g["relevance"] for g in scored])):
                entry[name] = [mean(values, places=4),
                                *bootstrap_interval(values, mean, seed=seed)]
        for index, name in ((0, "input_tokens"), (1, "output_tokens")):
            values = [t[index] for t in tokens]
            entry[name] = [sum(values), *bootstrap_interval(values, sum, seed=seed)] \
                if values and not unreported(group, name) else None
        table.append(entry)
    return table


def latencies(answers: Answers) -> list[dict[str, Any]]:
    """Per run identity, the answer latency's median and 95th percentile (outcomes.latency);
    identities whose rows record none (runs written before it) are left out."""
    return [{**key.fields(), **found} for key, group in answers.groups().items()
            if (found := latency(group))]


def paired_comparisons(answers: Answers, seed: int = 0) -> list[dict[str, Any]]:
    """Every two run identities of one dataset judged by one model (scores of two judges are not
    on one scale): mean difference in truthfulness + relevance over the questions both scored,
    its 95% paired-bootstrap interval, and a two-sided p-value (how often the resampled
    difference falls on the other side of zero, doubled), Holm-adjusted over the table
    (`p_holm`), and the minimum detectable difference at 80% power (`mdd`; core/stats.py); none
    of these but `untested`, why not, below MIN_PAIRED questions or without variance. `a`
    and `b` are the identities' labels (harness/reporting/identity.py), `a_models` and
    `b_models` their models."""
    groups = answers.groups()
    names = labels(groups)
    table = []
    for a, b in judged_alike(groups):
        first, second = by_question(groups[a]), by_question(groups[b])
        both = [(total_score(first[q]), total_score(second[q]))
                for q in shared_questions(first, second)]
        diffs = [a_score - b_score for a_score, b_score in both
                 if a_score is not None and b_score is not None]
        if len(diffs) < 2:
            continue
        diffs.sort()  # so that the seed alone fixes the result, whatever the question ids
        table.append({"dataset": a.dataset, "a": names[a], "b": names[b],
                      "questions": len(diffs), "mean_difference": mean(diffs, places=4),
                      **savings.paired_test(diffs, seed),
                      "a_models": a.model_map, "b_models": b.model_map})
    return with_holm(table)


def judge_notes(keys: list[Identity]) -> list[str]:
    """Per dataset scored by more than one judge model: a line saying their rows are not
    compared with each other."""
    notes = []
    for dataset in dict.fromkeys(key.dataset for key in keys):
        judges = list(dict.fromkeys(k.judge for k in keys if k.dataset == dataset))
        if len(judges) > 1:
            shown = ", ".join("none recorded" if j is None else j for j in judges)
            notes.append(f"{dataset}: scored by more than one judge ({shown}); rows of "
                         f"different judges are not compared (paired tests, Pareto front)")
    return notes


def analyse(rows: list[AnswerSummary], prices: dict[str, tuple[float, float]] | None = None,
            seed: int = 0, correct_at: int = CORRECT_AT,
            mixes: list[dict[str, float]] | None = None) -> dict[str, Any]:
    """Everything above and the scorers' tables (harness/reporting/scorers.py, `correct_at` its
    CRAG threshold), as written to analysis.json; `notes` says what was not compared. With
    questions that carry `kind` and `need`, decisions against need by construction and the
    savings curve (at `mixes` too)."""
    answers = Answers(rows)  # what the tables share: one grouping, one evaluation per identity
    decisions, decision_notes = decisions_and_notes(answers)
    keys = list(answers.groups())
    traffic = {**by_need.analyse(answers, seed),
               **savings.analyse(answers, prices, mixes, seed, correct_at)}
    made = {"retrieval": retrieval_quality(answers), "attribution": attributions(answers),
            "cost": quality_and_cost(answers, prices or {}),
            "decisions": decisions, "known_decisions": known_decisions(answers, correct_at),
            "intervals": intervals(answers, seed),
            "paired": paired_comparisons(answers, seed), "low_score": LOW_SCORE,
            "latency": latencies(answers),
            "bootstrap_samples": BOOTSTRAP_SAMPLES, "confidence": CONFIDENCE,
            "notes": mixed_notes(keys) + judge_notes(keys) + decision_notes
            + traffic.pop("decision_notes") + traffic.pop("savings_notes") + batch_note(rows),
            **traffic, **scorer_tables(answers, correct_at),
            **savings.router_tables(answers, prices, correct_at, seed),  # three options, by hops
            **trajectory.analyse(answers, prices, correct_at),  # trajectory, trajectory_by_answer
            **analyse_groups(rows, seed),  # semantic groups: tables groups, wording; grounded
            **staleness.analyse(answers, seed),  # changed facts: only where a row has a verdict
            **computed(rows)}  # the installed tables' (harness/reporting/table.py)
    answers.forget_metrics()  # read by the retrieval and trajectory tables only
    return made
