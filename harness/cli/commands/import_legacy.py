"""`freshrag import-legacy`: a run file released with the paper (a pickled list of dicts) into a
run directory, which `freshrag report` and `freshrag score` then read (docs/running.md); the
import is harness/run/legacy.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import UsageError, add_command
from freshrag.cli.values import name, out_dir
from freshrag.core.wording import counted

NAME = "import-legacy"
HELP = "import a run file released with the paper (a pickle)"


DESCRIPTION = ("Reads the pickle safely (plain types only, nothing executed) and writes its rows "
               "as a run directory's samples.jsonl and manifest.json, graded as the paper graded "
               "them. No model is called.")
EXAMPLES = ("freshrag import-legacy A_f_naive.pkl --dataset data/A_f --system naive "
            "--out results/paper",
            "freshrag import-legacy A_f_naive.pkl --dataset-name A_f --system naive "
            "--out results/paper")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from freshrag.run.legacy import PAPER_MODEL

    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("pickle", type=Path, metavar="PICKLE", help="the paper's run file")
    inputs.add_argument("--dataset", type=name, metavar="DIR",
                        help="the dataset's directory: each row takes the id of the question it "
                             "asks (found by its text), as a run's rows have (a NAME that is no "
                             "directory is taken as --dataset-name, as before)")
    inputs.add_argument("--dataset-name", type=name, metavar="NAME",
                        help="or only the dataset's name for the tables, e.g. A_f, when its files "
                             "are not at hand (rows are then numbered by position)")
    inputs.add_argument("--system", type=name, required=True,
                        help="system name for the tables, e.g. naive")
    inputs.add_argument("--answer-model", type=name, default=PAPER_MODEL, metavar="MODEL",
                        help="the model that answered, for the cost analysis (default: "
                             "%(default)s, the paper's; --model MODEL is still accepted)")
    inputs.add_argument("--model", dest="answer_model", type=name, default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)  # its name before --answer-model
    p.add_argument_group("output").add_argument(
        "--out", type=out_dir, required=True, help="run directory to write (or add to)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.core.dataset import load_dataset_dir
    from freshrag.core.manifest import MANIFEST
    from freshrag.core.outputs import check_outputs, files_in
    from freshrag.core.rundir import LOCK
    from freshrag.core.samples import SAMPLES
    from freshrag.run.legacy import import_legacy

    if (args.dataset is None) == (args.dataset_name is None):
        raise UsageError("give the dataset once: --dataset DIR (its questions' ids are matched) or "
                         "--dataset-name NAME (a name only)")
    check_outputs(files_in(args.out, (SAMPLES, MANIFEST, LOCK), "--out"),
                  [("PICKLE", args.pickle)])
    data = load_dataset_dir(Path(args.dataset)) if args.dataset and Path(args.dataset).is_dir() \
        else None
    dataset = data.name if data else args.dataset or args.dataset_name
    n, matched = import_legacy(args.pickle, dataset, args.system, args.out, args.answer_model,
                               data.questions if data else None)
    if matched:
        print(matched)
    print(f"{counted(n, 'row')} of {args.pickle} imported into {args.out}/ as {dataset}/{args.system}; "
          f"see them with: freshrag report {args.out}")
    return 0
