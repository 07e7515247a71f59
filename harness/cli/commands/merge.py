"""`freshrag merge`: the run directories that `freshrag run --shard i/N` wrote (a Slurm array's
tasks, Kubernetes Jobs) joined into one run directory, whose report is the single run's
(docs/running.md#on-a-slurm-array-or-kubernetes-jobs). It parses its options and calls the
merge service (harness/workflows/merge.py, which `freshrag.merge` is too); no model is called."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import add_command
from freshrag.cli.values import out_dir

NAME = "merge"
HELP = "join the shards of a run (run --shard i/N) into one run"


DESCRIPTION = ("Reads the shards' samples.jsonl, scores.jsonl, judge-probes.json and "
               "manifest.json and writes one run directory, rows in the order of the single "
               "run, which `freshrag report` reports as that run. Shards of different runs "
               "(dataset, systems, settings) or a shard given twice are refused; a shard "
               "missing or not finished is named, the rest merged, and the report says the run "
               "is incomplete. Running it again (with a shard more) remakes the directory. "
               "Exit 1 when incomplete.")
EXAMPLES = ("freshrag merge results/shard-1 results/shard-2 results/shard-3 --out results/sharded",)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    p.add_argument_group("inputs").add_argument(
        "run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
        help="the shards' run directories, each once")
    p.add_argument_group("output").add_argument(
        "--out", type=out_dir, required=True, help="the merged run directory: new, or a merge "
        "made before (made again)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.workflows.merge import merge

    result = merge(args.run_dirs, args.out)
    print("\n".join(result.lines()))
    return 0 if result.complete else 1
