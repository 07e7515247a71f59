"""What the report's figures show, apart from drawing it (harness/reporting/render/plots.py draws;
docs/reports.md#figures): the scores a histogram counts and which identities' histograms are
identical, so that they share one panel; each histogram's file name; the labels as wrapped on
an axis and cut in a key; why a system has no point in the Pareto plot; and where each point's
number goes, clear of the others.

A histogram is `hist-DATASET-LABEL.png` (both slugged); when two identities would get one name
(`a/b` and `a_b`, or names differing only in case), each of them gets the first 8 hex digits of a
SHA-1 of its full identity appended, so no figure overwrites another. A system that did not
report its tokens (a service, an answers file: unknown, never 0) is "tokens unknown", never
drawn as 0.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
from collections import Counter
from typing import Any, Iterable, Literal

from freshrag.core.summary import AnswerSummary
from freshrag.reporting.identity import Identity
from freshrag.reporting.outcomes import total_score, unreported

# characters of one entry of the key: a third of the figure's width at plots.LABEL_PT
KEY_WIDTH = 56
MARKER_PX = 10  # a plotted point's marker (6 pt at the figures' 110 dpi), kept clear of labels
UNKNOWN = "tokens unknown"
Groups = dict[Identity, list[AnswerSummary]]


def combined_scores(rows: list[AnswerSummary]) -> list[float]:
    return [score for row in rows if (score := total_score(row)) is not None]


def alike(groups: Groups) -> list[list[Identity]]:
    """The identities in the rows' order, those with identical histograms together (the same
    dataset, answers and scores, so the same bars, mean and unscored count): each list is one
    panel of the side-by-side figure."""
    panels: dict[tuple[Any, ...], list[Identity]] = {}
    for key, group in groups.items():
        shape = (key.dataset, len(group), tuple(sorted(combined_scores(group))))
        panels.setdefault(shape, []).append(key)
    return list(panels.values())


def panel_title(keys: list[Identity], names: dict[Identity, str]) -> str:
    if len(keys) == 1:
        return f"{keys[0].dataset} / {wrap(names[keys[0]])}"
    shared = ", ".join(names[key] for key in keys)
    return (f"{keys[0].dataset} / {len(keys)} identical histograms:\n"
            + textwrap.fill(shared, 48))


def figure_names(keys: Iterable[Identity], names: dict[Identity, str]) -> dict[Identity, str]:
    """A histogram file name per identity, unique even on a case-blind disk (module docstring)."""
    plain = {key: f"hist-{slug(key.dataset)}-{slug(names[key])}" for key in keys}
    taken = Counter(name.lower() for name in plain.values())
    return {key: (f"{name}-{_digest(key)}" if taken[name.lower()] > 1 else name) + ".png"
            for key, name in plain.items()}


def _digest(key: Identity) -> str:
    full = repr((key.dataset, key.system, key.models, key.run))
    return hashlib.sha1(full.encode()).hexdigest()[:8]


def slug(text: Any) -> str:
    """Text as a file name part: runs of anything but letters, digits, `_.-` become `_`."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text)).strip("_") or "x"


def wrap(label: str, width: int = 22) -> str:
    """A long label on several lines: the system, then what tells it apart, wrapped."""
    system, bracket, rest = label.partition(" [")
    return system + ("\n" + textwrap.fill(bracket.strip() + rest, width) if bracket else "")


def tokens_unknown(rows: list[AnswerSummary]) -> bool:
    """Whether a system outside freshrag left its tokens unreported for an answered row."""
    return unreported(rows, "input_tokens") or unreported(rows, "output_tokens")


def role_tokens(row: AnswerSummary, role: str, kind: Literal["input", "output"]) -> int:
    counts = row.usage.get(role)
    return 0 if counts is None else counts.input if kind == "input" else counts.output


def not_placed(entry: dict[str, Any]) -> str:
    """Why a row of the cost table has no point in the Pareto plot ("" when it has both): its
    tokens unknown (never drawn as 0), no scored answer, or no price (on the right only)."""
    if entry["score"] is None:
        return "no scored answers: not placed"
    if entry["input_tokens"] is None:
        return f"{UNKNOWN}: not placed"
    if entry["cost_usd"] is None:
        return "no price: not placed on the right"
    return ""


def no_points(cost: list[dict[str, Any]]) -> str:
    if all(e["score"] is None for e in cost):
        return "no scored answers"
    if all(e["input_tokens"] is None for e in cost if e["score"] is not None):
        return f"{UNKNOWN} for every scored system: none placed"
    missing = sorted({m for e in cost for m in e["unpriced_models"]})
    return "no prices for: " + (", ".join(missing) or "these models")


def shorten(name: str, width: int = KEY_WIDTH) -> str:
    width = max(width, 12)
    return name if len(name) <= width else name[:width - 1] + "…"


def place_labels(points: list[tuple[float, float]], boxes: list[tuple[float, float]],
                 marker: float = MARKER_PX) -> list[tuple[float, float]]:
    """An offset (pixels) from each point for its label box (width, height, centred on point +
    offset) such that no two boxes overlap and none covers a marker (a square of `marker`
    pixels on each point): the first of the candidate positions around the point, nearest
    first, that is clear of the markers and the boxes placed (the farthest tried, if none is)."""
    half = marker / 2
    markers = [(x - half, y - half, x + half, y + half) for x, y in points]
    placed: list[tuple[float, float, float, float]] = []
    offsets = []
    for (x, y), (w, h) in zip(points, boxes):
        for dx, dy in _candidates(w / 2 + half, h / 2 + half):
            box = (x + dx - w / 2, y + dy - h / 2, x + dx + w / 2, y + dy + h / 2)
            if not any(_overlap(box, other) for other in placed + markers):
                break
        placed.append(box)
        offsets.append((dx, dy))
    return offsets


def _candidates(rx: float, ry: float) -> Iterable[tuple[float, float]]:
    """Positions around a point, ring by ring: right, above, left, below, then the diagonals."""
    for ring in range(40):
        x, y = rx + 1 + 3 * ring, ry + 1 + 3 * ring
        yield from ((x, 0), (0, y), (-x, 0), (0, -y), (x, y), (-x, y), (-x, -y), (x, -y))


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]
