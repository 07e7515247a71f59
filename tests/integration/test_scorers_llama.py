"""Every scorer with the embedded model (SmolLM2-135M, MiniLM embeddings) on an imported run:
a pickle in the paper's released format (built here from the example corpus, as
tests/support/legacy.py builds its pickles: the released ones are not in the repository)
goes through `import-legacy`, then `freshrag score` adds every scorer, a second pass asks
nothing, and `freshrag agreement` compares the released grades with the embedded judge's.

A 135M model scores badly: the test checks the pipeline and the records (every score finished
as scored, unscored with its reason and raw reply, or not applicable; tokens counted under the
scorer's role), never the quality of a verdict."""

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from freshrag.core.dataset import example_dir
from freshrag.scoring import SCORERS
from freshrag.scoring.store import SCORES, read_scores

pytestmark = pytest.mark.integration
EVERY = ",".join(SCORERS)


def freshrag(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
    return subprocess.run([sys.executable, "-m", "freshrag", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=1800)  # a shared machine is slow


def released_run(path: Path) -> Path:
    """Two rows as the paper's naive runs hold them, on example articles: one answered with a
    short sentence from its retrieved chunk, one abstaining without context; the grades are
    GPT-4's, made up. Short answers keep the embedded model's statement lists short."""
    articles = {a["title"]: a for a in map(json.loads, (example_dir() / "articles.jsonl").open())}
    questions = [json.loads(line) for line in (example_dir() / "questions.jsonl").open()][:2]
    rows = []
    for i, question in enumerate(questions):
        article = articles[question["title"]]
        first = f"The {article['title']} opened to traffic on 14 March 2026."
        rows.append({"title": article["title"], "content": article["content"], "url": None,
                     "question": question["question"],
                     "answer": first if i == 0 else "I don't know.",
                     "n_input_tokens": 300, "n_output_tokens": 20, "retrieved": False,
                     "context": f"Title: {article['title']}\n{article['content'][:700]}"
                     if i == 0 else "",
                     "truthfulness": 5 if i == 0 else 1, "relevance": 4 if i == 0 else 1})
    path.write_bytes(pickle.dumps(rows))
    return path


def test_score_adds_every_scorer_to_an_imported_run_and_agreement_reads_it(tmp_path):
    pkl = released_run(tmp_path / "naive_A_f.pkl")
    imported = freshrag(tmp_path, "import-legacy", str(pkl), "--dataset", "A_f", "--system",
                        "naive", "--out", "paper")
    assert imported.returncode == 0, imported.stderr[-2000:]
    articles = str(example_dir() / "articles.jsonl")
    first = freshrag(tmp_path, "score", "paper", "--scorers", EVERY, "--articles", articles,
                     "--concurrency", "2")
    assert first.returncode == 0, first.stderr[-3000:]
    scores = read_scores(tmp_path / "paper")
    assert sorted((s["question_id"], s["scorer"]) for s in scores) == sorted(
        (f"A_f/legacy-{i:05d}", name) for i in range(2) for name in SCORERS)
    for score in scores:
        assert score["status"] in ("scored", "unscored", "not_applicable"), score
        if score["status"] == "unscored":
            assert score["reason"] and score["raw"], score
        if score["status"] == "scored":
            assert set(score["metrics"]) <= set(SCORERS[score["scorer"]].metrics)
            assert score["metrics"], score
        if score["calls"]:  # tokens under the scorer's own role, counted by the endpoint
            role = SCORERS[score["scorer"]].role
            assert set(score["usage"]) == {role} and score["usage"][role]["input"] > 0
    by = {(s["question_id"][-1], s["scorer"]): s for s in scores}
    for name in ("faithfulness", "context-relevance"):  # the abstaining row retrieved nothing
        assert by["1", name]["status"] == "not_applicable"
        assert by["0", name]["calls"], "the row with context was asked about"
    assert by["1", "abstention"]["details"] == {"source": "pattern"}
    assert by["1", "abstention"]["metrics"] == {"abstained": 1.0}

    again = freshrag(tmp_path, "score", "paper", "--scorers", EVERY, "--articles", articles)
    assert again.returncode == 0, again.stderr[-2000:]
    every = 2 * len(SCORERS)  # two rows, each scored by every scorer once
    assert f"0 scores asked now, {every} finished before" in again.stdout
    assert len((tmp_path / "paper" / SCORES).read_text().splitlines()) == every

    agreement = freshrag(tmp_path, "agreement", "paper", "paper", "--repeat-b", "0",
                         "--format", "json", "--out", "agree")
    # the judge's grade is grammar-constrained on the embedded runtime: both answers are scored
    scored_by_judge = [s for s in scores if s["scorer"] == "judge" and s["status"] == "scored"]
    assert len(scored_by_judge) == 2, [s for s in scores if s["scorer"] == "judge"]
    assert agreement.returncode == 0, agreement.stderr[-2000:]
    document = json.loads((tmp_path / "agree" / "agreement.json").read_text())
    assert document["pairs"]["compared"] == len(scored_by_judge)
    assert document["b"] == "paper (judge repeat 0)"

    report = freshrag(tmp_path, "report", "paper", "--out", "rep")
    assert report.returncode == 0, report.stderr[-2000:]
    assert "Scorers beyond the judge" in report.stdout
