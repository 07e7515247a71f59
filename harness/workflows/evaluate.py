"""The run workflow as a library call (docs/api.md): `evaluate` leaves the run directory whole, as
`freshrag run` leaves it (the rows, the manifest, and the summary.json and summary.md that
reporting/run_summary.py writes), and `estimate` prices it first. The run itself is the run
service's (harness/run/service.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from freshrag.core.dataset import Dataset
from freshrag.reporting.run_summary import write_run_summary
from freshrag.run.inputs import Roles, RunOptions, Systems, run_options
from freshrag.run.options import DEFAULT_SYSTEMS
from freshrag.run.service import RunResult, prepare
from freshrag.workflows.arguments import check_arguments


def evaluate(dataset: Dataset | str | Path | None = None, systems: Systems = DEFAULT_SYSTEMS,
             roles: Roles = None, out: str | Path | None = None,
             options: RunOptions | None = None, **option_values: Any) -> RunResult:
    """Every system answers every question of `dataset` (a Dataset, a dataset directory, or None
    for the example dataset); the judge grades each answer, and tokens, dollars and latency are
    counted per role, into `out` (default: results/DATASET_NAME), its summary with them. Running
    it again resumes.

    `systems`: names as `freshrag run --systems` takes them (a comma-separated string or a list),
    your own classes, factories or objects with `answer(question)`, or a mapping of name to any
    of these. `roles`: LLMSettings, one model for every role, or a mapping of role to model;
    endpoints and keys from freshrag.toml and FRESHRAG_* as for the command (default: the
    embedded model). `options` or keywords: RunOptions' fields (limit=3, concurrency=1, ...).
    An argument that cannot be used is refused, naming it, before anything starts."""
    check_arguments({"dataset": dataset, "systems": systems, "roles": roles, "out": out,
                     "options": options})
    result = prepare(dataset, systems, roles, out, run_options(options, option_values)).evaluate()
    write_run_summary(result.out, result.answers, result.systems)
    return result


def estimate(dataset: Dataset | str | Path | None = None, systems: Systems = DEFAULT_SYSTEMS,
             roles: Roles = None, out: str | Path | None = None,
             options: RunOptions | None = None, **option_values: Any) -> str:
    """The table of calls, tokens and dollars per role and model that `evaluate` with the same
    arguments would still spend (docs/costs.md#dry-run); nothing is called or written."""
    check_arguments({"dataset": dataset, "systems": systems, "roles": roles, "out": out,
                     "options": options})
    return prepare(dataset, systems, roles, out, run_options(options, option_values),
                   dry_run=True).estimate()
