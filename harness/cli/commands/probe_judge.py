"""`freshrag probe-judge`: check that the judge tells right from wrong, by grading answers made
from the dataset (grounded, wrong, abstaining); exit 1 if it does not (docs/scoring.md). The
probes are harness/scoring/probes.py; the verdict is the judge's, kept and read as a run keeps
and reads it (harness/run/probe_pass.py, docs/running.md#judge-probes)."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import (
    add_command,
    add_concurrency,
    add_dataset_options,
    add_models,
    add_no_cache,
    add_probe_options,
    add_seed,
)

NAME = "probe-judge"
HELP = "check that the judge tells right from wrong; exit 1 if not"


DESCRIPTION = ("For a seeded sample of questions, answers are made from the gold article: a "
               "grounded one, a wrong one, an abstention and near misses. The judge role grades "
               "them, and its discrimination (how often it ranks the right one above the wrong "
               "one) is printed with its interval; `freshrag run` does the same before grading.")
EXAMPLES = ("freshrag probe-judge --dataset datasets/recent",
            "freshrag probe-judge --dataset datasets/recent --base-url https://api.openai.com/v1 "
            "--model-role judge=gpt-4o")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    add_dataset_options(p.add_argument_group("inputs"))
    add_probe_options(p.add_argument_group("judge probes"))
    add_models(p)
    control = p.add_argument_group("run control")
    add_concurrency(control, "probes graded at once")
    add_seed(control)
    add_no_cache(control)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import CACHE_FILE, dataset, llm_client, load_settings, print_roles
    from freshrag.reporting import report
    from freshrag.run.probe_pass import probe_run
    from freshrag.scoring import probes

    data = dataset(args)
    settings = load_settings(args)
    print_roles(settings, ("judge",))
    results = Path("results")  # the verdict is kept beside the response cache, as a run keeps it
    probing = probes.ProbeSettings(args.probe_k, args.probe_seed, args.probe_threshold,
                                   args.probe_context)
    with llm_client(settings, None if args.no_cache else results / CACHE_FILE, args.seed,
                    roles=("judge",)) as llm:
        probe = probe_run(llm, data, probing, args.probe_k, results, args.concurrency)
    if probe.get("unavailable"):
        print("\n".join(probes.verdict_lines(probe)))
        return 1
    for name, field in probe["fields"].items():
        print(f"{name}: {report.format_value(field['discrimination'])} "
              f"{report.format_value(field['interval'])} over {field['pairs']} probe pairs "
              f"({field.get('compared', '')})")
    print(f"cost: none now, the verdict kept in {probe['reused']}" if probe.get("reused") else
          f"cost: {probe['calls']} judge calls ({probe['cache_hits']} from the cache), "
          f"{probe['usage']['input']:,} input and {probe['usage']['output']:,} output tokens, "
          f"{probe['seconds']} s")
    print("\n".join(probes.verdict_lines(probe)))
    return 0 if probe["informative"] else 1
