"""The report's own tables (docs/reports.md#what-a-report-holds), each one object
(harness/reporting/table.py `Table`) in the order the printed report and the HTML page show
them: the analysis's, then the scorers'. Their rows are made together by
harness/reporting/analysis.py `analyse`, which shares the work between them."""

from __future__ import annotations

from freshrag.reporting.savings import ROUTER_COLUMNS
from freshrag.reporting.table import Table

INTERVALS = Table(
    "intervals",
    "Means and token totals with 95% bootstrap intervals (tokens: answered pairs)",
    ("dataset", "system", "truthfulness", "relevance", "score", "input_tokens",
     "output_tokens", "models"),
    short="intervals",
    needs="scored answers")

RETRIEVAL = Table(
    "retrieval",
    "Retrieval: gold article among the retrieved chunks",
    ("dataset", "system", "retrieved", "k", "hit@1", "hit@k", "recall_all@k", "ndcg@k", "mrr",
     "recall_any_traj", "recall_all_traj", "models"),
    short="retrieval",
    needs="a retrieving system's answers to questions with gold articles")

ATTRIBUTION = Table(
    "attribution",
    "Failure attribution (low: truthfulness + relevance < {low_score})",
    ("dataset", "system", "fine", "retrieval_miss", "partial_retrieval", "generation",
     "knowledge_gap", "stopped", "unscored", "models"),
    short="failure attribution",
    needs="scored answers to questions with gold articles")

TRAJECTORY = Table(
    "trajectory",
    "Trajectories: searches (mean, quantiles), evidence found over the whole trajectory "
    "(any, all gold articles), the steps that found the first and the last gold article, "
    "steps after that (wasted), repeats, stops; per correct answer (truthfulness >= "
    "--correct-at)",
    ("dataset", "system", "answers", "traced", "searches", "searches_p50", "searches_p90",
     "searches_max", "evidence_any", "evidence_all", "first_gold_step", "last_gold_step",
     "wasted_steps", "repeated", "stopped", "correct", "tokens_per_correct",
     "cost_per_correct", "correct_per_search", "models"),
    short="trajectories",
    needs="a system that records its steps (an agent)")

DECISIONS = Table(
    "decisions",
    "Retrieval decisions against need (needed: baseline scored below naive)",
    ("dataset", "system", "questions", "needed", "retrieved", "precision", "recall",
     "truthfulness", "relevance", "input_tokens", "output_tokens", "retrievals", "models"),
    short="decisions against need",
    page_columns=(  # the HTML page has room for the confusion matrix
        "dataset", "system", "questions", "needed", "retrieved", "true_positive",
        "false_positive", "false_negative", "true_negative", "precision", "recall",
        "truthfulness", "relevance", "input_tokens", "output_tokens", "retrievals", "models"),
    needs="an adaptive system beside a baseline and a naive run on the same questions")

COST = Table(
    "cost",
    "Quality against cost (score: mean truthfulness + relevance; answered pairs; judge "
    "excluded; batch_calls, where shown: calls priced at the Batch API's rate)",
    ("dataset", "system", "score", "input_tokens", "cost_usd", "pareto_input_tokens",
     "pareto_cost_usd", "unpriced_models", "failed", "models"),
    short="quality against cost",
    needs="answered pairs")

LATENCY = Table(
    "latency",
    "Answer latency (the system's own: what it reported, else the wall time of its answer; "
    "answered pairs)",
    ("dataset", "system", "answers", "p50_s", "p95_s", "models"),
    short="latency",
    needs="answers timed by freshrag or reporting latency_s")

PAIRED = Table(
    "paired",
    "Paired comparisons (truthfulness + relevance, a minus b; same judge only; p_holm: "
    "Holm-adjusted over the table; mdd: the difference found 80% of the time at 5%)",
    ("dataset", "a", "b", "questions", "mean_difference", "interval", "p_value", "p_holm",
     "mdd"),
    short="paired comparisons",
    needs="two systems judged by one judge on the same questions")

DECISIONS_BY_KIND = Table(
    "decisions_by_kind",
    "Retrieval decisions against need by construction, per traffic kind (95% intervals)",
    ("dataset", "system", "kind", "questions", "needed", "retrieved", "accuracy", "precision",
     "recall", "f1", "models"),
    short="decisions by traffic kind",
    needs="an adaptive system on a traffic mix (freshrag build --control N --general N, or "
          "freshrag mix)")

KNOWN_DECISIONS = Table(
    "known_decisions",
    "Retrieval decisions against what the model knew (known: the baseline answered right; 95% "
    "Wilson intervals)",
    ("dataset", "system", "questions", "known", "retrieved", "precision", "recall",
     "wasted_tokens", "stale_unretrieved", "models"),
    short="decisions against what the model knew",
    needs="a baseline and a system that decides, with the same models on the same questions, "
          "the baseline's answers graded",
    note="Known: the baseline, with no retrieval and the same models, answered the question "
         "right: judge truthfulness >= {correct_at}, or for a changed fact the value now "
         "(staleness verdict current); retrieval was needed where it was not known. "
         "wasted_tokens: the tokens spent on questions retrieved for though known; "
         "stale_unretrieved: stale answers given without retrieving (changed facts only).")

THRESHOLDS = Table(
    "thresholds",
    "Threshold sweep over the recorded decision scores (no new calls; estimated: naive's or"
    " baseline's answers to the same questions)",
    ("dataset", "system", "rule", "threshold", "current", "questions", "retrieved",
     "accuracy", "precision", "recall", "f1", "estimated_score",
     "estimated_tokens_per_question", "models"),
    short="threshold sweep",
    needs="a decider that records a score (confidence, self-check) on a traffic mix "
          "(freshrag build --control N --general N, or freshrag mix)")

ROC = Table(
    "roc",
    "Deciders' scores against need: ROC and precision-recall (curves in deciders.png)",
    ("dataset", "system", "questions", "unavailable", "needed", "auroc", "average_precision",
     "models"),
    short="ROC",
    needs="a decider that records a score (confidence, self-check) on a traffic mix "
          "(freshrag build --control N --general N, or freshrag mix)")

SAVINGS = Table(
    "savings",
    "Savings curve: per question, as the share of fresh questions grows (score: "
    "truthfulness + relevance; tokens: every role but the judge; figure: savings-*.png)",
    ("dataset", "system", "reference", "fresh_share", "score", "tokens_per_question",
     "cost_per_question", "saving_vs_naive", "models"),
    short="savings curve",
    needs="a traffic mix of fresh and control or general questions (freshrag build "
          "--control N --general N, or freshrag mix)")

MIXES = Table(
    "mixes",
    "Chosen traffic mixes (--mix), recombined from the runs' rows",
    ("dataset", "system", "reference", "mix", "score", "tokens_per_question",
     "cost_per_question", "saving_vs_naive", "models"),
    short="traffic mixes",
    needs="freshrag report --mix F:C:G on a traffic mix (freshrag build --control N "
          "--general N, or freshrag mix)")

ROUTER3 = Table(
    "router3",
    "Three-way oracle router: per question the cheapest of no retrieval, one retrieval and "
    "the agent that answered well; every system against it on its questions (score: "
    "truthfulness + relevance, 95% intervals; score_vs_router: paired by question, p_holm "
    "and mdd as in the paired comparisons)",
    ("dataset", "system", "reference", *ROUTER_COLUMNS, "p_holm", "mdd", "models"),
    short="three-way router",
    needs="no retrieval, one retrieval and a multi-step agent on the same questions")

SAVINGS_BY_HOPS = Table(
    "savings_by_hops",
    "Savings by hops: the three-way router and every system on one-article against multi-"
    "article questions",
    ("dataset", "system", "reference", "hops", *ROUTER_COLUMNS, "p_holm", "mdd", "models"),
    short="savings by hops",
    needs="the three-way router's systems on one- and multi-article questions (freshrag "
          "build --style multihop)")

GROUPS = Table(
    "groups",
    "Semantic groups (grounded questions): tags, adequacy = 1 - gap/groups, refined "
    "accuracy without gap groups, wrong forms of non-robust groups by cause",
    ("dataset", "system", "groups", "robust", "non_robust", "gap", "unscored", "adequacy",
     "accuracy", "refined_accuracy", "wrong_retriever", "wrong_language_model",
     "wrong_no_retrieval", "models"),
    short="semantic groups",
    needs="grounded questions (freshrag build --style grounded)")

WORDING = Table(
    "wording",
    "Wording within groups: accuracy of a minus b, 95% paired-bootstrap interval, exact "
    "McNemar p, Holm-adjusted over the table, minimum detectable difference",
    ("dataset", "system", "axis", "a", "b", "paired_groups", "accuracy_a", "accuracy_b",
     "difference", "interval", "p_value", "p_holm", "mdd"),
    short="wording",
    needs="grounded questions in several wordings (freshrag build --style grounded)")

SCORERS = Table(
    "scorers",
    "Scorers beyond the judge: mean with 95% bootstrap interval; tokens per scored answer",
    ("dataset", "system", "scorer", "metric", "answers", "scored", "unscored",
     "not_applicable", "mean", "input_tokens", "output_tokens", "models"),
    short="scorers beyond the judge",
    needs="scorers beyond the judge (freshrag score RUN --scorers NAMES)",
    section="scorers")

SCORER_CORRELATIONS = Table(
    "scorer_correlations",
    "Spearman correlation between scorers over the same answers",
    ("dataset", "a", "b", "answers", "spearman"),
    short="scorer correlations",
    needs="two scorers or more on the same answers (freshrag score)",
    section="scorers")

CRAG = Table(
    "crag",
    "CRAG outcomes (correct: judge truthfulness >= {correct_at}; unanswerable questions: "
    "abstaining is correct)",
    ("dataset", "system", "answers", "correct", "abstained", "incorrect", "unknown",
     "accuracy", "abstention_rate", "hallucination_rate", "score", "models"),
    short="CRAG outcomes",
    needs="the abstention scorer (freshrag score RUN --scorers abstention)",
    section="scorers")

JUDGE_SPREAD = Table(
    "judge_spread",
    "The judge asked again (freshrag score --repeats): spread per answer",
    ("dataset", "system", "answers", "repeats", "range_truthfulness", "range_relevance",
     "differ", "models"),
    short="judge spread",
    needs="the judge asked again (freshrag score RUN --scorers judge --repeats 3)",
    section="scorers")

STALENESS = Table(
    "staleness",
    "Changed facts: answers giving the value now (current), the value at the cutoff (stale), "
    "another or none (95% Wilson intervals); fixed: of the baseline's stale answers, the share "
    "answered current; memory over context: stale among answers whose context states the "
    "value now",
    ("dataset", "system", "answers", "current", "stale", "other", "abstained", "unscored",
     "fixed", "new_retrieved", "memory_over_context", "models"),
    short="stale answers",
    needs="changed-fact questions (freshrag build --style changed) scored by the staleness "
          "scorer",
    section="changed")

STALENESS_PAIRED = Table(
    "staleness_paired",
    "Changed facts, paired: stale share of a minus b over the questions both answered (95% "
    "paired-bootstrap interval; p_holm: Holm-adjusted over the table)",
    ("dataset", "a", "b", "questions", "stale_a", "stale_b", "difference", "interval",
     "p_value", "p_holm", "mdd"),
    short="stale answers, paired",
    needs="two systems' changed-fact answers scored by the staleness scorer",
    section="changed")
