"""Figures of the decision and savings analysis (docs/methods.md#retrieval-need-and-deciders):

- `savings-DATASET.png`: mean truthfulness + relevance (left) and tokens per question (right)
  of every system against the share of fresh questions, 95% bands; the references (always
  retrieve, never retrieve, the oracle router) dashed. From `savings_curve`
  (harness/reporting/savings.py).
- `deciders.png`: ROC (left) and precision-recall (right) curves of the deciders that record a
  score (harness/reporting/decisions.py), AUROC in the legend; written whenever the report's
  ROC table has rows (the table names the file), a decider with no curve (need takes one value
  among its questions) named on the figure with why.

Neither is drawn when its analysis has no rows.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from freshrag.core.files import write_figure
from freshrag.reporting.render.figure_data import slug
from freshrag.reporting.render.plots import plt

DECIDERS = "deciders.png"  # named by the report's ROC table (harness/reporting/report.py)


def write(analysis: dict[str, Any], out_dir: Path) -> list[Path]:
    """The figures for an analysis holding `savings_curve` and `roc`; their paths."""
    paths = []
    curves = analysis.get("savings_curve") or []
    for dataset in dict.fromkeys(curve["dataset"] for curve in curves):
        out_dir.mkdir(parents=True, exist_ok=True)
        paths.append(_savings([c for c in curves if c["dataset"] == dataset], dataset,
                              out_dir / f"savings-{slug(dataset)}.png"))
    if analysis.get("roc"):
        out_dir.mkdir(parents=True, exist_ok=True)
        paths.append(_written(deciders_figure(analysis["roc"]), out_dir / DECIDERS))
    return paths


def _savings(curves: list[dict[str, Any]], dataset: str, path: Path) -> Path:
    rows = (len(curves) + 1) // 2  # legend lines below the panels, two names a line
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2 + 0.22 * rows))
    for curve in curves:
        style = "--" if curve["reference"] else "-"
        for ax, field in zip(axes, ("score", "tokens_per_question")):
            points = [(s, p[field]) for s, p in zip(curve["shares"], curve["points"])
                      if p and p.get(field)]
            if not points:
                continue
            shares = [s for s, _ in points]
            line, = ax.plot(shares, [v[0] for _, v in points], style, marker=".",
                            label=curve["system"])
            ax.fill_between(shares, [v[1] for _, v in points], [v[2] for _, v in points],
                            color=line.get_color(), alpha=0.15)
    axes[0].set_ylabel("mean truthfulness + relevance")
    axes[1].set_ylabel("tokens per question (judge excluded)")
    for ax in axes:
        ax.set_xlabel("share of fresh questions")
        ax.set_xlim(0, 1)
    axes[0].set_ylim(2, 10)
    fig.suptitle(f"{dataset}: quality and cost against traffic (95% bands; dashed: references)",
                 fontsize=10)
    handles, names = axes[1].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.22 * rows / (4.2 + 0.22 * rows) + 0.04, 1, 1))
    fig.legend(handles, names, loc="lower center", ncol=2, fontsize=7, frameon=False)
    return _written(fig, path)  # not save(): its tight_layout would pull the legend back in


def _written(fig: Any, path: Path) -> Path:
    """A figure laid out already, written whole to `path` and closed."""
    write_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


def deciders_figure(entries: list[dict[str, Any]]) -> Any:
    """The ROC table's curves; the deciders without one named below the panels, with why."""
    fig, (roc, pr) = plt.subplots(1, 2, figsize=(10, 4.2))
    roc.plot([0, 1], [0, 1], ":", color="grey", label="chance")
    for entry in (entry for entry in entries if entry.get("roc")):
        name = f"{entry['dataset']} / {entry['system']}"
        roc.plot(*zip(*entry["roc"]), marker=".", label=f"{name} (AUROC {entry['auroc'][0]:.2f})")
        pr.plot(*zip(*entry["pr"]), marker=".",
                label=f"{name} (AP {entry['average_precision']:.2f})")
    roc.set(xlabel="false positive rate (retrieved, not needed)",
            ylabel="true positive rate (retrieved, needed)", xlim=(0, 1), ylim=(0, 1.02))
    pr.set(xlabel="recall", ylabel="precision", xlim=(0, 1), ylim=(0, 1.02))
    for ax in (roc, pr):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Retrieval deciders against need by construction", fontsize=10)
    missing = [entry for entry in entries if not entry.get("roc")]
    if missing:
        fig.text(0.5, 0.01, textwrap.fill("No curve: " + "; ".join(
            f"{entry['dataset']} / {entry['system']} ({entry.get('why', 'no scores')})"
            for entry in missing), 150), ha="center", va="bottom", fontsize=7)
    fig.tight_layout(rect=(0, 0.12 if missing else 0, 1, 1))
    return fig
