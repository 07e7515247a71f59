"""Semantic groups in a report (docs/methods.md#grounded-questions-and-robustness-groups): the rows
of questions that carry a `group` and a `reference` (`freshrag build --style grounded`), per run
identity, all computed from the rows, with no model.

- Correct or not, per text form: the answer is matched against the reference (the SQL answer)
  by `freshrag.core.reference.matches` (dates, numbers, words normalised). Where the match
  fails, the run's judge grade is the second opinion: truthfulness of at least
  `JUDGE_CORRECT` (of 5) makes it correct, below it incorrect. A failed pair, or a failed match
  whose grade is unscored, is `unscored`, with the reason.
- Tags per group: `gap` (every form wrong), `robust` (every form right), `non_robust` (some of
  each); a group with an unscored form is `unscored`, outside every figure below.
- Retrieval-database adequacy = 1 - gap groups / tagged groups. Accuracy = correct forms / forms
  of tagged groups; refined accuracy leaves the forms of gap groups out.
- Attribution of each wrong form of a non-robust group, from the context its answer was given
  (the retrieved extracts in the answer call's prompt): `no_retrieval` when it retrieved
  nothing, `language_model` when its context held the reference, else `retriever`. Each entry
  also says whether a right form's context held it.
- Wording tests: per axis (freshrag.core.types.WORDING_AXES, e.g. short against long), over the
  groups where both forms are scored, the accuracy of each value, their difference with a 95%
  paired-bootstrap interval over groups (freshrag.core.stats, the report's one bootstrap), and an exact
  McNemar test (a two-sided binomial test on the discordant groups, scipy): outcomes are right or
  wrong and paired by group, and with a few dozen groups a normal approximation is not valid.
  Each test's p-value is Holm-adjusted over the whole wording table (`p_holm`), and it gives the
  minimum detectable difference at 80% power for its groups (`mdd`; docs/human-labels.md).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from freshrag.core.files import write_figure
from freshrag.core.reference import matches
from freshrag.core.samples import judge_scores
from freshrag.core.stats import bootstrap_interval, min_detectable_difference, with_holm
from freshrag.core.summary import AnswerSummary
from freshrag.core.types import WORDING_AXES
from freshrag.reporting.identity import Identity, group_rows, labels
from freshrag.reporting.outcomes import untested

JUDGE_CORRECT = 4  # truthfulness (1..5) from which the judge's second opinion says correct
TAGS = ("robust", "non_robust", "gap", "unscored")
CAUSES = ("retriever", "language_model", "no_retrieval")
RULE = (f"correct: the answer matches the reference (normalised dates, numbers, words); where it "
        f"does not, the judge's truthfulness >= {JUDGE_CORRECT} of 5")


def verdict(row: AnswerSummary) -> tuple[str, str]:
    """(`correct` | `incorrect` | `unscored`, the basis): the match first, then the judge."""
    if row.status != "ok":
        return "unscored", f"failed pair: {row.error}"
    if matches(row.answer, row.reference or ""):
        return "correct", "match"
    scores, grade = judge_scores(row), row.grade
    if scores is None:
        reason = (grade.unscored_reason if grade else None) or "not graded"
        return "unscored", f"no match, judge unscored: {reason}"
    if scores["truthfulness"] >= JUDGE_CORRECT:
        return "correct", "judge"
    return "incorrect", "no match, judge below threshold"


def grouped_rows(rows: list[AnswerSummary]) -> dict[Identity, dict[str, list[AnswerSummary]]]:
    """Per run identity that answered grounded questions: its rows by semantic group."""
    result = {}
    for key, rows_of in group_rows([r for r in rows if r.group and r.reference]).items():
        groups: dict[str, list[AnswerSummary]] = {}
        for row in rows_of:
            groups.setdefault(row.group or "", []).append(row)
        result[key] = groups
    return result


def tag(verdicts: list[str]) -> str:
    if "unscored" in verdicts:
        return "unscored"
    if all(v == "correct" for v in verdicts):
        return "robust"
    return "gap" if all(v == "incorrect" for v in verdicts) else "non_robust"


def analyse_groups(rows: list[AnswerSummary], seed: int = 0) -> dict[str, Any]:
    """The tables `groups` and `wording`, and `grounded`: the rule, every form's verdict and the
    attribution of every wrong form of a non-robust group."""
    table, wording, forms, attribution = [], [], [], []
    grouped = grouped_rows(rows)
    names = labels(grouped)
    for key, groups in grouped.items():
        judged = {g: [(row, *verdict(row)) for row in members] for g, members in groups.items()}
        tags = {g: tag([v for _, v, _ in forms_of]) for g, forms_of in judged.items()}
        causes = []
        for group, forms_of in judged.items():
            forms += [{"system": names[key], "dataset": key.dataset, "question_id": row.question_id,
                       "group": group, "criterion": row.criterion, "verdict": v,
                       "basis": basis, "tag": tags[group]} for row, v, basis in forms_of]
            if tags[group] == "non_robust":
                causes += _attribute(forms_of)
        attribution += [{"system": names[key], "dataset": key.dataset, **c} for c in causes]
        table.append({**key.fields(), "label": names[key], **_figures(judged, tags, causes)})
        wording += [{**key.fields(), **test} for test in wording_tests(judged, tags, seed)]
    return {"groups": table, "wording": with_holm(wording),
            "grounded": {"rule": RULE, "judge_correct": JUDGE_CORRECT, "forms": forms,
                         "attribution": attribution}}


def _figures(judged: dict[str, list[tuple[AnswerSummary, str, str]]], tags: dict[str, str],
             causes: list[dict[str, Any]]) -> dict[str, Any]:
    counts = Counter(tags.values())
    tagged = [g for g, t in tags.items() if t != "unscored"]
    verdicts = [v for g in tagged for _, v, _ in judged[g]]
    refined = [v for g in tagged if tags[g] != "gap" for _, v, _ in judged[g]]
    return {"groups": len(tags), **{t: counts.get(t, 0) for t in TAGS},
            "adequacy": _share(len(tagged) - counts.get("gap", 0), len(tagged)),
            "accuracy": _share(verdicts.count("correct"), len(verdicts)),
            "refined_accuracy": _share(refined.count("correct"), len(refined)),
            **{f"wrong_{cause}": sum(c["cause"] == cause for c in causes) for cause in CAUSES}}


def _attribute(forms_of: list[tuple[AnswerSummary, str, str]]) -> list[dict[str, Any]]:
    """The cause of each wrong form of one non-robust group (see the module docstring)."""
    reference = forms_of[0][0].reference or ""
    right_held = any((context := row.context) is not None and matches(context, reference)
                     for row, v, _ in forms_of if v == "correct")
    causes = []
    for row, v, _ in forms_of:
        if v != "incorrect":
            continue
        context = row.context
        cause = ("no_retrieval" if context is None else
                 "language_model" if matches(context, reference) else "retriever")
        causes.append({"question_id": row.question_id, "group": row.group,
                       "criterion": row.criterion, "cause": cause,
                       "right_form_context_held_answer": right_held})
    return causes


def wording_tests(judged: dict[str, list[tuple[AnswerSummary, str, str]]], tags: dict[str, str],
                  seed: int = 0) -> list[dict[str, Any]]:
    """Per wording axis with forms of both values in some tagged group: the paired test."""
    tests = []
    for axis, (first, second) in WORDING_AXES.items():
        pairs = []
        for group, forms_of in sorted(judged.items()):
            by_criterion = {row.criterion: v for row, v, _ in forms_of}
            if tags[group] != "unscored" and first in by_criterion and second in by_criterion:
                pairs.append((by_criterion[first] == "correct", by_criterion[second] == "correct"))
        if pairs:
            tests.append(paired_test(axis, first, second, pairs, seed))
    return tests


def paired_test(axis: str, first: str, second: str, pairs: list[tuple[bool, bool]],
                seed: int = 0) -> dict[str, Any]:
    """Accuracy of `first` minus that of `second` over paired groups: the difference, its 95%
    paired-bootstrap interval, and the exact McNemar p-value."""
    from scipy.stats import binomtest  # here: scipy.stats takes a second to import

    diffs = [int(a) - int(b) for a, b in pairs]
    only_first, only_second = diffs.count(1), diffs.count(-1)
    discordant = only_first + only_second
    p_value = binomtest(min(only_first, only_second), discordant, 0.5).pvalue if discordant else 1.0
    return {"axis": axis, "a": first, "b": second, "paired_groups": len(pairs),
            "accuracy_a": _share(sum(a for a, _ in pairs), len(pairs)),
            "accuracy_b": _share(sum(b for _, b in pairs), len(pairs)),
            "difference": round(sum(diffs) / len(diffs), 4),
            "only_a_right": only_first, "only_b_right": only_second,
            **_tested(diffs, p_value, seed), "test": "exact McNemar (binomial, two-sided)"}


def _tested(diffs: list[int], p_value: float, seed: int) -> dict[str, Any]:
    """The interval, p-value and mdd, or (outcomes.untested) none of them and why not."""
    why = untested([float(d) for d in diffs])
    if why is not None:
        return {"interval": None, "p_value": None, "mdd": None, "untested": why}
    return {"interval": list(bootstrap_interval(diffs, lambda d: sum(d) / len(d), seed=seed)),
            "p_value": round(min(1.0, p_value), 4), "mdd": min_detectable_difference(diffs)}


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def tag_figure(rows: list[AnswerSummary], path: Path) -> Path | None:
    """Stacked bars of group tags per run identity; None when no identity has groups."""
    table = analyse_groups(rows)["groups"]
    if not table:
        return None
    import matplotlib.pyplot as plt  # the Agg backend is chosen by harness/reporting/render/plots.py

    names = [f"{entry['dataset']} / {entry['label']}" for entry in table]
    fig, ax = plt.subplots(figsize=(7.5, 0.6 * len(table) + 1.6))
    left = [0] * len(table)
    colours = {"robust": "#4c9a5b", "non_robust": "#e0a43a", "gap": "#c0504d",
               "unscored": "#9a9a9a"}
    for name in TAGS:
        counts = [entry[name] for entry in table]
        ax.barh(names, counts, left=left, color=colours[name], label=name.replace("_", "-"))
        left = [a + b for a, b in zip(left, counts)]
    ax.invert_yaxis()
    # the axis's locator is a MaxNLocator, which takes `integer`; the stubs' Locator does not
    ax.xaxis.get_major_locator().set_params(integer=True)  # type: ignore[call-arg]
    ax.set_xlabel("semantic groups (gap: every form wrong; robust: every form right)")
    ax.set_title("Semantic group tags per system")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), fontsize="small")
    fig.tight_layout()
    write_figure(fig, path, dpi=110)
    plt.close(fig)
    return path
