"""`freshrag label`: label a dataset's questions fact_single, summary, reasoning or unanswerable
with the labeller role, and report the composition and the agreement with hand labels
(docs/labels.md). The same step as the labels stage of a build, on a dataset made elsewhere."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import (
    UsageError,
    add_command,
    add_concurrency,
    add_dataset,
    add_models,
    add_no_cache,
    add_seed,
)

NAME = "label"
HELP = "label questions by how their article answers them"


DESCRIPTION = ("The labeller role reads each question with its gold article and labels it. The "
               "labels are written into the dataset's questions.jsonl (the field `label`), the "
               "labeller's records into labels.jsonl, and the composition into a table and a "
               "chart beside them.")
EXAMPLES = ("freshrag label --dataset datasets/recent",
            "freshrag label --dataset datasets/recent --hand-labels my-labels.jsonl "
            "--base-url https://api.openai.com/v1 --model gpt-4o-mini")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    add_dataset(inputs, "; required: the labels are written into its questions.jsonl, their "
                "records into labels.jsonl", alias=True)
    inputs.add_argument("--hand-labels", type=Path, metavar="FILE", help="JSON Lines of {id, "
                        "label}: report Cohen's kappa and the confusion matrix of the labeller "
                        "against them")
    add_models(p)
    control = p.add_argument_group("run control")
    add_concurrency(control, "questions labelled at once")
    add_seed(control)
    add_no_cache(control)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.builders.build import label_and_report
    from freshrag.builders.labels.labeller import (
        LABELS_FILE,
        check_no_foreign_labels,
        read_hand_labels,
    )
    from freshrag.builders.labels.report import CHART_FILE, REPORT_FILE
    from freshrag.cli.common import (
        CACHE_FILE,
        cache_output,
        default_config,
        llm_client,
        load_settings,
        print_roles,
    )
    from freshrag.core.dataset import load_dataset_dir
    from freshrag.core.outputs import check_outputs, files_in
    from freshrag.core.rundir import LOCK, locked

    if args.dataset is None:
        raise UsageError("give the dataset to label: --dataset DIR")
    cache = None if args.no_cache else args.dataset.parent / CACHE_FILE
    # The dataset's questions.jsonl is read and rewritten on purpose (the labels go into it); as
    # an output it keeps --hand-labels from being that file.
    written = ("questions.jsonl", LABELS_FILE, REPORT_FILE, CHART_FILE, LOCK)
    check_outputs(files_in(args.dataset, written, "--dataset", "keep --hand-labels outside the "
                           "dataset's own files") + cache_output(cache),
                  [("--hand-labels", args.hand_labels),
                   ("--config", args.config or default_config())])
    dataset = load_dataset_dir(args.dataset)  # every input checked before a server starts
    hand = read_hand_labels(args.hand_labels, {q.id for q in dataset.questions}) \
        if args.hand_labels else None
    check_no_foreign_labels(dataset.files["questions"], args.dataset / LABELS_FILE)
    settings = load_settings(args)
    print_roles(settings, ("labeller",))
    with locked(args.dataset), llm_client(settings, cache, args.seed, roles=("labeller",)) as llm:
        print(f"labels: {label_and_report(llm, args.dataset, args.concurrency, hand)}")
    return 0
