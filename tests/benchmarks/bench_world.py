"""A retrieval world benchmark: an index of 100k and 1M passages on the Qdrant engine in-process,
beside qdrant-client's local mode at 10k and 100k (docs/measurements.md#a-retrieval-world).

    nice -n 10 python tests/benchmarks/bench_world.py [--edge 100000,1000000]
                                                       [--local 10000,100000] [--queries 200]

Passages are generated (Zipf-distributed words of a made-up vocabulary, about 1,000 characters,
five to an article, "Title: ..." first as the index's chunks have it) and embedded by a fake
embedder: 384 numbers from each text's hash, so that the model is not what is timed. Per store
and size, each in a process of its own:

1. build: the passages streamed into the store (BM25 vectors, the fake embedding, the writes,
   and for the engine its HNSW graph and int8 vectors): wall time, chunks/s, peak memory;
2. open: the built index opened as a run opens it (nothing chunked), its time and resident
   memory (anonymous and file-backed);
3. search: `--queries` dense searches (text weight 0) and hybrid ones (0.5) of words drawn from
   stored passages through `VectorIndex.retrieve`, the path every system takes: p50 and p99,
   and the memory after them;
4. disk: the index's bytes.

Then the extrapolation to 21M passages (Wikipedia's, as FlashRAG's wiki-18 corpus cuts it):
memory at open, disk and build hours from the largest engine size, linear in passages, the
embedding model's own time apart. Targets: 1M built in linear time, opened in under 10 s with the
run's memory under 2 GB, dense p99 under 50 ms, hybrid under 200 ms. It prints a table, the load
(`uptime`) before and after, and as its last line one JSON object; it never fails because a
figure is off: each target is reported with "met".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.retrieval.chunking import Chunk  # noqa: E402

DIMENSION = 384
PER_ARTICLE = 5
WORLD = 21_000_000  # passages of a whole Wikipedia (FlashRAG's wiki-18: 21M)
OPEN_S, MEMORY_MB, DENSE_MS, HYBRID_MS = 10.0, 2048.0, 50.0, 200.0
TARGET_AT = 1_000_000


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


class HashEmbedder:
    """384 numbers from a text's hash, unit length: as fast as an embedder can be."""

    name = "hash-384"
    where = "the benchmark's hash embedder"

    def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy

        vectors = numpy.empty((len(texts), DIMENSION), dtype=numpy.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
            vectors[row] = numpy.random.default_rng(seed).standard_normal(DIMENSION)
        vectors /= numpy.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors.tolist()


def vocabulary(size: int = 50_000) -> tuple[Any, Any]:
    """A made-up vocabulary and its Zipf cumulative weights (rank r drawn in proportion to 1/r)."""
    import numpy

    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    rng = random.Random(7)
    words = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
                    for _ in range(size * 2)})[:size]
    rng.shuffle(words)
    weights = numpy.cumsum(1 / numpy.arange(1, len(words) + 1))
    return numpy.array(words, dtype=object), weights / weights[-1]


def passage(i: int, words: Any, weights: Any) -> Chunk:
    """The i-th passage: about 1,000 characters, the same every call."""
    import numpy

    title = f"Article {i // PER_ARTICLE}"
    drawn = numpy.searchsorted(weights, numpy.random.default_rng(i).random(150))
    text = " ".join(words[drawn])[:1000]
    return Chunk(title, i % PER_ARTICLE, f"Title: {title}\n{text}")


def passages(count: int) -> Iterator[Chunk]:
    words, weights = vocabulary()
    return (passage(i, words, weights) for i in range(count))


def queries(count: int, size: int) -> list[str]:
    """Six words of each of `count` stored passages, drawn at random."""
    words, weights = vocabulary()
    rng = random.Random(size)
    return [" ".join(rng.sample(passage(i, words, weights).text.split("\n", 1)[1].split(), 6))
            for i in rng.sample(range(size), count)]


def memory_mb() -> dict[str, float]:
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return {name: round(int(status[key].split()[0]) / 1024, 1)
            for name, key in (("rss_mb", "VmRSS"), ("anon_mb", "RssAnon"), ("file_mb", "RssFile"))}


def child_build(engine: str, size: int, directory: Path) -> dict:
    from freshrag.retrieval import edge, store
    from freshrag.retrieval.config import IndexConfig

    config = IndexConfig(directory=directory, engine=engine)
    started = time.perf_counter()
    if engine == "edge":
        edge.build(directory, "world", lambda: passages(size), HashEmbedder(), config,
                   progress=False).close()
    else:
        client = store.connect(config)
        store.store_chunks(client, "world", lambda: passages(size), size, range(size),
                           HashEmbedder(), config, progress=False)
        client.close()
    return {"build_s": time.perf_counter() - started}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def child_search(engine: str, size: int, directory: Path, count: int) -> dict:
    from dataclasses import replace

    from freshrag.retrieval import edge, store
    from freshrag.retrieval.config import IndexConfig
    from freshrag.retrieval.index import VectorIndex

    asked = queries(count, size)
    before = memory_mb()
    config = IndexConfig(directory=directory, engine=engine)
    started = time.perf_counter()
    if engine == "edge":
        found = edge.open_built(directory, "world")
        assert found is not None
        collection: object = found
    else:
        collection = store.ClientCollection(store.connect(config), "world", config)
    opened = time.perf_counter() - started
    figures: dict = {"open_s": opened, "open": memory_mb(), "before_open": before}
    for name, weight in (("dense", 0.0), ("hybrid", 0.5)):
        index = VectorIndex(collection, "world", HashEmbedder(),  # type: ignore[arg-type]
                            replace(config, text_weight=weight), size)
        times = []
        for query in asked[:count if engine == "edge" or name == "dense" else max(count // 10, 5)]:
            began = time.perf_counter()
            assert len(index.retrieve(query)) == config.top_k
            times.append(1000 * (time.perf_counter() - began))
        figures[name] = {"p50_ms": percentile(times, 0.5), "p99_ms": percentile(times, 0.99),
                         "queries": len(times)}
    figures["searched"] = memory_mb()
    return figures


def measured(argv: list[str]) -> tuple[dict, float, float]:
    """A child's JSON line, wall time and peak memory (MB) from the kernel (os.wait4)."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()  # type: ignore[union-attr]
    _, status, usage = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[2:])} failed")
    return json.loads(out.strip().splitlines()[-1]), time.perf_counter() - started, \
        usage.ru_maxrss / 1024


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) / 2**20


def cached_mb(directory: Path) -> float:
    """What the engine keeps loaded of an index (the int8 vectors, the graph, the id tracker)."""
    from freshrag.retrieval.edge import CACHED

    return sum(f.stat().st_size for pattern in CACHED
               for f in directory.glob(f"edge/*/segments/{pattern}")) / 2**20


def one(engine: str, size: int, work: Path, count: int) -> dict:
    directory = work / f"{engine}-{size}"
    me = [sys.executable, __file__, "--child"]
    log(f"{engine} {size:,}: building")
    built, _, build_peak = measured([*me, "build", engine, str(size), str(directory)])
    log(f"{engine} {size:,}: built in {built['build_s']:.0f} s; searching")
    searched, _, search_peak = measured([*me, "search", engine, str(size), str(directory),
                                         str(count)])
    row = {"engine": engine, "passages": size, "build_s": round(built["build_s"], 1),
           "chunks_per_s": round(size / built["build_s"]), "build_peak_mb": round(build_peak),
           "open_s": round(searched["open_s"], 2), "before_open": searched["before_open"],
           "open_memory": searched["open"],
           "searched_memory": searched["searched"], "search_peak_mb": round(search_peak),
           "dense": searched["dense"], "hybrid": searched["hybrid"],
           "disk_mb": round(disk_mb(directory)), "cached_mb": round(cached_mb(directory))}
    shutil.rmtree(directory)
    return row


def extrapolation(row: dict) -> dict:
    """21M passages from the largest engine size, linear in passages: the memory is what the
    engine keeps loaded (int8 vectors, graph, id tracker) scaled, beside the run's anonymous
    memory after searching; the pages of the files searches read are the page cache's."""
    scale = WORLD / row["passages"]
    return {"passages": WORLD, "from": row["passages"],
            "memory_gb": round((row["cached_mb"] * scale + row["searched_memory"]["anon_mb"])
                               / 1024, 1),
            "disk_gb": round(row["disk_mb"] * scale / 1024),
            "build_hours_without_model": round(row["build_s"] * scale / 3600, 1)}


def table(rows: list[dict]) -> str:
    lines = ["| store | passages | build s | chunks/s | open s | RSS after open MB (anon) | "
             "dense p50/p99 ms | hybrid p50/p99 ms | disk MB |", "|---" * 9 + "|"]
    for r in rows:
        lines.append(
            f"| {r['engine']} | {r['passages']:,} | {r['build_s']:.0f} | {r['chunks_per_s']:,} | "
            f"{r['open_s']:.2f} | {r['searched_memory']['rss_mb']:,.0f} "
            f"({r['searched_memory']['anon_mb']:,.0f}) | {r['dense']['p50_ms']:.1f} / "
            f"{r['dense']['p99_ms']:.1f} | {r['hybrid']['p50_ms']:.1f} / "
            f"{r['hybrid']['p99_ms']:.1f} | {r['disk_mb']:,} |")
    return "\n".join(lines)


def targets(rows: list[dict]) -> dict:
    edge = {r["passages"]: r for r in rows if r["engine"] == "edge"}
    if TARGET_AT not in edge:
        return {}
    at = edge[TARGET_AT]
    smaller = [edge[n] for n in sorted(edge) if n < TARGET_AT]
    linear = smaller and at["chunks_per_s"] >= 0.8 * smaller[-1]["chunks_per_s"]
    return {"linear_build": {"met": bool(linear)},
            "open_s": {"value": at["open_s"], "met": at["open_s"] < OPEN_S},
            "memory_mb": {"value": at["searched_memory"]["rss_mb"],
                          "met": at["searched_memory"]["rss_mb"] < MEMORY_MB},
            "dense_p99_ms": {"value": at["dense"]["p99_ms"],
                             "met": at["dense"]["p99_ms"] < DENSE_MS},
            "hybrid_p99_ms": {"value": at["hybrid"]["p99_ms"],
                              "met": at["hybrid"]["p99_ms"] < HYBRID_MS}}


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        what, engine, size, directory = sys.argv[2:6]
        result = (child_build(engine, int(size), Path(directory)) if what == "build" else
                  child_search(engine, int(size), Path(directory), int(sys.argv[6])))
        print(json.dumps(result))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edge", default="100000,1000000")
    parser.add_argument("--local", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--work", type=Path, help="where the indexes are built (default: a "
                        "temporary folder under results/)")
    args = parser.parse_args()
    load = [subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()]
    log(load[0])
    rows = []
    with tempfile.TemporaryDirectory(dir=args.work or ROOT / "results") as work:
        for engine, sizes in (("local", args.local), ("edge", args.edge)):
            for size in (int(s) for s in sizes.split(",") if s):
                rows.append(one(engine, size, Path(work), args.queries))
                print(table(rows[-1:]).splitlines()[-1], flush=True)
    load.append(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    edges = [r for r in rows if r["engine"] == "edge"]
    report = {"rows": rows, "targets": targets(rows),
              "extrapolation": extrapolation(edges[-1]) if edges else None, "uptime": load}
    print(table(rows))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
