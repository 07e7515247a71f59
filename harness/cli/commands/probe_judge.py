"""`freshrag probe-judge`: check that the judge tells right from wrong, by grading answers made
from the dataset (grounded, wrong, abstaining); exit 1 if it does not (docs/scoring.md). The
probes are harness/scoring/probes.py."""

from __future__ import annotations

import argparse
from pathlib import Path

from freshrag.cli.options import (
    add_concurrency,
    add_config,
    add_dataset_options,
    add_no_cache,
    add_probe_options,
    add_seed,
)

HELP = ("check that the judge tells right from wrong: grade answers made from the dataset "
        "(grounded, wrong, abstaining, near misses); exit 1 if not")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("probe-judge", help=HELP)
    add_dataset_options(p)
    add_probe_options(p)
    add_concurrency(p, 4, "probes graded at once")
    add_seed(p)
    add_no_cache(p)
    add_config(p)
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from freshrag.cli.common import CACHE_FILE, dataset, llm_client
    from freshrag.core.config import load_settings
    from freshrag.reporting import report
    from freshrag.scoring import probes

    data = dataset(args)
    settings = load_settings(args.config)
    cache = None if args.no_cache else Path("results") / CACHE_FILE
    with llm_client(settings, cache, args.seed, roles=("judge",)) as llm:
        probe = probes.probe_judge(llm, data.questions, data.articles, k=args.probe_k,
                                   seed=args.probe_seed, threshold=args.probe_threshold,
                                   concurrency=args.concurrency)
    for name, field in probe["fields"].items():
        print(f"{name}: {report.format_value(field['discrimination'])} "
              f"{report.format_value(field['interval'])} over {field['pairs']} probe pairs "
              f"({field.get('compared', '')})")
    print(f"cost: {probe['calls']} judge calls ({probe['cache_hits']} from the cache), "
          f"{probe['usage']['input']:,} input and {probe['usage']['output']:,} output tokens, "
          f"{probe['seconds']} s")
    print("\n".join(probes.verdict_lines(probe)))
    return 0 if probe["informative"] else 1
