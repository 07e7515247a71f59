"""The scorers beyond the judge in reports (docs/reports.md#scores-beyond-the-judge), from the
`scores` that loading.load_runs attaches to each row
(scores.jsonl, repeat 0) and, for the judge's spread, every repeat in scores.jsonl:

- `scorers`: per run identity and metric, the answers, how many were scored, unscored (failed
  included) and not applicable, the mean with its 95% bootstrap interval (harness/core/stats.py),
  and the scorer's tokens per scored answer: never mixed with the system's or the judge's.
- `scorer_correlations`: Spearman's rank correlation between every two metrics (the run's judge
  included) over the answers both scored, per dataset.
- `crag`: the CRAG outcome of each answer from the abstention verdict and the judge's
  truthfulness: abstained; else correct when truthfulness >= `correct_at` (default 4 of 5),
  else incorrect; for a question labelled `unanswerable`, abstaining is correct and answering is
  incorrect. Per identity: accuracy, abstention rate, hallucination rate (incorrect share) and
  score = accuracy - hallucination, over the answers with both verdicts (the rest: `unknown`).
- `judge_spread`: with `freshrag score --repeats N`, per identity the answers graded at least
  twice, the mean range (max - min) of each field over the repeats and the share of answers
  whose repeats differ.

Figures: one histogram per metric, the identities side by side (`scores-METRIC.png`).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from freshrag.core.samples import judge_scores
from freshrag.core.stats import bootstrap_interval, mean
from freshrag.core.summary import AnswerSummary
from freshrag.core.wording import counted
from freshrag.reporting.agreement import spearman
from freshrag.reporting.answers import Answers
from freshrag.reporting.identity import group_rows, labels
from freshrag.reporting.outcomes import CORRECT_AT as CORRECT_AT
from freshrag.reporting.report import RUN, markdown_table
from freshrag.reporting.table import tables
from freshrag.scoring.judge import FIELDS
from freshrag.scoring.store import read_scores

FAITHFUL_AT = 0.5  # faithfulness below this: the answer did not keep to its context (attribution)
MIN_CORRELATED = 3  # answers needed before a Spearman correlation is shown

def metric_values(row: AnswerSummary) -> dict[str, float]:
    """Every metric this answer has: `scorer.metric` from its scores, `run-judge.FIELD` from the
    run's own grade."""
    values = {f"{name}.{metric}": value for name, score in (row.scores or {}).items()
              if score["status"] == "scored" for metric, value in score["metrics"].items()}
    if (scores := judge_scores(row)) is not None:
        values.update({f"run-judge.{f}": scores[f] for f in FIELDS})
    return values


def analyse(answers: Answers, correct_at: int = CORRECT_AT) -> dict[str, Any]:
    """The tables above, for analysis.json; empty lists where no row has scores."""
    return {"scorers": scorer_means(answers), "scorer_correlations": correlations(answers.rows),
            "crag": crag(answers, correct_at), "judge_spread": judge_spread(answers),
            "correct_at": correct_at}


def scorer_means(answers: Answers, seed: int = 0) -> list[dict[str, Any]]:
    table = []
    for key, group in answers.groups().items():
        answered = [row for row in group if row.status == "ok"]
        names = sorted({name for row in answered for name in row.scores or {}})
        for name in names:
            scores = [row.scores[name] for row in answered if name in row.scores]
            statuses = [score["status"] for score in scores]
            usage = [list(score["usage"].values()) for score in scores
                     if score["status"] == "scored"]
            for metric in sorted({m for s in scores for m in s["metrics"]}):
                values = [s["metrics"][metric] for s in scores if metric in s["metrics"]]
                table.append({
                    **key.fields(), "scorer": name, "metric": metric, "answers": len(answered),
                    "scored": len(values), "unscored": statuses.count("unscored")
                    + statuses.count("failed"), "not_applicable": statuses.count("not_applicable"),
                    "mean": [mean(values, places=4), *bootstrap_interval(values, mean, seed=seed)]
                    if values else None,
                    "input_tokens": mean([sum(u["input"] for u in used) for used in usage],
                                         places=4),
                    "output_tokens": mean([sum(u["output"] for u in used) for used in usage],
                                          places=4)})
    return table


def correlations(rows: list[AnswerSummary]) -> list[dict[str, Any]]:
    by_dataset: dict[str | None, list[dict[str, float]]] = defaultdict(list)
    for row in rows:
        by_dataset[row.dataset].append(metric_values(row))
    table = []
    for dataset, answers in by_dataset.items():
        metrics = sorted({m for values in answers for m in values})
        for i, a in enumerate(metrics):
            for b in metrics[i + 1:]:
                both = [(v[a], v[b]) for v in answers if a in v and b in v]
                if len(both) >= MIN_CORRELATED and not a.split(".")[0] == b.split(".")[0]:
                    table.append({"dataset": dataset, "a": a, "b": b, "answers": len(both),
                                  "spearman": spearman(*zip(*both))})
    return table


def outcome(row: AnswerSummary, correct_at: int = CORRECT_AT) -> str:
    """correct / abstained / incorrect / unknown (no abstention verdict, or no judge grade)."""
    verdict = (row.scores or {}).get("abstention")
    if verdict is None or verdict["status"] != "scored":
        return "unknown"
    unanswerable = row.label == "unanswerable"
    if verdict["metrics"]["abstained"]:
        return "correct" if unanswerable else "abstained"
    if unanswerable:
        return "incorrect"
    scores = judge_scores(row)
    if scores is None:
        return "unknown"
    return "correct" if scores["truthfulness"] >= correct_at else "incorrect"


def crag(answers: Answers, correct_at: int = CORRECT_AT) -> list[dict[str, Any]]:
    table = []
    for key, group in answers.groups().items():
        outcomes = [outcome(row, correct_at) for row in group if row.status == "ok"]
        if all(o == "unknown" for o in outcomes):
            continue  # no abstention scores for this identity
        counts = {name: outcomes.count(name)
                  for name in ("correct", "abstained", "incorrect", "unknown")}
        known = len(outcomes) - counts["unknown"]
        rate = (lambda n: round(n / known, 4)) if known else (lambda n: None)
        table.append({**key.fields(), "answers": len(outcomes), **counts,
                      "accuracy": rate(counts["correct"]),
                      "abstention_rate": rate(counts["abstained"]),
                      "hallucination_rate": rate(counts["incorrect"]),
                      "score": rate(counts["correct"] - counts["incorrect"])})
    return table


def repeat_grades(run_dir: Path) -> dict[tuple[Any, str, str], list[tuple[float, ...]]]:
    """The judge's scored repeats per (dataset, question_id, system), in repeat order."""
    grades: dict[tuple[Any, str, str], list[tuple[int, tuple[float, ...]]]] = defaultdict(list)
    for score in read_scores(run_dir):
        if score["scorer"] == "judge" and score["status"] == "scored":
            grades[score.get("dataset"), score["question_id"], score["system"]].append(
                (score["repeat"], tuple(score["metrics"][f] for f in FIELDS)))
    return {k: [g for _, g in sorted(v)] for k, v in grades.items()}


def judge_spread(answers: Answers) -> list[dict[str, Any]]:
    by_run = {run: repeat_grades(Path(run)) for run in {row.run for row in answers.rows if row.run}}
    table = []
    for key, group in answers.groups().items():
        spreads = [_ranges(grades) for row in group
                   if len(grades := by_run.get(row.run or "", {}).get(
                       (row.dataset, row.question_id, row.system), [])) > 1]
        if spreads:
            table.append({**key.fields(), "answers": len(spreads),
                          "repeats": max(s["repeats"] for s in spreads),
                          **{f"range_{f}": mean([s[f] for s in spreads], places=4) for f in FIELDS},
                          "differ": mean([any(s[f] for f in FIELDS) for s in spreads], places=4)})
    return table


def _ranges(grades: list[tuple[float, ...]]) -> dict[str, Any]:
    return {"repeats": len(grades), **{f: max(g[i] for g in grades) - min(g[i] for g in grades)
                                       for i, f in enumerate(FIELDS)}}


def scorer_attribution(row: AnswerSummary) -> str | None:
    """Why a low-scored answer that retrieved failed, by its scores, or None (not scored so):
    no sentence of the context was needed (context relevance 0) is a retrieval miss; an answer
    its context does not support (faithfulness below FAITHFUL_AT) is a generation failure."""
    values = metric_values(row)
    if values.get("context-relevance.context_relevance") == 0:
        return "retrieval_miss"
    if values.get("faithfulness.faithfulness", 1.0) < FAITHFUL_AT:
        return "generation"
    return None


def render(details: dict[str, Any]) -> str:
    """The scorer tables that have rows, as markdown sections."""
    sections = []
    for table in tables("scorers"):
        rows = details.get(table.key) or []
        if rows:
            columns = table.columns + ((RUN,) if any(RUN in row for row in rows) else ())
            sections.append(f"### {table.title.format(correct_at=details.get('correct_at'))}\n\n"
                            + markdown_table(rows, columns))
    return "\n\n".join(sections)


def write_histograms(rows: list[AnswerSummary], out_dir: Path) -> list[Path]:
    """One figure per metric: its values per identity, side by side, 10 bins over 0..1 (the
    judge's fields over 1..5)."""
    # here, not above: matplotlib takes a third of a second, and --help reads CORRECT_AT
    from freshrag.reporting.render.plots import integer_counts, plt, save

    groups = group_rows(rows)
    names = labels(groups)
    per_metric: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for key, group in groups.items():
        for row in group:
            for metric, value in metric_values(row).items():
                if not metric.startswith("run-judge."):
                    per_metric[metric].setdefault(names[key], []).append(value)
    paths = []
    for metric, by_label in sorted(per_metric.items()):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        judged = metric.split(".")[1] in FIELDS
        ax.hist(list(by_label.values()), bins=[0.5 + i for i in range(6)] if judged else
                [i / 10 for i in range(11)], label=list(by_label), alpha=0.8)
        integer_counts(ax.yaxis)
        if judged:
            ax.set_xticks(range(1, 6))  # whole grades, not the bins' edges
        ax.set_title(metric)
        ax.set_xlabel("grade" if judged else "score (0..1)")
        ax.set_ylabel("answers")
        ax.legend(fontsize=7)
        paths.append(save(fig, out_dir / f"scores-{metric.replace('.', '-')}.png"))
    return paths


def render_pass(counts: dict[str, Any], run_dir: Path) -> str:
    lines = [f"{run_dir}: {counted(counts['scored_now'], 'score')} asked now, "
             f"{counts['skipped']} finished before (kept)"]
    for name, by in counts["by_scorer"].items():
        shown = ", ".join(f"{n} {status}" for status, n in sorted(by.items())) or "nothing new"
        lines.append(f"  {name}: {shown}")
    lines.append(f"scores written to {run_dir}/scores.jsonl; see them with: freshrag report "
                 f"{run_dir}")
    return "\n".join(lines)


def render_spread(run_dir: Path, top: int = 10) -> str:
    """Each answer's judge grades over the repeats, the widest spread first (`top` shown)."""
    grades = repeat_grades(run_dir)
    spread = sorted(((k, g, _ranges(g)) for k, g in grades.items() if len(g) > 1),
                    key=lambda item: -(item[2]["truthfulness"] + item[2]["relevance"]))
    if not spread:
        return "judge spread: no answer has two scored repeats"
    differ = sum(1 for _, _, r in spread if r["truthfulness"] or r["relevance"])
    table = [{"question_id": k[1], "system": k[2],
              "grades (truthfulness, relevance)": " ".join(f"{t}/{r}" for t, r in g),
              "range_truthfulness": r["truthfulness"], "range_relevance": r["relevance"]}
             for k, g, r in spread[:top]]
    return (f"judge spread over repeats: {differ} of {counted(len(spread), 'answer')} graded "
            f"differently "
            f"at least once; widest first:\n\n" + markdown_table(table, list(table[0])))
