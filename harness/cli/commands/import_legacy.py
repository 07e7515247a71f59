"""`freshrag import-legacy`: a run file released with the paper (a pickled list of dicts) into a
run directory, which `freshrag report` and `freshrag score` then read (docs/running.md); the
import is harness/run/legacy.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import name, out_dir
from freshrag.run.legacy import PAPER_MODEL

HELP = "import a run file released with the paper (a pickled list of dicts) into a run directory"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import-legacy", help=HELP)
    p.add_argument("pickle", type=Path, metavar="PICKLE")
    p.add_argument("--dataset", type=name, required=True,
                   help="the dataset's directory: each row takes the id of the question it asks "
                   "(by its text), as a run's rows have; or only a name for the tables, e.g. A_f "
                   "(rows are then numbered by position)")
    p.add_argument("--system", type=name, required=True,
                   help="system name for the tables, e.g. naive")
    p.add_argument("--out", type=out_dir, required=True, help="run directory to write (or add to)")
    p.add_argument("--model", type=name, default=PAPER_MODEL, help="the model that answered, for "
                   "the cost analysis (default: %(default)s, the paper's)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.core.dataset import load_dataset_dir
    from freshrag.core.manifest import MANIFEST
    from freshrag.core.outputs import check_outputs, files_in
    from freshrag.core.rundir import LOCK
    from freshrag.core.samples import SAMPLES
    from freshrag.run.legacy import import_legacy

    check_outputs(files_in(args.out, (SAMPLES, MANIFEST, LOCK), "--out"),
                  [("PICKLE", args.pickle)])
    data = load_dataset_dir(Path(args.dataset)) if Path(args.dataset).is_dir() else None
    dataset = data.name if data else args.dataset
    n, matched = import_legacy(args.pickle, dataset, args.system, args.out, args.model,
                               data.questions if data else None)
    if matched:
        print(matched)
    print(f"{n} rows of {args.pickle} imported into {args.out}/ as {dataset}/{args.system}; "
          f"see them with: freshrag report {args.out}")
    return 0
