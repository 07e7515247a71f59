"""The analysis on rows built by hand, where the right answer can be worked out on paper."""

import json
import statistics

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import JsonlWriter
from freshrag.reporting import analysis, needed
from freshrag.reporting.answers import Answers
from tests.support.rows import analysis_row as row
from tests.support.rows import summaries, summary


def test_retrieval_quality_from_the_ranks_of_the_gold_article():
    rows = [row("q1", "naive", retrieved=["Gold", "X", "Y"]),
            row("q2", "naive", retrieved=["X", "Y", "Gold"]),
            row("q3", "naive", retrieved=["X", "Y", "Z"]),
            row("q4", "baseline")]
    (quality,) = analysis.retrieval_quality(Answers(summaries(rows)))
    assert (quality["system"], quality["retrieved"], quality["k"]) == ("naive", 3, 3)
    assert quality["hit@1"] == pytest.approx(1 / 3, abs=1e-4)
    assert quality["hit@k"] == pytest.approx(2 / 3, abs=1e-4)
    assert quality["mrr"] == pytest.approx((1 + 1 / 3 + 0) / 3, abs=1e-4)


def test_every_answer_gets_one_attribution():
    rows = [row("q1", "naive", 5, 4, retrieved=["Gold"]),          # fine
            row("q2", "naive", 2, 2, retrieved=["Other"]),         # retrieval missed the gold
            row("q3", "naive", 2, 3, retrieved=["Other", "Gold"]),  # gold there, answer poor
            row("q4", "baseline", 1, 2),                            # no retrieval, poor
            row("q5", "oracle", 2, 2),                              # had the article, poor
            row("q6", "baseline", None)]                            # unscored
    assert [analysis.attribution(summary(r)) for r in rows] == [
        "fine", "retrieval_miss", "generation", "knowledge_gap", "generation", "unscored"]
    counts = {(t["system"]): t for t in analysis.attributions(Answers(summaries(rows)))}
    assert counts["naive"]["retrieval_miss"] == counts["naive"]["generation"] == 1
    assert sum(counts["baseline"][name] for name in analysis.ATTRIBUTIONS) == 2


def test_decisions_are_judged_against_need_and_the_oracle_router_takes_the_better_run():
    base_scores = {"q1": (1, 1), "q2": (5, 5), "q3": (2, 3), "q4": (4, 4)}
    naive_scores = {"q1": (5, 5), "q2": (4, 5), "q3": (5, 4), "q4": (4, 4)}
    rows = [row(q, "baseline", *s, tokens=(50, 5)) for q, s in base_scores.items()]
    rows += [row(q, "naive", *s, retrieved=["Gold"], tokens=(500, 5)) for q, s in naive_scores.items()]
    # boolean retrieves on q1 (needed) and q2 (not needed), not on q3 (needed) nor q4
    rows += [row("q1", "boolean", retrieved=["Gold"], decision="retrieve"),
             row("q2", "boolean", retrieved=["Gold"], decision="retrieve"),
             row("q3", "boolean", decision="no-retrieve"), row("q4", "boolean", decision="none")]
    router, boolean = needed.decision_quality(Answers(summaries(rows)))
    wanted = [q for q in base_scores if sum(naive_scores[q]) > sum(base_scores[q])]
    assert wanted == ["q1", "q3"]
    assert (router["system"], router["questions"], router["needed"]) == ("oracle-router", 4, 2)
    chosen = [naive_scores[q] if q in wanted else base_scores[q] for q in base_scores]
    assert router["truthfulness"] == pytest.approx(statistics.mean(c[0] for c in chosen))
    assert router["relevance"] == pytest.approx(statistics.mean(c[1] for c in chosen))
    assert router["input_tokens"] == 500 * 2 + 50 * 2  # judge tokens never counted
    assert router["retrievals"] == 2
    assert (boolean["true_positive"], boolean["false_positive"], boolean["false_negative"],
            boolean["true_negative"]) == (1, 1, 1, 1)
    assert boolean["precision"] == boolean["recall"] == 0.5


def test_a_dataset_without_both_reference_runs_has_no_decision_analysis():
    rows = [row("q1", "baseline"), row("q1", "boolean", decision="retrieve", retrieved=["Gold"])]
    assert needed.decision_quality(Answers(summaries(rows))) == []


def test_bootstrap_intervals_hold_the_estimate_and_shrink_with_more_data():
    small = [1, 5, 3, 4, 2, 5, 1, 4]
    low, high = analysis.bootstrap_interval(small, statistics.mean)
    assert low < statistics.mean(small) < high
    large_low, large_high = analysis.bootstrap_interval(small * 25, statistics.mean)
    assert large_high - large_low < (high - low) / 2
    assert analysis.bootstrap_interval(small, statistics.mean, seed=3) == \
        analysis.bootstrap_interval(small, statistics.mean, seed=3)
    assert analysis.bootstrap_interval([4, 4, 4], statistics.mean) == (4, 4)


def test_intervals_cover_means_and_token_totals():
    rows = [row(f"q{i}", "naive", truth=1 + i % 5, rel=5, tokens=(100 + i, 10))
            for i in range(40)]
    (entry,) = analysis.intervals(Answers(summaries(rows)))
    mean, low, high = entry["truthfulness"]
    assert mean == pytest.approx(statistics.mean(1 + i % 5 for i in range(40)))
    assert low < mean < high
    total, low, high = entry["input_tokens"]
    assert total == sum(100 + i for i in range(40)) and low < total < high
    assert entry["relevance"] == [5, 5, 5]


def test_paired_comparison_tells_a_real_difference_from_none():
    rows = [row(f"q{i}", "baseline", truth=1 + i % 3, rel=2) for i in range(60)]
    rows += [row(f"q{i}", "naive", truth=4 + i % 2, rel=5, retrieved=["Gold"]) for i in range(60)]
    rows += [row(f"q{i}", "same", truth=1 + i % 3, rel=2) for i in range(60)]
    pairs = {(p["a"], p["b"]): p for p in analysis.paired_comparisons(Answers(summaries(rows)))}
    real = pairs["baseline", "naive"]
    assert real["questions"] == 60 and real["mean_difference"] < 0
    assert real["interval"][1] < 0 and real["p_value"] < 0.01
    none = pairs["baseline", "same"]  # every question the same: no variance, no test
    assert none["mean_difference"] == 0 and none["p_value"] is None
    assert none["untested"] == "no variance"


def test_report_writes_the_analysis_and_prints_its_tables(tmp_path, capsys):
    writer = JsonlWriter(tmp_path / "samples.jsonl")
    for q in range(6):
        writer.write(row(f"q{q}", "baseline", truth=2, rel=2))
        writer.write(row(f"q{q}", "naive", truth=5, rel=5, retrieved=["Gold" if q else "X"]))
        writer.write(row(f"q{q}", "boolean", decision="retrieve" if q % 2 else "no-retrieve",
                         retrieved=["Gold"] if q % 2 else None))
    writer.close()
    assert main(["report", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    saved = json.loads((tmp_path / "analysis.json").read_text())
    assert saved.pop("judge")["degenerate"] == {}  # 2s for baseline, 5s for naive: not one value
    assert saved == json.loads(json.dumps(analysis.analyse(summaries(
        [json.loads(line) for line in (tmp_path / "samples.jsonl").read_text().splitlines()]))))
    for heading in ("bootstrap intervals", "Retrieval: gold article", "Failure attribution",
                    "decisions against need", "Paired comparisons"):
        assert heading in printed
    assert "| A_f | oracle-router | 6 | 6 |" in printed
