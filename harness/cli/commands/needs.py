"""`freshrag needs`: information needs derived from a log of user queries (embedded, clustered,
each cluster described in one sentence), written as the needs file `build --needs` reads
(docs/needs.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from freshrag.cli.options import add_command, add_concurrency, add_models, add_no_cache, add_seed
from freshrag.cli.values import share, whole
from freshrag.run.options import MAX_QUESTIONS

if TYPE_CHECKING:
    from freshrag.builders.traffic.query_log import NeedLogConfig

NAME = "needs"
HELP = "derive information needs from a log of user queries"


DESCRIPTION = ("The queries are embedded (the embeddings role), clustered, and each cluster "
               "large enough is described in one sentence by the builder role. The needs file "
               "(one need a line) is what `freshrag build --needs` writes questions for; a "
               ".json and a .md table go beside it.")
EXAMPLES = ("freshrag needs --queries queries.jsonl --out needs.txt",
            "freshrag build --needs needs.txt --cutoff 2024-06-30 --n 50 --out datasets/needs")


def add_parser(sub: argparse._SubParsersAction) -> None:
    from freshrag.builders.traffic.query_log import NeedLogConfig

    defaults = NeedLogConfig()
    p = add_command(sub, NAME, HELP, DESCRIPTION, EXAMPLES)
    p.add_argument_group("inputs").add_argument(
        "--queries", type=Path, required=True, metavar="LOG",
        help="JSON Lines log of user queries, a 'query' field a line")
    _clustering_options(p.add_argument_group("clustering"), defaults)
    add_models(p)
    control = p.add_argument_group("run control")
    add_concurrency(control, "descriptions asked at once")
    add_seed(control, "of the sample and of every LLM request")
    add_no_cache(control)
    p.add_argument_group("output").add_argument(
        "--out", type=Path, default=Path("needs.txt"), help="the needs file to write (one need a "
        "line, for build --needs); its .json and .md go beside it (default: %(default)s)")
    p.set_defaults(handler=handle)


def _clustering_options(p: argparse._ArgumentGroup, defaults: NeedLogConfig) -> None:
    p.add_argument("--distance-threshold", type=share, default=defaults.distance_threshold,
                   help="cosine distance beyond which clusters are not merged: lower gives more, "
                        "narrower needs (default: %(default)s)")
    p.add_argument("--min-size", type=whole(1, MAX_QUESTIONS), default=defaults.min_size,
                   help="queries a cluster needs to be a need; smaller ones are counted apart "
                        "(default: %(default)s)")
    p.add_argument("--examples", type=whole(1, 100), default=defaults.examples,
                   help="representative queries per need, shown to the model and in the table "
                        "(default: %(default)s)")
    p.add_argument("--max-queries", type=whole(2, 100_000), default=defaults.max_queries,
                   help="distinct queries clustered; a larger log is sampled (seeded by --seed), "
                        "as clustering holds n² distances (default: %(default)s)")


def handle(args: argparse.Namespace) -> int:
    from freshrag.builders.traffic import query_log
    from freshrag.cli.common import (
        CACHE_FILE,
        cache_output,
        default_config,
        llm_client,
        load_settings,
        print_roles,
    )
    from freshrag.core.outputs import Output, check_outputs
    from freshrag.retrieval.embeddings import embedder_for

    cache = None if args.no_cache else Path("results") / CACHE_FILE
    fix = "give another --out (its .json and .md go beside it)"
    check_outputs([Output(path, what, fix) for path, what in zip(
        query_log.needs_paths(args.out), ("--out", "the .json beside --out", "the .md beside --out"))]
        + cache_output(cache), [("--queries", args.queries),
                                ("--config", args.config or default_config())])
    queries = query_log.read_queries(args.queries)  # refused before a model loads
    config = query_log.NeedLogConfig(args.distance_threshold, args.min_size, args.examples,
                                     args.max_queries, args.seed, args.concurrency)
    settings = load_settings(args)
    print_roles(settings, ("builder",), embeddings=True)
    with llm_client(settings, cache, args.seed, roles=("builder",)) as llm:
        document = query_log.derive_needs(queries, llm, embedder_for(llm).embed, config)
    document["queries_file"] = str(args.queries)
    paths = query_log.write_needs(document, args.out)
    print(query_log.render(document))
    print(f"\n{', '.join(map(str, paths))} written; build questions for these needs with: "
          f"freshrag build ... --needs {paths[0]}")
    return 0
