"""Tables in the shape of the paper's Tables II and III, recomputed from samples.jsonl.

One row per (dataset, system): n, scored, unscored, mean truthfulness and relevance over the
scored answers, input and output tokens, retrievals, and how many answers an adaptive system gave
with no usable retrieval decision (`no_decision`: no tool call or unparseable arguments). Tokens are those the system spent answering
(every role but the judge), as in the paper; the judge's cost is in the token chart by role.
Unscored answers (failed pairs included) are counted, never averaged in.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from harness.results import SAMPLES, ResultsError, read_manifest, read_samples

SUMMARY = "summary.json"
COLUMNS = ("dataset", "system", "n", "scored", "unscored", "truthfulness", "relevance",
           "input_tokens", "output_tokens", "retrievals", "no_decision")


def load_runs(run_dirs: list[Path]) -> list[dict[str, Any]]:
    """All rows of the given run directories (a directory without samples is an error)."""
    rows = []
    for run_dir in run_dirs:
        if not (run_dir / SAMPLES).exists():
            raise ResultsError(f"{run_dir}: no {SAMPLES}; is this a run directory?")
        manifest = read_manifest(run_dir) or {}
        name = manifest.get("dataset", {}).get("name")
        for row in read_samples(run_dir / SAMPLES):
            rows.append({**row, "dataset": row.get("dataset") or name})
    return rows


def is_scored(row: dict[str, Any]) -> bool:
    return row["status"] == "ok" and row["grade"] is not None and row["grade"]["unscored_reason"] is None


def answer_tokens(row: dict[str, Any]) -> tuple[int, int]:
    """Tokens the system spent (all roles but the judge)."""
    used = [u for role, u in row["usage"].items() if role != "judge"]
    return sum(u["input"] for u in used), sum(u["output"] for u in used)


def group_rows(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Rows by (dataset, system), in order of first appearance."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["dataset"], row["system"]), []).append(row)
    return groups


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [_summary_row(dataset, system, group)
            for (dataset, system), group in group_rows(rows).items()]


def _summary_row(dataset: str, system: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    scored = [row["grade"] for row in rows if is_scored(row)]
    tokens = [answer_tokens(row) for row in rows]
    return {
        "dataset": dataset, "system": system, "n": len(rows), "scored": len(scored),
        "unscored": len(rows) - len(scored),
        "truthfulness": mean([g["truthfulness"] for g in scored]),
        "relevance": mean([g["relevance"] for g in scored]),
        "input_tokens": sum(t[0] for t in tokens), "output_tokens": sum(t[1] for t in tokens),
        "retrievals": sum(row["retrievals"] for row in rows),
        "no_decision": sum((row.get("details") or {}).get("decision") == "none" for row in rows),
    }


def unscored_reasons(rows: list[dict[str, Any]]) -> Counter:
    reasons = Counter()
    for row in rows:
        if not is_scored(row):
            reason = row["error"] if row["status"] == "failed" else row["grade"]["unscored_reason"]
            reasons[(row["system"], ("failed: " if row["status"] == "failed" else "") + reason)] += 1
    return reasons


def mean(values: Sequence[float]) -> float | None:
    """The mean as the tables show it (4 decimals), None for no values."""
    return round(sum(values) / len(values), 4) if values else None


def render(summary: list[dict[str, Any]], fmt: str) -> str:
    if fmt == "json":
        return json.dumps({"rows": summary}, indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(summary)
        return out.getvalue()
    if fmt == "markdown":
        return _markdown(summary)
    raise ValueError(f"unknown format {fmt!r}; choose markdown, json or csv")


def _markdown(summary: list[dict[str, Any]]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in summary:
        cells = [format_value(row[col], col) for col in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def format_value(value: Any, column: str = "") -> str:
    """A table cell, as every report shows it: `–` for missing, 2 decimals (3 significant digits
    for small amounts such as dollars), thousands separators, `value [low, high]` for intervals,
    p-values below 0.001 as `< 0.001`, yes/no for flags."""
    if value is None:
        return "–"
    if column == "p_value" and isinstance(value, (int, float)):
        return "< 0.001" if value < 0.001 else f"{value:.3f}"
    if isinstance(value, list) and is_interval(value):
        shown = [format_value(v) for v in value]
        return f"{shown[0]} [{shown[1]}, {shown[2]}]" if len(value) == 3 else \
            f"[{shown[0]}, {shown[1]}]"
    if isinstance(value, list):
        return ", ".join(format_value(v) for v in value) or "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}" if 0 < abs(value) < 0.005 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def is_interval(value: list[Any]) -> bool:
    """[value, low, high] or [low, high] of numbers (the analysis's intervals)."""
    return len(value) in (2, 3) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)


def write_summary(out_dir: Path, summary: list[dict[str, Any]]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / SUMMARY
    path.write_text(render(summary, "json") + "\n", encoding="utf-8")
    return path


def render_analysis(analysis: dict[str, Any]) -> str:
    """The analysis (harness/analysis.py) as markdown sections."""
    sections = []

    def table(title: str, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
        if rows:
            lines = [f"### {title}", "", "| " + " | ".join(columns) + " |",
                     "|" + "---|" * len(columns)]
            lines += ["| " + " | ".join(format_value(row.get(c), c) for c in columns) + " |"
                      for row in rows]
            sections.append("\n".join(lines))

    table("Means and token totals with 95% bootstrap intervals", analysis["intervals"],
          ("dataset", "system", "truthfulness", "relevance", "score", "input_tokens",
           "output_tokens"))
    table("Retrieval: gold article among the retrieved chunks", analysis["retrieval"],
          ("dataset", "system", "retrieved", "k", "hit@1", "hit@k", "mrr"))
    table(f"Failure attribution (low: truthfulness + relevance < {analysis['low_score']})",
          analysis["attribution"], ("dataset", "system", "fine", "retrieval_miss", "generation",
                                    "knowledge_gap", "unscored"))
    table("Retrieval decisions against need (needed: baseline scored below naive)",
          analysis["decisions"], ("dataset", "system", "questions", "needed", "retrieved",
                                  "precision", "recall", "truthfulness", "relevance",
                                  "input_tokens", "output_tokens", "retrievals"))
    table("Quality against cost (score: mean truthfulness + relevance; judge excluded)",
          analysis.get("cost", []), ("dataset", "system", "score", "input_tokens", "cost_usd",
                                     "pareto_input_tokens", "pareto_cost_usd", "unpriced_models"))
    table("Paired comparisons (truthfulness + relevance, a minus b)", analysis["paired"],
          ("dataset", "a", "b", "questions", "mean_difference", "interval", "p_value"))
    return "\n\n".join(sections)
