"""The run workflow as a library call (docs/api.md): `evaluate` leaves the run directory whole, as
`freshrag run` leaves it (the rows, the manifest, and the summary.json and summary.md that
reporting/run_summary.py writes), and `estimate` prices it first. The run itself is the run
service's (harness/run/service.py); `evaluated` runs a prepared run, its traces sent live where
`otlp_endpoint` asks (harness/reporting/otel_live.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from freshrag.core.dataset import Dataset
from freshrag.reporting.run_summary import write_run_summary
from freshrag.run.inputs import InputError, Roles, RunOptions, Systems, run_options
from freshrag.run.options import DEFAULT_SYSTEMS
from freshrag.run.service import PreparedRun, RunResult, prepare
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
    result = evaluated(prepare(dataset, systems, roles, out, run_options(options, option_values)))
    write_run_summary(result.out, result.answers, result.systems)
    return result


def evaluated(prepared: PreparedRun) -> RunResult:
    """`prepared` run, each answered pair's trace sent as it finishes to the run's
    `otlp_endpoint` (none: nothing sent); what was sent said on standard error at the end."""
    endpoint = prepared.options.otlp_endpoint
    if endpoint is None:
        return prepared.evaluate()
    if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        raise InputError("RunOptions.otlp_endpoint: OTEL_SDK_DISABLED=true turns the "
                         "OpenTelemetry SDK off, which then makes no span; unset it to send them")
    try:
        from freshrag.reporting.otel_live import LiveTraces
    except ImportError as error:
        raise InputError(f"RunOptions.otlp_endpoint needs the OpenTelemetry SDK's OTLP exporter "
                         f"({error.name} is not installed): pip install 'freshrag[traces]'"
                         ) from error
    # both dialects: a receiver reads the GenAI conventions' attributes or OpenInference's
    live = LiveTraces(endpoint, str(prepared.config.out), openinference=True)
    try:
        return prepared.evaluate(on_row=live.send)
    finally:
        print(live.close(), file=sys.stderr)


def estimate(dataset: Dataset | str | Path | None = None, systems: Systems = DEFAULT_SYSTEMS,
             roles: Roles = None, out: str | Path | None = None,
             options: RunOptions | None = None, **option_values: Any) -> str:
    """The table of calls, tokens and dollars per role and model that `evaluate` with the same
    arguments would still spend (docs/costs.md#dry-run); nothing is called or written."""
    check_arguments({"dataset": dataset, "systems": systems, "roles": roles, "out": out,
                     "options": options})
    return prepare(dataset, systems, roles, out, run_options(options, option_values),
                   dry_run=True).estimate()
