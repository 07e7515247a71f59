"""What people's labels say of the judge and of each other (docs/human-labels.md). From the
labels files of the report's labelling page (harness/reporting/labels.py) and, where given, a
run's rows: the judge against people, people against each other, and the means the labels give.

- The judge against people: every label of an answer the judge scored is one pair (an answer
  two people labelled is two pairs). Per field: exact and within-one agreement, Cohen's kappa
  plain and with quadratic weights (harness/core/stats.py, scikit-learn's), Spearman's rank
  correlation (harness/reporting/agreement.py), the people's and the judge's means, and the bias,
  the judge's mean minus the people's; then the answers where the two differ most, with the
  judge's reason and the person's note.
- People against each other: over the pairs of labels two people gave one answer (question and
  answer text), all of them up to PAIRS_COUNTED, else a seeded sample of that many (stated), the
  same figures pooled (a the labeller first by name), and the PEOPLE_SHOWN pairs of labellers
  with the most answers in common, each with its own; no run is needed. The work and the output
  grow with the labels, never with the square of the labellers.
- The means: per run identity with labelled answers, the judge's own mean and 95% bootstrap
  interval over every answer it scored, beside the prediction-powered mean and interval
  (harness/core/ppi.py) that the labelled answers correct; an answer several people labelled
  counts once, with their mean grade.
"""

from __future__ import annotations

import random
from itertools import accumulate, combinations
from typing import Any, Sequence

from freshrag.core.ppi import ppi_mean
from freshrag.core.samples import judge_scores
from freshrag.core.stats import bootstrap_interval, cohen_kappa, mean
from freshrag.core.summary import AnswerSummary
from freshrag.core.wording import counted
from freshrag.reporting.agreement import (
    excerpt,
    field_agreement,
    judge_model,
    judge_reason,
)
from freshrag.reporting.identity import group_rows
from freshrag.reporting.labels import Label, Resolved, resolve
from freshrag.reporting.report import markdown_table
from freshrag.scoring.judge import FIELDS, SCALE

TOP = 5  # answers listed where the judge and a person differ most
PAIRS_COUNTED = 200_000  # pairs of labels of one answer compared; past it, a seeded sample
PEOPLE_SHOWN = 20  # pairs of labellers listed, those with the most answers in common
LABELLERS_NAMED = 10  # labellers named in the heading; past it, a count
SIDES = ("people", "judge")  # the names of a and b in the judge's figures


def figures(a: Sequence[int], b: Sequence[int], sides: Sequence[str] = ("a", "b")
            ) -> dict[str, Any]:
    """The agreement of grades b with grades a of the same n >= 1 answers: `mean_<side>` each
    side's mean, `bias` b's minus a's; kappa or Spearman null where undefined (agreement.py)."""
    found = field_agreement(a, b)
    plain = cohen_kappa(a, b, SCALE)
    return {"n": found["n"], "exact": found["exact"], "within_one": found["within_one"],
            "kappa": None if plain is None else round(plain, 4) + 0.0,
            "kappa_quadratic": found["kappa"], "spearman": found["spearman"],
            f"mean_{sides[0]}": mean(a, places=4), f"mean_{sides[1]}": mean(b, places=4),
            "bias": found["mean_difference"], "confusion": found["confusion"]}


def columns(sides: Sequence[str]) -> tuple[str, ...]:
    return ("n", "exact", "within_one", "kappa", "kappa_quadratic", "spearman",
            *(f"mean_{side}" for side in sides), "bias")


def judge_against_people(pairs: list[tuple[AnswerSummary, Label]], top: int = TOP) -> dict[str, Any]:
    """The figures per field over the labels of answers the judge scored (a = people, b = the
    judge), the `top` that differ most, and how many labels were of unscored answers."""
    scored = [(row, label, scores) for row, label in pairs
              if (scores := judge_scores(row)) is not None]
    fields = {field: figures([getattr(label, field) for _, label, _ in scored],
                             [int(scores[field]) for _, _, scores in scored], SIDES)
              for field in FIELDS} if scored else {}
    return {"judge": judge_model([row for row, _ in pairs]), "pairs": len(scored),
            "unscored": len(pairs) - len(scored), "fields": fields,
            "divergent": divergent(scored, top)}


def divergent(scored: list[tuple[AnswerSummary, Label, Any]], top: int) -> list[dict[str, Any]]:
    """The `top` labels whose grades differ most from the judge's, summed over both fields
    (ties in key order), with the judge's reason and the person's note; none that agree."""
    def apart(item: tuple[AnswerSummary, Label, Any]) -> int:
        _, label, scores = item
        return sum(abs(int(scores[field]) - getattr(label, field)) for field in FIELDS)

    differing = sorted((item for item in scored if apart(item)), key=lambda item: (
        -apart(item), str(item[0].dataset), item[0].system, str(item[0].question_id),
        item[1].labeller))
    return [{"dataset": row.dataset, "system": row.system,
             "question_id": row.question_id, "question": row.question,
             "answer": excerpt(row.answer), "difference": apart((row, label, scores)),
             "judge": {**{f: int(scores[f]) for f in FIELDS},
                       "reason": judge_reason(row.grade)},
             "person": {**{f: getattr(label, f) for f in FIELDS}, "note": label.note or None,
                        "labeller": label.labeller}}
            for row, label, scores in differing[:top]]


def people_against_each_other(labels: list[Label], seed: int = 0) -> dict[str, Any]:
    """People against each other (see the module docstring): `pairs` the pairs of labels of one
    answer (`counted` of them compared, `sampled` whether at random), `labeller_pairs` how many
    pairs of labellers share an answer, `pooled` the figures per field over the pairs compared,
    and `table` the PEOPLE_SHOWN pairs of labellers with the most in common (ties by name)."""
    by_answer: dict[tuple[str, str, str], list[Label]] = {}
    for label in labels:
        by_answer.setdefault(label.answer, []).append(label)
    held = [sorted(group, key=lambda label: label.labeller) for group in by_answer.values()
            if len(group) > 1]
    total = sum(len(group) * (len(group) - 1) // 2 for group in held)
    pairs = _label_pairs(held, total, seed)
    by_people: dict[tuple[str, str], list[tuple[Label, Label]]] = {}
    for x, y in pairs:
        by_people.setdefault((x.labeller, y.labeller), []).append((x, y))
    shown = sorted(by_people.items(), key=lambda item: (-len(item[1]), item[0]))[:PEOPLE_SHOWN]
    return {"pairs": total, "counted": len(pairs), "sampled": len(pairs) < total,
            "labeller_pairs": len(by_people),
            "pooled": _fields(pairs) if pairs else None,
            "table": [{"a": a, "b": b, "n": len(shared), **_fields(shared)}
                      for (a, b), shared in shown]}


def _label_pairs(held: list[list[Label]], total: int, seed: int
                 ) -> list[tuple[Label, Label]]:
    """Every pair of labels within each group (a before b by name), or, past PAIRS_COUNTED, that
    many drawn without repeats: a group by its number of pairs, then two of its labels."""
    if total <= PAIRS_COUNTED:
        return [pair for group in held for pair in combinations(group, 2)]
    draw = random.Random(seed)
    cumulative = list(accumulate(len(group) * (len(group) - 1) // 2 for group in held))
    chosen: set[tuple[int, int, int]] = set()
    while len(chosen) < PAIRS_COUNTED:
        for at in draw.choices(range(len(held)), cum_weights=cumulative,
                               k=PAIRS_COUNTED - len(chosen)):
            i, j = sorted(draw.sample(range(len(held[at])), 2))
            chosen.add((at, i, j))
    return [(held[at][i], held[at][j]) for at, i, j in sorted(chosen)]


def _fields(shared: list[tuple[Label, Label]]) -> dict[str, Any]:
    return {field: figures([getattr(x, field) for x, _ in shared],
                           [getattr(y, field) for _, y in shared]) for field in FIELDS}


def intervals(rows: list[AnswerSummary], pairs: list[tuple[AnswerSummary, Label]],
              seed: int = 0) -> list[dict[str, Any]]:
    """Per run identity with a labelled answer the judge scored: `labelled` such answers,
    `judged` the answers the judge alone scored, and per field the judge's mean with its 95%
    bootstrap interval (`truthfulness`) beside the prediction-powered one
    (`truthfulness_ppi`, null under 2 labelled answers) and its lambda."""
    grades: dict[int, list[Label]] = {}
    for row, label in pairs:
        grades.setdefault(id(row), []).append(label)
    table = []
    for key, group in group_rows(rows).items():
        scored = [(row, scores) for row in group if (scores := judge_scores(row)) is not None]
        labelled = [(grades[id(row)], scores) for row, scores in scored if id(row) in grades]
        if not labelled:
            continue
        entry: dict[str, Any] = {**key.fields(), "labelled": len(labelled),
                                 "judged": len(scored) - len(labelled)}
        for field in FIELDS:
            judge = [float(scores[field]) for _, scores in scored]
            human = [mean([getattr(label, field) for label in held]) or 0.0
                     for held, _ in labelled]
            found = ppi_mean(human, [float(scores[field]) for _, scores in labelled],
                             [float(scores[field]) for row, scores in scored
                              if id(row) not in grades])
            entry[field] = [mean(judge, places=4), *bootstrap_interval(judge, mean, seed=seed)]
            entry[f"{field}_ppi"] = None if found is None else [
                round(found.mean, 4), round(found.low, 4), round(found.high, 4)]
            entry[f"{field}_lambda"] = None if found is None else round(found.lam, 4)
        table.append(entry)
    return table


def human_document(labels: list[Label], resolved: Resolved | None, rows: list[AnswerSummary] | None,
                   top: int = TOP, seed: int = 0) -> dict[str, Any]:
    """What the labels say: their counts, people against each other, and with a run's `rows`
    (and the labels `resolved` against them) the judge against people and the means."""
    document: dict[str, Any] = {
        "labels": {"read": len(labels),
                   "labellers": sorted({label.labeller for label in labels}),
                   "answers": len({label.answer for label in labels})},
        "people": people_against_each_other(labels, seed)}
    notes = []
    if rows is not None and resolved is not None:
        document["labels"].update(matched=len(resolved.pairs), unknown=resolved.unknown,
                                  changed=resolved.changed)
        document["judge"] = judge_against_people(resolved.pairs, top)
        document["intervals"] = intervals(rows, resolved.pairs, seed)
        notes += resolved.notes()
        notes += [f"{row['dataset']} / {row['system']}: {row['labelled']} labelled answer: no "
                  f"interval of people's grades (it needs 2)"
                  for row in document["intervals"] if row["labelled"] < 2]
        if document["judge"]["unscored"]:
            notes.append(f"{counted(document['judge']['unscored'], 'label')} of answers the judge "
                         "did not score: not compared with the judge, and outside the means")
    people = document["people"]
    if len(document["labels"]["labellers"]) > 1 and not people["pairs"]:
        notes.append("no two labellers labelled the same answer: nothing to compare between "
                     "people")
    if people["sampled"]:
        notes.append(f"people against each other: {people['counted']:,} pairs of labels of one "
                     f"answer drawn at random (seed {seed}) of {people['pairs']:,}")
    if len(people["table"]) < people["labeller_pairs"]:
        notes.append(f"people against each other: the {len(people['table'])} pairs of "
                     f"labellers with the most answers in common listed, of "
                     f"{people['labeller_pairs']:,}; the pooled row holds them all")
    document["notes"] = notes
    return document


# ------------------------------------------------------------------ output


INTERVAL_COLUMNS = ("dataset", "system", "labelled", "judged", "truthfulness",
                    "truthfulness_ppi", "relevance", "relevance_ppi", "models")


def heading(document: dict[str, Any]) -> str:
    counts = document["labels"]
    names = counts["labellers"]
    who = (", ".join(names) or "nobody") if len(names) <= LABELLERS_NAMED else \
        f"{len(names):,} labellers ({', '.join(names[:LABELLERS_NAMED])}, ...)"
    return (f"People's labels: {counted(counts['read'], 'label')} of "
            f"{counted(counts['answers'], 'answer')} "
            f"by {who}")


def tables(document: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]], tuple[str, ...]]]:
    """(name, title, rows, columns) of each table the document shows, in order, for the
    markdown and the HTML page alike: the judge against people, the answers where they differ
    most, the means, people against each other."""
    judge, found = document.get("judge"), []
    if judge and judge["fields"]:
        found.append(("judge", f"The judge against people ({judge['pairs']} labels of answers it "
                      f"scored; judge: {judge['judge'] or 'not recorded'}; bias: the judge's "
                      f"mean minus the people's)",
                      [{"field": f, **v} for f, v in judge["fields"].items()],
                      ("field", *columns(SIDES))))
    if judge and judge["divergent"]:
        cells = [{"system": d["system"], "question": excerpt(d["question"]),
                  **{side: "/".join(str(d[side][f]) for f in FIELDS)
                     for side in ("judge", "person")},
                  "labeller": d["person"]["labeller"], "judge's reason": d["judge"]["reason"],
                  "person's note": d["person"]["note"]} for d in judge["divergent"]]
        found.append(("divergent", f"The {len(cells)} answers where the judge and a person "
                      f"differ most (grades as {'/'.join(FIELDS)})", cells,
                      ("system", "question", "judge", "person", "labeller", "judge's reason",
                       "person's note")))
    if document.get("intervals"):
        found.append(("intervals", "Means with people's labels: the judge's alone (95% "
                      "bootstrap) beside the prediction-powered ones (_ppi, 95%), which the "
                      "labelled answers correct for the judge's bias", document["intervals"],
                      INTERVAL_COLUMNS))
    people = document["people"]
    if people["pooled"]:
        rows = [{"a": "all", "b": "all", "n": people["counted"], **people["pooled"]},
                *people["table"]]
        flat = [{"a": row["a"], "b": row["b"], "n": row["n"],
                 **{f"{field} {name}": row[field][name] for field in FIELDS
                    for name in ("exact", "kappa", "kappa_quadratic", "spearman", "bias")}}
                for row in rows]
        found.append(("people", "People against each other (answers both labelled; bias: b's "
                      "mean minus a's; the first row pools every pair of labels compared)",
                      flat, tuple(flat[0])))
    return found


def render(document: dict[str, Any]) -> str:
    """The document as markdown: its heading, `tables`, the notes."""
    sections = [f"## {heading(document)}"]
    sections += [f"### {title}\n\n" + markdown_table(rows, shown)
                 for _, title, rows, shown in tables(document)]
    if document["notes"]:
        sections.append("### Notes\n\n" + "\n".join(f"- {line}" for line in document["notes"]))
    return "\n\n".join(sections)


def judge_section(checks: dict[str, Any], labels: list[Label], rows: list[AnswerSummary],
                  seed: int = 0) -> dict[str, Any]:
    """The report's judge section (harness/reporting/judge_check.py) with the labels: the
    document as `human`, its summary and notes after the section's lines."""
    document = human_document(labels, resolve(labels, rows), rows, seed=seed)
    return {**checks, "human": document,
            "lines": checks["lines"] + summary_lines(document) + document["notes"]}


def summary_lines(document: dict[str, Any]) -> list[str]:
    """The lines the report's judge section gives the labels: per field, kappa and bias."""
    judge = document.get("judge")
    if not judge or not judge["fields"]:
        why = "; ".join(document["notes"]) or "no label"
        return [f"People's labels: none of an answer the judge scored ({why})"]
    said = "; ".join(f"{field} kappa {_shown(v['kappa'])} (quadratic "
                     f"{_shown(v['kappa_quadratic'])}), bias {_signed(v['bias'])}"
                     for field, v in judge["fields"].items())
    return [f"Judge against people ({judge['pairs']} labels by "
            f"{counted(len(document['labels']['labellers']), 'labeller')}): {said}"]


def _shown(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2f}"


def _signed(value: float) -> str:
    return f"{value:+.2f}"
