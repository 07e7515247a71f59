"""The worked examples of docs/examples/ on the embedded model (docs/own-system.md): a LangChain
pipeline plugged in from its file, the small RAG service started here over HTTP, and an answers
file in Ragas' columns, beside naive RAG in one run and one report, every role on the session's
llama.cpp server with SmolLM2-135M, embeddings on local MiniLM, embedded Qdrant over the
session's example index. A model this small answers badly; what is checked is that every
example's rows come out answered, judged and accounted, side by side in the report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from freshrag.core.dataset import example_dir
from tests.support.examples import check_run, example_systems, rag_service

pytestmark = pytest.mark.integration

QUESTIONS = 1  # every check holds row by row


def test_the_examples_run_on_the_embedded_model(tmp_path, embedded_env, example_index_dir):
    with rag_service(example_dir() / "articles.jsonl", embedded_env) as url:
        done = subprocess.run(
            [sys.executable, "-m", "freshrag", "run", "--dataset", str(example_dir()),
             "--systems", example_systems(url), "--limit", str(QUESTIONS), "--no-probe",
             "--concurrency", "2", "--out", str(tmp_path / "run"),
             "--index-dir", str(example_index_dir)],
            env=embedded_env, cwd=tmp_path, capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    check_run(tmp_path / "run", QUESTIONS)
    report = subprocess.run([sys.executable, "-m", "freshrag", "report", str(tmp_path / "run"),
                             "--format", "json"], env=embedded_env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert report.returncode == 0, report.stderr[-2000:]
    summary = {row["system"]: row for row in json.loads(report.stdout)["rows"]}
    assert sorted(summary) == ["lc", "naive", "svc", "theirs"]
    assert all(summary[s]["input_tokens"] > 0 for s in ("naive", "lc", "svc"))
    assert summary["theirs"]["input_tokens"] is None
