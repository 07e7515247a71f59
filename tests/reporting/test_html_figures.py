"""The HTML report's figures at nine systems: histograms side by side in a grid, not a strip
shrunk to thumbnails, identical ones in one panel; Pareto numbers that cover neither one another
nor a point, and none stacked at $0; identities in the order of the rows given
(harness/reporting/render/plots.py, figure_data.py)."""

from __future__ import annotations

import contextlib
import io
import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from freshrag.cli.main import main
from freshrag.reporting.identity import group_rows
from freshrag.reporting.render import figure_data, html, plots
from tests.support.dom import browser
from tests.support.rows import summaries
from tests.support.runs import _row, write_run

SYSTEMS = ("self-check", "naive", "baseline", "boolean", "advanced", "hyde", "oracle",
           "confidence", "router")  # deliberately not alphabetical: the rows' order is kept
PANEL_PX = 350  # the narrowest histogram panel still legible


def nine_rows() -> list[dict[str, Any]]:
    pick = random.Random(7)
    return [_row("A_f", f"q{q}", system, pick.randint(1, 5), pick.randint(1, 5),
                 tokens=(100 + 7 * n, 10))
            for q in range(12) for n, system in enumerate(SYSTEMS)]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    run_dir = write_run(tmp_path_factory.mktemp("nine"), nine_rows())
    made: list[Path] = []
    real = plots.write_figures

    def recording(*args: Any, **kwargs: Any) -> list[Path]:
        made.extend(real(*args, **kwargs))
        return made

    with pytest.MonkeyPatch.context() as mp, contextlib.redirect_stdout(io.StringIO()):
        mp.setattr(plots, "write_figures", recording)
        assert main(["report", str(run_dir), "--html", str(run_dir / "report.html")]) == 0
    return {"dir": run_dir, "figures": made}


def size(path: Path) -> tuple[int, int]:
    png = path.read_bytes()
    return html.png_width(png), int.from_bytes(png[20:24], "big")


def test_nine_histograms_side_by_side_are_a_grid_of_legible_panels(report):
    width, height = size(report["dir"] / "hist-comparison.png")
    columns = plots.GRID_COLUMNS
    assert width <= 1400 and width / columns >= PANEL_PX, (width, height)
    assert height / 3 >= PANEL_PX * 0.8  # three rows of three, not one strip


def test_figures_follow_the_rows_order(report):
    histograms = [p.name for p in report["figures"] if p.name.startswith("hist-A_f-")]
    assert histograms == [f"hist-A_f-{system}.png" for system in SYSTEMS]


@pytest.mark.parametrize("points", [
    pytest.param([(100.0, 100.0)] * 9, id="nine-on-one-spot"),
    pytest.param([(100.0 + 4 * n, 100.0 + 2 * n) for n in range(9)], id="nine-in-a-tight-line"),
    pytest.param([(100.0 + 40 * (n % 3), 100.0 + 12 * (n // 3)) for n in range(9)],
                 id="a-grid-closer-than-a-label"),
])
def test_pareto_numbers_cover_neither_one_another_nor_a_point(points):
    boxes = [(6.5 * len(str(n + 1)), 13.0) for n in range(len(points))]
    offsets = figure_data.place_labels(points, boxes)
    placed = [(x + dx - w / 2, y + dy - h / 2, x + dx + w / 2, y + dy + h / 2)
              for (x, y), (dx, dy), (w, h) in zip(points, offsets, boxes)]
    half = figure_data.MARKER_PX / 2
    markers = [(x - half, y - half, x + half, y + half) for x, y in points]
    for a, b in itertools.combinations(placed, 2):
        assert not overlap(a, b), (a, b)
    for box, marker in itertools.product(placed, markers):
        assert not overlap(box, marker), (box, marker)
    assert max(abs(d) for offset in offsets for d in offset) < 120  # still beside its point


def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.integration
def test_chromium_shows_the_wide_figures_at_their_own_size(report):
    """At 1400 px, a figure wider than a grid cell takes a row and is not scaled down much."""
    with browser() as chromium:
        tab = chromium.new_page(viewport={"width": 1400, "height": 900})
        tab.goto((report["dir"] / "report.html").as_uri())
        shown = tab.eval_on_selector_all(
            "figure img", "imgs => imgs.map(i => [i.alt, i.clientWidth, i.naturalWidth])")
    assert len(shown) == len(report["figures"])
    for name, width, natural in shown:
        assert natural > 0 and width >= min(natural, 1300) * 0.9, (name, width, natural)


def test_identical_histograms_share_one_panel_that_names_them(tmp_path):
    rows = summaries([_row("A_f", f"q{q}", system, 4, 4) for q in range(2) for system in SYSTEMS]
                     + [_row("A_f", f"q{q}", "other", 2, 3) for q in range(2)])
    assert [[key.system for key in keys] for keys in figure_data.alike(group_rows(rows))] == [
        list(SYSTEMS), ["other"]]
    plots.write_figures(rows, tmp_path)
    width, height = size(tmp_path / "hist-comparison.png")
    # two panels in one row, not ten in a grid of four rows
    assert width < 2.5 * 3.8 * 110 and height < 1.5 * 3.8 * 110, (width, height)


def test_a_free_model_s_dollars_panel_says_so_instead_of_stacking_numbers():
    cost = [{"dataset": "A_f", "system": system, "models": {"answer": "m", "judge": "j"},
             "score": 6.0 + n / 10, "input_tokens": 100 + 10 * n, "cost_usd": 0.0,
             "pareto_input_tokens": n == 8, "pareto_cost_usd": n == 8, "unpriced_models": []}
            for n, system in enumerate(SYSTEMS)]
    fig = plots.pareto_figure(cost, {})
    tokens, dollars = fig.axes[0], fig.axes[1]
    assert len(tokens.texts) == len(SYSTEMS)  # a number per point where they spread out
    assert [text.get_text() for text in dollars.texts] == [plots.FREE]
