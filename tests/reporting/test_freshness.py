"""What the report says about how much of the set the answer model knows without retrieval
(harness/reporting/freshness.py): counted over the baseline's graded answers only, per run
identity, with the share's 95% Wilson interval; no line without a graded baseline; and the line
in every output of `freshrag report`."""

from __future__ import annotations

import html
import json
import math

import pytest

from freshrag.cli.main import main
from freshrag.reporting import report, summary_table
from freshrag.reporting.freshness import NOTE, known_lines, known_without_retrieval
from tests.support.rows import summaries
from tests.support.runs import sample, write_run

Z = 1.959963984540054  # the normal quantile of a two-sided 95% interval


def wilson(k: int, n: int) -> tuple[float, float]:
    """The Wilson score interval, from its textbook formula."""
    p = k / n
    centre = (2 * n * p + Z ** 2) / (2 * (n + Z ** 2))
    half = Z * math.sqrt(Z ** 2 + 4 * n * p * (1 - p)) / (2 * (n + Z ** 2))
    return centre - half, centre + half


TRUTHS = [1, 2, 3, 4, 5, 5, 4]  # the baseline's graded answers


def baseline_rows(answer: str = "model-a", prefix: str = "q") -> list[dict]:
    """TRUTHS graded, one unscored and one failed answer, beside naive's, all known."""
    rows = [sample(f"{prefix}{i}", "baseline", truth, answer=answer)
            for i, truth in enumerate(TRUTHS)]
    rows.append(sample(f"{prefix}u", "baseline", None, answer=answer))
    rows.append(sample(f"{prefix}f", "baseline", status="failed", answer=answer))
    return rows + [sample(f"{prefix}{i}", "naive", 5, answer=answer) for i in range(len(TRUTHS))]


def test_the_known_share_counts_the_baselines_graded_answers_at_4_or_more():
    [row] = known_without_retrieval(summaries(baseline_rows()))
    known = sum(truth >= 4 for truth in TRUTHS)
    assert (row["system"], row["questions"], row["known"], row["ungraded"]) == \
        ("baseline", len(TRUTHS), known, 2)
    share, low, high = row["share"]
    assert share == pytest.approx(known / len(TRUTHS), abs=1e-4)
    assert (low, high) == pytest.approx(wilson(known, len(TRUTHS)), abs=1e-4)
    assert row["models"]["answer"] == "model-a" and row["known_at"] == 4


@pytest.mark.parametrize("known", [0, 3])
def test_the_interval_stays_inside_0_and_1_at_the_ends(known):
    rows = [sample(f"q{i}", "baseline", 5 if i < known else 1) for i in range(known or 3)]
    [row] = known_without_retrieval(summaries(rows))
    share, low, high = row["share"]
    assert 0 <= low <= share <= high <= 1 and high - low > 0.3  # 3 answers say little
    assert (low, high) == pytest.approx(wilson(known, len(rows)), abs=1e-4)


def test_each_run_of_another_answer_model_is_counted_apart():
    rows = [{**row, "run": "results/a"} for row in baseline_rows("model-a")] + [
        {**sample(f"q{i}", "baseline", 5, answer="model-b"), "run": "results/b"}
        for i in range(3)]
    table = {row["models"]["answer"]: row for row in known_without_retrieval(summaries(rows))}
    assert (table["model-a"]["known"], table["model-a"]["questions"]) == \
        (sum(truth >= 4 for truth in TRUTHS), len(TRUTHS))
    assert (table["model-b"]["known"], table["model-b"]["questions"]) == (3, 3)
    lines = known_lines(list(table.values()))
    assert [line.split(": ")[1].split()[0] for line in lines[:2]] == ["model-a", "model-b"]
    assert "baseline [answer: model-a]" in lines[0] and lines[-1] == NOTE


@pytest.mark.parametrize("rows", [
    pytest.param([sample("q1", "naive", 5), sample("q2", "oracle", 5)], id="no-baseline"),
    pytest.param([sample("q1", "baseline", None), sample("q2", "baseline", status="failed")],
                 id="no-graded-baseline"),
])
def test_without_a_graded_baseline_there_is_no_line(rows):
    assert known_without_retrieval(summaries(rows)) == [] and known_lines([]) == []
    summary = summary_table.summarise(summaries(rows))
    assert "Known without retrieval" not in report.render(summary, "markdown", known=[])
    assert "known" not in json.loads(report.render(summary, "json", known=[]))


def test_every_output_of_the_report_says_it(tmp_path, capsys):
    write_run(tmp_path / "run", baseline_rows())
    page = tmp_path / "report.html"
    assert main(["report", str(tmp_path / "run"), "--html", str(page)]) == 0
    printed = capsys.readouterr().out
    [line] = [text for text in printed.splitlines() if text.startswith("Known without")]
    known = sum(truth >= 4 for truth in TRUTHS)
    assert f"model-a answers {known} of {len(TRUTHS)} graded questions of A_f" in line
    share = known / len(TRUTHS)
    assert f"{share:.1%} [" in line and "2 ungraded left out" in line
    assert NOTE in printed and printed.index(line) < printed.index("the whole table")
    assert line in (tmp_path / "run" / "summary.md").read_text()
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert [row["known"] for row in summary["known"]] == [known]
    assert line in html.unescape(page.read_text()) and NOTE in html.unescape(page.read_text())
