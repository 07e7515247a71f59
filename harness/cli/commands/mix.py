"""`freshrag mix`: a question set of a chosen traffic composition (fresh, control and general
questions) drawn from a dataset whose questions carry a kind (docs/traffic.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import MAX_QUESTIONS, add_seed, out_dir, share, whole

HELP = ("a question set of a chosen traffic composition (fresh, control, general) drawn from a "
        "dataset whose questions carry a kind")
KINDS = ("fresh", "control", "general")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mix", help=HELP)
    p.add_argument("dataset", type=Path, metavar="DATASET",
                   help="dataset directory (questions.jsonl with kinds, articles.jsonl)")
    for kind in KINDS:
        p.add_argument(f"--{kind}", type=share, default=0.0,
                       help=f"share of {kind} questions, 0 to 1 (default: %(default)s); "
                            f"the three shares add up to 1")
    p.add_argument("--n", type=whole(1, MAX_QUESTIONS), required=True, help="questions in the mix")
    add_seed(p, "of the draw; mixes of one seed are nested", default=0)
    p.add_argument("--out", type=out_dir, required=True, help="new directory for the mix")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.builders.traffic.mix import MIX, write_mix
    from freshrag.core.outputs import check_outputs, files_in

    check_outputs(files_in(args.out, ("questions.jsonl", "articles.jsonl", MIX), "--out"),
                  [(f"DATASET's {name}", args.dataset / name)
                   for name in ("questions.jsonl", "articles.jsonl")])
    shares = {kind: getattr(args, kind) for kind in KINDS}
    print(write_mix(args.dataset, shares, args.n, args.seed, args.out))
    return 0
