"""The label composition of a dataset and the labeller's agreement (docs/methods.md#question-labels:
public sets are heavily unbalanced across labels, and a zero-shot labeller must be
checked against people before its labels are trusted).

Composition: questions per label (the labeller's, and the generator's requested labels where the
set has them), printed as a table, kept as JSON (`label-report.json`) and drawn as a bar chart
(`labels.png`). Agreement of the labeller with a reference (the requested labels, or hand labels):
Cohen's kappa over the pairs the labeller labelled (its `unknown` answers are counted apart) and
the confusion matrix, rows the reference, columns the labeller (`unknown` included).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no screen
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.metrics import confusion_matrix  # noqa: E402

from freshrag.core import tables  # noqa: E402
from freshrag.core.files import write_figure, write_json  # noqa: E402
from freshrag.core.stats import cohen_kappa  # noqa: E402
from freshrag.core.types import LABELS, UNKNOWN  # noqa: E402

REPORT_FILE, CHART_FILE = "label-report.json", "labels.png"


def composition(labels: list[str | None]) -> dict[str, Any]:
    """Questions per label (`unknown`: the labeller's reply was unusable; `none`: not labelled)."""
    counts = Counter("none" if label is None else label for label in labels)
    keys = [*LABELS, UNKNOWN, "none"]
    total = len(labels)
    return {"n": total, "counts": {key: counts.get(key, 0) for key in keys},
            "shares": {key: round(counts.get(key, 0) / total, 4) if total else None
                       for key in keys}}


def agreement(reference: list[str], labeller: list[str]) -> dict[str, Any]:
    """Cohen's kappa and the confusion matrix of the labeller against a reference labelling."""
    pairs = [(ref, got) for ref, got in zip(reference, labeller, strict=True) if ref in LABELS]
    known = [(ref, got) for ref, got in pairs if got in LABELS]
    kappa = cohen_kappa([r for r, _ in known], [g for _, g in known], LABELS)
    kappa = None if kappa is None else round(kappa, 4)
    columns = [*LABELS, UNKNOWN]
    matrix = confusion_matrix([r for r, _ in pairs], [g for _, g in pairs],
                              labels=columns).tolist() if pairs else []
    return {"n": len(pairs), "labelled": len(known), "unknown": len(pairs) - len(known),
            "agree": sum(ref == got for ref, got in pairs), "kappa": kappa,
            "kappa_note": None if kappa is not None else
            "undefined: no labelled pairs, or one label only on both sides",
            "confusion": {"rows": list(LABELS), "columns": columns,
                          "counts": [row[:len(columns)] for row in matrix[:len(LABELS)]]}}


def label_report(rows: list[dict[str, Any]], hand: dict[str, str] | None = None) -> dict[str, Any]:
    """`rows`: id, label, requested_label per question (labels.label_dataset)."""
    labels = [row["label"] for row in rows]
    requested = [row.get("requested_label") for row in rows]
    has_requested = any(label is not None for label in requested)
    report: dict[str, Any] = {"labeller": composition(labels),
                              "requested": composition(requested) if has_requested else None,
                              "agreement_requested": None, "agreement_hand": None}
    if has_requested:
        report["agreement_requested"] = agreement([r or "none" for r in requested], labels)
    if hand:
        labelled = [row for row in rows if row["id"] in hand]
        report["agreement_hand"] = agreement([hand[row["id"]] for row in labelled],
                                             [row["label"] for row in labelled])
    return report


def render(report: dict[str, Any]) -> str:
    """The composition table and each agreement, as markdown."""
    sides = [("labeller", report["labeller"]), ("requested", report["requested"])]
    sides = [(name, side) for name, side in sides if side]
    lines = tables.header(["label", *(name for name, _ in sides)], ["---"] + ["---:"] * len(sides))
    for key in [*LABELS, UNKNOWN, "none"]:
        if any(side["counts"][key] for _, side in sides):
            lines.append(tables.row([key, *(f"{side['counts'][key]} ({side['shares'][key]:.0%})"
                                            for _, side in sides)]))
    lines.append(tables.row(["total", *(side["n"] for _, side in sides)]))
    for name, title in (("agreement_requested", "requested label (rows) against the labeller"),
                        ("agreement_hand", "hand labels (rows) against the labeller")):
        if report[name]:
            lines += ["", render_agreement(report[name], title)]
    return "\n".join(lines)


def render_agreement(result: dict[str, Any], title: str) -> str:
    kappa = result["kappa"] if result["kappa"] is not None else result["kappa_note"]
    lines = [f"{title}: Cohen's kappa {kappa} over {result['labelled']} labelled pairs "
             f"({result['unknown']} unknown), {result['agree']} of {result['n']} agree",
             "", *tables.header(["", *result["confusion"]["columns"]],
                                ["---"] + ["---:"] * len(result["confusion"]["columns"]))]
    for name, counts in zip(result["confusion"]["rows"], result["confusion"]["counts"]):
        lines.append(tables.row([name, *counts]))
    return "\n".join(lines)


def write_report(directory: Path, report: dict[str, Any]) -> list[Path]:
    """`label-report.json` and the bar chart `labels.png`, in `directory`."""
    path = directory / REPORT_FILE
    write_json(path, report, ensure_ascii=True)
    return [path, bar_chart(report, directory / CHART_FILE)]


def bar_chart(report: dict[str, Any], path: Path) -> Path:
    keys = [*LABELS, UNKNOWN]
    sides = [(name, report[name]) for name in ("labeller", "requested") if report[name]]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    width = 0.8 / len(sides)
    for offset, (name, side) in enumerate(sides):
        ax.bar([i + offset * width for i in range(len(keys))],
               [side["counts"][key] for key in keys], width, label=name)
    ax.set_xticks([i + width * (len(sides) - 1) / 2 for i in range(len(keys))], keys)
    ax.set_ylabel("questions")
    ax.set_title(f"label composition ({report['labeller']['n']} questions)")
    ax.legend()
    fig.tight_layout()
    write_figure(fig, path, dpi=100)
    plt.close(fig)
    return path
