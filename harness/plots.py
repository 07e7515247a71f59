"""Figures for reports: score histograms (the paper's Figures 1, 2 and 4) and token charts.

The Pareto plot sets mean truthfulness + relevance against input tokens and against dollars.
Histograms show truthfulness + relevance per scored answer, bins 2..10, with the mean marked;
one PNG per (dataset, system) and one figure with every system side by side. The token chart
stacks input and output tokens by role for each system, judge included.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no screen
import matplotlib.pyplot as plt  # noqa: E402

from harness.report import group_rows, is_scored  # noqa: E402

BINS = list(range(2, 11))


def combined_scores(rows: list[dict[str, Any]]) -> list[int]:
    return [row["grade"]["truthfulness"] + row["grade"]["relevance"] for row in rows if is_scored(row)]


def write_figures(rows: list[dict[str, Any]], out_dir: Path,
                  cost: list[dict[str, Any]] | None = None) -> list[Path]:
    """Every figure for these rows, written into out_dir; returns the paths. `cost` is the
    analysis's quality-and-cost table, for the Pareto plot."""
    out_dir.mkdir(parents=True, exist_ok=True)
    groups = group_rows(rows)
    paths = []
    for (dataset, system), group in groups.items():
        fig, ax = plt.subplots(figsize=(5, 3.5))
        _histogram(ax, combined_scores(group), f"{dataset} / {system}", len(group))
        paths.append(_save(fig, out_dir / f"hist-{_slug(dataset)}-{_slug(system)}.png"))
    paths.append(_side_by_side(groups, out_dir / "hist-comparison.png"))
    paths.append(_token_chart(groups, out_dir / "tokens-by-role.png"))
    if cost:
        paths.append(_pareto(cost, out_dir / "pareto.png"))
    return paths


def _pareto(cost: list[dict[str, Any]], path: Path) -> Path:
    """Mean truthfulness + relevance against input tokens (left) and dollars (right), one point
    per (dataset, system); systems on their dataset's Pareto front are filled and joined."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, axis, label in ((axes[0], "input_tokens", "input tokens"),
                            (axes[1], "cost_usd", "cost (USD, judge excluded)")):
        points = [e for e in cost if e["score"] is not None and e[axis] is not None]
        for dataset in dict.fromkeys(e["dataset"] for e in points):
            mine = [e for e in points if e["dataset"] == dataset]
            front = sorted((e for e in mine if e[f"pareto_{axis}"]), key=lambda e: e[axis])
            line, = ax.plot([e[axis] for e in front], [e["score"] for e in front], "-",
                            label=f"{dataset} front")
            for e in mine:
                ax.plot(e[axis], e["score"], "o", color=line.get_color(),
                        fillstyle="full" if e[f"pareto_{axis}"] else "none")
                ax.annotate(e["system"], (e[axis], e["score"]), fontsize=7,
                            xytext=(4, 3), textcoords="offset points")
        if not points:
            missing = sorted({m for e in cost for m in e["unpriced_models"]})
            ax.text(0.5, 0.5, "no prices for: " + (", ".join(missing) or "these models"),
                    ha="center", va="center", transform=ax.transAxes, fontsize=8, wrap=True)
        else:
            ax.legend(fontsize=7)
        ax.set_xlabel(label)
        ax.set_title(f"Quality against {label.split(' (')[0]}", fontsize=10)
    axes[0].set_ylabel("mean truthfulness + relevance")
    return _save(fig, path)


def _histogram(ax: Any, scores: list[int], title: str, n: int) -> None:
    counts = [scores.count(b) for b in BINS]
    ax.bar(BINS, counts, width=0.8, color="#4c72b0")
    if scores:
        mean = sum(scores) / len(scores)
        ax.axvline(mean, color="#c44e52", linestyle="--", label=f"mean {mean:.2f}")
        ax.legend(loc="upper right", fontsize=8)
    unscored = n - len(scores)
    ax.set_title(title + (f" ({unscored} unscored)" if unscored else ""), fontsize=9)
    ax.set_xticks(BINS)
    ax.set_xlabel("truthfulness + relevance")
    ax.set_ylabel("answers")


def _side_by_side(groups: dict[tuple[str, str], list[dict[str, Any]]], path: Path) -> Path:
    fig, axes = plt.subplots(1, len(groups), figsize=(3.6 * len(groups), 3.4), sharey=True,
                             squeeze=False)
    for ax, ((dataset, system), group) in zip(axes[0], groups.items()):
        _histogram(ax, combined_scores(group), f"{dataset} / {system}", len(group))
    return _save(fig, path)


def _token_chart(groups: dict[tuple[str, str], list[dict[str, Any]]], path: Path) -> Path:
    labels = [f"{d}\n{s}" for d, s in groups]
    roles = sorted({role for group in groups.values() for row in group for role in row["usage"]})
    fig, ax = plt.subplots(figsize=(max(5, 1.4 * len(labels) + 2), 4))
    bottoms = [0] * len(labels)
    for role in roles:
        for kind, hatch in (("input", ""), ("output", "//")):
            heights = [sum(row["usage"].get(role, {}).get(kind, 0) for row in group)
                       for group in groups.values()]
            ax.bar(labels, heights, bottom=bottoms, label=f"{role} {kind}", hatch=hatch)
            bottoms = [b + h for b, h in zip(bottoms, heights)]
    ax.set_ylabel("tokens")
    ax.set_title("Tokens by system and role", fontsize=10)
    ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"
