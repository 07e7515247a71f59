"""`freshrag export`: run directories' answers as a file for the tools users already have: Ragas'
multi-turn samples, flat JSON Lines for pandas, OpenTelemetry traces, an inspect_ai eval log or
RAGChecker's input (docs/export.md); the records are made in harness/reporting/export.py (the
traces in otel.py, the log in inspect_log.py, RAGChecker's in ragchecker.py, beside it). Reading
only the runs' files, it makes no call."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from freshrag.cli.options import add_command
from freshrag.cli.values import name
from freshrag.core.wording import counted

NAME = "export"
STDOUT = "-"  # --out -: the records on standard output
WHAT = {"ragas": "Ragas multi-turn sample", "jsonl": "flat record", "otel": "OTLP trace",
        "inspect": "inspect_ai sample", "ragchecker": "RAGChecker result"}
WHERE = {"inspect": " in one eval log"}  # what the count is written into, where it is one file
HELP = "answers for Ragas, pandas, OTel, inspect_ai or RAGChecker"


DESCRIPTION = ("Writes the run directories' answers to one file: with --format ragas one Ragas "
               "MultiTurnSample per answered pair (the question, each search as a tool call and "
               "its result, the answer; the question's reference answer), as Ragas' "
               "EvaluationDataset.to_jsonl writes them; with --format jsonl one flat record per "
               "pair (grades, tokens per role, searches, latency, the steps), for "
               "pandas.read_json(lines=True); with --format otel one OpenTelemetry trace per "
               "answered pair as OTLP/JSON (GenAI semantic conventions: the system's "
               "invoke_agent span, a span per step with its model calls, searches and retrieved "
               "documents, an evaluation event per score); with --format inspect one inspect_ai "
               "eval log (JSON) of one sample per pair (the question, each step as messages, "
               "the answer, the judge's grades and each scorer's, tokens per model), for "
               "read_eval_log and inspect view; with --format ragchecker RAGChecker's input "
               "JSON of one system (query, gt_answer, response, retrieved_context). No model is "
               "called.")
EXAMPLES = ("freshrag export results/agents --format ragas --out agents-ragas.jsonl",
            "freshrag export results/agents --format jsonl --out -",
            "freshrag export results/gpt-4o results/mini --format jsonl --systems naive,react "
            "--out answers.jsonl",
            "freshrag export results/agents --format otel --out agents-traces.jsonl",
            "freshrag export results/agents --format inspect "
            "--out 2026-01-31T12-00-00_agents.json",
            "freshrag export results/agents --format ragchecker --systems react "
            "--out react-ragchecker.json")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from freshrag.reporting.export import FORMATS

    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    inputs = p.add_argument_group("inputs")
    inputs.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                        help="run directories, one or more")
    inputs.add_argument("--systems", type=systems, metavar="NAMES",
                        help="only these systems' answers, comma-separated (default: every "
                             "system of every run)")
    inputs.add_argument("--every-epoch", action="store_true",
                        help="the answers of every epoch of a run of --epochs N, each record "
                             "naming its epoch (without it: epoch 1 only, as the report's tables)")
    output = p.add_argument_group("output")
    output.add_argument("--format", choices=FORMATS, required=True,
                        help="ragas: Ragas multi-turn samples; jsonl: flat records for pandas; "
                             "otel: OpenTelemetry traces as OTLP/JSON (needs the traces extra); "
                             "inspect: an inspect_ai eval log; ragchecker: RAGChecker's input "
                             "(one system)")
    output.add_argument("--openinference", action="store_true",
                        help="with --format otel: OpenInference's attributes beside the GenAI "
                             "conventions' on every span (span kind, input and output, model "
                             "and tokens, tool, documents), for tools that read that dialect")
    output.add_argument("--out", type=Path, required=True, metavar="FILE",
                        help="the file written, whole and atomically: not a symbolic link, not "
                             "inside a run directory; - writes the records to standard output "
                             "(and what was written to standard error)")
    p.set_defaults(handler=handle)


def systems(text: str) -> tuple[str, ...]:
    """System names, comma-separated, each once."""
    names = tuple(part.strip() for part in text.split(","))
    if not all(names) or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"expected system names, comma-separated, each once; "
                                         f"got {text!r:.200}")
    return tuple(name(part) for part in names)


def handle(args: argparse.Namespace) -> int:
    from freshrag.core.jsonl import ResultsError, replace_jsonl, write_jsonl
    from freshrag.core.samples import SAMPLES
    from freshrag.reporting import export
    from freshrag.reporting.epochs import first_epoch_note
    from freshrag.reporting.loading import load_runs

    for run_dir in args.run_dirs:  # before anything is read or written
        if not (run_dir / SAMPLES).is_file():
            raise ResultsError(f"{run_dir}: no {SAMPLES}; is this a run directory?")
    to_stdout = str(args.out) == STDOUT
    if not to_stdout:
        export.check_out(args.out, args.run_dirs)
    # whole rows: the flat records print the steps whole, which a light read does not keep
    rows = export.chosen(load_runs(args.run_dirs, every_epoch=args.every_epoch), args.systems)
    kept, records = export.records(rows, args.format, args.openinference)
    if not kept:
        raise export.ExportError(f"nothing to export: no answered pairs in "
                                 f"{', '.join(map(str, args.run_dirs))}")
    # made as written: one row's at a time
    written = write_jsonl(sys.stdout, records) if to_stdout else replace_jsonl(args.out, records)
    written = len(kept) if args.format in export.DOCUMENTS else written  # one document: pairs
    left = len(rows) - len(kept)
    what = WHAT[args.format]
    said = sys.stderr if to_stdout else sys.stdout  # standard output holds the records alone
    systems_count = len({row['system'] for row in kept})
    failed = f"; {counted(left, 'failed pair')} left out, having no answer" if left else ""
    print(f"{'standard output' if to_stdout else args.out}: {counted(written, what)}"
          f"{WHERE.get(args.format, '')} ({counted(systems_count, 'system')}{failed})", file=said)
    for line in export.notes(args.format, kept, str(args.out)):
        print(line, file=said)
    if not args.every_epoch and (note := first_epoch_note(
            args.run_dirs, "export writes the answers of")):
        print(f"{note}; --every-epoch writes them all", file=said)
    return 0
