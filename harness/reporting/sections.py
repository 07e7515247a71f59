"""The analysis as the printed report shows it (docs/reports.md#what-a-report-holds): its tables
in order, each with its title and columns (`ANALYSIS_TABLES`, which the HTML page shows too),
as markdown sections (`render_analysis`), and the line naming the tables that have no rows
(`nothing_to_show`).
"""

from __future__ import annotations

from typing import Any, Sequence

from freshrag.reporting import savings
from freshrag.reporting.report import columns_for, markdown_table

# (key in analysis.analyse(), title, columns): the tables of the printed report, in order;
# `run` and `against` are added where the rows carry them (see columns_for)
ANALYSIS_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("intervals", "Means and token totals with 95% bootstrap intervals (tokens: answered pairs)",
     ("dataset", "system", "truthfulness", "relevance", "score", "input_tokens", "output_tokens",
      "models")),
    ("retrieval", "Retrieval: gold article among the retrieved chunks",
     ("dataset", "system", "retrieved", "k", "hit@1", "hit@k", "recall_all@k", "ndcg@k", "mrr",
      "recall_any_traj", "recall_all_traj", "models")),
    ("attribution", "Failure attribution (low: truthfulness + relevance < {low_score})",
     ("dataset", "system", "fine", "retrieval_miss", "partial_retrieval", "generation",
      "knowledge_gap", "stopped", "unscored", "models")),
    ("trajectory", "Trajectories: searches (mean, quantiles), evidence found over the whole "
                   "trajectory (any, all gold articles), the steps that found the first and the "
                   "last gold article, steps after that (wasted), repeats, stops; per correct "
                   "answer (truthfulness >= --correct-at)",
     ("dataset", "system", "answers", "traced", "searches", "searches_p50", "searches_p90",
      "searches_max", "evidence_any", "evidence_all", "first_gold_step", "last_gold_step",
      "wasted_steps", "repeated", "stopped", "correct", "tokens_per_correct", "cost_per_correct",
      "correct_per_search", "models")),
    ("decisions", "Retrieval decisions against need (needed: baseline scored below naive)",
     ("dataset", "system", "questions", "needed", "retrieved", "precision", "recall",
      "truthfulness", "relevance", "input_tokens", "output_tokens", "retrievals", "models")),
    ("cost", "Quality against cost (score: mean truthfulness + relevance; answered pairs; "
             "judge excluded; batch_calls, where shown: calls priced at the Batch API's rate)",
     ("dataset", "system", "score", "input_tokens", "cost_usd", "pareto_input_tokens",
      "pareto_cost_usd", "unpriced_models", "failed", "models")),
    ("latency", "Answer latency (the system's own: what it reported, else the wall time of its "
                "answer; answered pairs)",
     ("dataset", "system", "answers", "p50_s", "p95_s", "models")),
    ("paired", "Paired comparisons (truthfulness + relevance, a minus b; same judge only; "
               "p_holm: Holm-adjusted over the table; mdd: the difference found 80% of the "
               "time at 5%)",
     ("dataset", "a", "b", "questions", "mean_difference", "interval", "p_value", "p_holm",
      "mdd")),
    # need by construction and the savings curve: harness/reporting/decisions.py and savings.py
    ("decisions_by_kind", "Retrieval decisions against need by construction, per traffic kind "
                          "(95% intervals)",
     ("dataset", "system", "kind", "questions", "needed", "retrieved", "accuracy", "precision",
      "recall", "f1", "models")),
    ("thresholds", "Threshold sweep over the recorded decision scores (no new calls; estimated: "
                   "naive's or baseline's answers to the same questions)",
     ("dataset", "system", "rule", "threshold", "current", "questions", "retrieved", "accuracy",
      "precision", "recall", "f1", "estimated_score", "estimated_tokens_per_question", "models")),
    ("roc", "Deciders' scores against need: ROC and precision-recall (curves in deciders.png)",
     ("dataset", "system", "questions", "unavailable", "needed", "auroc", "average_precision",
      "models")),
    ("savings", "Savings curve: per question, as the share of fresh questions grows (score: "
                "truthfulness + relevance; tokens: every role but the judge; figure: savings-*.png)",
     ("dataset", "system", "reference", "fresh_share", "score", "tokens_per_question",
      "cost_per_question", "saving_vs_naive", "models")),
    ("mixes", "Chosen traffic mixes (--mix), recombined from the runs' rows",
     ("dataset", "system", "reference", "mix", "score", "tokens_per_question", "cost_per_question",
      "saving_vs_naive", "models")),
    ("router3", "Three-way oracle router: per question the cheapest of no retrieval, one "
                "retrieval and the agent that answered well; every system against it on its "
                "questions (score: truthfulness + relevance, 95% intervals; score_vs_router: "
                "paired by question, p_holm and mdd as in the paired comparisons)",
     ("dataset", "system", "reference", *savings.ROUTER_COLUMNS, "p_holm", "mdd", "models")),
    ("savings_by_hops", "Savings by hops: the three-way router and every system on one-article "
                        "against multi-article questions",
     ("dataset", "system", "reference", "hops", *savings.ROUTER_COLUMNS, "p_holm", "mdd",
      "models")),
    ("groups", "Semantic groups (grounded questions): tags, adequacy = 1 - gap/groups, refined "
               "accuracy without gap groups, wrong forms of non-robust groups by cause",
     ("dataset", "system", "groups", "robust", "non_robust", "gap", "unscored", "adequacy",
      "accuracy", "refined_accuracy", "wrong_retriever", "wrong_language_model",
      "wrong_no_retrieval", "models")),
    ("wording", "Wording within groups: accuracy of a minus b, 95% paired-bootstrap interval, "
                "exact McNemar p, Holm-adjusted over the table, minimum detectable difference",
     ("dataset", "system", "axis", "a", "b", "paired_groups", "accuracy_a", "accuracy_b",
      "difference", "interval", "p_value", "p_holm", "mdd")),
)


# What the line of empty sections calls each table of the printed report (ANALYSIS_TABLES, the
# scorers' SCORER_TABLES in harness/reporting/scorers.py)
SHORT_NAMES = {
    "intervals": "intervals", "retrieval": "retrieval", "attribution": "failure attribution",
    "decisions": "decisions against need", "cost": "quality against cost", "latency": "latency",
    "paired": "paired comparisons", "decisions_by_kind": "decisions by traffic kind",
    "thresholds": "threshold sweep", "roc": "ROC", "savings": "savings curve",
    "mixes": "traffic mixes", "groups": "semantic groups", "wording": "wording",
    "trajectory": "trajectories", "router3": "three-way router",
    "savings_by_hops": "savings by hops",
    "scorers": "scorers beyond the judge", "scorer_correlations": "scorer correlations",
    "crag": "CRAG outcomes", "judge_spread": "judge spread",
}


def nothing_to_show(document: dict[str, Any],
                    *more: Sequence[tuple[str, str, tuple[str, ...]]]) -> str:
    """One line naming the tables of ANALYSIS_TABLES (and of `more`) that `document` has no row
    for, which the printed report leaves out; "" when every table has rows."""
    empty = [SHORT_NAMES.get(key, key.replace("_", " ")) for tables_ in (ANALYSIS_TABLES, *more)
             for key, _, _ in tables_ if not document.get(key)]
    return f"Nothing to show in: {', '.join(empty)}." if empty else ""


def render_analysis(analysis: dict[str, Any]) -> str:
    """The analysis (harness/reporting/analysis.py) as markdown sections, then its notes (what could not
    be compared, and why)."""
    sections = []
    for key, title, columns in ANALYSIS_TABLES:
        rows = analysis.get(key) or []
        if rows:
            heading = title.format(low_score=analysis.get("low_score", "?"))
            sections.append(f"### {heading}\n\n" + markdown_table(rows, columns_for(columns, rows)))
    if analysis.get("notes"):
        sections.append("### Notes\n\n" + "\n".join(f"- {note}" for note in analysis["notes"]))
    return "\n\n".join(sections)
