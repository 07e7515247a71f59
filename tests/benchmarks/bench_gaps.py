"""Finding the ids a half-built index lacks: the gaps between the ids it holds, against a set of
them (docs/retrieval.md#the-index, docs/measurements.md#a-retrieval-world).

    nice -n 10 python tests/benchmarks/bench_gaps.py [--total 21000000] [--holes 2000]

A collection of `--total` chunks built to half, with `--holes` single ids lost at random in the
half built (a build killed between flushes loses ids scattered through a window), its ids given
in ascending order as Qdrant scrolls them (no store: the scroll's own cost is the store's):

1. `gaps.missing`, as a resume now finds them: Python memory at its peak (tracemalloc), seconds,
   the number of stretches held;
2. the set the resume used to build (every id present, then a list of every missing one);
3. with `--shard N` (2,000,000 unless told; 0 skips it), a shard on the engine of N chunks built
   to half with holes alike (vectors of 4 numbers, no payload: only the ids are read), and the
   time and Python memory of the engine's build finding its missing ids there (`edge._missing`,
   the scroll of its ids included).

It prints a table, the load (`uptime`), and as its last line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from freshrag.retrieval import edge  # noqa: E402
from freshrag.retrieval.gaps import missing  # noqa: E402


def held(total: int, lost: set[int]) -> Iterator[int]:
    """The ids of a collection of `total` chunks built to half, less `lost`, ascending."""
    return (i for i in range(total // 2) if i not in lost)


def as_a_set(ids: Iterator[int], total: int) -> list[int]:
    present = set(ids)
    return [i for i in range(total) if i not in present]


def measured(find: Callable[[], Any]) -> tuple[Any, float, float]:
    """What `find()` returns, its peak Python memory in MB and its seconds."""
    tracemalloc.start()
    began = time.perf_counter()
    try:
        found = find()
        seconds = time.perf_counter() - began
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return found, peak / 1e6, seconds


def on_the_engine(total: int, holes: int) -> dict[str, Any]:
    """The seconds and peak Python MB of finding the ids a half-built shard of `total` lacks."""
    from qdrant_edge import EdgeShard, Point, UpdateOperation

    lost = set(random.Random(1).sample(range(total // 2), holes))
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "shard"
        shard = EdgeShard.create(str(path), edge._config(4))
        for start in range(0, total // 2, 10_000):
            shard.update(UpdateOperation.upsert_points(
                [Point(i, {"": [1.0, 0.5, 0.25, float(i % 7)]}, {})
                 for i in range(start, min(start + 10_000, total // 2)) if i not in lost]))
        shard.flush()
        found, peak, seconds = measured(lambda: edge._missing(shard, path, total))
        shard.close()
    assert len(found) == total - total // 2 + holes
    return {"shard_total": total, "shard_missing": len(found), "shard_stretches": found.gaps,
            "shard_peak_mb": round(peak, 3), "shard_s": round(seconds, 2),
            "shard_ids_per_s": round((total // 2 - holes) / seconds)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--total", type=int, default=21_000_000)
    parser.add_argument("--holes", type=int, default=2_000)
    parser.add_argument("--shard", type=int, default=2_000_000)
    args = parser.parse_args()
    lost = set(random.Random(0).sample(range(args.total // 2), args.holes))
    gaps, gaps_mb, gaps_s = measured(lambda: missing(held(args.total, lost), args.total, "bench"))
    old, set_mb, set_s = measured(lambda: as_a_set(held(args.total, lost), args.total))
    assert list(gaps) == old
    figures = {"total": args.total, "missing": len(gaps), "stretches": gaps.gaps,
               "gaps_peak_mb": round(gaps_mb, 3), "gaps_s": round(gaps_s, 1),
               "set_peak_mb": round(set_mb, 1), "set_s": round(set_s, 1)}
    print(f"{args.total:,} chunks built to half, {args.holes:,} ids lost in the half built: "
          f"{len(gaps):,} missing")
    print("| found as | peak Python MB | s | held |")
    print("|---|---:|---:|---|")
    print(f"| the gaps between ids held | {gaps_mb:.3f} | {gaps_s:.1f} | {gaps.gaps:,} stretches |")
    print(f"| a set of ids held | {set_mb:,.1f} | {set_s:.1f} | {len(old):,} ids |")
    if args.shard:
        figures.update(on_the_engine(args.shard, args.holes))
        print(f"| the gaps, on the engine: {args.shard:,} chunks built to half | "
              f"{figures['shard_peak_mb']:.3f} | {figures['shard_s']:.1f} | "
              f"{figures['shard_stretches']:,} stretches ({figures['shard_ids_per_s']:,} ids "
              f"read a second) |")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
