"""The scorers in reports (harness/reporting/scorers.py) on run directories written by hand: the
CRAG outcome of each answer and the rates worked out as arithmetic here, unscored and
not-applicable scores counted and never averaged in, the scorers' own tokens, Spearman between
scorers, the failure attribution by faithfulness and context relevance, and the HTML page as
headless Chromium renders it."""

import json

import pytest

from freshrag.cli.main import main
from freshrag.core.jsonl import JsonlWriter
from freshrag.reporting import analysis, scorers
from freshrag.reporting.answers import Answers
from freshrag.reporting.loading import load_runs
from freshrag.scoring.store import SCORES, answer_sha256
from tests.support.dom import chromium, dump_dom, parse, viewer_samples
from tests.support.rows import summaries, summary
from tests.support.runs import sample, write_run


def score(question, system, scorer, status="scored", metrics=None, tokens=(50, 5),
          answer="an answer", repeat=0, dataset="A_f"):
    return {"dataset": dataset, "question_id": question, "system": system,
            "answer_sha256": answer_sha256(answer), "scorer": scorer, "repeat": repeat,
            "status": status, "metrics": metrics or {}, "details": {},
            "reason": None if status == "scored" else f"{status} here", "raw": [],
            "usage": {"scorer": {"input": tokens[0], "output": tokens[1], "estimated": False}}
            if status in ("scored", "unscored") else {}, "calls": [], "latency_s": 0.1,
            "finished_at": None}


def write_scores(run_dir, rows):
    writer = JsonlWriter(run_dir / SCORES)
    for row in rows:
        writer.write(row)
    writer.close()


def row_with(truth=4, abstained=None, label=None, status="scored", **extra):
    row = {**sample("q1", "naive", truth), "label": label, **extra}
    if abstained is not None or status != "scored":
        row["scores"] = {"abstention": {"status": status, "metrics": {} if status != "scored"
                                        else {"abstained": float(abstained)}}}
    return row


@pytest.mark.parametrize("row, expected", [
    pytest.param(row_with(5, abstained=False), "correct", id="answered-true"),
    pytest.param(row_with(4, abstained=False), "correct", id="at-the-threshold"),
    pytest.param(row_with(3, abstained=False), "incorrect", id="below-the-threshold"),
    pytest.param(row_with(1, abstained=True), "abstained", id="abstained"),
    pytest.param(row_with(1, abstained=True, label="unanswerable"), "correct",
                 id="unanswerable-abstained-is-correct"),
    pytest.param(row_with(5, abstained=False, label="unanswerable"), "incorrect",
                 id="unanswerable-answered-is-incorrect"),
    pytest.param(row_with(None, abstained=False), "unknown", id="judge-unscored"),
    pytest.param(row_with(5, status="unscored"), "unknown", id="abstention-unscored"),
    pytest.param(row_with(5), "unknown", id="no-abstention-score"),
])
def test_crag_outcome_of_one_answer(row, expected):
    assert scorers.outcome(summary(row)) == expected


def test_the_threshold_is_a_setting():
    assert scorers.outcome(summary(row_with(3, abstained=False)), correct_at=3) == "correct"


def make_run(tmp_path):
    rows = [sample(f"q{i}", system, truth, retrieved=system == "naive")
            for i, truth in enumerate((5, 2, 4, 1)) for system in ("baseline", "naive")]
    run = write_run(tmp_path / "run", rows, {"dataset": {"name": "A_f"}})
    scored = []
    for i, (abstained, faith, ctx) in enumerate([(0, 1.0, 0.5), (0, 0.25, 0.2), (1, None, 0.0),
                                                 (0, 0.5, 0.4)]):
        for system in ("baseline", "naive"):
            scored.append(score(f"q{i}", system, "abstention", metrics={"abstained": abstained}))
            if system == "baseline":
                scored.append(score(f"q{i}", system, "faithfulness", "not_applicable"))
        scored.append(score(f"q{i}", "naive", "context-relevance",
                            metrics={"context_relevance": ctx}))
        scored.append(score(f"q{i}", "naive", "faithfulness", "unscored", tokens=(80, 8))
                      if faith is None else score(f"q{i}", "naive", "faithfulness",
                                                  metrics={"faithfulness": faith}))
    scored.append(score("q0", "naive", "claims", metrics={"claims_recall": 1.0},
                        answer="an older answer"))  # of another answer: left out
    write_scores(run, scored)
    return run


def test_the_scorer_tables_count_and_average_as_stated(tmp_path):
    run = make_run(tmp_path)
    details = scorers.analyse(Answers(summaries(load_runs([run]))))
    faith = {r["system"]: r for r in details["scorers"] if r["metric"] == "faithfulness"}
    assert (faith["naive"]["answers"], faith["naive"]["scored"], faith["naive"]["unscored"],
            faith["naive"]["not_applicable"]) == (4, 3, 1, 0)
    assert faith["naive"]["mean"][0] == round((1.0 + 0.25 + 0.5) / 3, 4)
    assert faith["naive"]["mean"][1] <= faith["naive"]["mean"][0] <= faith["naive"]["mean"][2]
    assert faith["naive"]["input_tokens"] == 50  # the unscored one's 80 are not a scored cost
    assert "faithfulness" not in {r["metric"] for r in details["scorers"]
                                  if r["system"] == "baseline"}  # all four not applicable
    assert "claims_recall" not in {r["metric"] for r in details["scorers"]}
    crag = {r["system"]: r for r in details["crag"]}
    # naive: truth 5, 2, 4, 1 with abstained 0, 0, 1, 0 -> correct, incorrect, abstained, incorrect
    assert {k: crag["naive"][k] for k in ("correct", "abstained", "incorrect", "unknown")} == {
        "correct": 1, "abstained": 1, "incorrect": 2, "unknown": 0}
    assert (crag["naive"]["accuracy"], crag["naive"]["abstention_rate"],
            crag["naive"]["hallucination_rate"], crag["naive"]["score"]) == (0.25, 0.25, 0.5, -0.25)
    correlated = {(r["a"], r["b"]): r for r in details["scorer_correlations"]}
    pair = correlated["context-relevance.context_relevance", "run-judge.truthfulness"]
    # ranks 4, 2, 1, 3 against 4, 2, 3, 1: sum of squared differences 8, 1 - 6 * 8 / (4 * 15)
    assert pair["answers"] == 4 and pair["spearman"] == pytest.approx(0.2)


@pytest.mark.parametrize("metrics, titles_hit, expected", [
    pytest.param({"context-relevance": 0.0, "faithfulness": 1.0}, True, "retrieval_miss",
                 id="nothing-needed-in-the-context"),
    pytest.param({"context-relevance": 0.6, "faithfulness": 0.2}, False, "generation",
                 id="unfaithful-answer"),
    pytest.param({"context-relevance": 0.6, "faithfulness": 0.9}, False, "retrieval_miss",
                 id="scores-say-nothing-titles-decide"),
    pytest.param({}, True, "generation", id="no-scores-titles-decide"),
])
def test_failure_attribution_uses_the_scores_first(metrics, titles_hit, expected):
    row = sample("q1", "naive", 1, rel=1, retrieved=True)
    if not titles_hit:
        row["details"]["retrieved"] = [{"title": "Elsewhere"}]
    row["scores"] = {name: {"status": "scored", "metrics": {name.replace("-", "_"): value}}
                     for name, value in metrics.items()}
    assert analysis.attribution(summary(row)) == expected


@pytest.mark.integration
def test_the_scorers_reach_the_html_page_as_chromium_renders_it(tmp_path, capsys):
    run = make_run(tmp_path)
    page = tmp_path / "out" / "report.html"
    assert main(["report", str(run), "--out", str(tmp_path / "out"), "--html", str(page)]) == 0
    printed = capsys.readouterr().out
    assert "CRAG outcomes (correct: judge truthfulness >= 4" in printed
    stdout, stderr, code = dump_dom(chromium(), page, tmp_path / "profile")
    assert code == 0, stderr[-2000:]
    dom = parse(stdout)
    tables = {t.attrs.get("id") for t in dom.find_all("table")}
    assert {"scorers-scorers", "scorers-crag", "scorers-scorer_correlations"} <= tables
    assert "scorers-judge_spread" not in tables  # no repeats: no table
    text = dom.find_all("section")[2].text()
    assert "faithfulness" in text and "0.58 [" in text  # the mean with its interval
    scores = [s["record"]["scores"]["faithfulness"] for s in viewer_samples(dom)
              if s["label"] == "naive"]  # each answer's scorers, in the viewer's records
    assert {"faithfulness": 1.0} in [s["metrics"] for s in scores]
    assert "unscored" in [s["status"] for s in scores]
    figures = {img.attrs.get("alt") for img in dom.find_all("img")}
    analysis_json = json.loads((tmp_path / "out" / "analysis.json").read_text())
    assert analysis_json["correct_at"] == 4 and analysis_json["crag"]
    assert (tmp_path / "out" / "scores-faithfulness-faithfulness.png").stat().st_size > 1000
    assert figures
