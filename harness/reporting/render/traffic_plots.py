"""Figures of the decision and savings analysis (docs/methods.md#retrieval-need-and-deciders):

- `savings-DATASET.png`: mean truthfulness + relevance (left) and tokens per question (right)
  of every system against the share of fresh questions, 95% bands; the references (always
  retrieve, never retrieve, the oracle router) dashed. From `savings_curve`
  (harness/reporting/savings.py).
- `deciders.png`: ROC (left) and precision-recall (right) curves of the deciders that record a
  score (harness/reporting/decisions.py), AUROC in the legend.

Both are drawn only when their analysis has something to show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freshrag.core.files import write_figure
from freshrag.reporting.render.plots import plt, save, slug


def write(analysis: dict[str, Any], out_dir: Path) -> list[Path]:
    """The figures for an analysis holding `savings_curve` and `roc`; their paths."""
    paths = []
    curves = analysis.get("savings_curve") or []
    for dataset in dict.fromkeys(curve["dataset"] for curve in curves):
        out_dir.mkdir(parents=True, exist_ok=True)
        paths.append(_savings([c for c in curves if c["dataset"] == dataset], dataset,
                              out_dir / f"savings-{slug(dataset)}.png"))
    drawable = [entry for entry in analysis.get("roc") or [] if entry.get("roc")]
    if drawable:
        out_dir.mkdir(parents=True, exist_ok=True)
        paths.append(_deciders(drawable, out_dir / "deciders.png"))
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
    write_figure(fig, path, dpi=110)  # not save(): its tight_layout would pull the legend back in
    plt.close(fig)
    return path


def _deciders(entries: list[dict[str, Any]], path: Path) -> Path:
    fig, (roc, pr) = plt.subplots(1, 2, figsize=(10, 4.2))
    roc.plot([0, 1], [0, 1], ":", color="grey", label="chance")
    for entry in entries:
        name = f"{entry['dataset']} / {entry['system']}"
        roc.plot(*zip(*entry["roc"]), marker=".", label=f"{name} (AUROC {entry['auroc'][0]:.2f})")
        pr.plot(*zip(*entry["pr"]), marker=".",
                label=f"{name} (AP {entry['average_precision']:.2f})")
    roc.set(xlabel="false positive rate (retrieved, not needed)",
            ylabel="true positive rate (retrieved, needed)", xlim=(0, 1), ylim=(0, 1.02))
    pr.set(xlabel="recall", ylabel="precision", xlim=(0, 1), ylim=(0, 1.02))
    for ax in (roc, pr):
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle("Retrieval deciders against need by construction", fontsize=10)
    return save(fig, path)
