"""`freshrag filter`: a dataset cut down to the questions a model fails without retrieval, measured
by a run's own grades (docs/building.md#fresh-for-a-model-by-measurement); the stage is
builders/measured.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import UsageError, add_command, add_dataset
from freshrag.cli.values import out_dir, whole

NAME = "filter"
HELP = "keep the questions a model fails without retrieval"


DESCRIPTION = ("Reads the grades a run's judge gave one system's answers (baseline: no "
               "retrieval) and writes a new dataset directory holding only the questions "
               "graded below --known-at for truthfulness, the ones that model does not know, "
               "beside the articles unchanged and a manifest.json saying what was kept and why. "
               "Questions with no usable grade (unscored, failed, not in the run) are not kept, "
               "and counted. No model is called.")
EXAMPLES = ("freshrag run --dataset datasets/recent --systems baseline --model gpt-4o-mini "
            "--out results/known",
            "freshrag filter results/known --dataset datasets/recent --out datasets/recent-fresh")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from freshrag.builders.measured import KNOWN_AT, SYSTEM

    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                        help="run directory whose grades decide, made on the dataset")
    add_dataset(inputs, "; required: the dataset the run answered")
    rule = p.add_argument_group("selection")
    rule.add_argument("--system", default=SYSTEM, metavar="NAME",
                      help="the system whose answers measure the model (default: %(default)s, "
                           "which answers with no retrieval)")
    rule.add_argument("--known-at", type=whole(2, 5), default=KNOWN_AT, metavar="T",
                      help="an answer graded at least T for truthfulness is known, and its "
                           "question dropped (default: %(default)s)")
    p.add_argument_group("output").add_argument(
        "--out", type=out_dir, required=True, metavar="DIR",
        help="new dataset directory (questions.jsonl, articles.jsonl, manifest.json)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.builders.measured import WRITTEN, write_measured
    from freshrag.core.manifest import MANIFEST
    from freshrag.core.outputs import check_outputs, files_in
    from freshrag.core.samples import SAMPLES

    if args.dataset is None:
        raise UsageError("give the dataset the run answered: --dataset DIR")
    check_outputs(files_in(args.out, WRITTEN, "--out"),
                  [(f"--dataset's {name}", args.dataset / name)
                   for name in ("questions.jsonl", "articles.jsonl", MANIFEST)]
                  + [(f"RUN_DIR's {name}", args.run_dir / name) for name in (SAMPLES, MANIFEST)])
    print(write_measured(args.dataset, args.run_dir, args.out, args.system, args.known_at))
    return 0
