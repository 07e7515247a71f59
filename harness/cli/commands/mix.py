"""`freshrag mix`: a question set of a chosen traffic composition (fresh, control and general
questions) drawn from a dataset whose questions carry a kind (docs/traffic.md)."""

from __future__ import annotations

import argparse

from freshrag.cli.options import UsageError, add_command, add_dataset, add_seed
from freshrag.cli.values import out_dir, share, whole
from freshrag.run.options import MAX_QUESTIONS

NAME = "mix"
HELP = "draw a question set of a chosen traffic composition"
KINDS = ("fresh", "control", "general")


DESCRIPTION = ("Draws --n questions from a dataset built with traffic (`freshrag build "
               "--control N --general N`), in the shares given, into a new dataset directory "
               "that `freshrag run --dataset` takes. No model is called.")
EXAMPLES = ("freshrag mix --dataset datasets/traffic --fresh 0.1 --control 0.6 --general 0.3 "
            "--n 100 --out datasets/traffic-10pc",)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    add_dataset(inputs, "; required: its questions carry a kind", alias=True)
    composition = p.add_argument_group("composition")
    for kind in KINDS:
        composition.add_argument(f"--{kind}", type=share, default=0.0,
                                 help=f"share of {kind} questions, 0 to 1 (default: "
                                      f"%(default)s); the three shares add up to 1")
    composition.add_argument("--n", type=whole(1, MAX_QUESTIONS), required=True,
                             help="questions in the mix")
    add_seed(composition, "of the draw; mixes of one seed are nested")
    p.add_argument_group("output").add_argument("--out", type=out_dir, required=True,
                                                metavar="DIR", help="new directory for the mix")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.builders.traffic.mix import MIX, write_mix
    from freshrag.core.outputs import check_outputs, files_in

    if args.dataset is None:
        raise UsageError("give the dataset to draw from: --dataset DIR")
    check_outputs(files_in(args.out, ("questions.jsonl", "articles.jsonl", MIX), "--out"),
                  [(f"--dataset's {name}", args.dataset / name)
                   for name in ("questions.jsonl", "articles.jsonl")])
    shares = {kind: getattr(args, kind) for kind in KINDS}
    print(write_mix(args.dataset, shares, args.n, args.seed, args.out))
    return 0
