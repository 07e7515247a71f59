"""Embedding an index's chunks here and on Ray (docs/measurements.md#embedding-on-ray): chunks/s
of the build's embedding step (retrieval/batches.py `embed_batches`, the vectors handed back to
the driver and dropped there, so that no store is timed) for

- the local executor (one process, the local MiniLM on every core);
- Ray on one node of 2 CPUs (two actors, one model each);
- Ray on two nodes of 1 CPU each (`ray.cluster_utils.Cluster`, two raylets on this host).

    nice -n 10 python tests/benchmarks/bench_embed.py [--chunks 1500] [--fake 20000]

Passages are bench_world.py's generated ones (about 1,000 characters). Two embedders: the real
local MiniLM (what a build costs) and bench_world's hash embedder (`--fake` chunks: what the
executor itself costs per chunk, with no model). On this machine's 2 shared cores Ray cannot be
faster than the local executor: its figures say what a cluster's nodes each add, and what moving
batches costs. Each row gives chunks/s over the whole step and its steady rate once the first
batch is back (actors started, models loaded). Then the estimate for 21M passages on clusters
of N nodes of 2 cores like these, from the two-node steady rate per CPU. It prints
a table, the load (`uptime`) before and after, and as its last line one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
# the hash embedder is pickled by reference: Ray's workers import it as this process does
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT),
                                                         os.environ.get("PYTHONPATH")]))

from freshrag.executors.choice import Executor  # noqa: E402
from freshrag.retrieval.batches import batches, embed_batches  # noqa: E402
from freshrag.retrieval.config import IndexConfig  # noqa: E402
from freshrag.retrieval.embeddings import LocalMiniLM  # noqa: E402
from tests.benchmarks.bench_world import WORLD, HashEmbedder, log, passages  # noqa: E402

BATCH = 256  # the index's batch size


def rate(embedder, count: int, executor: Executor) -> dict:
    """Chunks/s of embedding `count` passages with `executor`, the model loaded before timing
    (each actor loads its own at its first batch: that is timed, as a build pays it)."""
    done: list[tuple[float, int]] = []  # (when, chunks) of each batch back

    def stored(batch, vectors):
        assert len(vectors) == len(batch.ids)
        done.append((time.perf_counter(), len(batch.ids)))

    config = IndexConfig(batch_size=BATCH, executor=executor)
    started = time.perf_counter()
    embed_batches(batches(enumerate(passages(count)), BATCH, BATCH * 16), embedder, config,
                  stored)
    seconds = time.perf_counter() - started
    assert sum(chunks for _, chunks in done) == count
    # once the first batch is back (the actors started, their models loaded): the rate a long
    # build runs at
    steady = (count - done[0][1]) / max(done[-1][0] - done[0][0], 1e-9)
    return {"chunks": count, "seconds": round(seconds, 1), "chunks_s": round(count / seconds, 1),
            "steady_chunks_s": round(steady, 1)}


def on_cluster(nodes: list[int], measure) -> dict:
    """`measure()` with this process joined to a fresh cluster of `nodes` (CPUs per node)."""
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": nodes[0],
                                                            "include_dashboard": False})
    try:
        for cpus in nodes[1:]:
            cluster.add_node(num_cpus=cpus)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, logging_level=logging.WARNING)
        return measure()
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", type=int, default=1500, help="passages for MiniLM")
    parser.add_argument("--fake", type=int, default=20_000, help="passages for the hash embedder")
    args = parser.parse_args()
    load = [subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()]
    model = LocalMiniLM()
    model.embed(["warm up"])  # the driver's model loaded outside the timing
    rows = []
    for name, nodes in (("local", None), ("ray, 1 node x 2 CPUs", [2]),
                        ("ray, 2 nodes x 1 CPU", [1, 1])):
        for embedder, count in ((model, args.chunks), (HashEmbedder(), args.fake)):
            log(f"{name}: {embedder.name}, {count:,} chunks")
            if nodes is None:
                found = rate(embedder, count, Executor())
            else:
                found = on_cluster(nodes, lambda e=embedder, c=count: rate(e, c, Executor("ray")))
            rows.append({"executor": name, "embedder": embedder.name, **found})
    load.append(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    print(f"{'executor':<24} {'embedder':<24} {'chunks':>7} {'s':>7} {'chunks/s':>9} "
          f"{'steady':>9}")
    for row in rows:
        print(f"{row['executor']:<24} {row['embedder']:<24} {row['chunks']:>7,} "
              f"{row['seconds']:>7} {row['chunks_s']:>9,} {row['steady_chunks_s']:>9,}")
    two_nodes = next(row for row in rows if row["executor"].startswith("ray, 2")
                     and row["embedder"] == model.name)
    per_node = two_nodes["steady_chunks_s"] / 2  # one CPU a node: what each adds
    estimate = {f"{n} nodes of 2 cores": round(WORLD / (per_node * 2 * n) / 3600, 1)
                for n in (1, 8, 32)}
    print(f"21M passages at {per_node:.0f} chunks/s per node-CPU, hours: {estimate}")
    print(f"load: {load[0]}\n      {load[1]}")
    print(json.dumps({"rows": rows, "hours_21m": estimate, "load": load}))


if __name__ == "__main__":
    main()
