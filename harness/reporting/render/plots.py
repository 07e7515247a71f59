"""Figures for reports, drawn (docs/reports.md#figures): score histograms (the paper's Figures
1, 2 and 4), the token chart and the Pareto plot; what they show is computed in
harness/reporting/render/figure_data.py.

The Pareto plot sets mean truthfulness + relevance against input tokens and against dollars,
each point numbered (numbers placed clear of one another) and named in a key below; where every
system cost $0 (free models) the dollars panel says so rather than stack every number on one
spot. Histograms show truthfulness + relevance per scored answer, bins 2..10, with the mean
marked; one PNG per run identity (harness/reporting/identity.py: dataset, system, models, run)
and one figure with every identity side by side, three to a row so that nine stay legible, where
identities whose histograms are identical share one panel that names them. Identities appear in
the order of the rows given. The token chart stacks input and output tokens by role for each
identity, judge included, with what failed pairs spent as a segment of its own; each role has one
colour in every figure (ROLE_COLOURS). A system that did not report its tokens (a service, an
answers file: unknown, never 0) gets no partial bar of its judge's tokens but a hatched
placeholder marked "tokens unknown", and in the Pareto plot's key "tokens unknown: not placed".
Counts of answers are whole numbers on every axis. With a report's `--by FIELD`
(harness/reporting/breakdown.py), each identity's histogram is drawn again once per value of
the field, side by side (`hist-by-FIELD-DATASET-LABEL.png`).

Titles and labels name an identity by its short label (`naive [answer: gpt-4o-mini]` when two
runs of `naive` differ). A report with no rows has no figures.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import matplotlib

matplotlib.use("Agg")  # files only, no screen
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from freshrag.core.fields import grouped  # noqa: E402
from freshrag.core.files import write_figure  # noqa: E402
from freshrag.core.summary import AnswerSummary  # noqa: E402
from freshrag.reporting.groups import tag_figure  # noqa: E402
from freshrag.reporting.identity import Identity, group_rows, labels  # noqa: E402
from freshrag.reporting.render.figure_data import (  # noqa: E402
    KEY_WIDTH,
    UNKNOWN,
    Groups,
    alike,
    combined_scores,
    figure_names,
    no_points,
    not_placed,
    panel_title,
    place_labels,
    role_tokens,
    shorten,
    slug,
    tokens_unknown,
    wrap,
)

BINS = list(range(2, 11))
GRID_COLUMNS = 3  # histograms side by side: three to a row, so that nine stay legible
KEY_COLUMNS = 3  # the Pareto plot's key: names of the numbered points, three to a row
KEY_ROW_IN = 0.2  # inches per row of the key
LABEL_PT = 7
# One colour per role (harness/core/types.py's ROLES) in every figure, whichever roles it shows
ROLE_COLOURS = {"answer": "#4c72b0", "decision": "#dd8452", "judge": "#55a868",
                "scorer": "#c44e52", "builder": "#8172b3", "labeller": "#937860",
                "embeddings": "#da8bc3"}
OTHER_ROLE = "#8c8c8c"  # a role not in ROLE_COLOURS
FAILED_COLOUR = "#999999"
FREE = "every placed system cost $0 (free models): nothing to set quality against"


def write_figures(rows: list[AnswerSummary], out_dir: Path,
                  cost: list[dict[str, Any]] | None = None) -> list[Path]:
    """Every figure for these rows, written into out_dir; returns the paths (none for no rows).
    `cost` is the analysis's quality-and-cost table, for the Pareto plot."""
    groups = group_rows(rows)
    if not groups:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    names = labels(groups)
    paths = []
    for key, name in figure_names(groups, names).items():
        fig, ax = plt.subplots(figsize=(5, 3.5))
        _histogram(ax, combined_scores(groups[key]), f"{key.dataset} / {names[key]}",
                   len(groups[key]))
        paths.append(save(fig, out_dir / name))
    paths.append(_side_by_side(groups, names, out_dir / "hist-comparison.png"))
    paths.append(_token_chart(groups, names, out_dir / "tokens-by-role.png"))
    if cost:
        paths.append(_pareto(cost, names, out_dir / "pareto.png"))
    if (tags := tag_figure(rows, out_dir / "group-tags.png")) is not None:
        paths.append(tags)
    return paths


def histograms_by_field(rows: list[AnswerSummary], field: str, out_dir: Path) -> list[Path]:
    """Per run identity, its histogram for each value of `field` (questions without one:
    `unlabelled`) side by side; none when no row carries the field."""
    if not any(getattr(row, field) is not None for row in rows):
        return []
    groups = group_rows(rows)
    names = labels(groups)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for key, name in figure_names(groups, names).items():
        parts = grouped(groups[key], field, lambda row, f: getattr(row, f))
        fig, axes = plt.subplots(1, len(parts), figsize=(3.6 * len(parts), 3.4), sharey=True,
                                 squeeze=False)
        for ax, (value, part) in zip(axes[0], parts.items()):
            _histogram(ax, combined_scores(part), f"{field}: {wrap(value)}", len(part))
        fig.suptitle(f"{key.dataset} / {names[key]}", fontsize=10)
        paths.append(save(fig, out_dir / name.replace("hist-", f"hist-by-{slug(field)}-", 1)))
    return paths


def _pareto(cost: list[dict[str, Any]], names: dict[Identity, str], path: Path) -> Path:
    return save(pareto_figure(cost, names), path)


def pareto_figure(cost: list[dict[str, Any]], names: dict[Identity, str]) -> Any:
    """Mean truthfulness + relevance against input tokens (left) and dollars (right), one point
    per identity; those on the Pareto front of their dataset and judge are filled and joined.
    Points carry a number, placed clear of the other numbers, and a key below names them: nine
    systems' names would cover one another. A system left out of a panel says why in the key
    (`not_placed`). The figure, not yet saved."""
    by_key = {(k.dataset, k.system, k.models, k.run): label for k, label in names.items()}
    several = len({e["dataset"] for e in cost}) > 1
    key = [(f"{e['dataset']} / " if several else "") + by_key.get(
        (e["dataset"], e["system"], tuple(e["models"].items()), e.get("run")), e["system"])
        for e in cost]
    reasons = [not_placed(e) for e in cost]
    rows = -(-len(key) // KEY_COLUMNS)
    fig = plt.figure(figsize=(10, 4 + KEY_ROW_IN * rows))
    grid = fig.add_gridspec(2, 2, height_ratios=(4, KEY_ROW_IN * rows))
    axes = [fig.add_subplot(grid[0, 0])]
    axes.append(fig.add_subplot(grid[0, 1], sharey=axes[0]))
    fronts = list(dict.fromkeys((e["dataset"], e["models"].get("judge")) for e in cost))
    several_judges = len(fronts) > len({dataset for dataset, _ in fronts})
    # batch calls are priced at the batch rate (harness/reporting/prices.py): say so on the axis
    dollars = "cost (USD, judge excluded" + (
        ", batch calls at the batch rate)" if any(e.get("batch_calls") for e in cost) else ")")
    for ax, axis, label in ((axes[0], "input_tokens", "input tokens"),
                            (axes[1], "cost_usd", dollars)):
        points = [e for e in cost if e["score"] is not None and e[axis] is not None]
        free = axis == "cost_usd" and len(points) > 1 and not any(e[axis] for e in points)
        if free:  # every number on one spot at $0 says nothing: the panel says so instead
            points = []
        for dataset, judge in fronts:
            mine = [e for e in points
                    if (e["dataset"], e["models"].get("judge")) == (dataset, judge)]
            if not mine:
                continue
            front = sorted((e for e in mine if e[f"pareto_{axis}"]), key=lambda e: e[axis])
            line, = ax.plot([e[axis] for e in front], [e["score"] for e in front], "-",
                            label=f"{dataset}" + (f", judge {judge}" if several_judges else "")
                            + " front")
            for e in mine:
                ax.plot(e[axis], e["score"], "o", color=line.get_color(),
                        fillstyle="full" if e[f"pareto_{axis}"] else "none")
        if points:
            ax.legend(fontsize=7)
            _number_points(ax, [(cost.index(e) + 1, e[axis], e["score"]) for e in points])
        else:
            ax.text(0.5, 0.5, FREE if free else no_points(cost), ha="center", va="center",
                    transform=ax.transAxes, fontsize=8, wrap=True)
        ax.set_xlabel(label)
        ax.set_title(f"Quality against {label.split(' (')[0]}", fontsize=10)
    axes[0].set_ylabel("mean truthfulness + relevance")
    _key(fig.add_subplot(grid[1, :]), key, reasons)
    return fig


def _number_points(ax: Any, points: list[tuple[int, float, float]]) -> None:
    """Each point's number beside it, where it covers no other number (place_labels)."""
    ax.figure.canvas.draw()  # the axes' limits are final: data maps to pixels
    pixels = [tuple(ax.transData.transform((x, y))) for _, x, y in points]
    size = ax.figure.dpi / 72 * LABEL_PT
    boxes = [(len(str(n)) * size * 0.62, size * 1.2) for n, _, _ in points]
    for (n, x, y), offset in zip(points, place_labels(pixels, boxes)):
        ax.annotate(str(n), (x, y), xytext=(offset[0] * 72 / ax.figure.dpi,
                                            offset[1] * 72 / ax.figure.dpi),
                    textcoords="offset points", fontsize=LABEL_PT, ha="center", va="center")


def _key(ax: Any, names: list[str], reasons: list[str]) -> None:
    """The points' numbers and names, KEY_COLUMNS to a row, in the order of the rows; a name
    is cut to leave its reason for having no point whole."""
    ax.axis("off")
    rows = -(-len(names) // KEY_COLUMNS)
    for n, (name, why) in enumerate(zip(names, reasons)):
        column, row = divmod(n, rows)
        shown = f"{shorten(name, KEY_WIDTH - len(why) - 3)} ({why})" if why else shorten(name)
        ax.text(column / KEY_COLUMNS, 1 - (row + 0.5) / rows, f"{n + 1}  {shown}",
                fontsize=LABEL_PT, va="center", transform=ax.transAxes)


def _histogram(ax: Any, scores: list[float], title: str, n: int) -> None:
    counts = [scores.count(b) for b in BINS]
    ax.bar(BINS, counts, width=0.8, color="#4c72b0")
    if scores:
        mean = sum(scores) / len(scores)
        ax.axvline(mean, color="#c44e52", linestyle="--", label=f"mean {mean:.2f}")
        ax.legend(loc="upper right", fontsize=8)
    unscored = n - len(scores)
    ax.set_title(title + (f" ({unscored} unscored)" if unscored else ""), fontsize=9)
    ax.set_xticks(BINS)
    integer_counts(ax.yaxis)
    ax.set_xlabel("truthfulness + relevance")
    ax.set_ylabel("answers")


def _side_by_side(groups: Groups, names: dict[Identity, str], path: Path) -> Path:
    """Every identity's histogram, GRID_COLUMNS to a row, on one scale of answers; identities
    whose histograms are identical (`alike`) share one panel that names them all."""
    panels = alike(groups)
    columns = min(GRID_COLUMNS, len(panels))
    rows = -(-len(panels) // columns)
    titles = [panel_title(keys, names) for keys in panels]
    lines = max(title.count("\n") + 1 for title in titles)  # room for the longest title
    fig, axes = plt.subplots(rows, columns, figsize=(3.8 * columns, (3.0 + 0.15 * lines) * rows),
                             sharey=True, squeeze=False)
    cells = [ax for line in axes for ax in line]
    for ax, keys, title in zip(cells, panels, titles):
        _histogram(ax, combined_scores(groups[keys[0]]), title, len(groups[keys[0]]))
    for ax in cells[len(panels):]:
        ax.axis("off")
    return save(fig, path)


_KINDS: tuple[tuple[Literal["input", "output"], str], ...] = (("input", ""), ("output", "//"))


def role_colour(role: str) -> str:
    return ROLE_COLOURS.get(role, OTHER_ROLE)


def integer_counts(axis: Any) -> None:
    """Ticks at whole numbers only on `axis` (an Axes' xaxis or yaxis): answers and grades
    come whole, and three answers must not be drawn with quarter-answer ticks."""
    axis.set_major_locator(MaxNLocator(integer=True))


def _token_chart(groups: Groups, names: dict[Identity, str], path: Path) -> Path:
    return save(token_chart(groups, names), path)


def token_chart(groups: Groups, names: dict[Identity, str]) -> Any:
    """Input and output tokens by role of the answered pairs, then one segment (grey, crossed)
    for everything the failed pairs spent, all roles together; a system whose tokens are
    unknown gets a placeholder instead (module docstring). The figure, not yet saved."""
    ticks = [f"{key.dataset}\n{wrap(names[key])}" for key in groups]
    bars = list(range(len(ticks)))  # positions, not names: equal names must not share a bar
    unknown = [tokens_unknown(group) for group in groups.values()]
    answered = [[] if gone else [row for row in group if row.status == "ok"]
                for gone, group in zip(unknown, groups.values())]
    roles = sorted({role for rows in answered for row in rows for role in row.usage})
    fig, ax = plt.subplots(figsize=(max(5, 1.4 * len(bars) + 2), 4))
    bottoms = [0] * len(bars)
    for role in roles:
        for kind, hatch in _KINDS:
            heights = [sum(role_tokens(row, role, kind) for row in rows) for rows in answered]
            ax.bar(bars, heights, bottom=bottoms, label=f"{role} {kind}", hatch=hatch,
                   color=role_colour(role), edgecolor="white")
            bottoms = [b + h for b, h in zip(bottoms, heights)]
    failed = [0 if gone else sum(u.input + u.output for row in group
                                 if row.status == "failed" for u in row.usage.values())
              for gone, group in zip(unknown, groups.values())]
    if any(failed):
        ax.bar(bars, failed, bottom=bottoms, label="failed pairs (all roles)",
               color=FAILED_COLOUR, hatch="xx")
    if any(unknown):
        _unknown_bars(ax, [bar for bar, gone in zip(bars, unknown) if gone],
                      max([b + f for b, f in zip(bottoms, failed)] + [1]))
    ax.set_ylabel("tokens")
    ax.set_title("Tokens by system and role", fontsize=10)
    ax.set_xticks(bars, ticks, fontsize=7)
    if roles or any(failed) or any(unknown):
        ax.legend(fontsize=7, bbox_to_anchor=(1.01, 1), loc="upper left")
    return fig


def _unknown_bars(ax: Any, bars: list[int], height: float) -> None:
    """An empty hatched bar as tall as the tallest known one, labelled UNKNOWN: no part of an
    unknown total (its judge's tokens alone) is drawn as if it were the whole."""
    drawn = ax.bar(bars, [height] * len(bars), fill=False, hatch="..", edgecolor=OTHER_ROLE,
                   linestyle="--", label=UNKNOWN)
    for patch in drawn:
        patch.set_gid(UNKNOWN)
    for bar in bars:
        ax.text(bar, height / 2, UNKNOWN, rotation=90, ha="center", va="center", fontsize=8,
                color="#444444")


def save(fig: Any, path: Path) -> Path:
    """Lay the figure out, write it whole to `path` and close it."""
    fig.tight_layout()
    write_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


