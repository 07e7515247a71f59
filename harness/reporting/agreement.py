"""Judge agreement: how alike two judges, or two repeats of one judge, grade the same answers
(docs/methods.md#judge-agreement: a judge is a measuring instrument).

Rows of two run directories are paired by (dataset, question_id, system); a pair counts only
when both rows are scored (unscored or failed on either side: counted and left out), hold the
same answer text (a different answer is not the same answer: counted and left out) and have
grades on the judge's 1..5 scale. Per field (truthfulness, relevance): exact and within-one
agreement, Cohen's kappa with quadratic weights, Spearman's rank correlation (average ranks for
ties), the mean absolute difference, the mean difference B - A (the bias of B against A), the
5 x 5 confusion matrix (A rows, B columns) and the pairs that disagree most; per (dataset,
system) when there are several. The pairs whose two grades differ most over both fields are
listed with both judges' reasons (`divergent`), where the judges gave one, so that a reader sees
why they differ, not only by how much.

Kappa is scikit-learn's (harness/core/stats.py). It is exactly 0 when one side gives every pair
the same grade (observed agreement is then what chance gives with these marginals: the counts
are whole numbers, so the two sums it divides are equal), and undefined (null, with the reason)
only when both give one and the same grade to every pair. Spearman is
undefined when either side is constant or there is only one pair. Nothing here is ever NaN.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from freshrag.core import tables
from freshrag.core.files import write_json
from freshrag.core.jsonl import ResultsError
from freshrag.core.records import SampleRow
from freshrag.core.samples import judge_scores
from freshrag.core.stats import cohen_kappa
from freshrag.core.summary import AnswerSummary, Grade, summary_of
from freshrag.core.wording import counted
from freshrag.reporting.loading import load_runs
from freshrag.reporting.report import markdown_table
from freshrag.scoring.judge import FIELDS, SCALE
from freshrag.scoring.store import answer_sha256, read_scores, score_grade

AGREEMENT = "agreement.json"
TOP = 5  # disagreements listed per field unless --top says otherwise
EXCERPT = 160  # characters of a question or answer shown in the disagreement tables


class AgreementError(ResultsError):
    """Two run directories with nothing to compare (a user error: exit 2)."""


# ------------------------------------------------------------------ statistics


def average_ranks(values: Sequence[float]) -> list[float]:
    """Ranks from 1, tied values sharing the mean of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            ranks[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return ranks


def spearman(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Pearson's correlation of the average ranks; None when either side has no spread."""
    if len(a) < 2:
        return None
    x, y = average_ranks(a), average_ranks(b)
    mean_x, mean_y = sum(x) / len(x), sum(y) / len(y)
    sxy = sum((p - mean_x) * (q - mean_y) for p, q in zip(x, y))
    sxx = sum((p - mean_x) ** 2 for p in x)
    syy = sum((q - mean_y) ** 2 for q in y)
    if sxx == 0 or syy == 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def field_agreement(a: Sequence[int], b: Sequence[int]) -> dict[str, Any]:
    """Every agreement figure for one field over n >= 1 pairs of grades. `constant` gives, per
    side, the grade it gave to every pair (null if it varied); `undefined` the reason of each
    figure that is null."""
    n = len(a)
    differences = [y - x for x, y in zip(a, b)]
    kappa, rho = cohen_kappa(a, b, SCALE, weights="quadratic"), spearman(a, b)
    constant = {side: values[0] if len(set(values)) == 1 else None
                for side, values in (("a", a), ("b", b))}
    return {
        "n": n,
        "exact": _round(sum(d == 0 for d in differences) / n),
        "within_one": _round(sum(abs(d) <= 1 for d in differences) / n),
        "kappa": None if kappa is None else _round(kappa),
        "spearman": None if rho is None else _round(rho),
        "mean_abs_difference": _round(sum(map(abs, differences)) / n),
        "mean_difference": _round(sum(differences) / n),
        "confusion": [[sum(1 for x, y in zip(a, b) if (x, y) == (i, j)) for j in SCALE]
                      for i in SCALE],
        "constant": constant,
        "undefined": _undefined(n, constant, kappa, rho),
    }


def _undefined(n: int, constant: dict[str, int | None], kappa: float | None,
               rho: float | None) -> dict[str, str]:
    said = " and ".join(f"{side.upper()} gives every pair {value}"
                        for side, value in constant.items() if value is not None)
    reasons = {}
    if kappa is None:
        reasons["kappa"] = f"{said}: chance alone predicts full agreement"
    if rho is None:
        reasons["spearman"] = "fewer than 2 pairs" if n < 2 else f"{said}: no ranking to correlate"
    return reasons


def _round(value: float) -> float:
    return round(value, 4) + 0.0  # + 0.0 turns -0.0 into 0.0


# ------------------------------------------------------------------ pairing


def pair_runs(rows_a: list[AnswerSummary], rows_b: list[AnswerSummary]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The pairs to compare (same key, both scored, same answer, grades on the scale, checked
    in this order) and what was left out, counted."""
    keyed_b = {_key(row): row for row in rows_b}
    keyed_a = {_key(row): row for row in rows_a}
    counts = {"rows_a": len(rows_a), "rows_b": len(rows_b),
              "matched": len(keyed_a.keys() & keyed_b.keys()),
              "only_in_a": len(keyed_a.keys() - keyed_b.keys()),
              "only_in_b": len(keyed_b.keys() - keyed_a.keys()),
              "different_answers": 0, "unscored_a": 0, "unscored_b": 0, "unscored_either": 0,
              "off_scale": 0}
    pairs = []
    for key, row_a in keyed_a.items():
        row_b = keyed_b.get(key)
        if row_b is None:
            continue
        scores_a, scores_b = judge_scores(row_a), judge_scores(row_b)
        if scores_a is None or scores_b is None:  # failed pairs too: no answer
            counts["unscored_a"] += scores_a is None
            counts["unscored_b"] += scores_b is None
            counts["unscored_either"] += 1
        elif row_a.answer != row_b.answer:
            counts["different_answers"] += 1
        elif not all(_on_scale(scores[f]) for scores in (scores_a, scores_b) for f in FIELDS):
            counts["off_scale"] += 1
        else:
            pairs.append({"dataset": key[0], "question_id": key[1], "system": key[2],
                          "question": row_a.question, "answer": row_a.answer,
                          **{side: {f: int(scores[f]) for f in FIELDS}
                             for side, scores in (("a", scores_a), ("b", scores_b))},
                          "reasons": {side: judge_reason(row.grade)
                                      for side, row in (("a", row_a), ("b", row_b))}})
    counts["compared"] = len(pairs)
    return pairs, counts


def judge_reason(grade: Grade | None) -> str | None:
    """The judge's reason in a grade; None where it gave none (rows before it, imported rows)."""
    reason = grade.reason if grade else None
    return reason if isinstance(reason, str) and reason else None


def _key(row: AnswerSummary) -> tuple[Any, Any, Any]:
    return row.dataset, row.question_id, row.system


def _on_scale(value: Any) -> bool:
    """A grade on the judge's scale; released files may hold 4.0 for 4."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and float(value).is_integer() and int(value) in SCALE)


# ------------------------------------------------------------------ the comparison


def compare_runs(run_a: Path, run_b: Path, top: int = TOP,
                 repeats: tuple[int | None, int | None] = (None, None)) -> dict[str, Any]:
    """agreement.json: both runs and their judges, the pair counts, every field's figures with
    its confusion matrix and `top` disagreements, per (dataset, system) when there are several,
    and notes. No pair to compare is an AgreementError naming both directories. `repeats`: per
    side, a repeat of `freshrag score --scorers judge` whose grades replace the run's own."""
    if run_a.resolve() == run_b.resolve() and repeats[0] == repeats[1]:
        raise AgreementError(f"{run_a} and {run_b} are one directory: nothing to compare")
    rows_a, rows_b = ([summary_of(row) for row in (
        load_runs([run]) if repeat is None else with_repeat(load_runs([run]), run, repeat))]
        for run, repeat in ((run_a, repeats[0]), (run_b, repeats[1])))
    pairs, counts = pair_runs(rows_a, rows_b)
    if not pairs:
        raise AgreementError(f"{run_a} and {run_b}: no answer scored in both to compare "
                             f"({_counts_line(counts)})")
    fields = {}
    for field in FIELDS:
        a, b = [p["a"][field] for p in pairs], [p["b"][field] for p in pairs]
        fields[field] = {**field_agreement(a, b),
                         "disagreements": disagreements(pairs, field, top)}
    document = {"a": _side(run_a, repeats[0]), "b": _side(run_b, repeats[1]),
                "judges": {"a": judge_model(rows_a), "b": judge_model(rows_b)},
                "pairs": counts, "fields": fields, "divergent": divergent(pairs, top),
                "systems": per_system(pairs)}
    document["notes"] = notes(document)
    return document


def with_repeat(rows: list[SampleRow], run_dir: Path, repeat: int) -> list[SampleRow]:
    """The rows with the grade (and the calls) of the judge's repeat `repeat` in the run's
    scores.jsonl; a row without one for its answer is unscored, saying so."""
    judged = {(s.get("dataset"), s["question_id"], s["system"]): s for s in read_scores(run_dir)
              if s["scorer"] == "judge" and s["repeat"] == repeat}
    replaced: list[SampleRow] = []
    for row in rows:
        score = judged.get((row.get("dataset"), row["question_id"], row["system"]))
        calls = score.get("calls", []) if score is not None else []
        if score is None or score.get("answer_sha256") != answer_sha256(row.get("answer")):
            replaced.append({**row, "grade": {
                "truthfulness": None, "relevance": None,
                "unscored_reason": f"no judge repeat {repeat} of this answer", "raw": []},
                "calls": calls})
        else:
            replaced.append({**row, "grade": score_grade(score), "calls": calls})
    return replaced


def _side(run_dir: Path, repeat: int | None) -> str:
    return str(run_dir) if repeat is None else f"{run_dir} (judge repeat {repeat})"


def disagreements(pairs: list[dict[str, Any]], field: str, top: int) -> list[dict[str, Any]]:
    """The `top` pairs whose grades differ most in `field` (ties in key order); none that agree."""
    differing = [p for p in pairs if p["a"][field] != p["b"][field]]
    differing.sort(key=lambda p: (-abs(p["b"][field] - p["a"][field]), str(p["dataset"]),
                                  p["system"], str(p["question_id"])))
    return [{"dataset": p["dataset"], "system": p["system"], "question_id": p["question_id"],
             "question": p["question"], "answer": excerpt(p["answer"]),
             "a": p["a"][field], "b": p["b"][field]} for p in differing[:top]]


def divergent(pairs: list[dict[str, Any]], top: int) -> list[dict[str, Any]]:
    """The `top` pairs whose grades differ most, summed over both fields (ties in key order),
    with both grades and both judges' reasons; none that agree."""
    def apart(pair: dict[str, Any]) -> int:
        return sum(abs(pair["b"][field] - pair["a"][field]) for field in FIELDS)

    differing = sorted((p for p in pairs if apart(p)), key=lambda p: (
        -apart(p), str(p["dataset"]), p["system"], str(p["question_id"])))
    return [{"dataset": p["dataset"], "system": p["system"], "question_id": p["question_id"],
             "question": p["question"], "answer": excerpt(p["answer"]), "difference": apart(p),
             **{side: {**p[side], "reason": p["reasons"][side]} for side in ("a", "b")}}
            for p in differing[:top]]


def per_system(pairs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """n, exact and within-one agreement, kappa and mean difference per field for each (dataset,
    system), when the pairs hold more than one; else []."""
    groups: dict[tuple[Any, str], list[dict[str, Any]]] = {}
    for pair in pairs:
        groups.setdefault((pair["dataset"], pair["system"]), []).append(pair)
    if len(groups) < 2:
        return []
    shown = ("exact", "within_one", "kappa", "mean_difference")
    rows = []
    for (dataset, system), group in groups.items():
        row: dict[str, Any] = {"dataset": dataset, "system": system, "n": len(group)}
        for field in FIELDS:
            figures = field_agreement([p["a"][field] for p in group],
                                      [p["b"][field] for p in group])
            row[field] = {name: figures[name] for name in shown}
        rows.append(row)
    return rows


def notes(document: dict[str, Any]) -> list[str]:
    """What was left out, and which figures are undefined or 0 by construction, and why."""
    counts = document["pairs"]
    lines = [f"left out: {_counts_line(counts)}"] if counts["compared"] < counts["matched"] else []
    if counts["only_in_a"] or counts["only_in_b"]:
        lines.append(f"rows in one run only (no pair): A {counts['only_in_a']}, "
                     f"B {counts['only_in_b']}")
    for field, figures in document["fields"].items():
        lines += [f"{field}: {name} undefined: {why}" for name, why in figures["undefined"].items()]
        if figures["kappa"] == 0 and any(v is not None for v in figures["constant"].values()):
            lines.append(f"{field}: kappa is 0 by construction: with one side giving every "
                         f"pair the same grade, agreement is what chance gives")
    return lines


def _counts_line(counts: dict[str, Any]) -> str:
    return (f"{counted(counts['matched'], 'row')} matched by (dataset, question_id, system) of "
            f"{counts['rows_a']} in A and {counts['rows_b']} in B; "
            f"{counts['different_answers']} with different answers, "
            f"{counts['unscored_either']} unscored on either side (A {counts['unscored_a']}, "
            f"B {counts['unscored_b']}), {counts['off_scale']} with a grade off the 1..5 scale")


def judge_model(rows: list[AnswerSummary]) -> str | None:
    """The judge model(s) of a run, from its rows' calls; None for imports, which record none."""
    models = {row.models.get("judge") for row in rows} - {None}
    return " + ".join(sorted(map(str, models))) or None




def excerpt(text: str | None) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= EXCERPT else flat[:EXCERPT - 1] + "…"


# ------------------------------------------------------------------ output


def default_out(run_a: Path, run_b: Path) -> Path:
    return Path("results") / f"agreement-{run_a.resolve().name}-vs-{run_b.resolve().name}"


def write_agreement(out: Path, document: dict[str, Any]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    return write_json(out / AGREEMENT, document)


FIGURES = ("n", "exact", "within_one", "kappa", "spearman", "mean_abs_difference",
           "mean_difference")


def render(document: dict[str, Any]) -> str:
    """The comparison as markdown: the figures per field, each field's confusion matrix and
    disagreements, the per-system table, the notes."""
    judges = {side: document["judges"][side] or "not recorded" for side in ("a", "b")}
    counts = document["pairs"]
    a, b = tables.cell(document["a"]), tables.cell(document["b"])  # the runs' directories
    sections = [f"## Judge agreement: A = {a} (judge: {tables.cell(judges['a'])}), "
                f"B = {b} (judge: {tables.cell(judges['b'])})\n\n"
                f"{counted(counts['compared'], 'answer')} scored in both, compared; "
                f"mean difference is B - A",
                markdown_table([{"field": f, **v} for f, v in document["fields"].items()],
                               ("field",) + FIGURES)]
    for field, figures in document["fields"].items():
        matrix = [{"A \\ B": grade, **{str(j): n for j, n in zip(SCALE, row)}}
                  for grade, row in zip(SCALE, figures["confusion"])]
        sections.append(f"### {field}: confusion (rows A, columns B)\n\n" +
                        markdown_table(matrix, ("A \\ B", *map(str, SCALE))))
        if figures["disagreements"]:
            cells = [{**row, **{k: excerpt(row[k]) for k in ("question", "answer")}}
                     for row in figures["disagreements"]]
            sections.append(f"### {field}: the {len(cells)} pairs that disagree most\n\n" +
                            markdown_table(cells, ("dataset", "system", "question", "answer",
                                                   "a", "b")))
    if document.get("divergent"):
        sections.append(render_divergent(document["divergent"]))
    if document["systems"]:
        flat = [{**{k: row[k] for k in ("dataset", "system", "n")},
                 **{f"{field} {name}": value for field in FIELDS
                    for name, value in row[field].items()}} for row in document["systems"]]
        sections.append("### Per system\n\n" + markdown_table(flat, tuple(flat[0])))
    if document["notes"]:
        sections.append("### Notes\n\n" + "\n".join(f"- {line}" for line in document["notes"]))
    return "\n\n".join(sections)


def render_divergent(pairs: list[dict[str, Any]]) -> str:
    """The pairs that differ most as a table: each side's grades (truthfulness/relevance) and
    its judge's reason, `–` where it gave none."""
    cells = [{"system": p["system"], "question": excerpt(p["question"]),
              **{side.upper(): "/".join(str(p[side][f]) for f in FIELDS) for side in ("a", "b")},
              **{f"{side.upper()}'s reason": p[side]["reason"] for side in ("a", "b")}}
             for p in pairs]
    return (f"### The {len(cells)} pairs whose grades differ most (grades as "
            f"{'/'.join(FIELDS)}, differences summed), with the judges' reasons\n\n"
            + markdown_table(cells, ("system", "question", "A", "B", "A's reason", "B's reason")))

