"""`freshrag import-legacy`: a run file released with the paper (a pickled list of dicts) into a
run directory, which `freshrag report` and `freshrag score` then read (docs/running.md); the
import is harness/run/legacy.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import UsageError, add_command, name, out_dir
from freshrag.run.legacy import PAPER_MODEL

HELP = "import a run file released with the paper (a pickle)"


DESCRIPTION = ("Reads the pickle safely (plain types only, nothing executed) and writes its rows "
               "as a run directory's samples.jsonl and manifest.json, graded as the paper graded "
               "them. No model is called.")
EXAMPLES = ("freshrag import-legacy A_f_naive.pkl --dataset-name A_f --system naive "
            "--out results/paper",)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, "import-legacy", HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("pickle", type=Path, metavar="PICKLE", help="the paper's run file")
    inputs.add_argument("--dataset-name", type=name, metavar="NAME",
                        help="required; the dataset's name for the tables, e.g. A_f (a name, not "
                             "a directory; --dataset NAME is still accepted)")
    inputs.add_argument("--system", type=name, required=True,
                        help="system name for the tables, e.g. naive")
    inputs.add_argument("--answer-model", type=name, default=PAPER_MODEL, metavar="MODEL",
                        help="the model that answered, for the cost analysis (default: "
                             "%(default)s, the paper's; --model MODEL is still accepted)")
    for alias, dest in (("--dataset", "dataset_name"), ("--model", "answer_model")):  # old names
        inputs.add_argument(alias, dest=dest, type=name, default=argparse.SUPPRESS,
                            help=argparse.SUPPRESS)
    p.add_argument_group("output").add_argument(
        "--out", type=out_dir, required=True, help="run directory to write (or add to)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.core.manifest import MANIFEST
    from freshrag.core.outputs import check_outputs, files_in
    from freshrag.core.rundir import LOCK
    from freshrag.core.samples import SAMPLES
    from freshrag.run.legacy import import_legacy

    if args.dataset_name is None:
        raise UsageError("give the dataset's name for the tables: --dataset-name NAME")
    check_outputs(files_in(args.out, (SAMPLES, MANIFEST, LOCK), "--out"),
                  [("PICKLE", args.pickle)])
    n = import_legacy(args.pickle, args.dataset_name, args.system, args.out, args.answer_model)
    print(f"{n} rows of {args.pickle} imported into {args.out}/ as {args.dataset_name}/{args.system}; "
          f"see them with: freshrag report {args.out}")
    return 0
