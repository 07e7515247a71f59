"""Benchmark of information needs (docs/measurements.md#information-needs).

    python tests/benchmarks/bench_needs.py [--only clustering,pipeline] [--sizes 1000,5000]
                                           [--articles 4] [--per-need 3]

Prints ONE JSON object on stdout (progress goes to stderr). It measures:

1. clustering: how well the clusters match the log's intended themes (its `theme` field; each
   stray its own), as the adjusted Rand index, for agglomerative clustering at several distance
   thresholds and for HDBSCAN (the other method that needs no preset count); then seconds and
   peak memory (tracemalloc, which sees numpy's and scipy's arrays) of
   `freshrag.builders.traffic.query_log.cluster` on `--sizes` query vectors: the shipped log's 63 MiniLM vectors
   repeated with small noise (384 dimensions, as MiniLM gives), at the default threshold. The
   default `--max-queries` (5,000) caps what a log costs here.
2. pipeline: `freshrag needs` on the shipped query log (tests/data/needs/queries.jsonl) and then
   `freshrag build --needs` on the first `--articles` released A_f articles of at most 2,000
   characters, `--per-need` chunks a need, each as a subprocess with the configured models
   (default: the embedded SmolLM2-135M and local MiniLM): wall time, calls, and what came of them
   (needs described or not; questions, BLANKs and failures).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from freshrag.builders.traffic.query_log import NeedLogConfig, cluster, read_queries  # noqa: E402
from freshrag.core.jsonl import read_jsonl  # noqa: E402
from tests import WIKIRAG  # noqa: E402
from tests.support.wikidump import article_pages, write_dump  # noqa: E402

LOG = WIKIRAG.parent / "needs" / "queries.jsonl"


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def bench_clustering(sizes: list[int]) -> dict:
    from freshrag.retrieval.embeddings import LocalMiniLM

    base = np.array(LocalMiniLM().embed(read_queries(LOG)))
    results = {"themes": agreement_with_themes(base)}
    rng = np.random.default_rng(0)
    for size in sizes:
        vectors = base[np.arange(size) % len(base)] + rng.normal(0, 0.02, (size, base.shape[1]))
        tracemalloc.start()
        started = time.perf_counter()
        labels = cluster(vectors, NeedLogConfig().distance_threshold)
        seconds = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        results[str(size)] = {"seconds": round(seconds, 2), "peak_mib": round(peak / 2**20, 1),
                              "clusters": int(len(set(labels)))}
        log(f"clustering {size}: {results[str(size)]}")
    return results


def agreement_with_themes(vectors: np.ndarray) -> dict:
    from sklearn.cluster import HDBSCAN
    from sklearn.metrics import adjusted_rand_score

    rows = read_jsonl(LOG)
    themes = [row["theme"] if row["theme"] != "stray" else f"stray-{i}"
              for i, row in enumerate(rows)]
    scores = {}
    for threshold in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95):
        labels = cluster(vectors, threshold)
        scores[f"agglomerative {threshold}"] = {
            "clusters": int(len(set(labels))), "ari": round(adjusted_rand_score(themes, labels), 3)}
    for size in (2, 3, 4):
        labels = HDBSCAN(min_cluster_size=size, metric="cosine").fit_predict(vectors)
        scores[f"hdbscan min_cluster_size {size}"] = {
            "clusters": int(len(set(labels) - {-1})), "noise": int((labels == -1).sum()),
            "ari": round(adjusted_rand_score(themes, labels), 3)}
    log(f"themes: {scores}")
    return scores


def freshrag(cwd: Path, *args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "freshrag", *args], cwd=cwd, text=True,
                          capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if done.returncode != 0:
        raise SystemExit(f"freshrag {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return round(time.perf_counter() - started, 1)


def short_articles(count: int, tmp: Path) -> Path:
    titles = {row["title"] for row in read_jsonl(WIKIRAG / "questions-A_f.jsonl")}
    rows = [row for row in read_jsonl(WIKIRAG / "articles.jsonl")
            if row["title"] in titles and len(row["content"]) <= 2000][:count]
    path = tmp / "articles.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return write_dump(tmp / "wiki.xml", article_pages(path))


def bench_pipeline(articles: int, per_need: int) -> dict:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        needs_txt = tmp / "needs.txt"
        needs_seconds = freshrag(tmp, "needs", "--queries", str(LOG), "--out", str(needs_txt))
        document = json.loads(needs_txt.with_suffix(".json").read_text())
        log(f"needs: {needs_seconds} s")
        dataset = tmp / "dataset"
        build_seconds = freshrag(tmp, "build", "--dump", str(short_articles(articles, tmp)),
                                 "--cutoff", "2021-09-30", "--questions-from", "A_d",
                                 "--needs", str(needs_txt), "--per-need", str(per_need),
                                 "--out", str(dataset))
        funnel = json.loads((dataset / "manifest.json").read_text())["funnel"]
        records = read_jsonl(dataset / "needs.jsonl")
        log(f"build: {build_seconds} s")
    return {
        "needs": {"seconds": needs_seconds, "queries": document["queries"],
                  "clusters": document["clustering"]["clusters"],
                  "needs": len(document["needs"]), "calls": document["calls"],
                  "described": sum(n["status"] == "described" for n in document["needs"]),
                  "usage": document["usage"]},
        "build": {"seconds": build_seconds, "articles": funnel["n_r"],
                  "pairs": len(records), "calls": sum(len(r["raw"]) for r in records),
                  "questions": sum(n["questions"] for n in funnel["needs"]),
                  "blank": sum(n["blank"] for n in funnel["needs"]),
                  "failed": sum(n["failed"] for n in funnel["needs"]),
                  "failed_by_reason": [n["failed_by_reason"] for n in funnel["needs"]]},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="clustering,pipeline")
    parser.add_argument("--sizes", default="1000,5000")
    parser.add_argument("--articles", type=int, default=4)
    parser.add_argument("--per-need", type=int, default=3)
    args = parser.parse_args()
    only = set(args.only.split(","))
    result = {"load_average": os.getloadavg()[0], "cpus": os.cpu_count()}
    if "clustering" in only:
        result["clustering"] = bench_clustering([int(s) for s in args.sizes.split(",")])
    if "pipeline" in only:
        result["pipeline"] = bench_pipeline(args.articles, args.per_need)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
