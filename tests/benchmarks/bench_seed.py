"""Seeding a Qdrant server from an index on the engine: the seed's own rate and memory
(docs/retrieval.md#seeding-a-qdrant-server).

    nice -n 10 python tests/benchmarks/bench_seed.py [--passages 20000] [--batch-size 256]

An index of `--passages` generated passages (bench_world.py's, embedded by its hash embedder) is
built on the engine, then seeded twice by `freshrag.retrieval.seed.seed`:

1. into a stand-in server that keeps nothing: what the seed itself costs, reading the shard a
   page at a time and making qdrant-client's points, in points/s, and the Python memory it holds
   at its first, middle and last request (tracemalloc): flat if it holds one page, not the index;
2. into qdrant-client's local mode on disk, a real store through the client API a server is
   spoken to with (its own writes included, slower than a server's).

No Qdrant server installs here, so a server's ingest is not measured. It prints a table, the
load (`uptime`), and as its last line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_world import HashEmbedder, passages  # noqa: E402


class KeepsNothing:
    """The calls the seed makes of a server, answered by one that keeps nothing but a count."""

    def __init__(self) -> None:
        self.points = 0
        self.held: list[int] = []  # Python bytes traced at each request

    def collection_exists(self, name: str) -> bool:
        return False

    def create_collection(self, name: str, **config: Any) -> None:
        pass

    def upsert(self, name: str, points: list, wait: bool = True) -> None:
        self.points += len(points)
        self.held.append(tracemalloc.get_traced_memory()[0])

    def count(self, name: str, exact: bool = True) -> Any:
        return argparse.Namespace(count=self.points)

    def close(self) -> None:
        pass


def main() -> None:
    import qdrant_client.models  # noqa: F401  # imported before tracing: not the seed's memory

    from freshrag.retrieval import edge, store
    from freshrag.retrieval.config import IndexConfig
    from freshrag.retrieval.seed import seed

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=20_000)
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "index"
        started = time.perf_counter()
        edge.build(directory, "world", lambda: passages(args.passages), HashEmbedder(),
                   IndexConfig(directory=directory, engine="edge"), progress=False).close()
        built = time.perf_counter() - started
        server = KeepsNothing()
        connect = store.connect
        store.connect = lambda config: server  # type: ignore[assignment,return-value]
        tracemalloc.start()
        started = time.perf_counter()
        seed(directory, "world", IndexConfig(qdrant_url="http://stand-in:6333"), args.batch_size,
             progress=False)
        alone = time.perf_counter() - started
        tracemalloc.stop()
        store.connect = connect
        started = time.perf_counter()
        seed(directory, "world", IndexConfig(directory=Path(tmp) / "local"), args.batch_size,
             progress=False)
        local = time.perf_counter() - started
    held = [round(server.held[i] / 1e6, 1) for i in (0, len(server.held) // 2, -1)]
    figures = {"passages": args.passages, "batch_size": args.batch_size,
               "build_s": round(built, 1), "seed_alone_s": round(alone, 1),
               "seed_alone_points_per_s": round(args.passages / alone),
               "held_mb_first_middle_last": held, "seed_local_s": round(local, 1),
               "seed_local_points_per_s": round(args.passages / local)}
    print("| into | points/s | s | Python MB held at requests 1 / middle / last |")
    print("|---|---:|---:|---|")
    print(f"| a server that keeps nothing | {figures['seed_alone_points_per_s']:,} | "
          f"{figures['seed_alone_s']} | {' / '.join(map(str, held))} |")
    print(f"| qdrant-client's local mode | {figures['seed_local_points_per_s']:,} | "
          f"{figures['seed_local_s']} | |")
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
