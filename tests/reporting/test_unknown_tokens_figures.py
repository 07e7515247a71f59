"""Unknown stays unknown in the figures (docs/reports.md#figures), checked by what the figures
drew, not by their pixels: a system whose tokens are unknown has no partial bar in the
tokens-by-role chart but a placeholder marked "tokens unknown", and the Pareto plot's key says it
was not placed; an answers file's latency is unknown, never the replay's 0.00; every role keeps
its colour across figures; counts of answers have whole-number ticks; deciders.png, which the ROC
table names, is written whenever that table has rows."""

from __future__ import annotations

import json

import matplotlib.colors as mcolors
import pytest

from freshrag.cli.main import main
from freshrag.core.dataset import example_dir
from freshrag.core.samples import read_samples
from freshrag.reporting.analysis import analyse
from freshrag.reporting.identity import group_rows, labels
from freshrag.reporting.render import figure_data, plots, traffic_plots
from freshrag.reporting.table import TABLES
from tests.support.rows import summaries
from tests.support.runs import sample

ANSWERS = '{"question": %s, "answer": "Some answer."}\n'  # matched by the question's text


def _texts(fig) -> list[str]:
    return [text.get_text() for ax in fig.axes for text in ax.texts] + [
        text.get_text() for text in fig.texts]


def _bars(fig) -> list:
    """The rectangles bar() drew (the axes' background patch is not one)."""
    [ax] = [ax for ax in fig.axes if ax.containers]
    return [patch for container in ax.containers for patch in container]


@pytest.fixture
def mixed_run(tmp_path, fake):
    """baseline, and an answers file that reports neither tokens nor latency, on three
    questions of the example dataset, through `freshrag run`."""
    texts = [json.loads(line)["question"] for line in
             (example_dir() / "questions.jsonl").read_text(encoding="utf-8").splitlines()[:3]]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(ANSWERS % json.dumps(text) for text in texts), encoding="utf-8")
    run = tmp_path / "run"
    assert main(["run", "--dataset", str(example_dir()), "--systems",
                 f"baseline,theirs={answers}", "--limit", "3", "--no-probe", "--out",
                 str(run)]) == 0
    return run


def test_an_answers_files_latency_is_unknown_and_left_out_of_the_latency_table(mixed_run):
    rows = read_samples(mixed_run / "samples.jsonl")
    theirs = [row for row in rows if row["system"] == "theirs"]
    assert len(theirs) == 3 and all(row["status"] == "ok" for row in theirs)
    assert all(row["answer_latency_s"] is None for row in theirs)
    assert all(row["answer_latency_s"] is not None for row in rows if row["system"] == "baseline")
    latency = {entry["system"] for entry in analyse(summaries(rows))["latency"]}
    assert latency == {"baseline"}


def test_the_token_chart_marks_unknown_tokens_instead_of_a_partial_bar(mixed_run):
    rows = read_samples(mixed_run / "samples.jsonl")
    assert all(row["usage"].get("judge") for row in rows)  # the judge's tokens are known
    groups = group_rows(summaries(rows))
    position = {key.system: i for i, key in enumerate(groups)}
    fig = plots.token_chart(groups, labels(groups))
    bars = _bars(fig)
    at = {system: [p for p in bars if abs(p.get_x() + p.get_width() / 2 - i) < 1e-9]
          for system, i in position.items()}
    known = [p for p in at["theirs"] if p.get_gid() != figure_data.UNKNOWN]
    assert sum(p.get_height() for p in known) == 0  # not the judge's tokens alone
    [placeholder] = [p for p in at["theirs"] if p.get_gid() == figure_data.UNKNOWN]
    assert placeholder.get_height() > 0 and not placeholder.get_fill()
    assert figure_data.UNKNOWN in _texts(fig)
    assert sum(p.get_height() for p in at["baseline"]) == sum(
        u["input"] + u["output"] for row in rows if row["system"] == "baseline"
        for u in row["usage"].values())
    assert all(p.get_gid() != figure_data.UNKNOWN for p in at["baseline"])
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert figure_data.UNKNOWN in legend


def test_the_pareto_key_says_a_system_with_unknown_tokens_was_not_placed(mixed_run):
    rows = read_samples(mixed_run / "samples.jsonl")
    groups = group_rows(summaries(rows))
    cost = analyse(summaries(rows))["cost"]
    fig = plots.pareto_figure(cost, labels(groups))
    key = [text for text in _texts(fig) if "  " in text]
    number = {entry["system"]: n + 1 for n, entry in enumerate(cost)}
    [theirs] = [text for text in key if text.startswith(f"{number['theirs']}  ")]
    assert theirs.endswith("(tokens unknown: not placed)")
    [baseline] = [text for text in key if text.startswith(f"{number['baseline']}  ")]
    assert baseline.endswith("(no price: not placed on the right)")  # fake-model has none
    left = fig.axes[0]
    placed = [(x, y) for line in left.get_lines() for x, y in line.get_xydata()]
    assert len(placed) >= 1 and all(x == next(e for e in cost if e["system"] == "baseline")[
        "input_tokens"] for x, _ in placed)


@pytest.mark.parametrize("entry, expected", [
    pytest.param({"score": None, "input_tokens": 5, "cost_usd": 1.0},
                 "no scored answers: not placed", id="unscored"),
    pytest.param({"score": 7.0, "input_tokens": None, "cost_usd": None},
                 "tokens unknown: not placed", id="tokens-unknown"),
    pytest.param({"score": 7.0, "input_tokens": 5, "cost_usd": None},
                 "no price: not placed on the right", id="unpriced"),
    pytest.param({"score": 7.0, "input_tokens": 5, "cost_usd": 0.1}, "", id="placed"),
])
def test_why_a_row_of_the_cost_table_has_no_point(entry, expected):
    assert figure_data.not_placed(entry) == expected


def test_a_role_has_one_colour_in_every_token_chart():
    """The judge's colour does not move when a decision role comes before it."""
    plain = [sample("q1", "s")]
    deciding = [sample("q1", "d", decision="model-d")]
    colours = []
    for rows in (plain, deciding):
        groups = group_rows(summaries(rows))
        fig = plots.token_chart(groups, labels(groups))
        ax = fig.axes[0]
        colours.append({label: mcolors.to_hex(container[0].get_facecolor())
                        for label, container in zip(ax.get_legend_handles_labels()[1],
                                                    ax.containers)})
    assert colours[0]["judge input"] == colours[1]["judge input"] == plots.ROLE_COLOURS["judge"]
    assert colours[1]["decision input"] == plots.ROLE_COLOURS["decision"]


def test_histograms_count_answers_in_whole_numbers():
    rows = [sample(f"q{i}", "s", truth=3 + i) for i in range(2)]
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    plots._histogram(ax, figure_data.combined_scores(summaries(rows)), "t", len(rows))
    fig.canvas.draw()
    ticks = ax.get_yticks()
    assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks)
    plt.close(fig)


def _roc_entry(system: str, curve: bool) -> dict:
    entry = {"dataset": "d", "system": system, "questions": 4, "unavailable": 0, "needed": 2,
             "models": {}}
    if curve:
        return {**entry, "auroc": [0.75, 0.5, 1.0], "average_precision": 0.8,
                "roc": [[0, 0], [0.5, 1], [1, 1]], "pr": [[0, 1], [1, 0.5]]}
    return {**entry, "auroc": None, "average_precision": None, "roc": [], "pr": [],
            "why": "need takes one value only among the scored questions"}


def test_deciders_png_is_written_whenever_the_roc_table_has_rows(tmp_path):
    """The ROC table's heading names deciders.png: a table of deciders without a curve still
    gets the figure, naming them and why."""
    paths = traffic_plots.write({"roc": [_roc_entry("conf", False)]}, tmp_path)
    assert paths == [tmp_path / traffic_plots.DECIDERS] and paths[0].stat().st_size > 0
    fig = traffic_plots.deciders_figure([_roc_entry("conf", True), _roc_entry("self", False)])
    [note] = [text for text in fig.texts if text.get_text().startswith("No curve: ")]
    assert "d / self (need takes one value only" in note.get_text().replace("\n", " ")
    assert "conf" not in note.get_text()
    assert any("conf (AUROC 0.75)" in t.get_text() for t in fig.axes[0].get_legend().get_texts())
    assert traffic_plots.write({"roc": []}, tmp_path / "none") == []
    heading = TABLES["roc"].title
    assert f"curves in {traffic_plots.DECIDERS}" in heading
