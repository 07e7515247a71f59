"""`freshrag import`: answers made elsewhere (a JSON Lines or CSV file, freshrag's or Ragas'
columns, or an agent's traces: OTLP/JSON or Phoenix's spans) into a run directory, judged and scored like any run's (docs/own-system.md). It is
`freshrag run --systems NAME=FILE`: the file's answers are replayed as a system, so the runner's
resume, cache, judge, scorers and reports all apply. Before the run it prints how the rows met
the dataset's questions: how many by id, how many by question text, and the questions left
without a row (systems/external/matching.py); for traces, also the traces left out and why
(systems/external/traces_file.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.commands import run
from freshrag.cli.options import add_command, add_dataset_options

NAME = "import"
HELP = "judge answers from JSONL, CSV or traces as a run"


DESCRIPTION = ("The answers file's rows become the answers of a system named --system for the "
               "dataset's questions, in a run directory the judge grades and `freshrag report` "
               "reads like any run: the same as `freshrag run --systems NAME=ANSWERS`. "
               "ANSWERS may also be an agent's traces (OTLP/JSON with GenAI or OpenInference "
               "attributes, or Phoenix's span export): one trace per answer, its steps and "
               "tokens kept.")
EXAMPLES = ("freshrag import my-answers.jsonl --system mine --dataset datasets/recent "
            "--out results/mine-imported",
            "freshrag import ragas.csv --system ragas --dataset datasets/recent "
            "--base-url https://api.openai.com/v1 --model-role judge=gpt-4o --out results/ragas",
            "freshrag import agent-traces.json --system agent --dataset datasets/recent "
            "--out results/agent-traced")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("answers", type=Path, metavar="ANSWERS",
                        help="the answers file: .jsonl or .csv, one answer per question; or a "
                             "traces file: .json, or .jsonl of spans, one trace per answer")
    inputs.add_argument("--system", required=True, metavar="NAME",
                        help="the name the answers go by in rows and reports")
    add_dataset_options(inputs)
    run.add_run_options(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import dataset
    from freshrag.systems.external.answers_file import load_answers
    from freshrag.systems.external.plugins import is_traces
    from freshrag.systems.external.traces_file import load_traces

    # read here for the summary, and again by the run, which resolves every system it names
    load = load_traces if is_traces(args.answers) else load_answers
    print(load(args.answers, dataset(args).questions, args.system).summary())
    args.systems = f"{args.system}={args.answers}"
    return run.handle(args)
