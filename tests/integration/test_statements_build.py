"""The real thing for labelled questions: `freshrag build --style statements` with the embedded
llama.cpp server (SmolLM2-135M) as builder and labeller, on one short released A_f article asked
for one question of each label, then `freshrag label` with hand labels on what it built.

A 135M model writes poor statements and questions, and some of its replies do not parse: the test
holds the pipeline to account (one record per requested label, written or failed with its reason
and raw replies; statements, critiques and labels recorded; the funnel adding up; a finished
build and labelling asked nothing again), not the quality.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from freshrag.builders.styles.statement_questions import drop_reason
from freshrag.core.dataset import load_dataset_dir
from freshrag.core.jsonl import read_jsonl
from freshrag.core.types import LABELS
from tests import WIKIRAG
from tests.support.wikidump import article_pages, write_dump

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
TITLE = "Sweet Kaaram Coffee"  # 1,414 characters: short prompts keep the test inside its budget
REQUESTED = "fact_single=1,summary=1,reasoning=1,unanswerable=1"
KINDS = {"fact_single": "facts", "summary": "summaries", "reasoning": "conclusions"}


def clean_env() -> dict[str, str]:
    """No endpoint configured: freshrag starts its own local server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FRESHRAG_", "OPENAI_"))}
    return {**env, "PYTHONPATH": str(ROOT)}


def freshrag(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    # no tighter bound than pytest-timeout's on the whole test: a loaded machine is slow, not stuck
    return subprocess.run([sys.executable, "-m", "freshrag", *args], env=clean_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=3000)


def one_article_dump(tmp_path: Path) -> Path:
    rows = [row for row in read_jsonl(WIKIRAG / "articles.jsonl") if row["title"] == TITLE]
    source = tmp_path / "source.jsonl"
    source.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    return write_dump(tmp_path / "wiki.xml", article_pages(source))


def check_candidate(row: dict, statements: dict) -> None:
    if row["status"] == "failed":
        assert row["failure"] in ("no_statements", "no_question", "too_long") and row["reason"]
        assert row["failure"] == "no_statements" or row["question_raw"]
        return
    assert row["question"].strip() and row["question_raw"]
    kind = KINDS.get(row["requested_label"])
    if kind is None:  # a label asked of the article, not of a statement: no reference
        assert row["reference"] is None
    else:
        assert row["reference"] in statements[kind]  # the statement it was written from
    if row["critique"] is None:
        assert row["critique_reason"] and row["critique_raw"]
    else:
        assert set(row["critique"]) == {"stand_alone", "specificity", "question_grounding",
                                        "answer_grounding"}
        assert all(1 <= value <= 5 for value in row["critique"].values())


def test_a_statements_build_and_its_labels_on_the_embedded_model(tmp_path):
    dump, out = one_article_dump(tmp_path), tmp_path / "dataset"
    build = ["build", "--dump", str(dump), "--cutoff", "2021-09-30", "--out", str(out),
             "--style", "statements", "--labels", REQUESTED, "--questions-from", "A_d",
             "--concurrency", "2", "--seed", "7"]  # the server's two slots
    first = freshrag(*build, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]

    (statements,) = read_jsonl(out / "statements.jsonl")
    for step in ("theme", "facts", "summaries", "conclusions"):
        record = statements["steps"][step]
        assert record["reason"] or record["usage"]["input"] > 0  # asked, or why not
    candidates = read_jsonl(out / "candidates.jsonl")
    assert sorted(row["requested_label"] for row in candidates) == sorted(LABELS)
    for row in candidates:
        check_candidate(row, statements)

    manifest = json.loads((out / "manifest.json").read_text())
    funnel = manifest["funnel"]
    assert funnel["candidates"] == 4 == funnel["written"] + sum(funnel["not_written"].values())
    assert funnel["written"] == funnel["questions"] + sum(funnel["dropped"].values())
    assert {"builder", "labeller"} <= set(manifest["models"])
    # every requested label is a question of the set, or the funnel names why it is not
    kept = {row["id"] for row in read_jsonl(out / "questions.jsonl")}
    thresholds = tuple(manifest.get("min_critique", {}).items())  # none asked: none dropped
    for row in candidates:
        if row["id"] in kept:
            assert row["status"] == "ok" and drop_reason(row, thresholds) is None
        elif row["status"] == "ok":
            assert funnel["dropped"][drop_reason(row, thresholds)] >= 1
        else:
            assert funnel["not_written"][row["failure"]] >= 1 and row["reason"]
    assert funnel["questions"] == len(kept)

    questions = load_dataset_dir(out).questions
    labels = {row["id"]: row for row in read_jsonl(out / "labels.jsonl")}
    for question in questions:
        assert question.label in (*LABELS, "unknown") and labels[question.id]["raw"]
        assert question.label == labels[question.id]["label"]
    assert (out / "labels.png").exists() and (out / "label-report.json").exists()

    again = freshrag(*build, cwd=tmp_path)  # finished: nothing is asked again
    assert again.returncode == 0, again.stderr[-3000:]
    assert read_jsonl(out / "candidates.jsonl") == candidates

    rows = {row["id"]: row for row in read_jsonl(out / "questions.jsonl")}
    hand = tmp_path / "hand.jsonl"
    hand.write_text("".join(json.dumps({"id": q.id, "label": rows[q.id]["requested_label"]}) + "\n"
                            for q in questions))
    labelled = freshrag("label", str(out), "--hand-labels", str(hand), cwd=tmp_path)
    assert labelled.returncode == 0, labelled.stderr[-3000:]
    assert "hand labels (rows) against the labeller: Cohen's kappa" in labelled.stdout
    report = json.loads((out / "label-report.json").read_text())
    assert report["agreement_hand"]["n"] == len(questions)
    assert len(read_jsonl(out / "labels.jsonl")) == len(labels)  # no question labelled twice
