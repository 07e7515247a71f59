"""The effective cutoff's figure (docs/cutoff.md#reading-the-plot): closed-book and open-book mean
truthfulness by creation month (or, from changed facts, the share of current answers by the
month of the change) with their 95% intervals, the month where closed-book quality
falls with its interval (a shaded band), and the month the stated cutoff says it should fall."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no screen
import matplotlib.pyplot as plt  # noqa: E402

from freshrag.reporting.render.plots import save  # noqa: E402

CLOSED_COLOUR, OPEN_COLOUR, FALL_COLOUR, STATED_COLOUR = "#c0392b", "#2471a3", "#7d3c98", "#555555"
MAX_TICKS = 12  # month labels on the x axis; more would overlap
# per signal (harness/reporting/cutoff.py): the y axis's range and label, the x axis's label
AXES = {"articles": (0.8, 5.2, "mean truthfulness (1-5)",
                     "month the question's article was created"),
        "changes": (-0.05, 1.05, "share current (of current and stale)",
                    "month the fact's value now was set")}


def write_cutoff_plot(document: dict[str, Any], path: Path) -> Path:
    """The figure of a cutoff analysis (harness/reporting/cutoff.py's document) as a PNG."""
    months = [row["month"] for row in document["months"]]
    fig, ax = plt.subplots(figsize=(min(16.0, max(6.0, 0.28 * len(months) + 2)), 4))
    for key, label, colour, shift in (("open_book", "open book (oracle)", OPEN_COLOUR, 0.12),
                                      ("closed_book", "closed book (baseline)", CLOSED_COLOUR,
                                       -0.12)):
        _series(ax, document["months"], key, label, colour, shift)
    index = {month: i for i, month in enumerate(months)}
    fall = document["fall"]
    if fall["found"]:
        low, high = (index[month] for month in fall["interval"])
        ax.axvspan(low - 0.5, high + 0.5, color=FALL_COLOUR, alpha=0.12,
                   label="95% interval of the fall")
        ax.axvline(index[fall["month"]] - 0.5, color=FALL_COLOUR, linewidth=2,
                   label=f"estimated fall: {fall['month']}")
    stated = document["stated_cutoff"]
    if stated and months and months[0] <= stated["falls_from"] <= months[-1]:
        ax.axvline(index[stated["falls_from"]] - 0.5, color=STATED_COLOUR, linestyle="--",
                   label=f"stated cutoff: {stated['date']}")
    _axes(ax, months, document)
    return save(fig, path)


def _series(ax: Any, rows: list[dict[str, Any]], key: str, label: str, colour: str,
            shift: float) -> None:
    """One line of monthly means with error bars; a month without answers is a gap that no
    line crosses (a line joins only neighbouring months)."""
    xs, ys, low, high = [], [], [], []
    for i, row in enumerate(rows):
        part = row[key]
        mean = math.nan if part["mean"] is None else part["mean"]  # NaN: matplotlib breaks there
        bounds = part["interval"] or [mean, mean]
        xs.append(i + shift)
        ys.append(mean)
        low.append(mean - bounds[0])
        high.append(bounds[1] - mean)
    ax.errorbar(xs, ys, yerr=[low, high], fmt="o-", color=colour, markersize=4, capsize=2,
                linewidth=1, label=label)


def _axes(ax: Any, months: list[str], document: dict[str, Any]) -> None:
    step = max(1, -(-len(months) // MAX_TICKS))
    ax.set_xticks(range(0, len(months), step))
    ax.set_xticklabels(months[::step], rotation=45, ha="right", fontsize=8)
    ax.set_xlim(-0.8, max(len(months) - 0.2, 0.8))
    low, high, ylabel, xlabel = AXES[document["signal"]]
    ax.set_ylim(low, high)
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.set_title(f"Effective knowledge cutoff: {document['dataset']}", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
